import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { readRunGrades } from "../../src/calibrate/RunGrades.js"
import { manifestText } from "../support/RunFiles.js"
import { tempDir } from "../support/RunPipeline.js"

const judgment = (caseId: string, target: string, score: number | null, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    key: `${caseId}-${target}-${String(extra["iteration"] ?? 1)}`,
    caseId,
    ordinal: 0,
    iteration: 1,
    criterion: "search-relevance/checklist",
    target,
    status: score === null ? "failed" : "ok",
    score,
    reason: "r",
    usage: { inputTokens: 0, outputTokens: 0 },
    attempts: 1,
    latencyMs: 1,
    provider: "heuristic",
    model: "lexical-v3",
    ...extra
  })

const makeRun = (
  lines: ReadonlyArray<string>,
  options: { pipeline?: string; iterations?: number; records?: ReadonlyArray<unknown>; raw?: string } = {}
) => {
  const dir = tempDir("calibrate-run-")
  fs.writeFileSync(
    Path.join(dir, "manifest.json"),
    manifestText({
      runId: "abc123",
      pipeline: { name: options.pipeline ?? "search-relevance" },
      iterations: options.iterations ?? 1,
      judge: { provider: "fake", model: "fake", label: "test judge", params: {} },
      prompts: [{ id: "search-relevance/checklist", version: "1", hash: "0", path: Path.join(dir, "prompt.json") }]
    })
  )
  fs.writeFileSync(Path.join(dir, "prompt.json"), JSON.stringify({ name: "Search relevance (checklist)" }))
  fs.writeFileSync(Path.join(dir, "judgments.jsonl"), options.raw ?? lines.map((l) => `${l}\n`).join(""))
  if (options.records !== undefined) {
    fs.writeFileSync(
      Path.join(dir, "records-iteration-1.jsonl"),
      options.records.map((r) => `${JSON.stringify(r)}\n`).join("")
    )
  }
  return dir
}

const read = (dir: string, iteration?: number) => Effect.runPromise(Effect.either(readRunGrades(dir, { iteration })))

const ok = async (dir: string, iteration?: number) => {
  const result = await read(dir, iteration)
  if (Either.isLeft(result)) throw new Error(result.left.message)
  return result.right
}

describe("a run's judged grades from its journal", () => {
  it("per-hit judgments: criterion relevance, query = case id, item = doc id; latest line wins; failed is null", async () => {
    const dir = makeRun([
      judgment("q1", "hit:a", 1),
      judgment("q1", "hit:b", null),
      judgment("q1", "hit:a", 3),
      judgment("q2", "hit:c", 0)
    ])
    const run = await ok(dir)
    expect(run.kind).toBe("retrieval")
    expect(run.run).toMatchObject({
      runId: "abc123",
      pipeline: "search-relevance",
      judge: "test judge",
      iteration: 1,
      iterations: 1
    })
    const q1 = run.grades.get("relevance")!.get("q1")!
    expect([...q1.entries()]).toEqual([["a", { grade: 3, line: 3 }], ["b", { grade: null, line: 2 }]])
    expect(run.rubrics.get("relevance")).toEqual(["search-relevance/checklist"])
    expect(run.rubricNames.get("search-relevance/checklist")).toBe("Search relevance (checklist)")
    expect(run.judgmentLines).toBe(4)
    expect(run.order).toBe("journal")
  })

  it("skips other record kinds and non-judgment lines, and other iterations", async () => {
    const dir = makeRun([
      JSON.stringify({
        kind: "repair",
        key: "k",
        caseId: "q1",
        iteration: 1,
        criterion: "c",
        target: "hit:z",
        status: "ok",
        score: 2
      }),
      judgment("q1", "hit:a", 2),
      JSON.stringify({ something: "else" }),
      judgment("q1", "hit:a", 0, { iteration: 2 })
    ], { iterations: 2 })
    const first = await ok(dir)
    expect([...first.grades.get("relevance")!.get("q1")!.entries()]).toEqual([["a", { grade: 2, line: 2 }]])
    expect(first.otherLines).toBe(2)
    const second = await ok(dir, 2)
    expect(second.grades.get("relevance")!.get("q1")!.get("a")).toEqual({ grade: 0, line: 4 })
  })

  it("orders each query's hits by the records' ranks when they exist", async () => {
    const dir = makeRun([judgment("q1", "hit:b", 1), judgment("q1", "hit:a", 2), judgment("q1", "hit:c", 0)], {
      records: [{ caseId: "q1", hits: [{ id: "a", rank: 1 }, { id: "c", rank: 3 }, { id: "b", rank: 2 }] }]
    })
    const run = await ok(dir)
    expect(run.order).toBe("records")
    expect([...run.grades.get("relevance")!.get("q1")!.keys()]).toEqual(["a", "b", "c"])
  })

  it("answer judgments: criterion = rubric id, item \"\"", async () => {
    const dir = makeRun([judgment("1", "answer", 2, { criterion: "rag-answers/groundedness" })], {
      pipeline: "rag-answers"
    })
    const run = await ok(dir)
    expect(run.kind).toBe("rubric")
    expect(run.grades.get("rag-answers/groundedness")!.get("1")!.get("")).toEqual({ grade: 2, line: 1 })
  })

  it("a torn last line is dropped; a bad line before the end is an InputError naming the line", async () => {
    const torn = makeRun([], { raw: `${judgment("q1", "hit:a", 2)}\n{"key":"x","caseId":"q1","ite` })
    const run = await ok(torn)
    expect(run.tornLastLine).toBe(true)
    expect(run.grades.get("relevance")!.get("q1")!.size).toBe(1)
    const damaged = makeRun([], { raw: `${judgment("q1", "hit:a", 2)}\n{broken\n${judgment("q1", "hit:b", 2)}\n` })
    const result = await read(damaged)
    expect(Either.isLeft(result) && result.left.message).toMatch(
      /judgments\.jsonl:2: not valid JSON .*the journal is damaged/
    )
  })

  it("usage problems: not a run directory, an iteration the run does not have", async () => {
    const empty = tempDir()
    const notRun = await read(empty)
    expect(Either.isLeft(notRun) && notRun.left._tag).toBe("UsageError")
    expect(Either.isLeft(notRun) && notRun.left.message).toMatch(/not a run directory/)
    const dir = makeRun([judgment("q1", "hit:a", 2)])
    const bad = await read(dir, 3)
    expect(Either.isLeft(bad) && bad.left.message).toBe("--iteration 3: run abc123 has iteration(s) 1–1")
    const missing = await read(Path.join(empty, "nope"))
    expect(Either.isLeft(missing) && missing.left._tag).toBe("InputError")
  })
})
