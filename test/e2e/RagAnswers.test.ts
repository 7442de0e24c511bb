/**
 * The rag-answers pipeline end to end, in-process: the real shared CSV and our sample, with the
 * heuristic judge and with an LLM judge over the fake OpenAI-compatible server (real HTTP).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { RunSummary } from "../../src/engine/Pipeline.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import * as LlmJudge from "../../src/judges/LlmJudge.js"
import type { RubricRecord } from "../../src/kinds/rubric/RubricScore.js"
import type { RubricSummary } from "../../src/kinds/rubric/RubricSummary.js"
import * as OpenAiProvider from "../../src/providers/OpenAiProvider.js"
import * as RateGate from "../../src/providers/RateGate.js"
import { parseCsv } from "../support/Csv.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { hasShared, loadPipelineModule, repoRoot, runWith, sharedCsv, tempDir } from "../support/RunPipeline.js"

const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const DIMENSIONS = 6

/** The summary's statistics of the six dimensions (their rubric ids are the per-case metrics' names). */
const dimensions = (summary: RunSummary) =>
  Object.values(summary.metrics).filter((m) => m.name.startsWith("rag-answers/"))

describe("rag-answers with the heuristic judge", () => {
  it.effect.skipIf(!hasShared)("evaluates the real 25-row CSV from ../shared/data", () =>
    Effect.gen(function*() {
      const pipeline = yield* Effect.promise(() => loadPipelineModule("rag-answers"))
      const out = tempDir()
      const outcome = yield* runWith(pipeline, HeuristicJudge.layer, { input: sharedCsv, outRoot: out })
      expect(outcome.judgments).toMatchObject({ total: 25 * DIMENSIONS, ok: 25 * DIMENSIONS, failed: 0 })
      const summary = outcome.summaries[0] as RunSummary<RubricRecord, RubricSummary>
      expect(summary.cases).toBe(25)
      expect(dimensions(summary).map((d) => d.n)).toEqual(Array(DIMENSIONS).fill(25))
      expect(summary.metrics.composite!.n).toBe(25)

      const dir = outcome.info.runDir
      const csv = parseCsv(fs.readFileSync(Path.join(dir, "report.csv"), "utf8"))
      expect(csv).toHaveLength(26)
      // The case id and input line first, whatever the input had; then the input's columns.
      expect(csv[0]!.slice(0, 6)).toEqual([
        "case_id",
        "line",
        "Current User Question",
        "Conversation History",
        "Fragment Texts",
        "Assistant Answer"
      ])
      expect(csv[1]!.slice(0, 2)).toEqual(["1", "2"])
      expect(csv[25]![1]).toMatch(/^\d+$/)
      expect(csv[0]).toContain("Composite")
      expect(csv[0]).toContain("Groundedness")
      // The input columns pass through unchanged, in input order.
      expect(csv[1]![2]).toBe("What are the benefits of using renewable energy?")
      const md = fs.readFileSync(Path.join(dir, "report.md"), "utf8")
      for (
        const heading of [
          "## Run parameters",
          "## Criteria",
          "## Headline metrics",
          "## Results by dimension",
          "## Lowest composite (5)",
          "## Per-case details"
        ]
      ) {
        expect(md).toContain(heading)
      }
      expect(md).toContain("heuristic judge")
      const manifest = JSON.parse(fs.readFileSync(Path.join(dir, "manifest.json"), "utf8"))
      expect(manifest.status).toBe("complete")
      expect(manifest.prompts).toHaveLength(DIMENSIONS)
      expect(manifest.input.sha256).toMatch(/^[0-9a-f]{64}$/)
      expect(fs.readFileSync(Path.join(dir, "judgments.jsonl"), "utf8").trim().split("\n")).toHaveLength(
        25 * DIMENSIONS
      )
    }))

  it.effect("evaluates the project's sample; harmful and hallucinated answers rank lowest", () =>
    Effect.gen(function*() {
      const pipeline = yield* Effect.promise(() => loadPipelineModule("rag-answers"))
      const out = tempDir()
      const outcome = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: out })
      const summary = outcome.summaries[0] as RunSummary<RubricRecord, RubricSummary>
      expect(summary.cases).toBe(12)
      // The bomb-making answer is zeroed by the harmfulness gate.
      const records = fs.readFileSync(Path.join(outcome.info.runDir, "records-iteration-1.jsonl"), "utf8").trim().split(
        "\n"
      ).map((l) => JSON.parse(l) as RubricRecord)
      const bomb = records.find((r) => r.question.includes("bomb"))!
      expect(bomb.composite).toBe(0)
      expect(bomb.gate).toBe("zeroed")
      expect(summary.extra.gated.zeroed).toBeGreaterThanOrEqual(1)
      // Records keep input order.
      expect(records.map((r) => r.ordinal)).toEqual([...Array(12).keys()])
      const good = records.find((r) => r.question.includes("capital of Australia"))!
      expect(good.composite!).toBeGreaterThan(
        records.find((r) => r.question.includes("Pride and Prejudice"))!.composite!
      )
    }))

  it.effect("--limit and two identical runs give byte-identical results files", () =>
    Effect.gen(function*() {
      const pipeline = yield* Effect.promise(() => loadPipelineModule("rag-answers"))
      const out = tempDir()
      const files = ["report.md", "report.csv", "report.json", "summary.json", "records-iteration-1.jsonl"]
      const a = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: out, limit: 5 })
      expect(a.info.input.cases).toBe(5)
      const first = files.map((f) => fs.readFileSync(Path.join(a.info.runDir, f), "utf8"))
      const b = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: out, limit: 5, fresh: true })
      expect(b.info.runId).toBe(a.info.runId)
      expect(files.map((f) => fs.readFileSync(Path.join(b.info.runDir, f), "utf8"))).toEqual(first)
    }))
})

describe("rag-answers with an LLM judge over the fake OpenAI-compatible server", () => {
  const llm = (url: string, key: string) =>
    LlmJudge.layer({ maxRetries: 3 }).pipe(Layer.provide(Layer.merge(
      OpenAiProvider.layer({
        provider: "openai-compatible",
        model: "fake-judge",
        baseURL: url,
        apiKey: Redacted.make(key),
        timeoutMs: 5_000,
        params: { seed: 7, temperature: 0 }
      }),
      RateGate.layer({ concurrency: 8 })
    )))

  it.scoped.skipIf(!hasShared)(
    "judges every dimension of the 25 rows: one call each, seed and temperature sent, key never written",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeOpenAi.make()
        const pipeline = yield* Effect.promise(() => loadPipelineModule("rag-answers"))
        const key = "sk-test-SECRET-abc123"
        const outcome = yield* runWith(pipeline, llm(server.url, key), { input: sharedCsv, outRoot: tempDir() })
        expect(server.judgeCalls).toBe(25 * DIMENSIONS)
        expect(outcome.judgments.failed).toBe(0)
        expect(server.requests.every((r) => r.body.seed === 7 && r.body.temperature === 0)).toBe(true)
        expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${key}`)
        // The fake answers the maximum of each scale: every composite is 1.
        const summary = outcome.summaries[0] as RunSummary<RubricRecord, RubricSummary>
        expect(summary.metrics.composite!.mean).toBeCloseTo(1, 12)
        expect(summary.tokens.input).toBeGreaterThan(0)
        for (const f of fs.readdirSync(outcome.info.runDir)) {
          expect(fs.readFileSync(Path.join(outcome.info.runDir, f), "utf8")).not.toContain(key)
        }
      })
  )

  it.scoped("a judge that always answers malformed JSON is recorded as failed with its raw text, never scored 0", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make({ faults: { malformed: 1 } })
      const pipeline = yield* Effect.promise(() => loadPipelineModule("rag-answers"))
      const outcome = yield* runWith(pipeline, llm(server.url, "k"), {
        input: sample,
        outRoot: tempDir(),
        limit: 2,
        maxFailures: 100
      })
      expect(outcome.judgments.failed).toBe(2 * DIMENSIONS)
      const summary = outcome.summaries[0] as RunSummary<RubricRecord, RubricSummary>
      expect(summary.metrics.composite!.n).toBe(0)
      expect(summary.cases).toBe(2)
      expect(dimensions(summary).every((d) => d.mean === null)).toBe(true)
      const md = fs.readFileSync(Path.join(outcome.info.runDir, "report.md"), "utf8")
      expect(md).toContain("## Failed judgments (12)")
    }))
})
