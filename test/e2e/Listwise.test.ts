/**
 * Listwise judging through the runner, in-process, on the sample test sets: one judge call per query
 * (over the fake OpenAI-compatible server), one journaled judgment per hit sharing the call's
 * tokens, fewer prompt tokens per judged hit than pointwise, resume and cache at list granularity,
 * and the heuristic judge grading exactly as pointwise.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { Judgment } from "../../src/domain/Judgment.js"
import type { Pipeline } from "../../src/engine/Pipeline.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import * as LlmJudge from "../../src/judges/LlmJudge.js"
import * as CourseRetrieval from "../../src/kinds/course/CourseRetrieval.js"
import type { GradedRecord } from "../../src/kinds/graded-hits/GradedHits.js"
import { type GradedRunSummary, means } from "../../src/kinds/graded-hits/RetrievalReport.js"
import { tokenSummary } from "../../src/kinds/graded-hits/RetrievalStats.js"

const perJudgedHit = (s: GradedRunSummary) => tokenSummary(s.tokens, s.extra.judged).perJudgedHit!.input
import * as SearchRelevance from "../../src/kinds/search/SearchRelevance.js"
import * as OpenAiProvider from "../../src/providers/OpenAiProvider.js"
import * as RateGate from "../../src/providers/RateGate.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { loadPipelineModule, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

const searches = Path.join(repoRoot, "test-sets", "search-relevance", "sample.jsonl")
const courses = Path.join(repoRoot, "test-sets", "course-retrieval", "sample.json")
/** Hits per query in the search-relevance sample (sr-008 retrieved nothing). */
const HITS = [5, 4, 4, 3, 3, 3, 3, 0]
const TOTAL_HITS = 25

const readLines = <A>(path: string) => fs.readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l) as A)

const llmJudge = (server: FakeOpenAi.FakeOpenAi) =>
  LlmJudge.layer({ maxRetries: 1 }).pipe(Layer.provide(Layer.merge(
    OpenAiProvider.layer({
      provider: "openai-compatible",
      model: "fake-judge",
      baseURL: server.url,
      apiKey: Redacted.make("k"),
      timeoutMs: 5_000,
      params: { temperature: 0 }
    }),
    RateGate.layer({ concurrency: 4 })
  )))

const searchPipeline = (listwise: boolean) =>
  Effect.map(Effect.promise(() => loadPipelineModule("search-relevance")), (p): Pipeline<unknown, unknown> => ({
    ...p,
    judge: SearchRelevance.judgeSearchHits("search-relevance/checklist", {
      listwise: listwise ? SearchRelevance.listwiseRubric : undefined
    })
  }))

describe("listwise judging", () => {
  it.scoped("search-relevance over the fake server: one call per query, one journaled judgment per hit, the call's tokens shared", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make()
      const outcome = yield* runWith(yield* searchPipeline(true), llmJudge(server), {
        input: searches,
        outRoot: tempDir()
      })
      expect(server.judgeCalls).toBe(HITS.filter((n) => n > 0).length)
      expect(outcome.judgments).toMatchObject({ total: TOTAL_HITS, ok: TOTAL_HITS, failed: 0 })
      const journal = readLines<Judgment>(Path.join(outcome.info.runDir, "judgments.jsonl"))
      expect(journal).toHaveLength(TOTAL_HITS)
      expect(new Set(journal.map((j) => j.criterion))).toEqual(new Set(["search-relevance/checklist-listwise"]))
      expect(new Set(journal.map((j) => j.key)).size).toBe(TOTAL_HITS)
      // Every call's reported prompt tokens, shared among its hits, add up to the judgments' total;
      // the run's total (what this invocation spent) also has the preflight's.
      const promptTokens = (requests: ReadonlyArray<FakeOpenAi.RecordedRequest>) =>
        requests.reduce(
          (s, r) => s + Math.ceil(r.body.messages!.reduce((n, m) => n + String(m.content).length, 0) / 4),
          0
        )
      const serverTokens = promptTokens(server.judgeRequests)
      expect(outcome.tokens.input).toBe(promptTokens(server.requests))
      expect(server.preflights).toBe(1)
      const records = readLines<GradedRecord>(Path.join(outcome.info.runDir, "records-iteration-1.jsonl"))
      expect(records.map((r) => r.hits.length)).toEqual(HITS)
      expect(records.flatMap((r) => r.hits).every((h) => h.grade === 3 && h.confidence === 5)).toBe(true)
      const summary = outcome.summaries[0] as GradedRunSummary
      expect(means(summary).ndcg).toBeCloseTo(7 / 8, 12)
      expect(perJudgedHit(summary)).toBeCloseTo(serverTokens / TOTAL_HITS, 12)
      const report = fs.readFileSync(Path.join(outcome.info.runDir, "report.md"), "utf8")
      expect(report).toContain("Judged listwise: the hits of a query in one call")
      expect(report).toContain("search-relevance/checklist-listwise")

      // Resume: everything from the journal, nothing called again.
      server.reset()
      const again = yield* runWith(yield* searchPipeline(true), llmJudge(server), {
        input: searches,
        outRoot: Path.dirname(Path.dirname(outcome.info.runDir))
      })
      expect(server.judgeCalls).toBe(0)
      expect(again.judgments).toMatchObject({ total: TOTAL_HITS, reused: TOTAL_HITS })
    }))

  it.scoped("fewer prompt tokens per judged hit than pointwise on the same sample (both shown in the report)", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make()
      const pointwise = yield* runWith(yield* searchPipeline(false), llmJudge(server), {
        input: searches,
        outRoot: tempDir()
      })
      const pointCalls = server.judgeCalls
      server.reset()
      const listwise = yield* runWith(yield* searchPipeline(true), llmJudge(server), {
        input: searches,
        outRoot: tempDir()
      })
      expect(pointCalls).toBe(TOTAL_HITS)
      expect(server.judgeCalls).toBe(7)
      const perHit = (o: typeof pointwise) => perJudgedHit(o.summaries[0] as GradedRunSummary)
      expect(perHit(listwise)).toBeLessThan(perHit(pointwise) / 2)
      expect(fs.readFileSync(Path.join(pointwise.info.runDir, "report.md"), "utf8")).toContain(
        "Judged pointwise: one call per hit"
      )
    }))

  it.scoped("the cache works per list: an edited hit re-judges its query's list (its grades were given in that context), the others come from the cache", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make()
      const out = tempDir()
      yield* runWith(yield* searchPipeline(true), llmJudge(server), { input: searches, outRoot: out, cache: true })
      const lines = fs.readFileSync(searches, "utf8").trim().split("\n")
      const first = JSON.parse(lines[0]!) as { hits: Array<{ text: string }> }
      first.hits[4]!.text += " (edited)"
      const edited = Path.join(tempDir(), "edited.jsonl")
      fs.writeFileSync(edited, [JSON.stringify(first), ...lines.slice(1)].join("\n") + "\n")
      server.reset()
      const outcome = yield* runWith(yield* searchPipeline(true), llmJudge(server), {
        input: edited,
        outRoot: out,
        cache: true
      })
      expect(server.judgeCalls).toBe(1)
      expect(outcome.judgments).toMatchObject({ total: TOTAL_HITS, cached: TOTAL_HITS - HITS[0]! })
    }))

  it.effect("course-retrieval with the heuristic judge: the same grades as pointwise, one journal entry per course", () =>
    Effect.gen(function*() {
      const pipeline = yield* Effect.promise(() => loadPipelineModule("course-retrieval"))
      const pointwise = yield* runWith(pipeline, HeuristicJudge.layer, { input: courses, outRoot: tempDir() })
      const listwise = yield* runWith(
        {
          ...pipeline,
          judge: CourseRetrieval.judgeCourses("course-retrieval/relevance", {
            listwise: CourseRetrieval.listwiseRubric
          })
        },
        HeuristicJudge.layer,
        { input: courses, outRoot: tempDir() }
      )
      expect(listwise.judgments).toMatchObject({ total: 39, ok: 39 })
      const grades = (o: typeof pointwise) =>
        readLines<GradedRecord>(Path.join(o.info.runDir, "records-iteration-1.jsonl")).map((r) =>
          r.hits.map((h) => h.grade)
        )
      expect(grades(listwise)).toEqual(grades(pointwise))
      expect(readLines<Judgment>(Path.join(listwise.info.runDir, "judgments.jsonl"))).toHaveLength(39)
      expect(means(listwise.summaries[0] as GradedRunSummary)).toEqual(
        means(pointwise.summaries[0] as GradedRunSummary)
      )
    }))

  it.effect("a pipeline that pairs a list with a pointwise rubric (or the reverse) is refused before anything is judged", () =>
    Effect.gen(function*() {
      const pipeline = yield* searchPipeline(false)
      const mismatched: Pipeline<unknown, unknown> = {
        ...pipeline,
        judge: SearchRelevance.judgeSearchHits("search-relevance/checklist", { listwise: "search-relevance/checklist" })
      }
      const out = tempDir()
      const error = yield* Effect.flip(runWith(mismatched, HeuristicJudge.layer, { input: searches, outRoot: out }))
      expect((error as Error).message).toContain("which has no item template (not a listwise rubric)")
      expect(fs.readdirSync(out)).toEqual([])
    }))
})
