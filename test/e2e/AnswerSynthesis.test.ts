/**
 * The answer-synthesis pipeline end to end, in-process: the project's sample test set with the
 * heuristic judge, and with an LLM judge over the fake OpenAI-compatible server (real HTTP).
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Redacted, Stream } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { InputError } from "../../src/domain/Errors.js"
import type { RunSummary } from "../../src/engine/Pipeline.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import * as LlmJudge from "../../src/judges/LlmJudge.js"
import { lowScoreAnalysis } from "../../src/kinds/synthesis/LowScores.js"
import type { SynthesisRecord } from "../../src/kinds/synthesis/SynthesisScore.js"
import type { SynthesisSummary } from "../../src/kinds/synthesis/SynthesisSummary.js"
import { readRows } from "../../src/load/Rows.js"
import * as OpenAiProvider from "../../src/providers/OpenAiProvider.js"
import * as RateGate from "../../src/providers/RateGate.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { loadPipelineModule, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

const sample = Path.join(repoRoot, "test-sets", "answer-synthesis", "sample.json")
const CASES = 11

const readRecords = (runDir: string, iteration = 1) =>
  fs.readFileSync(Path.join(runDir, `records-iteration-${iteration}.jsonl`), "utf8").trim().split("\n").map((l) =>
    JSON.parse(l) as SynthesisRecord
  )

const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length

describe("answer-synthesis with the heuristic judge", () => {
  it.effect("evaluates the sample: summary numbers agree with the records", () =>
    Effect.gen(function*() {
      const pipeline = yield* Effect.promise(() => loadPipelineModule("answer-synthesis"))
      const outcome = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: tempDir() })
      expect(outcome.judgments).toMatchObject({ total: 2 * CASES, ok: 2 * CASES, failed: 0 })
      const summary = outcome.summaries[0] as RunSummary<SynthesisRecord, SynthesisSummary>
      const records = readRecords(outcome.info.runDir)
      expect(records.map((r) => r.caseId)).toEqual(
        [...Array(CASES).keys()].map((i) => `ql-${String(i + 1).padStart(3, "0")}`)
      )

      const f = records.map((r) => r.faithfulness!)
      const c = records.map((r) => r.completeness!)
      const m = summary.metrics
      expect(summary.cases).toBe(CASES)
      expect(m.faithfulness!.mean).toBeCloseTo(mean(f), 12)
      expect(m.completeness!.mean).toBeCloseTo(mean(c), 12)
      expect(m.faithfulnessPassRate!.mean).toBeCloseTo(f.filter((x) => x >= 4).length / CASES, 12)
      expect(m.completenessPassRate!.mean).toBeCloseTo(c.filter((x) => x >= 4).length / CASES, 12)
      const passed = records.filter((r) => r.faithfulness! >= 4 && r.completeness! >= 4).length
      expect(records.map((r) => r.pass)).toEqual(records.map((r) => r.faithfulness! >= 4 && r.completeness! >= 4))
      expect(m.overall!.n).toBe(CASES)
      expect(summary.extra).toMatchObject({ passed, failed: CASES - passed, undecided: 0 })
      expect(m.overallPassRate!.mean).toBeCloseTo(passed / CASES, 12)
      expect(m.overall!.mean).toBeCloseTo(mean(records.map((r) => (r.faithfulness! + r.completeness!) / 2)), 12)
      expect(summary.extra.lowScores).toEqual(lowScoreAnalysis(records))
      const groupCount = (id: string) => summary.extra.lowScores.groups.find((g) => g.id === id)!.count
      expect(groupCount("faithfulness-1") + groupCount("faithfulness-2") + groupCount("faithfulness-3")).toBe(
        f.filter((x) => x < 4).length
      )
      expect(groupCount("completeness-low")).toBe(c.filter((x) => x < 4).length)

      // The sample's intent shows through even a lexical judge.
      const byId = new Map(records.map((r) => [r.caseId, r]))
      expect(byId.get("ql-001")!.pass).toBe(true)
      expect(byId.get("ql-003")!.faithfulness).toBeLessThanOrEqual(2) // hallucinated course
      expect(byId.get("ql-005")!.completeness).toBe(1) // bare list of codes
      expect(byId.get("ql-008")!.completeness).toBe(1) // "nothing relevant" although BUS120 matched
      expect(byId.get("ql-009")!.completeness).toBeGreaterThanOrEqual(4) // persuasive…
      expect(byId.get("ql-009")!.pass).toBe(false) // …but unfaithful
      expect(byId.get("ql-010")!.context).toEqual(["Sustainability and Climate Change (ENV101)"])
    }))

  it.effect("writes the markdown report and the CSV", () =>
    Effect.gen(function*() {
      const pipeline = yield* Effect.promise(() => loadPipelineModule("answer-synthesis"))
      const outcome = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: tempDir() })
      const dir = outcome.info.runDir
      const md = fs.readFileSync(Path.join(dir, "report.md"), "utf8")
      for (
        const heading of [
          "# Answer synthesis evaluation",
          "## Run parameters",
          "## Rubrics",
          "### Faithfulness (1–5",
          "### Completeness (1–5",
          "## Headline metrics",
          "## Results by dimension",
          "## Low-score analysis",
          "## Per-case details"
        ]
      ) {
        expect(md).toContain(heading)
      }
      expect(md).toContain("heuristic judge")
      expect(md).toContain("| 1 | Completely false |")
      expect(md).toContain("**Recommendations**")
      expect(md).toMatch(/### Completely false — \d+ cases?/)
      expect(md).toContain("Sustainability and Climate Change (ENV101)")
      const csvText = fs.readFileSync(Path.join(dir, "report.csv"), "utf8")
      expect(csvText.slice(0, csvText.indexOf("\r\n"))).toBe(
        "case_id,line,queryLogId,question,answer,faithfulness,completeness,overall,pass,faithfulness reason,completeness reason"
      )
      const rows = yield* Stream.runCollect(readRows(Path.join(dir, "report.csv"))).pipe(
        Effect.map(Chunk.toReadonlyArray)
      )
      const records = readRecords(dir)
      expect(rows).toHaveLength(CASES)
      expect(rows.map((r) => r.values)).toEqual(records.map((r) => ({
        case_id: r.caseId,
        line: String(r.line),
        queryLogId: r.caseId,
        question: r.question,
        answer: r.answer,
        faithfulness: String(r.faithfulness),
        completeness: String(r.completeness),
        overall: String(r.overall),
        pass: r.pass ? "pass" : "fail",
        "faithfulness reason": r.reasons.faithfulness,
        "completeness reason": r.reasons.completeness
      })))
      const manifest = JSON.parse(fs.readFileSync(Path.join(dir, "manifest.json"), "utf8"))
      expect(manifest.prompts.map((p: { id: string }) => p.id)).toEqual([
        "answer-synthesis/faithfulness",
        "answer-synthesis/completeness"
      ])
    }))

  it.effect("the same cases as JSONL give the same records", () =>
    Effect.gen(function*() {
      const pipeline = yield* Effect.promise(() => loadPipelineModule("answer-synthesis"))
      const dir = tempDir()
      const jsonl = Path.join(dir, "sample.jsonl")
      const cases = (JSON.parse(fs.readFileSync(sample, "utf8")) as { cases: ReadonlyArray<unknown> }).cases
      fs.writeFileSync(jsonl, cases.map((c) => JSON.stringify(c)).join("\n") + "\n")
      const a = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: dir })
      const b = yield* runWith(pipeline, HeuristicJudge.layer, { input: jsonl, outRoot: dir })
      const strip = (rs: ReadonlyArray<SynthesisRecord>) => rs.map(({ line: _line, ...r }) => r)
      expect(strip(readRecords(b.info.runDir))).toEqual(strip(readRecords(a.info.runDir)))
    }))

  it.effect("bad input fails before any judgment, naming the line and field", () =>
    Effect.gen(function*() {
      const pipeline = yield* Effect.promise(() => loadPipelineModule("answer-synthesis"))
      const dir = tempDir()
      const bad = Path.join(dir, "bad.jsonl")
      fs.writeFileSync(
        bad,
        [
          JSON.stringify({ queryLogId: "a", question: "q?", answer: "x", context: [] }),
          JSON.stringify({ queryLogId: "b", question: "q?", answer: "x", context: "CS101" })
        ].join("\n")
      )
      const error =
        (yield* Effect.flip(runWith(pipeline, HeuristicJudge.layer, { input: bad, outRoot: dir }))) as InputError
      expect(error).toMatchObject({ _tag: "InputError", file: bad, line: 2, field: "context" })
      expect(fs.existsSync(Path.join(dir, "answer-synthesis"))).toBe(false)
    }))
})

describe("answer-synthesis with an LLM judge over the fake OpenAI-compatible server", () => {
  const llm = (url: string) =>
    LlmJudge.layer({ maxRetries: 2 }).pipe(Layer.provide(Layer.merge(
      OpenAiProvider.layer({
        provider: "openai-compatible",
        model: "fake-judge",
        baseURL: url,
        apiKey: Redacted.make("k"),
        timeoutMs: 5_000,
        params: { seed: 7, temperature: 0 }
      }),
      RateGate.layer({ concurrency: 8 })
    )))

  /** A fake judge that finds the hallucinated course AI450 unfaithful and everything else perfect. */
  const strictAboutAi450 = (request: FakeOpenAi.RecordedRequest) => {
    const user = String(request.body.messages?.find((m) => m.role === "user")?.content ?? "")
    const faithfulness = request.body.response_format?.json_schema?.name?.includes("faithfulness") === true
    return faithfulness && user.includes("AI450")
      ? JSON.stringify({ reasoning: "AI450 and AI470 are not in the context: pure hallucination.", score: 1 })
      : JSON.stringify({ reasoning: "fake judge: fine.", score: 5 })
  }

  it.scoped("two calls per case with question, context and answer as data; the judge's reasons reach the low-score analysis", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make({ answer: strictAboutAi450 })
      const pipeline = yield* Effect.promise(() => loadPipelineModule("answer-synthesis"))
      const outcome = yield* runWith(pipeline, llm(server.url), { input: sample, outRoot: tempDir() })
      expect(server.judgeCalls).toBe(2 * CASES)
      const user = String(server.judgeRequests[0]!.body.messages?.find((m) => m.role === "user")?.content)
      expect(user).toMatch(/<data name="question">\n.+\n<\/data>/)
      expect(user).toContain("<data name=\"context\">\n[1] ")
      expect(user).toContain("Matched learning outcomes:")
      const summary = outcome.summaries[0] as RunSummary<SynthesisRecord, SynthesisSummary>
      expect(summary.extra).toMatchObject({ passed: CASES - 1, failed: 1, undecided: 0 })
      expect(summary.metrics.faithfulness!.mean).toBeCloseTo((5 * (CASES - 1) + 1) / CASES, 12)
      const f1 = summary.extra.lowScores.groups.find((g) => g.id === "faithfulness-1")!
      expect(f1.count).toBe(1)
      expect(f1.examples[0]).toMatchObject({
        caseId: "ql-003",
        reason: "AI450 and AI470 are not in the context: pure hallucination."
      })
      expect(summary.tokens.input).toBeGreaterThan(0)
      const md = fs.readFileSync(Path.join(outcome.info.runDir, "report.md"), "utf8")
      expect(md).toContain("AI450 and AI470 are not in the context")
    }))

  it.scoped("malformed judge output: scores stay empty, cases are undecided — not passes, not fails", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make({ faults: { malformed: 1 } })
      const pipeline = yield* Effect.promise(() => loadPipelineModule("answer-synthesis"))
      const outcome = yield* runWith(pipeline, llm(server.url), {
        input: sample,
        outRoot: tempDir(),
        limit: 3,
        maxFailures: 100
      })
      expect(outcome.judgments.failed).toBe(6)
      const summary = outcome.summaries[0] as RunSummary<SynthesisRecord, SynthesisSummary>
      expect(summary.metrics.overall).toMatchObject({ n: 0, mean: null })
      expect(summary.metrics.overallPassRate).toMatchObject({ n: 0, mean: null })
      expect(summary.extra).toMatchObject({ passed: 0, failed: 0, undecided: 3 })
      expect(summary.metrics.faithfulness).toMatchObject({ n: 0, mean: null })
      expect(summary.metrics.faithfulnessPassRate).toMatchObject({ n: 0, mean: null })
      expect(summary.cases).toBe(3)
      expect(summary.extra.lowScores.groups.every((g) => g.count === 0)).toBe(true)
      const csv = fs.readFileSync(Path.join(outcome.info.runDir, "report.csv"), "utf8")
      expect(csv).toContain(",,,,unknown,judge_failed: ")
      const md = fs.readFileSync(Path.join(outcome.info.runDir, "report.md"), "utf8")
      expect(md).toContain("3 undecided because a judgment failed")
      expect(md).toContain("## Failed judgments (6)")
    }))
})
