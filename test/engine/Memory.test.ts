/**
 * `collectBeforeLargePass`: one full collection, only before a large input, once per process; and
 * `passCollections`, one every `ROWS_PER_COLLECTION` rows of a pass over a large input (the
 * peak it removes is measured in docs/benchmarks.md; a test cannot time it).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { expect, it } from "vitest"
import {
  fullCollection,
  LARGE_INPUT,
  largePassCollector,
  passCollections,
  ROWS_PER_COLLECTION
} from "../../src/engine/Memory.js"
import { tempDir } from "../support/RunPipeline.js"

/** Inputs one byte under `LARGE_INPUT`, of it exactly (sparse: their size without writing 64 MiB), and none. */
const inputs = () => {
  const dir = tempDir()
  const sized = (name: string, bytes: number) => {
    const path = Path.join(dir, name)
    fs.writeFileSync(path, "")
    fs.truncateSync(path, bytes)
    return path
  }
  return {
    small: sized("small.jsonl", LARGE_INPUT - 1),
    large: sized("large.jsonl", LARGE_INPUT),
    missing: Path.join(dir, "missing.jsonl")
  }
}

it("collects before an input of 64 MiB or more, once; never before a small or missing one", () => {
  // A collector of its own, as the process's is: test files share a worker's modules, and a file
  // before this one may have spent the process's once on a large input.
  const collectBeforeLargePass = largePassCollector()
  const { large, missing, small } = inputs()
  expect(collectBeforeLargePass(small)).toBe(false)
  expect(collectBeforeLargePass(missing)).toBe(false)
  expect(collectBeforeLargePass(large)).toBe(true)
  expect(collectBeforeLargePass(large)).toBe(false)
})

it("collects every 8,192 rows of a pass over an input of 64 MiB or more, never over a small or missing one", () => {
  const { large, missing, small } = inputs()
  let collected = 0
  const count = () => collected++
  expect(passCollections(small, count)).toBeUndefined()
  expect(passCollections(missing, count)).toBeUndefined()
  const tick = passCollections(large, count)!
  // Two passes over 20,000 rows: at rows 8,192 and 16,384 of each.
  for (let pass = 0; pass < 2; pass++) {
    for (let row = 0; row < 20_000; row++) tick(row)
  }
  expect(collected).toBe(4)
  expect(ROWS_PER_COLLECTION).toBe(8_192)
})

it("a full collection frees what nothing holds", async () => {
  const ref = new WeakRef({ big: new Array(1000).fill(0) })
  // A WeakRef holds its target until the current job ends.
  await new Promise((resolve) => setImmediate(resolve))
  expect(fullCollection()).toBe(true)
  expect(ref.deref()).toBeUndefined()
})
