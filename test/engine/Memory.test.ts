/**
 * `collectBeforeLargePass`: one full collection, only before a large input, once per process (the
 * peak it removes is measured in docs/benchmarks.md; a test cannot time it).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { expect, it } from "vitest"
import { LARGE_INPUT, largePassCollector } from "../../src/engine/Memory.js"
import { tempDir } from "../support/RunPipeline.js"

it("collects before an input of 64 MiB or more, once; never before a small or missing one", () => {
  // A collector of its own, as the process's is: test files share a worker's modules, and a file
  // before this one may have spent the process's once on a large input.
  const collectBeforeLargePass = largePassCollector()
  const dir = tempDir()
  const small = Path.join(dir, "small.jsonl")
  fs.writeFileSync(small, "{}\n")
  const large = Path.join(dir, "large.jsonl")
  // Sparse: its size without writing 64 MiB.
  fs.writeFileSync(large, "")
  fs.truncateSync(large, LARGE_INPUT)
  expect(collectBeforeLargePass(small)).toBe(false)
  expect(collectBeforeLargePass(Path.join(dir, "missing.jsonl"))).toBe(false)
  expect(collectBeforeLargePass(large)).toBe(true)
  expect(collectBeforeLargePass(large)).toBe(false)
})
