/**
 * The cluster's protocol on @effect/cluster's in-memory `TestRunner` (no database, no sockets): the
 * coordinator's batches, the `JudgeShard` entity judging them against the fake OpenAI-compatible
 * server, the shared `RateLimit` entity — and a whole run in cluster mode giving the records of a
 * local run.
 */
import * as TestRunner from "@effect/cluster/TestRunner"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Clock, Context, Deferred, Effect, Fiber, Layer } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Coordinator from "../../src/cluster/Coordinator.js"
import { type JudgeOptions, JudgeShard, RateLimit, shardEntityId } from "../../src/cluster/Protocol.js"
import * as RunnerHost from "../../src/cluster/RunnerHost.js"
import { makeSharedLimit } from "../../src/cluster/SharedLimit.js"
import { ClusterJudging } from "../../src/engine/RemoteJudging.js"
import { judgeLayer } from "../../src/judges/JudgeSettings.js"
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
  provider: "openai-compatible",
  model: "fake",
  baseUrl: fake.url,
  timeoutMs: 10_000,
  maxRetries: 2,
  maxWaitMs: 60_000,
  retryFailed: false
})

/** A runner's entities on the in-memory test runner, with a store in memory. */
const cluster = (settings: RunnerHost.RunnerSettings = { concurrency: 8 }) =>
  RunnerHost.layerEntities(settings).pipe(
    Layer.provideMerge(RunnerHost.layerMemoryStore),
    Layer.provideMerge(TestRunner.layer)
  )

const llmJudge = () =>
  judgeLayer({
    provider: "openai-compatible",
    model: "fake",
    baseUrl: fake.url,
    concurrency: 8,
    timeoutMs: 10_000,
    maxRetries: 2,
    preflight: false
  })

const records = (outRoot: string) => {
  const root = Path.join(outRoot, "rag-answers")
  const [id] = fs.readdirSync(root)
  return fs.readFileSync(Path.join(root, id!, "records-iteration-1.jsonl"), "utf8").split("\n").filter((l) => l !== "")
    .map((l) => JSON.parse(l))
}
const withoutLatency = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (k, v) => k === "latencyMs" ? undefined : v))

/** Five one-key tasks of the clarity rubric, their keys `${prefix}-0` … `${prefix}-4`. */
const clarityTasks = async (prefix: string) => {
  const rubric = await Effect.runPromise(loadRubric("rag-answers/clarity").pipe(Effect.provide(NodeContext.layer)))
  return Array.from({ length: 5 }, (_, i) => ({
    keys: [`${prefix}-${i}`],
    pipeline: "p",
    caseId: `c${i}`,
    ordinal: i,
    iteration: 1,
    rubric,
    target: "answer",
    vars: { question: `q${i}`, answer: `a${i}`, passages: "", history: "" }
  }))
}

describe("cluster protocol (in-memory test runner)", () => {
  it("a run in cluster mode gives the records of a local run; every judgment is asked once", async () => {
    const pipeline = await loadPipelineModule("rag-answers")
    const localOut = tempDir()
    fake.reset()
    await Effect.runPromise(runWith(pipeline, llmJudge(), { input: sample, outRoot: localOut }))
    expect(fake.judgeCalls).toBe(SAMPLE_JUDGMENTS)

    const clusterOut = tempDir()
    fake.reset()
    const outcome = await Effect.runPromise(
      Effect.gen(function*() {
        const remote = yield* Coordinator.make({ judge: judgeOptions(), batchSize: 10, batchesInFlight: 3 })
        return yield* runWith(pipeline, llmJudge(), { input: sample, outRoot: clusterOut }).pipe(
          Effect.provideService(ClusterJudging, remote)
        )
      }).pipe(Effect.scoped, Effect.provide(cluster()))
    )
    expect(outcome.judgments.total).toBe(SAMPLE_JUDGMENTS)
    expect(fake.judgeCalls).toBe(SAMPLE_JUDGMENTS)
    expect(withoutLatency(records(clusterOut))).toEqual(withoutLatency(records(localOut)))
  })

  it("a batch sent three times (one primary key) is judged once; another batch of the same keys reuses the journal", async () => {
    const tasks = await clarityTasks("key")
    fake.reset()
    const [a, b, c, d] = await Effect.runPromise(
      Effect.gen(function*() {
        const client = (yield* JudgeShard.client)(shardEntityId("p/run", "aaaaaa"))
        const send = (batchId: string) => client.JudgeBatch({ runId: "p/run", batchId, judge: judgeOptions(), tasks })
        const three = yield* Effect.all([send("aaaaaa"), send("aaaaaa"), send("aaaaaa")], { concurrency: "unbounded" })
        const again = yield* send("bbbbbb")
        return [...three, again]
      }).pipe(Effect.scoped, Effect.provide(cluster()))
    )
    expect(fake.judgeCalls).toBe(5)
    expect(a.map((j) => j.key)).toEqual(tasks.map((t) => t.keys[0]))
    expect(b).toEqual(a)
    expect(c).toEqual(a)
    expect(d).toEqual(a)
  })

  it("two batches of the same tasks (different ids) at once on one runner: each key is called once, the later batch reuses it", async () => {
    const tasks = await clarityTasks("same")
    fake.reset()
    // A restarted coordinator batches differently: a new batch id (a new message) for tasks whose first
    // delivery is still being judged on this runner.
    const [a, b] = await Effect.runPromise(
      Effect.gen(function*() {
        const client = (yield* JudgeShard.client)(shardEntityId("p/run2", "cccccc"))
        const send = (batchId: string) => client.JudgeBatch({ runId: "p/run2", batchId, judge: judgeOptions(), tasks })
        return yield* Effect.all([send("cccccc"), send("dddddd")], { concurrency: "unbounded" })
      }).pipe(Effect.scoped, Effect.provide(cluster()))
    )
    expect(fake.judgeCalls).toBe(5)
    expect(b).toEqual(a)
  })

  it("tasks whose rubrics arrive as objects of their own (as decoded from a message) reach the judge as one object per distinct rubric", async () => {
    const clarity = await clarityTasks("rubric")
    const other = await Effect.runPromise(
      loadRubric("rag-answers/conciseness").pipe(Effect.provide(NodeContext.layer))
    )
    // A message's decoding gives each task a copy; the last task's rubric differs.
    const tasks = clarity.map((t, i) => ({
      ...t,
      rubric: i === 4 ? structuredClone(other) : structuredClone(t.rubric)
    }))
    const seen: Array<unknown> = []
    const judges = Layer.effect(
      RunnerHost.RunnerJudges,
      Effect.map(RunnerHost.RunnerJudges, (real) => ({
        ...real,
        get: (options: JudgeOptions) =>
          Effect.map(real.get(options), (judge) => ({
            ...judge,
            judge: (task: Parameters<typeof judge.judge>[0]) => {
              seen.push(task.rubric)
              return judge.judge(task)
            }
          }))
      }))
    ).pipe(Layer.provide(RunnerHost.layerJudges({ concurrency: 8, preflight: false })))
    fake.reset()
    const judgments = await Effect.runPromise(
      RunnerHost.judgeBatch({ runId: "p/rubrics", judge: judgeOptions(), tasks }).pipe(
        Effect.provide(
          Layer.mergeAll(judges, RunnerHost.layerMemoryStore, RunnerHost.layerRateLimit).pipe(
            Layer.provideMerge(TestRunner.layer)
          )
        ),
        Effect.scoped
      )
    )
    expect(judgments.map((j) => j.status)).toEqual(["ok", "ok", "ok", "ok", "ok"])
    expect(seen).toHaveLength(5)
    expect(new Set(seen.slice(0, 4)).size).toBe(1)
    expect(seen[0]).toEqual(clarity[0]!.rubric)
    expect(seen[4]).not.toBe(seen[0])
    expect(seen[4]).toEqual(other)
  })

  it("a runner's permit holds until the call's judgments are in the store: with the store's commits stalled, no call beyond --concurrency is made", async () => {
    const tasks = await clarityTasks("slow")
    fake.reset()
    // The store takes every append and commits none until the test lets it: what a loaded
    // PostgreSQL does to a runner's group commits. A runner killed now loses what is not committed.
    let appending = 0
    const release = Effect.runSync(Deferred.make<void>())
    const stalled = Layer.effect(
      RunnerHost.RunnerStore,
      Effect.map(RunnerHost.RunnerStore, (store) => ({
        rows: store.rows,
        append: (runId: string, rows: Parameters<typeof store.append>[1]) =>
          Effect.zipRight(
            Effect.zipRight(Effect.sync(() => appending++), Deferred.await(release)),
            store.append(runId, rows)
          )
      }))
    ).pipe(Layer.provide(RunnerHost.layerMemoryStore))
    const layer = RunnerHost.layerEntities({ concurrency: 2, preflight: false }).pipe(
      Layer.provideMerge(stalled),
      Layer.provideMerge(TestRunner.layer)
    )
    const outcome = await Effect.runPromise(
      Effect.gen(function*() {
        const client = (yield* JudgeShard.client)(shardEntityId("p/run-slow", "eeeeee"))
        const reply = yield* Effect.fork(
          client.JudgeBatch({ runId: "p/run-slow", batchId: "eeeeee", judge: judgeOptions(), tasks })
        )
        // Both permits' calls answered and waiting for their commits.
        while (appending < 2) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
        // Nothing more may be asked while they wait. Half a second of real time to show it: a runner
        // that released its permits early asks the next calls within milliseconds (this can only pass
        // wrongly, never fail wrongly).
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 500)))
        const asked = { calls: fake.judgeCalls, appending }
        yield* Deferred.succeed(release, undefined)
        return { asked, judgments: yield* Fiber.join(reply) }
      }).pipe(Effect.scoped, Effect.provide(layer))
    )
    expect(outcome.asked).toEqual({ calls: 2, appending: 2 })
    expect(outcome.judgments.map((j) => j.status)).toEqual(["ok", "ok", "ok", "ok", "ok"])
    expect(fake.judgeCalls).toBe(5)
  })

  it("once the run is stopping (Ctrl+C), calls not yet sent are answered \"not asked\" and nothing is sent", async () => {
    fake.reset()
    const tasks = (await clarityTasks("s")).slice(0, 3)
    const answers = await Effect.runPromise(
      Effect.gen(function*() {
        const remote = yield* Coordinator.make({
          judge: judgeOptions(),
          batchSize: 10,
          batchesInFlight: 2,
          stopping: () => true
        })
        return yield* Effect.forEach(tasks, ({ keys, ...task }) => remote.judge({ runId: "p/stop", keys, task }), {
          concurrency: "unbounded"
        })
      }).pipe(Effect.scoped, Effect.provide(cluster()))
    )
    expect(answers).toEqual([undefined, undefined, undefined])
    expect(fake.calls).toBe(0)
  })

  it("a runner whose key the provider rejects fails the run with the provider's one-line message (no key in any message)", async () => {
    const strict = await FakeOpenAi.start({ apiKey: "right-key" })
    try {
      const exit = await Effect.runPromiseExit(
        Effect.gen(function*() {
          const remote = yield* Coordinator.make({
            judge: { ...judgeOptions(), baseUrl: strict.url },
            batchSize: 10,
            batchesInFlight: 2
          })
          const rubric = yield* loadRubric("rag-answers/clarity").pipe(Effect.provide(NodeContext.layer))
          return yield* remote.judge({
            runId: "p/r2",
            keys: ["k"],
            task: {
              pipeline: "p",
              caseId: "c",
              ordinal: 0,
              iteration: 1,
              rubric,
              target: "answer",
              vars: { question: "q", answer: "a", passages: "", history: "" }
            }
          })
        }).pipe(Effect.scoped, Effect.provide(cluster({ concurrency: 2, apiKey: undefined })))
      )
      expect(exit._tag).toBe("Failure")
      expect(JSON.stringify(exit)).toContain("FatalJudgeError")
      expect(strict.judgeCalls).toBe(0)
    } finally {
      await strict.close()
    }
  })

  it("the shared rate limit: every runner's starts spaced at the run's --rpm (95%), a 429 pauses them all", () => {
    const limit = makeSharedLimit()
    // Twenty runners' calls asking at the same instant, --burst 1: one start every 60 s / (600 × 0.95)
    // ≈ 105 ms; a start further ahead than two of those is not handed out yet (asked again then: a
    // 429 meanwhile could not recall it).
    const interval = 60_000 / 570
    const replies = Array.from({ length: 20 }, () => limit.reserve(0, { rpm: 600, burst: 1, tokens: 10 }, 0.5))
    const committed = replies.filter((r) => r.committed)
    expect(committed.map((r) => r.waitMs)).toEqual([0, interval, 2 * interval].map((w) => expect.closeTo(w, 6)))
    for (const r of replies.filter((r) => !r.committed)) expect(r.waitMs).toBeCloseTo(2 * interval, 6)
    // A 429 from one runner pauses every runner (Retry-After a floor), and empties the bucket.
    limit.report(0, { ticket: committed[0]!.ticket, outcome: "rate_limited", retryAfterMs: 5_000, rpm: 600, burst: 1 })
    // (A runner asks again when its start is not handed out yet: the start it gets.)
    const startAt = (from: number) => {
      for (let t = from;;) {
        const r = limit.reserve(t, { rpm: 600, burst: 1, tokens: 10 }, 0.5)
        if (r.committed) return t + r.waitMs
        expect(r.paused).toBe(t < 5_000)
        t += r.waitMs
      }
    }
    expect(startAt(0)).toBe(5_000)
    // Tokens per minute: a call costing a second's worth waits a second for the next.
    const tpm = makeSharedLimit()
    const tpmStart = () => {
      for (let t = 0;;) {
        const r = tpm.reserve(t, { tpm: 60_000, tokens: 1_000 }, 0.5)
        if (r.committed) return t + r.waitMs
        t += r.waitMs
      }
    }
    const a = tpmStart()
    const b = tpmStart()
    expect(b - a).toBeCloseTo(1_000 / 0.95, 6)
  })

  it("--burst: that many starts at once for the whole cluster (one short of full at first), then the pace; without it one at first", () => {
    for (const [burst, atOnce] of [[5, 4], [20, 19], [undefined, 1], [1, 1]] as const) {
      const limit = makeSharedLimit()
      const waits = Array.from({ length: 25 }, () => limit.reserve(0, { rpm: 600, burst, tokens: 10 }, 0.5)).filter((
        r
      ) => r.committed).map((r) => r.waitMs)
      expect(waits.filter((w) => w < 1e-6).length).toBe(atOnce)
      expect(waits[atOnce]).toBeCloseTo(60_000 / 570, 6)
    }
  })

  it("adaptive: the first 429 (an unpaced wave) starts the cluster's pace at one a second; --adaptive false learns nothing", () => {
    const limit = makeSharedLimit()
    // No --rpm: nothing paces the runners' calls until the server says no.
    const tickets = Array.from({ length: 30 }, () => limit.reserve(0, { tokens: 10 }, 0.5))
    for (const r of tickets) expect([r.waitMs, r.committed]).toEqual([0, true])
    expect(limit.stats()?.rpm).toBeUndefined()
    limit.report(5, { ticket: tickets[20]!.ticket, outcome: "rate_limited", retryAfterMs: 1_000 })
    expect(limit.stats()?.rpm).toBeCloseTo(60, 6)
    expect(limit.stats()?.cuts).toBe(1)
    const fixed = makeSharedLimit()
    const t = fixed.reserve(0, { tokens: 10, adaptive: false }, 0.5)
    fixed.report(5, { ticket: t.ticket, outcome: "rate_limited", retryAfterMs: 1_000, adaptive: false })
    expect(fixed.stats()?.rpm).toBeUndefined()
    expect(fixed.stats()?.rateLimited).toBe(1)
  })

  it("the RateLimit entity answers reservations for the runners, on its own Clock (here one whose time stands still)", async () => {
    const real = Clock.make()
    const stopped: Clock.Clock = {
      [Clock.ClockTypeId]: Clock.ClockTypeId,
      unsafeCurrentTimeMillis: () => 0,
      unsafeCurrentTimeNanos: () => 0n,
      currentTimeMillis: Effect.succeed(0),
      currentTimeNanos: Effect.succeed(0n),
      sleep: (duration) => real.sleep(duration)
    }
    const replies = await Effect.runPromise(
      Effect.gen(function*() {
        const gate = (yield* RateLimit.client)("openai-compatible|fake|")
        const out: Array<{ readonly waitMs: number; readonly committed: boolean; readonly ticket: number }> = []
        for (let i = 0; i < 5; i++) out.push(yield* gate.Reserve({ rpm: 600, burst: 1, tokens: 10 }))
        return out
      }).pipe(Effect.scoped, Effect.provide(cluster()), Effect.withClock(stopped))
    )
    const interval = 60_000 / 570
    expect(replies.map((r) => [r.committed, r.waitMs])).toEqual(
      [[true, 0], [true, interval], [true, 2 * interval], [false, 2 * interval], [false, 2 * interval]].map((
        [c, w]
      ) => [c, expect.closeTo(w as number, 6)])
    )
    // The tickets are the starts handed out, on the entity's clock.
    expect(replies.slice(0, 3).map((r) => r.ticket)).toEqual(
      [0, interval, 2 * interval].map((t) => expect.closeTo(t, 6))
    )
  })

  it(
    "three runners against a server enforcing 600 requests/min and charging rejected requests (no --rpm given): every call ends ok, each paid once (rate figures: RatePolicy.test.ts)",
    async () => {
      const server = await FakeOpenAi.start({
        record: false,
        latencyMs: 50,
        limit: { rpm: 600, burst: 10, chargeRejected: true }
      })
      try {
        const rubric = await Effect.runPromise(
          loadRubric("rag-answers/clarity").pipe(Effect.provide(NodeContext.layer))
        )
        // Waiting is on the real clock here: quiet, the run takes ~23 s; in a fresh clone's suite beside
        // two busy processes it took 78 s and 9 judgments ran out of a 60 s --max-wait (a bound a slow
        // machine reaches is a flake; the wait rules themselves are tested on TestClock in RatePolicy).
        const options: JudgeOptions = { ...judgeOptions(), baseUrl: server.url, maxWaitMs: 600_000 }
        const PER_RUNNER = 40
        const verdicts = await Effect.runPromise(
          Effect.gen(function*() {
            const scope = yield* Effect.scope
            // Three runners: three gates of their own (16 calls in flight each), one RateLimit entity.
            const runners = yield* Effect.forEach(
              [1, 2, 3],
              () =>
                Layer.buildWithScope(RunnerHost.layerJudges({ concurrency: 16, preflight: false }), scope).pipe(
                  Effect.map((ctx) => Context.get(ctx, RunnerHost.RunnerJudges))
                )
            )
            return yield* Effect.forEach(
              runners,
              (runner, r) =>
                Effect.flatMap(runner.get(options), (judge) =>
                  Effect.forEach(
                    Array.from({ length: PER_RUNNER }, (_, i) => i),
                    (i) =>
                      runner.withPermit(
                        judge.judge({
                          pipeline: "p",
                          caseId: `r${r}c${i}`,
                          ordinal: i,
                          iteration: 1,
                          rubric,
                          target: "answer",
                          vars: { question: `q${r}-${i}`, answer: "a", passages: "", history: "" }
                        })
                      ),
                    { concurrency: "unbounded" }
                  )),
              { concurrency: "unbounded" }
            )
          }).pipe(Effect.scoped, Effect.provide(RunnerHost.layerRateLimit.pipe(Layer.provideMerge(TestRunner.layer))))
        )
        const all = verdicts.flat()
        expect(all.length).toBe(3 * PER_RUNNER)
        expect(all.filter((v) => v.status !== "ok")).toEqual([])
        // Every judgment paid once: the server accepted exactly one call per judgment.
        expect(server.calls - server.limited).toBe(3 * PER_RUNNER)
        console.log(`cluster protocol, 3 runners, charging server: ${server.calls} calls, ${server.limited} met a 429`)
      } finally {
        await server.close()
      }
    },
    300_000
  )
})
