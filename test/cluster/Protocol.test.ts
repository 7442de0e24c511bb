/**
 * The cluster's protocol on @effect/cluster's in-memory `TestRunner` (no database, no sockets): the
 * coordinator's batches, the `JudgeShard` entity judging them against the fake OpenAI-compatible
 * server, the shared `RateLimit` entity — and a whole run in cluster mode giving the records of a
 * local run.
 */
import * as TestRunner from "@effect/cluster/TestRunner"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Coordinator from "../../src/cluster/Coordinator.js"
import { type JudgeOptions, JudgeShard, RateLimit, shardEntityId } from "../../src/cluster/Protocol.js"
import { ClusterJudging } from "../../src/cluster/RemoteJudging.js"
import * as RunnerHost from "../../src/cluster/RunnerHost.js"
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
    const limit = RunnerHost.makeSharedLimit()
    // Twenty runners' calls asking at the same instant: one start every 60 s / (600 × 0.95) ≈ 105 ms.
    const waits = Array.from({ length: 20 }, () => limit.reserve(0, { rpm: 600, tokens: 10 }))
    const gaps = waits.slice(1).map((w, i) => w - waits[i]!)
    for (const gap of gaps) expect(gap).toBeCloseTo(60_000 / 570, 6)
    limit.pause(0, 5_000)
    expect(limit.reserve(0, { rpm: 600, tokens: 10 })).toBeGreaterThanOrEqual(5_000)
    // Tokens per minute: a call costing a second's worth waits a second for the next.
    const tpm = RunnerHost.makeSharedLimit()
    const a = tpm.reserve(0, { tpm: 60_000, tokens: 1_000 })
    const b = tpm.reserve(0, { tpm: 60_000, tokens: 1_000 })
    expect(b - a).toBeCloseTo(1_000 / 0.95, 6)
  })

  it("the RateLimit entity answers reservations for the runners", async () => {
    const waits = await Effect.runPromise(Effect.gen(function*() {
      const gate = (yield* RateLimit.client)("openai-compatible|fake|")
      const out: Array<number> = []
      for (let i = 0; i < 20; i++) out.push(yield* gate.Reserve({ rpm: 600, tokens: 10 }))
      return out
    }).pipe(Effect.scoped, Effect.provide(cluster())))
    // Twenty reservations take ~2 s of the bucket, whatever this machine's speed.
    expect(waits[19]!).toBeGreaterThan(1_000)
  })
})
