/**
 * The cluster's protocol on @effect/cluster's in-memory `TestRunner` (no database, no sockets): the
 * coordinator's batches, the `JudgeShard` entity judging them against the fake OpenAI-compatible
 * server, the shared `RateLimit` entity — and a whole run in cluster mode giving the records of a
 * local run.
 */
import * as TestRunner from "@effect/cluster/TestRunner"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Coordinator from "../../src/cluster/Coordinator.js"
import { type JudgeOptions, JudgeShard, RateLimit, shardEntityId } from "../../src/cluster/Protocol.js"
import { ClusterJudging } from "../../src/engine/RemoteJudging.js"
import * as RunnerHost from "../../src/cluster/RunnerHost.js"
import { makeSharedLimit } from "../../src/cluster/SharedLimit.js"
import { judgeLayer } from "../../src/cli/JudgeLayer.js"
import { loadRubric } from "../../src/judges/Prompt.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { loadPipelineModule, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const SAMPLE_JUDGMENTS = 72


let fake: FakeOpenAi.FakeOpenAi
beforeAll(async () => {
  fake = await FakeOpenAi.start({ answer: FakeOpenAi.variedAnswer })
})
afterAll(() => fake.close())

const judgeOptions = (): JudgeOptions => ({
  provider: "openai-compatible", model: "fake", baseUrl: fake.url, timeoutMs: 10_000, maxRetries: 2, maxWaitMs: 60_000, retryFailed: false
})

/** A runner's entities on the in-memory test runner, with a store in memory. */
const cluster = (settings: RunnerHost.RunnerSettings = { concurrency: 8 }) =>
  RunnerHost.layerEntities(settings).pipe(Layer.provideMerge(RunnerHost.layerMemoryStore), Layer.provideMerge(TestRunner.layer))

const llmJudge = () => judgeLayer({ provider: "openai-compatible", model: "fake", baseUrl: fake.url, concurrency: 8, timeoutMs: 10_000, maxRetries: 2, preflight: false })

const records = (outRoot: string) => {
  const root = Path.join(outRoot, "rag-answers")
  const [id] = fs.readdirSync(root)
  return fs.readFileSync(Path.join(root, id!, "records-iteration-1.jsonl"), "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
}
const withoutLatency = (value: unknown): unknown => JSON.parse(JSON.stringify(value, (k, v) => k === "latencyMs" ? undefined : v))

describe("cluster protocol (in-memory test runner)", () => {
  it("a run in cluster mode gives the records of a local run; every judgment is asked once", async () => {
    const pipeline = await loadPipelineModule("rag-answers")
    const localOut = tempDir()
    fake.reset()
    await Effect.runPromise(runWith(pipeline, llmJudge(), { input: sample, outRoot: localOut }))
    expect(fake.judgeCalls).toBe(SAMPLE_JUDGMENTS)

    const clusterOut = tempDir()
    fake.reset()
    const outcome = await Effect.runPromise(Effect.gen(function*() {
      const remote = yield* Coordinator.make({ judge: judgeOptions(), batchSize: 10, batchesInFlight: 3 })
      return yield* runWith(pipeline, llmJudge(), { input: sample, outRoot: clusterOut }).pipe(Effect.provideService(ClusterJudging, remote))
    }).pipe(Effect.scoped, Effect.provide(cluster())))
    expect(outcome.judgments.total).toBe(SAMPLE_JUDGMENTS)
    expect(fake.judgeCalls).toBe(SAMPLE_JUDGMENTS)
    expect(withoutLatency(records(clusterOut))).toEqual(withoutLatency(records(localOut)))
  })

  it("a batch sent three times (one primary key) is judged once; another batch of the same keys reuses the journal", async () => {
    const rubric = await Effect.runPromise(loadRubric("rag-answers/clarity").pipe(Effect.provide(NodeContext.layer)))
    const tasks = Array.from({ length: 5 }, (_, i) => ({
      keys: [`key-${i}`], pipeline: "p", caseId: `c${i}`, ordinal: i, iteration: 1, rubric, target: "answer",
      vars: { question: `q${i}`, answer: `a${i}`, passages: "", history: "" }
    }))
    fake.reset()
    const [a, b, c, d] = await Effect.runPromise(Effect.gen(function*() {
      const client = (yield* JudgeShard.client)(shardEntityId("p/run", "aaaaaa"))
      const send = (batchId: string) => client.JudgeBatch({ runId: "p/run", batchId, judge: judgeOptions(), tasks })
      const three = yield* Effect.all([send("aaaaaa"), send("aaaaaa"), send("aaaaaa")], { concurrency: "unbounded" })
      const again = yield* send("bbbbbb")
      return [...three, again]
    }).pipe(Effect.scoped, Effect.provide(cluster())))
    expect(fake.judgeCalls).toBe(5)
    expect(a.map((j) => j.key)).toEqual(tasks.map((t) => t.keys[0]))
    expect(b).toEqual(a)
    expect(c).toEqual(a)
    expect(d).toEqual(a)
  })

  it("once the run is stopping (Ctrl+C), calls not yet sent are answered \"not asked\" and nothing is sent", async () => {
    fake.reset()
    const rubric = await Effect.runPromise(loadRubric("rag-answers/clarity").pipe(Effect.provide(NodeContext.layer)))
    const answers = await Effect.runPromise(Effect.gen(function*() {
      const remote = yield* Coordinator.make({ judge: judgeOptions(), batchSize: 10, batchesInFlight: 2, stopping: () => true })
      return yield* Effect.forEach([0, 1, 2], (i) =>
        remote.judge({ runId: "p/stop", keys: [`s${i}`], task: { pipeline: "p", caseId: `c${i}`, ordinal: i, iteration: 1, rubric, target: "answer", vars: { question: "q", answer: "a", passages: "", history: "" } } }), { concurrency: "unbounded" })
    }).pipe(Effect.scoped, Effect.provide(cluster())))
    expect(answers).toEqual([undefined, undefined, undefined])
    expect(fake.calls).toBe(0)
  })

  it("a runner whose key the provider rejects fails the run with the provider's one-line message (no key in any message)", async () => {
    const strict = await FakeOpenAi.start({ apiKey: "right-key" })
    try {
      const exit = await Effect.runPromiseExit(Effect.gen(function*() {
        const remote = yield* Coordinator.make({ judge: { ...judgeOptions(), baseUrl: strict.url }, batchSize: 10, batchesInFlight: 2 })
        const rubric = yield* loadRubric("rag-answers/clarity").pipe(Effect.provide(NodeContext.layer))
        return yield* remote.judge({ runId: "p/r2", keys: ["k"], task: { pipeline: "p", caseId: "c", ordinal: 0, iteration: 1, rubric, target: "answer", vars: { question: "q", answer: "a", passages: "", history: "" } } })
      }).pipe(Effect.scoped, Effect.provide(cluster({ concurrency: 2, apiKey: undefined }))))
      expect(exit._tag).toBe("Failure")
      expect(JSON.stringify(exit)).toContain("FatalJudgeError")
      expect(strict.judgeCalls).toBe(0)
    } finally {
      await strict.close()
    }
  })

  it("the shared rate limit: every runner's starts spaced at the run's --rpm (95%), a 429 pauses them all", () => {
    const limit = makeSharedLimit()
    // Twenty runners' calls asking at the same instant, --burst 1: one start every 60 s / (600 × 0.95) ≈ 105 ms.
    const waits = Array.from({ length: 20 }, () => limit.reserve(0, { rpm: 600, burst: 1, tokens: 10 }).waitMs)
    const gaps = waits.slice(1).map((w, i) => w - waits[i]!)
    for (const gap of gaps) expect(gap).toBeCloseTo(60_000 / 570, 6)
    limit.limited(0, { ticket: 0, retryAfterMs: 5_000, maxPauseMs: 60_000 })
    expect(limit.reserve(0, { rpm: 600, burst: 1, tokens: 10 }).waitMs).toBeGreaterThanOrEqual(5_000)
    // Tokens per minute: a call costing a second's worth waits a second for the next.
    const tpm = makeSharedLimit()
    const a = tpm.reserve(0, { tpm: 60_000, tokens: 1_000 }).waitMs
    const b = tpm.reserve(0, { tpm: 60_000, tokens: 1_000 }).waitMs
    expect(b - a).toBeCloseTo(1_000 / 0.95, 6)
  })

  it("--burst: that many starts at once for the whole cluster (one short of full at first), then the pace; without it one at first", () => {
    for (const [burst, atOnce] of [[5, 4], [20, 19], [undefined, 1], [1, 1]] as const) {
      const limit = makeSharedLimit()
      const waits = Array.from({ length: 25 }, () => limit.reserve(0, { rpm: 600, burst, tokens: 10 }).waitMs)
      expect(waits.filter((w) => w < 1e-6).length).toBe(atOnce)
      expect(waits[atOnce]).toBeCloseTo(60_000 / 570, 6)
    }
  })

  it("adaptive: a 429 cuts the cluster's pace to what all runners got through lately, less 10%, once per episode; then it is probed up", () => {
    const limit = makeSharedLimit()
    // Three runners, 30 starts a second each, for 3 s; no --rpm: nothing paces them.
    let t = 0
    for (; t < 3_000; t += 1_000 / 90) expect(limit.reserve(t, { tokens: 10 }).waitMs).toBe(0)
    const ticket = limit.reserve(t, { tokens: 10 }).ticket
    limit.limited(t, { ticket, maxPauseMs: 60_000 })
    const learned = limit.stats().learnedRpm!
    // 271 starts less the refused one over 3 s: 90/s through; the cluster paces at 81/s.
    expect(learned / 60).toBeCloseTo(0.9 * 270 / 3, 0)
    expect(limit.stats().cuts).toBe(1)
    // The other runners' 429s for calls asked before the cut are no new episode: no second cut, only
    // the estimate lowered to what really got through (those calls were counted as through).
    limit.limited(t + 5, { ticket: ticket - 10, maxPauseMs: 60_000 })
    limit.limited(t + 6, { ticket, maxPauseMs: 60_000 })
    expect(limit.stats().cuts).toBe(1)
    expect(limit.stats().learnedRpm! / 60).toBeCloseTo(0.9 * (271 - 3) / 3, 0)
    expect(limit.stats().learnedRpm!).toBeLessThan(learned)
    // After the pause, starts from every runner are spaced at the learned pace — probed back up by
    // 10%/s meanwhile, to at most 97% of the rate that got through.
    const after = t + 2_000
    const waits = Array.from({ length: 10 }, () => limit.reserve(after, { tokens: 10 }).waitMs)
    const pace = limit.stats().rpm!
    expect(pace).toBeGreaterThan(learned)
    expect(pace / 60).toBeLessThanOrEqual(0.97 * 270 / 3 + 1e-9)
    for (let i = 1; i < waits.length; i++) expect(waits[i]! - waits[i - 1]!).toBeCloseTo(60_000 / pace, 6)
    // Quiet seconds later it creeps above that rate (1%/s, faster the longer no 429 comes).
    limit.reserve(after + 20_000, { tokens: 10 })
    expect(limit.stats().learnedRpm! / 60).toBeGreaterThan(0.97 * 270 / 3 * 1.1)
    // --adaptive false: nothing is learned.
    const fixed = makeSharedLimit()
    for (let u = 0; u < 3_000; u += 10) fixed.reserve(u, { tokens: 10, adaptive: false })
    fixed.limited(3_000, { ticket: 2_990, maxPauseMs: 60_000, adaptive: false })
    expect(fixed.stats().learnedRpm).toBeUndefined()
  })

  it("the RateLimit entity answers reservations for the runners", async () => {
    const waits = await Effect.runPromise(Effect.gen(function*() {
      const gate = (yield* RateLimit.client)("openai-compatible|fake|")
      const out: Array<number> = []
      for (let i = 0; i < 20; i++) out.push((yield* gate.Reserve({ rpm: 600, burst: 1, tokens: 10 })).waitMs)
      return out
    }).pipe(Effect.scoped, Effect.provide(cluster())))
    // Twenty reservations take ~2 s of the bucket, whatever this machine's speed.
    expect(waits[19]!).toBeGreaterThan(1_000)
  })

  it("three runners against a server enforcing 600 requests/min (no --rpm given): the cluster learns the limit once, every call ends ok", async () => {
    const server = await FakeOpenAi.start({ record: false, latencyMs: 50, limit: { rpm: 600, burst: 10 } })
    try {
      const rubric = await Effect.runPromise(loadRubric("rag-answers/clarity").pipe(Effect.provide(NodeContext.layer)))
      const options: JudgeOptions = { ...judgeOptions(), baseUrl: server.url, maxWaitMs: 60_000 }
      const PER_RUNNER = 60
      const started = performance.now()
      const verdicts = await Effect.runPromise(Effect.gen(function*() {
        const scope = yield* Effect.scope
        // Three runners: three gates of their own (16 calls in flight each), one RateLimit entity.
        const runners = yield* Effect.forEach([1, 2, 3], () =>
          Layer.buildWithScope(RunnerHost.layerJudges({ concurrency: 16, preflight: false }), scope).pipe(
            Effect.map((ctx) => Context.get(ctx, RunnerHost.RunnerJudges))
          ))
        return yield* Effect.forEach(runners, (runner, r) =>
          Effect.flatMap(runner.get(options), (judge) =>
            Effect.forEach(Array.from({ length: PER_RUNNER }, (_, i) => i), (i) =>
              runner.withPermit(judge.judge({ pipeline: "p", caseId: `r${r}c${i}`, ordinal: i, iteration: 1, rubric, target: "answer", vars: { question: `q${r}-${i}`, answer: "a", passages: "", history: "" } })),
              { concurrency: "unbounded" })), { concurrency: "unbounded" })
      }).pipe(Effect.scoped, Effect.provide(RunnerHost.layerRateLimit.pipe(Layer.provideMerge(TestRunner.layer)))))
      const seconds = (performance.now() - started) / 1000
      const all = verdicts.flat()
      expect(all.length).toBe(3 * PER_RUNNER)
      expect(all.filter((v) => v.status !== "ok")).toEqual([])
      // 180 calls at the server's 10/s (10 at once first): about 17 s at best. Each runner learning a
      // rate of its own from its share would together overshoot and keep meeting 429s; learned once
      // for the cluster, the first burst's 429s teach it and few follow.
      // The first wave (48 calls at once against a bucket of 10) meets 38 429s whatever is done;
      // after it, the cluster runs at the server's pace with few more.
      expect((server.limited - (3 * 16 - 10)) / all.length).toBeLessThanOrEqual(0.2) // measured 11–13%
      expect(seconds).toBeLessThan(40)
    } finally {
      await server.close()
    }
  }, 60_000)
})
