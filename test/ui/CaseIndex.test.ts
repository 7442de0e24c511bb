/**
 * The index a run is browsed through, over real run files: every case found by its id (a hostile
 * one too), its record and metrics read back; blank lines and a torn last line tolerated; a run
 * without per-case metrics indexed from its records, one without either explained; each case's
 * journal lines its own; text search case-insensitive and through JSON escapes. And the review
 * queue's order over an index: disagreements first (iterations, then judges), then the strata.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import type { MetricSpec } from "../../src/domain/Metric.js"
import {
  buildIndex,
  caseIdOf,
  type CaseIndex,
  hashId,
  indexBytes,
  indexJournal,
  journalLines,
  lookupCase,
  readCaseIds,
  readRecord
} from "../../src/ui/CaseIndex.js"
import { search } from "../../src/ui/CaseQuery.js"
import { reviewQueue } from "../../src/ui/ReviewQueue.js"
import { tempDir } from "../support/RunPipeline.js"
import { buildFixtures, type Fixtures, HOSTILE_ID } from "./Fixtures.js"

let fx: Fixtures

beforeAll(async () => {
  fx = await buildFixtures()
})

const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(e)

const specsOf = (dir: string): ReadonlyArray<MetricSpec> =>
  JSON.parse(fs.readFileSync(Path.join(dir, "manifest.json"), "utf8")).caseMetricSpecs

const index = (dir: string) => run(buildIndex({ dir, iteration: 1, metrics: specsOf(dir) }))

/** A copy of a run directory to damage. */
const copy = (dir: string) => {
  const to = Path.join(tempDir(), Path.basename(dir))
  fs.cpSync(dir, to, { recursive: true })
  return to
}

describe("the case index", () => {
  it("finds every case by its id, a hostile one too, and reads back its record and metrics", async () => {
    const idx = await index(fx.correctnessA)
    expect(idx.cases).toBe(12)
    const ids = await run(readCaseIds(idx))
    expect(ids).toContain(HOSTILE_ID)
    for (const id of ids) {
      const i = await run(lookupCase(idx, id))
      expect(i).toBeGreaterThanOrEqual(0)
      expect(await run(caseIdOf(idx, i))).toBe(id)
      expect((await run(readRecord(idx, i)) as { caseId: string }).caseId).toBe(id)
    }
    expect(await run(lookupCase(idx, "no such case"))).toBe(-1)
    // Bounded memory: a few bytes per case (offsets, hashes, the metrics' columns: 16 metrics here), not the files.
    expect(indexBytes(idx) / idx.cases).toBeLessThan(16 * 8 + 80)
    const f1 = idx.metrics.findIndex((m) => m.name === "f1")
    const q1 = await run(lookupCase(idx, "q1"))
    // The column holds what the run wrote for the case (its per-case metrics line).
    const written = fs.readFileSync(Path.join(fx.correctnessA, "case-metrics-iteration-1.jsonl"), "utf8").trim()
      .split("\n").map((l) => JSON.parse(l)).find((r) => r.caseId === "q1").metrics.f1
    expect(typeof written).toBe("number")
    expect(idx.columns[f1 * idx.cases + q1]).toBe(written)
  })

  it("tolerates blank lines and a torn last line in the records", async () => {
    const dir = copy(fx.correctnessA)
    const file = Path.join(dir, "records-iteration-1.jsonl")
    const lines = fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "")
    fs.writeFileSync(file, [lines[0], "", ...lines.slice(1), ""].join("\n") + lines[0]!.slice(0, 50))
    const idx = await index(dir)
    expect(idx.cases).toBe(12)
    for (const id of ["q1", "q2", "judge-fails-2"]) {
      const i = await run(lookupCase(idx, id))
      expect((await run(readRecord(idx, i)) as { caseId: string }).caseId).toBe(id)
    }
    const matches = await run(search(idx, "PHOBOS"))
    expect(matches[await run(lookupCase(idx, "q2"))]).toBe(1)
    expect(matches.reduce((s, x) => s + x, 0)).toBe(1)
  })

  it("indexes a run without per-case metrics from its records, and says why a run without either has no cases", async () => {
    const dir = copy(fx.correctnessA)
    fs.rmSync(Path.join(dir, "case-metrics-iteration-1.jsonl"))
    const idx = await index(dir)
    expect(idx.cases).toBe(12)
    expect(await run(lookupCase(idx, "q5"))).toBeGreaterThanOrEqual(0)
    fs.rmSync(Path.join(dir, "records-iteration-1.jsonl"))
    const none = await index(dir)
    expect(none.cases).toBe(0)
    expect(none.notes.join(" ")).toContain("no records yet")
  })

  it("gives each case its own journal lines of its iteration, a torn last line left out", async () => {
    const dir = copy(fx.correctnessA)
    fs.appendFileSync(Path.join(dir, "judgments.jsonl"), "{\"key\":\"abc\",\"caseId\":\"q1\",\"iter")
    const idx = await index(dir)
    await run(indexJournal(idx, Path.join(dir, "judgments.jsonl")))
    expect(idx.journal!.torn).toBe(true)
    for (const id of ["q1", HOSTILE_ID, "judge-fails-1"]) {
      const lines = await run(journalLines(idx, await run(lookupCase(idx, id))))
      expect(lines.length).toBeGreaterThan(0)
      for (const l of lines) expect(JSON.parse(l)).toMatchObject({ caseId: id, iteration: 1 })
    }
  })

  it("searches case-insensitively, through the JSON escapes of quotes and newlines", async () => {
    const idx = await index(fx.correctnessA)
    const count = async (q: string) => (await run(search(idx, q))).reduce((s, x) => s + x, 0)
    expect(await count("EIFFEL")).toBe(1)
    expect(await count("href=\"javascript:")).toBeGreaterThan(0)
    expect(await count("no such text anywhere")).toBe(0)
  })
})

/** A fake index of given per-case values of one metric "m" (NaN: null), for the queue. */
const fakeIndex = (ids: ReadonlyArray<string>, values: ReadonlyArray<number>): CaseIndex => {
  const n = ids.length
  const hashA = new Uint32Array(n)
  const hashB = new Uint32Array(n)
  ids.forEach((id, i) => {
    const [a, b] = hashId(id)
    hashA[i] = a
    hashB[i] = b
  })
  const byHash = Int32Array.from(ids.keys()).sort((x, y) => hashA[x]! - hashA[y]! || hashB[x]! - hashB[y]!)
  return {
    dir: "",
    iteration: 1,
    cases: n,
    metrics: [{ name: "m", description: "", min: 0, max: 1, direction: "higher", unit: "fraction" }],
    columns: Float64Array.from(values),
    status: new Uint8Array(n),
    line: new Int32Array(n),
    metricsOffset: new Float64Array(n),
    metricsLength: new Uint32Array(n),
    recordOffset: new Float64Array(n),
    recordLength: new Uint32Array(n),
    recordCase: new Int32Array(n),
    hashA,
    hashB,
    byHash,
    metricsFile: undefined,
    recordsFile: undefined,
    notes: [],
    verdictsReady: true,
    journal: undefined,
    journalFile: undefined
  }
}

describe("the review queue", () => {
  const ids = Array.from({ length: 100 }, (_, i) => `c${i}`)
  const values = ids.map((_, i) => i / 100)

  it("draws evenly from five strata of the metric, unlabelled cases only, the same for the same seed", () => {
    const idx = fakeIndex(ids, values)
    const labelled = new Set([0, 1, 2])
    const picks = reviewQueue({ index: idx, metric: "m", labelled, size: 10, seed: 3, iterations: [], judges: [] })
    expect(picks).toHaveLength(10)
    expect(picks.every((p) => !labelled.has(p.case))).toBe(true)
    const strata = picks.map((p) => Number(/stratum (\d)/.exec(p.reason)![1]))
    for (let s = 1; s <= 5; s++) expect(strata.filter((x) => x === s)).toHaveLength(2)
    for (const p of picks) {
      const s = Number(/stratum (\d)/.exec(p.reason)![1])
      // Stratum s holds the s-th fifth of the 97 unlabelled values.
      expect(p.value).toBeGreaterThanOrEqual((3 + Math.floor(((s - 1) * 97) / 5)) / 100 - 1e-9)
    }
    expect(reviewQueue({ index: idx, metric: "m", labelled, size: 10, seed: 3, iterations: [], judges: [] })).toEqual(
      picks
    )
  })

  it("puts first the cases where iterations disagree most, then where another judge does; no value is a stratum", () => {
    const idx = fakeIndex(ids, values.map((v, i) => (i === 99 ? NaN : v)))
    const other = fakeIndex(ids, values.map((v, i) => (i === 10 ? v + 0.5 : i === 20 ? v + 0.3 : v)))
    const judge = fakeIndex([...ids].reverse(), [...values].reverse().map((v, i) => (i === 49 ? v - 0.4 : v)))
    const picks = reviewQueue({
      index: idx,
      metric: "m",
      labelled: new Set(),
      size: 12,
      seed: 1,
      iterations: [{ index: other, name: "in iteration 2" }],
      judges: [{ index: judge, name: "by another judge" }]
    })
    expect(picks.slice(0, 2).map((p) => [p.case, p.kind])).toEqual([[10, "iterations"], [20, "iterations"]])
    // The other judge's index lists the cases in reverse: c50 is its 49th.
    expect(picks[2]).toMatchObject({ case: 50, kind: "judges" })
    expect(picks[2]!.reason).toContain("by another judge")
    expect(picks.some((p) => p.reason.startsWith("no m"))).toBe(true)
  })
})
