/**
 * Full collections for the validation pass over a large input: one before it, and one every
 * `ROWS_PER_COLLECTION` rows of it.
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
 * And a full collection every `ROWS_PER_COLLECTION` rows of the pass over a large input, for glibc's
 * sake. `JSON.parse` internalizes every short string value (V8 does so for values of up to 10
 * characters: case ids, mostly), and V8's string table keeps each until a full collection; the pass
 * parses rows so fast, and keeps so little, that V8 rarely collects during it, so a million rows grew
 * the table to 4 MiB, and the 1, 2 and 4 MiB tables it freed on the way raised glibc's mmap and trim
 * thresholds to 4 and 8 MiB for the rest of the process (a freed block past 128 KiB raises them to
 * its size and twice it). Each thread's arena then keeps up to 8 MiB it freed: the arenas of V8's
 * compiler and collector threads held ~15 MB more through a million-case run, whose peak RSS was
 * 149 MB against 126 MB for 20,000 cases. Collected every 8,192 rows (~11 ms each: 244 in a
 * million-case run's two passes, ~2.7 s of its 635 CPU-s), the table grows no further than a short
 * run's, and the million cases peaked at 130 MB (docs/benchmarks.md, 2026-12-01).
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
    if (collected || !isLargeInput(path)) return false
    collected = true
    return fullCollection()
  }
}

/** A file of `LARGE_INPUT` bytes or more (false for one that cannot be read: the pass says why). */
const isLargeInput = (path: string): boolean => {
  try {
    return fs.statSync(path).size >= LARGE_INPUT
  } catch {
    return false
  }
}

let collector: (() => void) | null | undefined

/** A full collection now; false where the collector is not to be had. */
export const fullCollection = (): boolean => {
  if (collector === undefined) {
    v8.setFlagsFromString("--expose-gc")
    const gc = vm.runInNewContext("gc") as unknown
    collector = typeof gc === "function" ? gc as () => void : null
  }
  if (collector === null) return false
  collector()
  return true
}

/** Rows of a large input's validation pass between two full collections. */
export const ROWS_PER_COLLECTION = 8_192

/**
 * For the validation pass over `path`: undefined for an input under `LARGE_INPUT` bytes, else a
 * function to call with each row's 0-based number in a pass, which collects (`collect`) at every
 * `ROWS_PER_COLLECTION`th row but the first.
 */
export const passCollections = (
  path: string,
  collect: () => unknown = fullCollection
): ((row: number) => void) | undefined => {
  if (!isLargeInput(path)) return undefined
  return (row) => {
    if (row > 0 && row % ROWS_PER_COLLECTION === 0) collect()
  }
}

/** A full collection, once per process, when `path` is a large input; true when it ran. */
export const collectBeforeLargePass = largePassCollector()
