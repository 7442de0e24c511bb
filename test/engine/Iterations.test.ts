/**
 * `finalMetrics`' agreement between iterations: iterations whose records are the same cases in the
 * same order are read side by side (memory flat in the cases); records that differ (a partial
 * report) are read one file after another — and both give the same figures for the same grades.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { expect, it } from "vitest"
import { finalMetrics } from "../../src/engine/Iterations.js"
import type { Pipeline, RunInfo } from "../../src/engine/Pipeline.js"
import { tempDir } from "../support/RunPipeline.js"

interface Rec {
  readonly id: string
  readonly g: Readonly<Record<string, number | null>>
}

const pipeline = {
  score: { grades: (r: Rec) => ({ caseId: r.id, grades: r.g }) }
} as unknown as Pipeline<Rec, unknown>

const files = (...iterations: ReadonlyArray<ReadonlyArray<Rec>>) => {
  const dir = tempDir()
  return iterations.map((records, i) => {
    const file = Path.join(dir, `records-iteration-${i + 1}.jsonl`)
    fs.writeFileSync(file, records.map((r) => JSON.stringify(r) + "\n").join(""))
    return file
  })
}

const agreementOf = (recordFiles: ReadonlyArray<string>) =>
  Effect.runPromise(finalMetrics(pipeline, {} as RunInfo, [], recordFiles))

const cases: ReadonlyArray<Rec> = Array.from({ length: 40 }, (_, i) => ({ id: `c${i}`, g: { x: i % 5, y: i / 40 } }))
const changed: ReadonlyArray<Rec> = cases.map((r, i) =>
  i % 7 === 0 ? { id: r.id, g: { x: (i + 1) % 5, y: r.g.y! } } : r
)

it("the same cases in order: read side by side; the unstable cases and the agreement per criterion", async () => {
  const f = await agreementOf(files(cases, changed, cases))
  expect(f.unstableCount).toBe(6)
  expect(f.unstable.map((u) => u.caseId)).toEqual(["c0", "c7", "c14", "c21", "c28", "c35"])
  expect(f.unstable[0]).toEqual({ caseId: "c0", criterion: "x", grades: [0, 1, 0] })
  expect(f.agreement["x"]!.units).toBe(40)
  expect(f.agreement["x"]!.exactAgreement).toBeCloseTo(34 / 40, 12)
  expect(f.agreement["y"]!.exactAgreement).toBe(1)
})

it("another order in one iteration gives the same figures (read one file after another)", async () => {
  const inOrder = await agreementOf(files(cases, changed, cases))
  const shuffled = await agreementOf(files(cases, [...changed].reverse(), cases))
  expect(shuffled.agreement).toEqual(inOrder.agreement)
  expect(shuffled.unstableCount).toBe(inOrder.unstableCount)
  expect(new Set(shuffled.unstable.map((u) => u.caseId))).toEqual(new Set(inOrder.unstable.map((u) => u.caseId)))
})

it("a case missing from one iteration (a partial report): the others are still paired", async () => {
  const f = await agreementOf(files(cases, changed.slice(1)))
  // c0 has one pairable grade: not a unit; every other case is.
  expect(f.agreement["x"]!.units).toBe(39)
  expect(f.unstable.map((u) => u.caseId)).toEqual(["c7", "c14", "c21", "c28", "c35"])
  const short = await agreementOf(files(cases.slice(0, 39), changed))
  expect(short.agreement["x"]!.units).toBe(39)
})
