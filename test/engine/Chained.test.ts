/**
 * Chained judgments: a judge stage whose second round is built from its first round's results
 * (test/fixtures/toy-chain/toy-chain.ts: "extract", then "check" the extraction). Each judgment is
 * keyed by its own inputs, so every path treats the rounds like any judgment: the sync loop and the
 * ordered pool, the journal and resume (a kill -9 between the rounds pays for nothing twice), the
 * cache, `--batch` (a batch per round), `--cluster`, `--dry-run` and `report`.
 */
import { it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect } from "vitest"
import type { Pipeline } from "../../src/engine/Pipeline.js"
import type { BatchOptions } from "../../src/engine/RunTypes.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { judgeLayer } from "../../src/judges/JudgeSettings.js"
import { defaultPromptsDir } from "../../src/judges/Prompt.js"
import * as BatchApi from "../../src/providers/BatchApi.js"
import toyChain from "../fixtures/toy-chain/toy-chain.js"
import { start, waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { onInMemoryCluster } from "../support/InMemoryCluster.js"
import { estimateWith, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

const fixture = Path.join(repoRoot, "test", "fixtures", "toy-chain")
const pipelineFile = Path.join(fixture, "toy-chain.ts")
const promptDirs = [Path.join(fixture, "prompts"), defaultPromptsDir]
const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const CASES = 12
const pipeline = toyChain as Pipeline<unknown, unknown>

/** The first step's answer names the case it read (so the second step's prompt differs per case); the check answers 2. */
const chainAnswer = (request: FakeOpenAi.RecordedRequest) => {
  const system = String(request.body.messages?.find((m) => m.role === "system")?.content ?? "")
  const user = String(request.body.messages?.find((m) => m.role === "user")?.content ?? "")
  if (!system.includes("EXTRACT STEP")) return FakeOpenAi.defaultAnswer(request)
  let h = 0
  for (let i = 0; i < user.length; i++) h = (h * 31 + user.charCodeAt(i)) >>> 0
  return JSON.stringify({ reasoning: `extracted fact #${h.toString(16)}`, score: 1 + (h % 2) })
}
const isCheck = (request: FakeOpenAi.RecordedRequest) =>
  String(request.body.messages?.find((m) => m.role === "system")?.content ?? "").includes("CHECK STEP")
const userOf = (request: FakeOpenAi.RecordedRequest) =>
  String(request.body.messages?.find((m) => m.role === "user")?.content ?? "")

interface Line {
  readonly key: string
  readonly kind?: string
  readonly criterion: string
  readonly caseId: string
  readonly status: string
  readonly reason: string
  readonly score: number | null
}
const journal = (runDir: string) =>
  fs.readFileSync(Path.join(runDir, "judgments.jsonl"), "utf8").trim().split("\n").filter((l) => l !== "").map((l) =>
    JSON.parse(l) as Line
  )
/** Records without token and latency figures (they differ between modes; the grades must not). */
const grades = (runDir: string) =>
  fs.readFileSync(Path.join(runDir, "records-iteration-1.jsonl"), "utf8").trim().split("\n").map((l) =>
    JSON.parse(l, (k, v) => (k === "tokens" || k === "latencyMs" ? undefined : v)) as unknown
  )

const llm = (url: string) =>
  judgeLayer({
    provider: "openai-compatible",
    model: "fake",
    baseUrl: url,
    concurrency: 4,
    timeoutMs: 5_000,
    maxRetries: 1,
    preflight: false
  })

describe("chained judgments (a two-step toy pipeline)", () => {
  it.effect("the heuristic judge (sync path): two rounds per case, the second built from the first; a re-run reuses both", () =>
    Effect.gen(function*() {
      const out = tempDir()
      const outcome = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: out, promptDirs })
      expect(outcome.judgments).toMatchObject({ total: 2 * CASES, ok: 2 * CASES, failed: 0 })
      const lines = journal(outcome.info.runDir)
      expect(lines.filter((l) => l.criterion === "toy/extract")).toHaveLength(CASES)
      expect(lines.filter((l) => l.criterion === "toy/check")).toHaveLength(CASES)
      expect(new Set(lines.map((l) => l.key)).size).toBe(2 * CASES)
      const records = grades(outcome.info.runDir) as ReadonlyArray<
        { dimensions: ReadonlyArray<{ criterion: string; status: string }> }
      >
      expect(records).toHaveLength(CASES)
      for (const r of records) {
        expect(r.dimensions.map((d) => [d.criterion, d.status])).toEqual([["toy/extract", "ok"], ["toy/check", "ok"]])
      }
      // A second run of the same command reuses both rounds from the journal.
      const again = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: out, promptDirs })
      expect(again.judgments).toMatchObject({ total: 2 * CASES, reused: 2 * CASES })
      expect(grades(again.info.runDir)).toEqual(records)
    }))

  it.scopedLive("an LLM judge (the ordered pool): the check's prompt carries its case's extraction; each judgment asked once; the cache serves a new run", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make({ answer: chainAnswer })
      const out = tempDir()
      const outcome = yield* runWith(pipeline, llm(server.url), {
        input: sample,
        outRoot: out,
        promptDirs,
        cache: true
      })
      expect(outcome.judgments).toMatchObject({ total: 2 * CASES, ok: 2 * CASES })
      expect(server.judgeCalls).toBe(2 * CASES)
      const extracts = new Map(
        journal(outcome.info.runDir).filter((l) => l.criterion === "toy/extract").map((l) => [l.caseId, l])
      )
      const checks = server.judgeRequests.filter(isCheck)
      expect(checks).toHaveLength(CASES)
      // Every check request quotes one case's extraction, and every case's extraction is quoted once.
      const quoted = checks.map((r) =>
        [...extracts.values()].filter((e) => userOf(r).includes(e.reason)).map((e) => e.caseId)
      )
      for (const q of quoted) expect(q).toHaveLength(1)
      expect(new Set(quoted.flat()).size).toBe(CASES)
      // A fresh run over the same cache: no call.
      server.reset()
      const cached = yield* runWith(pipeline, llm(server.url), {
        input: sample,
        outRoot: out,
        promptDirs,
        cache: true,
        runId: "again"
      })
      expect(server.judgeCalls).toBe(0)
      expect(cached.judgments).toMatchObject({ total: 2 * CASES, cached: 2 * CASES })
      expect(grades(cached.info.runDir)).toEqual(grades(outcome.info.runDir))
    }))

  it.scopedLive("--batch: one batch per round, no synchronous call; the records of a synchronous run", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make({ answer: chainAnswer })
      const sync = yield* runWith(pipeline, llm(server.url), { input: sample, outRoot: tempDir(), promptDirs })
      server.reset()
      const batch: BatchOptions = {
        api: BatchApi.make({ flavour: "openai", baseURL: server.url, apiKey: Redacted.make("k"), model: "fake" }),
        repair: "batch",
        detach: false,
        pollMs: 5,
        maxPollMs: 20,
        maxRequests: 50_000,
        maxBytes: 200 * 1024 * 1024
      }
      const batched = yield* runWith(pipeline, llm(server.url), {
        input: sample,
        outRoot: tempDir(),
        promptDirs,
        batch
      })
      expect(server.judgeCalls).toBe(0)
      expect(server.batches.map((b) => b.requests)).toEqual([CASES, CASES])
      expect(batched.judgments).toMatchObject({ total: 2 * CASES, ok: 2 * CASES })
      expect(grades(batched.info.runDir)).toEqual(grades(sync.info.runDir))
    }))

  it.scopedLive("--cluster (in-memory runners): the records of a local run, every judgment asked once", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make({ answer: chainAnswer })
      const local = yield* runWith(pipeline, llm(server.url), { input: sample, outRoot: tempDir(), promptDirs })
      server.reset()
      const clustered = yield* onInMemoryCluster(
        server.url,
        runWith(pipeline, llm(server.url), { input: sample, outRoot: tempDir(), promptDirs })
      )
      expect(server.judgeCalls).toBe(2 * CASES)
      expect(clustered.judgments).toMatchObject({ total: 2 * CASES, ok: 2 * CASES })
      expect(grades(clustered.info.runDir)).toEqual(grades(local.info.runDir))
    }))

  it.scopedLive("--dry-run prices both rounds before anything is judged, and only what is left once the first round is in the journal", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.make({ answer: chainAnswer })
      const out = tempDir()
      const dryRun = () => estimateWith(pipeline, llm(server.url), { input: sample, outRoot: out, promptDirs })
      const before = yield* dryRun()
      expect(before).toMatchObject({ calls: 2 * CASES, judgments: 2 * CASES, alreadyDone: 0 })
      expect(server.calls).toBe(0)
      // The first round only: the checks fail at the server (a request it rejects: a judge failure, kept).
      server.setBehaviour({ replyFor: (r) => isCheck(r) ? "bad_request" : undefined })
      yield* runWith(pipeline, llm(server.url), { input: sample, outRoot: out, promptDirs, maxFailures: CASES })
      const after = yield* dryRun()
      expect(after).toMatchObject({ calls: 0, alreadyDone: 2 * CASES })
      const retried = yield* estimateWith(pipeline, llm(server.url), {
        input: sample,
        outRoot: out,
        promptDirs,
        retryFailed: true
      })
      expect(retried).toMatchObject({ calls: CASES, judgments: CASES, alreadyDone: CASES })
    }))

  it("kill -9 between the rounds: the same command pays only for the second round", async () => {
    const server = await FakeOpenAi.start({ answer: chainAnswer, replyFor: (r) => isCheck(r) ? "hang" : undefined })
    try {
      const out = tempDir()
      const args = [
        "run",
        pipelineFile,
        "--csv",
        sample,
        "--out",
        out,
        "--provider",
        "openai-compatible",
        "--base-url",
        server.url,
        "--model",
        "fake",
        "--no-preflight",
        "--concurrency",
        "16",
        "--timeout",
        "60"
      ]
      const first = start(args)
      // Every extraction journaled; the checks hang at the server (more workers than cases: none waits behind a hung check).
      const root = Path.join(out, "toy-chain")
      const journaled = () => {
        try {
          const [id] = fs.readdirSync(root)
          return id === undefined ? [] : journal(Path.join(root, id))
        } catch {
          return []
        }
      }
      await waitFor(
        "every extraction journaled and every check asked",
        () => journaled().length === CASES && server.judgeRequests.filter(isCheck).length === CASES || first.exited()
      )
      expect(journaled().map((l) => l.criterion), first.stderr()).toEqual(Array(CASES).fill("toy/extract"))
      first.child.kill("SIGKILL")
      await first.result
      const extractCalls = server.judgeRequests.filter((r) => !isCheck(r)).length
      expect(extractCalls).toBe(CASES)

      server.setBehaviour({ replyFor: undefined })
      server.reset()
      const second = await start(args).result
      expect(second.stderr).toContain(`resuming run`)
      expect(second.code, second.stderr).toBe(0)
      // Nothing paid twice: no extraction asked again, each check once.
      expect(server.judgeRequests.filter((r) => !isCheck(r))).toHaveLength(0)
      expect(server.judgeRequests.filter(isCheck)).toHaveLength(CASES)
      const [id] = fs.readdirSync(root)
      const lines = journal(Path.join(root, id!))
      expect(lines.filter((l) => l.criterion === "toy/check" && l.status === "ok")).toHaveLength(CASES)
      expect(lines.filter((l) => l.criterion === "toy/extract")).toHaveLength(CASES)

      // report rebuilds the run from its journal, its rubrics found beside the pipeline file again.
      const report = await start(["report", Path.join(root, id!)]).result
      expect(report.code, report.stderr).toBe(0)
    } finally {
      await server.close()
    }
  }, 120_000)
})
