/**
 * `--batch` in-process against the fake server's Files and Batches endpoints (real HTTP on
 * 127.0.0.1, real files): the same judgments as a synchronous run, priced at the batch price;
 * repairs in the next batch or synchronously; expired batches resubmitted; `--detach` and a later
 * collection; a kill between creating a batch and journaling its id; Mistral's jobs API; the
 * prompt cache; `--max-cost`.
 * (The first scripted reply goes to the preflight, a synchronous call.)
 */
import { it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Redacted, TestClock } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect } from "vitest"
import type { Pipeline } from "../../src/engine/Pipeline.js"
import type { BatchOptions } from "../../src/engine/RunTypes.js"
import * as LlmJudge from "../../src/judges/LlmJudge.js"
import * as SearchRelevance from "../../src/kinds/search/SearchRelevance.js"
import * as BatchApi from "../../src/providers/BatchApi.js"
import * as OpenAiProvider from "../../src/providers/OpenAiProvider.js"
import * as RateGate from "../../src/providers/RateGate.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { estimateWith, loadPipelineModule, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const DIMENSIONS = 6
const LIMIT = 4
const JUDGMENTS = LIMIT * DIMENSIONS
const price = { input: 2, output: 8, batchInput: 1, batchOutput: 4, cachedInput: 0.5 }

const llm = (url: string) =>
  LlmJudge.layer({ maxRetries: 1, baseDelayMs: 1 }).pipe(Layer.provide(Layer.merge(
    OpenAiProvider.layer({
      provider: "openai-compatible",
      model: "fake-judge",
      baseURL: url,
      apiKey: Redacted.make("k"),
      timeoutMs: 5_000,
      params: { temperature: 0 }
    }),
    RateGate.layer({ concurrency: 4 })
  )))

const batchOf = (url: string, extra: Partial<BatchOptions> = {}): BatchOptions => ({
  api: BatchApi.make({ flavour: "openai", baseURL: url, apiKey: Redacted.make("k"), model: "fake-judge" }),
  repair: "batch",
  detach: false,
  pollMs: 5,
  maxPollMs: 20,
  maxRequests: 50_000,
  maxBytes: 200 * 1024 * 1024,
  ...extra
})

interface Line {
  readonly key: string
  readonly kind?: string
  readonly status: string
  readonly score: number | null
  readonly reason: string
  readonly via?: string
  readonly attempts: number
  readonly usage: { readonly inputTokens: number; readonly cachedInputTokens?: number }
}
const journal = (runDir: string) =>
  fs.readFileSync(Path.join(runDir, "judgments.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Line)
const judgmentsIn = (runDir: string) => journal(runDir).filter((l) => l.kind !== "attempt")

/** Records without token figures (a batch run's tokens are priced differently, its verdicts are the same). */
const verdicts = (runDir: string) =>
  fs.readFileSync(Path.join(runDir, "records-iteration-1.jsonl"), "utf8").trim().split("\n").map((l) => {
    const { tokens: _tokens, ...rest } = JSON.parse(l) as { tokens: unknown }
    return rest
  })

/** Records with every token and latency figure left out (they differ between modes; the grades must not). */
const grades = (runDir: string) => {
  const strip = (u: unknown): unknown =>
    Array.isArray(u) ? u.map(strip) : typeof u === "object" && u !== null
      ? Object.fromEntries(
        Object.entries(u).filter(([k]) => k !== "tokens" && k !== "latencyMs" && k !== "latency").map((
          [k, v]
        ) => [k, strip(v)])
      )
      : u
  return fs.readFileSync(Path.join(runDir, "records-iteration-1.jsonl"), "utf8").trim().split("\n").map((l) =>
    strip(JSON.parse(l))
  )
}

const pipeline = () => Effect.promise(() => loadPipelineModule("rag-answers"))

describe("--batch", () => {
  it.scopedLive("judges through one batch: no synchronous judge call, the same records as a synchronous run, batch-priced", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make()
      const out = tempDir()
      const outcome = yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: out,
        limit: LIMIT,
        price,
        batch: batchOf(server.url)
      })
      expect(server.judgeCalls).toBe(0)
      expect(server.uploads).toBe(1)
      expect(server.batches).toHaveLength(1)
      expect(server.batchRequests).toBe(JUDGMENTS)
      expect(outcome.judgments).toMatchObject({ total: JUDGMENTS, ok: JUDGMENTS, failed: 0, reused: 0 })
      const lines = judgmentsIn(outcome.info.runDir)
      expect(lines).toHaveLength(JUDGMENTS)
      expect(lines.every((l) => l.via === "batch")).toBe(true)
      // Priced at the batch price: exactly half the list price here (the preflight is not a judgment's cost).
      const tokens = outcome.summaries[0]!.tokens
      expect(tokens.batchInput).toBe(tokens.input)
      expect(outcome.cost.usd).toBeCloseTo((tokens.input * 1 + tokens.output * 4) / 1e6, 12)
      expect(outcome.cost.savingUsd).toBeCloseTo(outcome.cost.usd!, 12)
      const manifest = JSON.parse(fs.readFileSync(Path.join(outcome.info.runDir, "manifest.json"), "utf8"))
      expect(manifest.batch.judgmentsCollected).toBe(JUDGMENTS)
      expect(manifest.batch.batches).toEqual([expect.objectContaining({ requests: JUDGMENTS, status: "completed" })])
      expect(fs.readFileSync(Path.join(outcome.info.runDir, "report.md"), "utf8")).toMatch(
        /through the Batch API; saved \$/
      )

      // The same judge synchronously, against a fresh fake: the same verdicts, record for record.
      const sync = yield* FakeOpenAi.make()
      const syncOut = yield* runWith(p, llm(sync.url), { input: sample, outRoot: tempDir(), limit: LIMIT, price })
      expect(sync.judgeCalls).toBe(JUDGMENTS)
      expect(verdicts(outcome.info.runDir)).toEqual(verdicts(syncOut.info.runDir))

      // Run again: everything is in the journal; nothing is submitted.
      yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: out,
        limit: LIMIT,
        price,
        batch: batchOf(server.url)
      })
      expect(server.batches).toHaveLength(1)
      expect(server.judgeCalls).toBe(0)
    }))

  it.scopedLive("a malformed reply is asked again with the repair prompt in the next batch (--batch-repair batch)", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make({ script: ["ok", "malformed"] })
      const outcome = yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: tempDir(),
        limit: LIMIT,
        batch: batchOf(server.url)
      })
      expect(outcome.judgments.failed).toBe(0)
      expect(server.judgeCalls).toBe(0)
      expect(server.batches.map((b) => b.requests)).toEqual([JUDGMENTS, 1])
      const lines = journal(outcome.info.runDir)
      expect(lines.filter((l) => l.kind === "attempt")).toHaveLength(1)
      const repaired = judgmentsIn(outcome.info.runDir).filter((l) => l.attempts === 2)
      expect(repaired).toHaveLength(1)
      expect(repaired[0]!.status).toBe("ok")
    }))

  it.scopedLive("--batch-repair sync: the malformed reply is repaired by one synchronous call that continues from it", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make({ script: ["ok", "malformed"] })
      const outcome = yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: tempDir(),
        limit: LIMIT,
        batch: batchOf(server.url, { repair: "sync" })
      })
      expect(outcome.judgments.failed).toBe(0)
      expect(server.batches).toHaveLength(1)
      expect(server.judgeCalls).toBe(1)
      const repair = server.judgeRequests[0]!.body.messages!
      expect(repair.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"])
      expect(String(repair[3]!.content)).toMatch(/Your previous reply could not be used/)
      expect(judgmentsIn(outcome.info.runDir).filter((l) => l.attempts === 2)).toHaveLength(1)
    }))

  it.scopedLive("an expired batch: what it did not answer is resubmitted once, nothing it answered is", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make({ batch: { outcome: "expired", answerFirst: 10 } })
      const run = runWith(p, llm(server.url), {
        input: sample,
        outRoot: tempDir(),
        limit: LIMIT,
        batch: batchOf(server.url)
      })
      // The second batch would expire too: let it complete.
      const watcher = Effect.promise(async () => {
        while (server.batches.length < 2) await new Promise((r) => setTimeout(r, 2))
        server.setBehaviour({ batch: { outcome: "completed" } })
      })
      const [outcome] = yield* Effect.all([run, watcher], { concurrency: 2 })
      expect(outcome.judgments.failed).toBe(0)
      expect(server.batches.map((b) => b.requests)).toEqual([JUDGMENTS, JUDGMENTS - 10])
      const ids = server.batchCustomIds
      const firstTen = ids.slice(0, 10)
      expect(ids.slice(JUDGMENTS).some((id) => firstTen.includes(id))).toBe(false)
      const manifest = JSON.parse(fs.readFileSync(Path.join(outcome.info.runDir, "manifest.json"), "utf8"))
      expect(manifest.batch.callsResubmitted).toBe(JUDGMENTS - 10)
      expect(manifest.batch.batches.map((b: { status: string }) => b.status)).toEqual(["expired", "completed"])
    }))

  it.scopedLive("a request the provider refuses (400 in the error file) is a failed judgment with the reason, not resubmitted", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make({ script: ["ok", "bad_request"] })
      const outcome = yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: tempDir(),
        limit: LIMIT,
        maxFailures: 1,
        batch: batchOf(server.url)
      })
      expect(outcome.judgments.failed).toBe(1)
      expect(server.batches).toHaveLength(1)
      const failed = judgmentsIn(outcome.info.runDir).find((l) => l.status === "failed")!
      expect(failed.score).toBeNull()
      expect(failed.reason).toMatch(/^provider error: the request was rejected .*maximum context length/)
    }))

  it.scopedLive("--detach submits and returns; the same command later collects, submitting nothing twice", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make({ batch: { hold: true } })
      const out = tempDir()
      const detached = yield* Effect.exit(
        runWith(p, llm(server.url), {
          input: sample,
          outRoot: out,
          limit: LIMIT,
          batch: batchOf(server.url, { detach: true })
        })
      )
      expect(Exit.isFailure(detached) && JSON.stringify(detached.cause)).toMatch(/BatchDetached/)
      expect(server.batches).toHaveLength(1)
      // Still running: a second --detach checks, submits nothing, returns again.
      const again = yield* Effect.exit(
        runWith(p, llm(server.url), {
          input: sample,
          outRoot: out,
          limit: LIMIT,
          batch: batchOf(server.url, { detach: true })
        })
      )
      expect(Exit.isFailure(again)).toBe(true)
      expect(server.batches).toHaveLength(1)
      server.setBehaviour({ batch: { hold: false } })
      const outcome = yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: out,
        limit: LIMIT,
        batch: batchOf(server.url, { detach: true })
      })
      expect(outcome.judgments).toMatchObject({ total: JUDGMENTS, ok: JUDGMENTS })
      expect(server.batches).toHaveLength(1)
      expect(server.judgeCalls).toBe(0)
    }))

  it.scopedLive("killed after creating a batch but before journaling its id: the batch is found by its input file, not created again", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make({ batch: { hold: true } })
      const out = tempDir()
      yield* Effect.exit(
        runWith(p, llm(server.url), {
          input: sample,
          outRoot: out,
          limit: LIMIT,
          batch: batchOf(server.url, { detach: true })
        })
      )
      const runDir = Path.join(out, "rag-answers", fs.readdirSync(Path.join(out, "rag-answers"))[0]!)
      const ledger = Path.join(runDir, "batches.jsonl")
      // What a kill between "batch created" and "batch journaled" leaves: the upload line only.
      const lines = fs.readFileSync(ledger, "utf8").trim().split("\n")
      expect(lines.map((l) => JSON.parse(l).kind)).toEqual(["upload", "batch"])
      fs.writeFileSync(ledger, lines[0] + "\n" + "{\"kind\":\"batch\",\"id\":\"batc")
      server.setBehaviour({ batch: { hold: false } })
      const outcome = yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: out,
        limit: LIMIT,
        batch: batchOf(server.url)
      })
      expect(outcome.judgments.ok).toBe(JUDGMENTS)
      expect(server.batches).toHaveLength(1)
      expect(server.batchRequests).toBe(JUDGMENTS)
    }))

  it.scopedLive("Mistral's /v1/batch/jobs: QUEUED → RUNNING → SUCCESS, model on the job, not on the lines", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make({ batch: { steps: 2 } })
      const api = BatchApi.make({
        flavour: "mistral",
        baseURL: server.url,
        apiKey: Redacted.make("k"),
        model: "fake-judge"
      })
      const outcome = yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: tempDir(),
        limit: LIMIT,
        batch: { ...batchOf(server.url), api }
      })
      expect(outcome.judgments.ok).toBe(JUDGMENTS)
      expect(server.batches.map((b) => [b.flavour, b.status])).toEqual([["mistral", "SUCCESS"]])
    }))

  it.scopedLive("a server without a Batch API: one clear message, the run stops (exit 2 class)", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make()
      const api = BatchApi.make({
        flavour: "openai",
        baseURL: `${server.origin}/nowhere/v1`,
        apiKey: Redacted.make("k"),
        model: "fake-judge"
      })
      const exit = yield* Effect.exit(
        runWith(p, llm(server.url), {
          input: sample,
          outRoot: tempDir(),
          limit: LIMIT,
          batch: { ...batchOf(server.url), api }
        })
      )
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toMatch(
        /has no Batch API there; run without --batch.*FatalJudgeError/
      )
    }))
})

describe("--batch, listwise and on the Clock", () => {
  const searches = Path.join(repoRoot, "test-sets", "search-relevance", "sample.jsonl")
  /** Hits per query in the search-relevance sample (sr-008 retrieved nothing). */
  const HITS = [5, 4, 4, 3, 3, 3, 3, 0]
  const searchPipeline = Effect.map(
    Effect.promise(() => loadPipelineModule("search-relevance")),
    (p): Pipeline<unknown, unknown> => ({
      ...p,
      judge: SearchRelevance.judgeSearchHits("search-relevance/checklist", { listwise: SearchRelevance.listwiseRubric })
    })
  )

  it.scopedLive("listwise: one request line per query, one journaled judgment per hit, the same grades as synchronously", () =>
    Effect.gen(function*() {
      const p = yield* searchPipeline
      const server = yield* FakeOpenAi.make()
      const outcome = yield* runWith(p, llm(server.url), {
        input: searches,
        outRoot: tempDir(),
        batch: batchOf(server.url)
      })
      expect(server.batchRequests).toBe(HITS.filter((n) => n > 0).length)
      expect(outcome.judgments).toMatchObject({ total: 25, ok: 25, failed: 0 })
      const sync = yield* FakeOpenAi.make()
      const syncOut = yield* runWith(p, llm(sync.url), { input: searches, outRoot: tempDir() })
      expect(grades(outcome.info.runDir)).toEqual(grades(syncOut.info.runDir))
      // The graded-hits summary keeps the Batch API share too (the report's cost row shows it).
      const summary = outcome.summaries[0] as { tokens: { input: number; batchInput?: number } }
      expect(summary.tokens.batchInput).toBe(summary.tokens.input)
    }))

  it.scoped(
    "polls with backoff on the Effect Clock: a batch in progress for four checks is collected after waits of 1, 2, 4, 8 and 8 minutes of TestClock time",
    () =>
      Effect.gen(function*() {
        const p = yield* pipeline()
        const server = yield* FakeOpenAi.make({ batch: { steps: 4 } })
        const fiber = yield* Effect.fork(runWith(p, llm(server.url), {
          input: sample,
          outRoot: tempDir(),
          limit: LIMIT,
          batch: batchOf(server.url, { pollMs: 60_000, maxPollMs: 8 * 60_000 })
        }))
        /** Real time passes for the HTTP round trips (the fake is outside the TestClock). */
        const realWait = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))
        const checks = () => server.batches[0]?.checks ?? 0
        const checksReach = (n: number) =>
          Effect.promise(async () => {
            while (checks() < n) await new Promise((r) => setTimeout(r, 2))
          })
        // Submitted, then a check after each wait of 1, 2, 4, 8 and 8 minutes (the cap) — not a second before.
        yield* Effect.promise(async () => {
          while (server.batches.length === 0) await new Promise((r) => setTimeout(r, 2))
        })
        for (const [i, minutes] of [1, 2, 4, 8, 8].entries()) {
          yield* realWait(50)
          yield* TestClock.adjust(`${minutes * 60 - 1} seconds`)
          yield* realWait(50)
          expect(checks()).toBe(i)
          yield* TestClock.adjust("1 second")
          yield* checksReach(i + 1)
        }
        const outcome = yield* Fiber.join(fiber)
        expect(outcome.judgments.ok).toBe(JUDGMENTS)
        expect(checks()).toBe(5)
        expect(server.batches[0]!.status).toBe("completed")
      }),
    30_000
  )
})

describe("the prompt cache", () => {
  it.scopedLive("every rubric's system message is one byte-identical prefix across a run; cached tokens are recorded and priced", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make({ promptCache: true })
      const outcome = yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: tempDir(),
        limit: LIMIT,
        price,
        concurrency: 1
      })
      const systems = new Set(server.judgeRequests.map((r) => String(r.body.messages![0]!.content)))
      expect(systems.size).toBe(DIMENSIONS)
      // Every judgment after the first of its rubric reuses at least the system message.
      const lines = judgmentsIn(outcome.info.runDir)
      const cachedLines = lines.filter((l) => (l.usage.cachedInputTokens ?? 0) > 0)
      expect(cachedLines.length).toBe(JUDGMENTS - DIMENSIONS)
      // The static part — system text with the scale and the output instructions, then the user
      // message's opening — precedes the first data block, and the cache served all of it on every
      // repeat: the fake counts the prefix shared with the previous request of the same rubric.
      const seen = new Set<string>()
      let staticTokens = 0
      for (const r of server.judgeRequests) {
        const text = r.body.messages!.map((m) => `${m.role}\n${String(m.content)}`).join("\n")
        const staticEnd = text.indexOf("<data name=")
        expect(text.slice(0, staticEnd)).toMatch(/Scale for [^\n]+\n(?:\d — [^\n]+\n)*1 — [^\n]+\n0 — /)
        expect(text.slice(0, staticEnd)).toMatch(/"score"/)
        const system = String(r.body.messages![0]!.content)
        if (seen.has(system)) staticTokens += Math.floor(staticEnd / 4)
        seen.add(system)
      }
      expect(server.cachedTokens).toBeGreaterThanOrEqual(staticTokens)
      const summary = outcome.summaries[0]!
      expect(summary.tokens.cachedInput).toBe(server.cachedTokens)
      expect(outcome.cost.cachedInputTokens).toBe(server.cachedTokens)
      expect(outcome.cost.savingUsd).toBeCloseTo(server.cachedTokens * (2 - 0.5) / 1e6, 12)
      expect(fs.readFileSync(Path.join(outcome.info.runDir, "report.md"), "utf8")).toMatch(
        /\d+\.\d% of input tokens cached; saved \$/
      )
    }))
})

describe("--max-cost", () => {
  it.scopedLive("stops starting calls at the budget (resumable), and a resume with a higher cap finishes", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make()
      const out = tempDir()
      const expensive = { input: 1000, output: 1000 }
      const exit = yield* Effect.exit(
        runWith(p, llm(server.url), {
          input: sample,
          outRoot: out,
          limit: LIMIT,
          price: expensive,
          maxCostUsd: 3,
          concurrency: 1
        })
      )
      expect(Exit.isFailure(exit)).toBe(true)
      const cause = JSON.stringify(Exit.isFailure(exit) ? exit.cause : null)
      expect(cause).toMatch(/BudgetReached/)
      const made = server.judgeCalls
      expect(made).toBeGreaterThan(0)
      expect(made).toBeLessThan(JUDGMENTS)
      const outcome = yield* runWith(p, llm(server.url), {
        input: sample,
        outRoot: out,
        limit: LIMIT,
        price: expensive,
        maxCostUsd: 1000,
        concurrency: 1
      })
      expect(outcome.judgments.ok).toBe(JUDGMENTS)
      expect(server.judgeCalls).toBe(JUDGMENTS)
    }))

  it.scopedLive("the cap is the run's: a second invocation under the same cap counts what the first spent, and makes no call past it", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make()
      const out = tempDir()
      const expensive = { input: 1000, output: 1000 }
      const capped = () =>
        Effect.exit(
          runWith(p, llm(server.url), {
            input: sample,
            outRoot: out,
            limit: LIMIT,
            price: expensive,
            maxCostUsd: 3,
            concurrency: 1
          })
        )
      const first = yield* capped()
      expect(JSON.stringify(Exit.isFailure(first) ? first.cause : null)).toMatch(/BudgetReached/)
      const made = server.judgeCalls
      const spentUsd = (exit: typeof first) =>
        Number(/"spentUsd":([0-9.e-]+)/.exec(JSON.stringify(Exit.isFailure(exit) ? exit.cause : null))?.[1])
      expect(spentUsd(first)).toBeLessThanOrEqual(3)
      // The same command again: the journal says what was spent; nothing more fits.
      const second = yield* capped()
      expect(JSON.stringify(Exit.isFailure(second) ? second.cause : null)).toMatch(/BudgetReached/)
      expect(server.judgeCalls).toBe(made)
      expect(spentUsd(second)).toBeCloseTo(spentUsd(first), 6)
    }))

  it.scopedLive("--batch: a submitted batch counts at its estimate against the cap of the invocations after it, until its replies are paid", () =>
    Effect.gen(function*() {
      const p = yield* pipeline()
      const server = yield* FakeOpenAi.make({ batch: { hold: true } })
      const out = tempDir()
      const expensive = { input: 1000, output: 1000, batchInput: 500, batchOutput: 500 }
      const options = { input: sample, outRoot: out, limit: LIMIT, price: expensive }
      // What all the requests are estimated at, through a batch: a cap of half of it.
      const e = yield* estimateWith(p, llm(server.url), options)
      const cap = (e.inputTokens * 500 + e.outputTokens * 500) / 1_000_000 / 2
      // The first invocation submits what fits (about half) and stops at the cap; nothing is paid yet.
      const first = yield* runWith(p, llm(server.url), {
        ...options,
        maxCostUsd: cap,
        batch: batchOf(server.url, { detach: true })
      }).pipe(Effect.exit)
      expect(JSON.stringify(Exit.isFailure(first) ? first.cause : null)).toMatch(/BudgetReached/)
      const submitted = server.batchRequests
      expect(submitted).toBeGreaterThan(0)
      expect(submitted).toBeLessThan(JUDGMENTS)
      // The same command: the open batch's estimate is reserved, so nothing more fits under the cap.
      const second = yield* runWith(p, llm(server.url), {
        ...options,
        maxCostUsd: cap,
        batch: batchOf(server.url, { detach: true })
      }).pipe(Effect.exit)
      expect(JSON.stringify(Exit.isFailure(second) ? second.cause : null)).toMatch(/BudgetReached/)
      expect(server.batchRequests).toBe(submitted)
      expect(server.judgeCalls).toBe(0)
      // A cap that holds the run: the open batch is collected, the rest submitted once.
      server.setBehaviour({ batch: {} })
      const outcome = yield* runWith(p, llm(server.url), { ...options, maxCostUsd: 1000, batch: batchOf(server.url) })
      expect(outcome.judgments.ok).toBe(JUDGMENTS)
      expect(server.batchRequests).toBe(JUDGMENTS)
    }))
})
