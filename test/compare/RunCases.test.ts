/**
 * A run read back for `compare` (`compare/RunCases.ts`): each case's value the mean of its non-null
 * values over the iterations read, cases in the order first read, a metric null everywhere left out,
 * a case twice in one file refused — from run directories written here (manifest and case-metrics
 * files, in a temp dir).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { caseRows, loadRunCases } from "../../src/compare/RunCases.js"
import { manifestText } from "../support/RunFiles.js"
import { tempDir } from "../support/RunPipeline.js"

const spec = (name: string) => ({
  name,
  description: name,
  min: 0,
  max: 1,
  direction: "higher" as const,
  unit: "fraction" as const
})

type Row = { readonly caseId: string; readonly metrics: Record<string, number | null> }

/** A run directory with `iterations` case-metrics files (rows as given, a line each). */
const writeRun = (files: ReadonlyArray<ReadonlyArray<Row | string>>, metrics = ["f1", "recall", "nuggets"]) => {
  const dir = Path.join(tempDir("rag-eval-runcases-"), "answer-correctness", "run")
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(
    Path.join(dir, "manifest.json"),
    manifestText({
      runId: "run",
      pipeline: { name: "answer-correctness" },
      iterations: files.length,
      caseMetricSpecs: metrics.map(spec)
    })
  )
  files.forEach((rows, k) =>
    fs.writeFileSync(
      Path.join(dir, `case-metrics-iteration-${k + 1}.jsonl`),
      rows.map((r, i) =>
        typeof r === "string"
          ? r
          : JSON.stringify({ caseId: r.caseId, line: i + 2, iteration: k + 1, metrics: r.metrics, failed: false })
      ).join("\n") + "\n"
    )
  )
  return dir
}

const load = (dir: string, iteration?: number) => Effect.runPromise(Effect.either(loadRunCases(dir, { iteration })))

describe("a run's cases for compare", () => {
  it("each case's value is the mean of its non-null values over the iterations; null when it has none", async () => {
    const dir = writeRun([
      [
        { caseId: "a", metrics: { f1: 0.5, recall: null, nuggets: null } },
        { caseId: "b", metrics: { f1: 0.25, recall: 1, nuggets: null } }
      ],
      [
        { caseId: "b", metrics: { f1: 0.75, recall: null, nuggets: null } },
        { caseId: "a", metrics: { f1: 0.1, recall: 0.5, nuggets: null } },
        // Only in the second iteration: after the cases of the first, in the order first read.
        { caseId: "c", metrics: { f1: 1 } }
      ]
    ])
    const read = await load(dir)
    if (Either.isLeft(read)) throw read.left
    const run = read.right
    expect([...run.cases.keys()]).toEqual(["a", "b", "c"])
    expect(run.cases.size).toBe(3)
    expect(run.cases.get("a")?.["f1"]).toBe((0.5 + 0.1) / 2)
    expect(run.cases.get("a")?.["recall"]).toBe(0.5)
    expect(run.cases.get("b")?.["f1"]).toBe((0.25 + 0.75) / 2)
    expect(run.cases.get("b")?.["recall"]).toBe(1)
    expect(run.cases.get("c")?.["f1"]).toBe(1)
    // c's rows name no recall: it has none.
    expect(run.cases.get("c")?.["recall"]).toBeNull()
    expect(run.cases.has("d")).toBe(false)
    expect(run.cases.get("d")).toBeUndefined()
    // nuggets is null for every case: nothing to compare, so not among the metrics.
    expect(run.metrics).toEqual(["f1", "recall"])
    expect(run.run.iterations).toEqual([1, 2])
    // A row as a whole: every metric the run has, and its value.
    expect({ ...run.cases.get("a") }).toEqual({ f1: (0.5 + 0.1) / 2, recall: 0.5, nuggets: null })
    expect([...run.cases.entries()].map(([id, row]) => [id, row["f1"]])).toEqual([
      ["a", 0.3],
      ["b", 0.5],
      ["c", 1]
    ])

    const second = await load(dir, 2)
    if (Either.isLeft(second)) throw second.left
    expect(second.right.cases.get("a")?.["f1"]).toBe(0.1)
    expect(second.right.cases.get("b")?.["recall"]).toBeNull()
    expect([...second.right.cases.keys()]).toEqual(["b", "a", "c"])
  })

  it("a case twice in one file is refused with the file, line and field; once in each of two files is not", async () => {
    const twice = writeRun([[
      { caseId: "a", metrics: { f1: 0.5 } },
      { caseId: "b", metrics: { f1: 0.5 } },
      { caseId: "a", metrics: { f1: 0.7 } }
    ]])
    const refused = await load(twice)
    expect(Either.isLeft(refused)).toBe(true)
    if (Either.isLeft(refused)) {
      expect(refused.left).toMatchObject({
        _tag: "InputError",
        file: Path.join(twice, "case-metrics-iteration-1.jsonl"),
        line: 3,
        field: "caseId",
        problem: "duplicate caseId \"a\""
      })
    }
    const onceEach = writeRun([[{ caseId: "a", metrics: { f1: 0.5 } }], [{ caseId: "a", metrics: { f1: 0.7 } }]])
    const read = await load(onceEach)
    expect(Either.isRight(read) && read.right.cases.get("a")?.["f1"]).toBe((0.5 + 0.7) / 2)
  })

  it("a line that is not a case-metrics row is refused with its line", async () => {
    const dir = writeRun([[{ caseId: "a", metrics: { f1: 0.5 } }, "{\"caseId\": 3}"]])
    const read = await load(dir)
    expect(Either.isLeft(read) && read.left).toMatchObject({ _tag: "InputError", line: 2 })
  })

  it("caseRows: a row reads its values when asked; keys, size and has are the positions'", () => {
    const asked: Array<string> = []
    const rows = caseRows(new Map([["x", 0], ["y", 1]]), ["m", "n"], (i, metric) => {
      asked.push(`${i}:${metric}`)
      return metric === "m" ? i / 2 : null
    })
    expect(rows.size).toBe(2)
    expect([...rows.keys()]).toEqual(["x", "y"])
    const y = rows.get("y")!
    expect(asked).toEqual([])
    expect(y["m"]).toBe(0.5)
    expect(y["n"]).toBeNull()
    expect(asked).toEqual(["1:m", "1:n"])
    expect(Object.keys(y)).toEqual(["m", "n"])
    expect("m" in y && !("z" in y)).toBe(true)
  })
})
