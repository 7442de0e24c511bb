/**
 * One full collection before the validation pass over a large input.
 *
 * Before its first full collection V8 lets the old generation grow to an initial limit set when
 * the process starts (~80 MB of heap here), whatever the live heap is; only from the first
 * collection on does `--heap-growing-percent=25` (`bin.ts`) hold it to the live size plus 25%. The
 * validation pass of a large input fills that room with garbage in its first seconds, and a
 * million-case run's peak RSS came from it: 159–164 MB at 4–6 s, against 138–145 MB for the rest of
 * the run and 141 MB for a 10,000-case run (docs/benchmarks.md). A collection before the pass,
 * while the heap is the CLI's modules, sets the limit from the live heap: the same run's peak over
 * its first 12 s was 126 MB. It costs ~16 ms, so only inputs of `LARGE_INPUT` bytes or more pay it.
 *
 * `--expose-gc` given at run time reaches only contexts made after it: the collector is taken from
 * a new one (`vm.runInNewContext("gc")`), once.
 */
import * as fs from "node:fs"
import * as v8 from "node:v8"
import * as vm from "node:vm"

/** 64 MiB: ~80,000 answer-correctness cases. */
export const LARGE_INPUT = 64 * 2 ** 20

/**
 * A collector: a full collection when `path` is a large input, at most once for the collector; true
 * when it ran. The process has one (`collectBeforeLargePass`); a test makes its own.
 */
export const largePassCollector = (): (path: string) => boolean => {
  let collected = false
  return (path) => {
    if (collected) return false
    let size: number
    try {
      size = fs.statSync(path).size
    } catch {
      return false
    }
    if (size < LARGE_INPUT) return false
    collected = true
    v8.setFlagsFromString("--expose-gc")
    const gc = vm.runInNewContext("gc") as unknown
    if (typeof gc !== "function") return false
    ;(gc as () => void)()
    return true
  }
}

/** A full collection, once per process, when `path` is a large input; true when it ran. */
export const collectBeforeLargePass = largePassCollector()
