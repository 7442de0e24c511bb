/**
 * What a cluster runner hosts: the `JudgeShard` entity (judge a batch of tasks) and the `RateLimit`
 * entity (the cluster-wide `--rpm` / `--tpm` and 429 pause).
 *
 * Per task of a batch, through the judging core (`engine/Judgments.ts`) over the store: a judgment
 * the run's journal already holds is reused (a batch delivered again after its runner died, or by a
 * restarted coordinator, pays nothing twice); otherwise the runner's own rate gate gives a permit
 * (its `--concurrency`, adaptive), the shared `RateLimit` entity paces the start (the run's
 * `--rpm`/`--tpm`/`--burst` and the rate learned from 429s, for the whole cluster), the judge is
 * asked, and the judgments are appended to the journal before the batch answers. A paid reply
 * awaiting repair is journaled as an attempt, as in a local run.
 *
 * The judge is built from the run's options in the batch (provider, model, parameters, base URL)
 * with the key from the runner's own `--api-key` or environment — a key never travels in a message —
 * once per distinct options, with its preflight: a misconfigured provider fails every batch with the
 * same `FatalJudgeError`, which stops the coordinator.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import type * as Redacted from "effect/Redacted"
import { FatalJudgeError, OutputError } from "../domain/Errors.js"
import { decodeJudgmentJson, decodePendingRepairJson, type Judgment } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import * as Judgments from "../engine/Judgments.js"
import type { Plan, Sink } from "../engine/Judgments.js"
import { ClusterJudging } from "../engine/RemoteJudging.js"
import * as Shutdown from "../engine/Shutdown.js"
import { Judge } from "../judges/Judge.js"
import { llmJudgeLayer } from "../judges/JudgeSettings.js"
import { noTokens } from "../pricing/Prices.js"
import * as FifoSemaphore from "../providers/FifoSemaphore.js"
import type { ChatResponse, ProviderError } from "../providers/LlmProvider.js"
import type { ProviderName } from "../providers/Names.js"
import * as RateGate from "../providers/RateGate.js"
import type { RateLimitInfo } from "../providers/RateLimitHeaders.js"
import * as JudgmentCache from "../store/JudgmentCache.js"
import { type OpenedJournal, State } from "../store/JudgmentJournal.js"
import { type JudgeOptions, JudgeShard, RateLimit, rateLimitEntityId, StoreFailed, type WireTask } from "./Protocol.js"
import { makeSharedLimit } from "./SharedLimit.js"

// ---------------------------------------------------------------------------------------------
// Where runners read and write judgments (PostgreSQL in production, memory in protocol tests)

export interface StoredRow {
  readonly status: string
  readonly body: string
}

export class RunnerStore extends Context.Tag("rag-eval/cluster/RunnerStore")<RunnerStore, {
  /** The rows a run holds for these keys. */
  readonly rows: (
    runId: string,
    keys: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, StoredRow>, StoreFailed>
  /** Append whole judgments / attempts: a success is never overwritten. */
  readonly append: (
    runId: string,
    rows: ReadonlyArray<{ readonly key: string; readonly status: string; readonly body: string }>
  ) => Effect.Effect<void, StoreFailed>
}>() {}

/** The store in memory (protocol tests): the same first-success-wins rule as the SQL one. */
export const layerMemoryStore = Layer.sync(RunnerStore, () => {
  const runs = new Map<string, Map<string, StoredRow>>()
  const run = (id: string) => {
    let m = runs.get(id)
    if (m === undefined) runs.set(id, m = new Map())
    return m
  }
  return {
    rows: (runId, keys) =>
      Effect.sync(() =>
        new Map(keys.flatMap((k) => {
          const r = run(runId).get(k)
          return r === undefined ? [] : [[k, r] as const]
        }))
      ),
    append: (runId, rows) =>
      Effect.sync(() => {
        const m = run(runId)
        for (const r of rows) if (m.get(r.key)?.status !== "ok") m.set(r.key, { status: r.status, body: r.body })
      })
  }
})

// ---------------------------------------------------------------------------------------------
// Judges built from a batch's options

export interface RunnerSettings {
  /** `--api-key` of the runner (else the provider's environment variable, as for `run`). */
  readonly apiKey?: Redacted.Redacted | undefined
  /** Calls in flight on this runner (its rate gate's ceiling). */
  readonly concurrency: number
  readonly adaptive?: boolean | undefined
  /** One minimal request when a judge is first built (default true). */
  readonly preflight?: boolean | undefined
}

export class RunnerJudges extends Context.Tag("rag-eval/cluster/RunnerJudges")<RunnerJudges, {
  readonly get: (options: JudgeOptions) => Effect.Effect<Judge["Type"], FatalJudgeError>
  /**
   * One of the runner's `--concurrency` permits, held from the call's start until its judgments are
   * in the journal: a `kill -9` loses at most that many paid calls.
   */
  readonly withPermit: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * `effect` once no other delivery is judging the same `id` (a run's task) on this runner; `waited`
   * says it had to wait — what the store holds for the task may have changed meanwhile.
   */
  readonly oneAtATime: <A, E, R>(
    id: string,
    effect: (waited: boolean) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /** One object per distinct rubric (see `makeSameRubric`). */
  readonly sameRubric: (rubric: Rubric) => Rubric
}>() {}

/** Distinct rubrics a runner keeps before it starts afresh (a runner serves few; this bounds a long-lived one). */
const RUBRICS_KEPT = 256

/**
 * Every task of a batch carries its rubric, and the message is decoded afresh, so each task arrives
 * with a rubric object of its own. The judge keeps what it derives from a rubric — the prompt's
 * templates, the answer's decoder and JSON schema, an object rubric's compiled validator
 * (judges/Prompt.ts, judges/CallReader.ts) — per rubric object: given a new object for every task it
 * rebuilt them for every call (rag-answers, 2,004 judgments on two runners: ~6.6 ms of a runner's CPU
 * a judgment, ~5.7 ms without; docs/cluster.md). Rubrics equal in every field are one object here, so
 * those are built once per rubric.
 */
const makeSameRubric = () => {
  let known = new Map<string, Rubric>()
  return (rubric: Rubric): Rubric => {
    const key = JSON.stringify(rubric)
    const kept = known.get(key)
    if (kept !== undefined) return kept
    // Replaced when full, not cleared, as the judges' caches are (judges/Terms.ts says why).
    if (known.size >= RUBRICS_KEPT) known = new Map()
    known.set(key, rubric)
    return rubric
  }
}

/**
 * One delivery at a time per id: a batch delivered again under another id (a restarted coordinator
 * batches differently) while its first delivery is being judged here waits for it, then reads the
 * store again, instead of calling for the same keys at the same time.
 */
const makeOneAtATime = () => {
  const running = new Map<string, Deferred.Deferred<void>>()
  const oneAtATime = <A, E, R>(
    id: string,
    effect: (waited: boolean) => Effect.Effect<A, E, R>,
    waited = false
  ): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      const before = running.get(id)
      if (before !== undefined) return Effect.zipRight(Deferred.await(before), oneAtATime(id, effect, true))
      const done = Deferred.unsafeMake<void>(FiberId.none)
      running.set(id, done)
      return Effect.ensuring(
        effect(waited),
        Effect.suspend(() => {
          if (running.get(id) === done) running.delete(id)
          return Deferred.succeed(done, undefined)
        })
      )
    })
  return oneAtATime
}

/** The longest a call waits for the shared limit's answer before going ahead on the runner's own gate. */
const RESERVE_TIMEOUT = Duration.seconds(10)

const statusOf = (j: Judgment) => j.status === "ok" ? "ok" : j.failure === "transport" ? "transport" : "judge"

type RateClient = Effect.Effect.Success<typeof RateLimit.client> extends (id: string) => infer C ? C : never

/**
 * A call started by the shared limit: it asks for a start (again while the start it gets is not
 * committed), waits it out — within the judgment's `--max-wait` once it has met a 429 — calls, and
 * reports a 429 or a success with rate-limit headers. An entity whose host just died answers once
 * its shard has moved (seconds): past RESERVE_TIMEOUT the call goes ahead on the runner's own gate
 * rather than wait on.
 */
const sharedStart = <R>(
  shared: RateClient,
  limits: {
    readonly rpm?: number | undefined
    readonly tpm?: number | undefined
    readonly burst?: number | undefined
    readonly adaptive: boolean
    readonly maxPauseMs: number
  },
  estimatedTokens: number,
  attempt: Effect.Effect<ChatResponse, ProviderError, R>,
  wait: RateGate.WaitBudget | undefined
): Effect.Effect<ChatResponse, ProviderError, R> =>
  Effect.gen(function*() {
    let ticket: number | undefined
    for (;;) {
      const reservation = yield* shared.Reserve({ ...limits, tokens: estimatedTokens }).pipe(
        Effect.timeoutOption(RESERVE_TIMEOUT),
        Effect.map(Option.getOrUndefined),
        Effect.orElseSucceed(() => undefined)
      )
      if (reservation === undefined) break
      const now = yield* Clock.currentTimeMillis
      if (wait !== undefined && reservation.paused) wait.since ??= now
      if (wait?.since !== undefined && now + reservation.waitMs > wait.since + wait.maxWaitMs) {
        yield* Effect.sleep(Math.max(0, wait.since + wait.maxWaitMs - now))
        return yield* Effect.fail(RateGate.waitSpent(wait))
      }
      if (reservation.waitMs > 0) yield* Effect.sleep(reservation.waitMs)
      if (reservation.committed) {
        ticket = reservation.ticket
        break
      }
    }
    const report = (outcome: "ok" | "rate_limited", retryAfterMs?: number, rateLimit?: RateLimitInfo) =>
      ticket === undefined
        ? Effect.void
        : Effect.ignore(shared.Report({ ...limits, ticket, outcome, retryAfterMs, rateLimit }))
    return yield* attempt.pipe(
      Effect.tap((reply) => reply.rateLimit === undefined ? Effect.void : report("ok", undefined, reply.rateLimit)),
      Effect.tapError((e) => e.kind === "rate_limited" ? report("rate_limited", e.retryAfterMs, e.limits) : Effect.void)
    )
  })

/**
 * The runner's judges: one per distinct judge options, built on first use and kept for the life of
 * the runner. Every call is paced by the shared `RateLimit` entity when the run sets `--rpm` /
 * `--tpm` or is adaptive (the default), and a 429 pauses the whole cluster.
 */
export const layerJudges = (settings: RunnerSettings) =>
  Layer.scoped(
    RunnerJudges,
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      const makeRateClient = yield* RateLimit.client
      const built = new Map<string, Deferred.Deferred<Judge["Type"], FatalJudgeError>>()
      const permits = FifoSemaphore.make(settings.concurrency)
      const build = (options: JudgeOptions) =>
        Effect.gen(function*() {
          const adaptive = options.adaptive ?? true
          // Every call asks the shared limit when the run sets a limit or learns one (the default).
          const shared = options.rpm !== undefined || options.tpm !== undefined || adaptive
            ? makeRateClient(rateLimitEntityId(options))
            : undefined
          // The runner's gate: its own AIMD concurrency (the runner's --adaptive and the run's), no
          // rate of its own — the shared limit paces and learns for the whole cluster.
          const local = RateGate.make({
            concurrency: settings.concurrency,
            adaptive: (settings.adaptive ?? true) && adaptive,
            learnRate: false,
            maxPauseMs: options.maxWaitMs
          })
          const limits = {
            rpm: options.rpm,
            tpm: options.tpm,
            burst: options.burst,
            adaptive,
            maxPauseMs: options.maxWaitMs
          }
          const gate = Layer.scoped(
            RateGate.RateGate,
            Effect.map(local, (local) => ({
              ...local,
              run: <R>(
                estimatedTokens: number,
                attempt: Parameters<typeof local.run<R>>[1],
                wait?: RateGate.WaitBudget
              ) =>
                local.run(
                  estimatedTokens,
                  shared === undefined ? attempt : sharedStart(shared, limits, estimatedTokens, attempt, wait),
                  wait
                )
            }))
          )
          // The judge as the CLI builds it (judges/JudgeSettings.ts), behind the runner's gate.
          const layer = llmJudgeLayer({
            provider: options.provider as Exclude<ProviderName, "heuristic">,
            model: options.model,
            baseUrl: options.baseUrl,
            apiKey: settings.apiKey,
            requireKey: true,
            timeoutMs: options.timeoutMs,
            maxRetries: options.maxRetries,
            maxWaitMs: options.maxWaitMs,
            seed: options.seed,
            temperature: options.temperature,
            preflight: settings.preflight ?? true
          }, gate)
          const context = yield* Layer.buildWithScope(layer, scope).pipe(
            Effect.mapError((e) => new FatalJudgeError({ line: `runner: ${e.problem}`, kind: "config" }))
          )
          const judge = Context.get(context, Judge)
          if (judge.preflight !== undefined) {
            yield* judge.preflight.pipe(Effect.catchTag("JudgeStopped", () => Effect.void))
          }
          return judge
        })
      return {
        withPermit: (effect) => permits.withPermit(effect),
        oneAtATime: makeOneAtATime(),
        sameRubric: makeSameRubric(),
        get: (options: JudgeOptions) =>
          Effect.suspend(() => {
            const id = JSON.stringify([
              options.provider,
              options.model,
              options.baseUrl,
              options.temperature,
              options.seed,
              options.timeoutMs,
              options.maxRetries,
              options.maxWaitMs,
              options.rpm,
              options.tpm,
              options.burst,
              options.adaptive
            ])
            let deferred = built.get(id)
            if (deferred !== undefined) return Deferred.await(deferred)
            deferred = Deferred.unsafeMake<Judge["Type"], FatalJudgeError>(undefined as never)
            built.set(id, deferred)
            const d = deferred
            return build(options).pipe(Effect.exit, Effect.tap((exit) => Deferred.done(d, exit)), Effect.flatten)
          })
      }
    })
  )

// ---------------------------------------------------------------------------------------------
// The JudgeShard entity

/** A row's state, as the journal index states it. */
const stateOfRow = (row: StoredRow | undefined): State | undefined => {
  switch (row?.status) {
    case "ok":
      return State.ok
    case "judge":
      return State.judgeFailed
    case "transport":
      return State.transportFailed
    case "attempt":
      return State.attempt
    default:
      return undefined
  }
}

/**
 * A batch's view of the run's journal in the store, for the judging core: what the store held for
 * the batch's keys when it arrived, and appends that go to the store (a failed write is the
 * coordinator's `StoreFailed`).
 */
const storeJournal = (
  store: RunnerStore["Type"],
  runId: string,
  held: ReadonlyMap<string, StoredRow>
): OpenedJournal => {
  const path = `journal of run ${runId}`
  const write = (rows: ReadonlyArray<{ readonly key: string; readonly status: string; readonly body: string }>) =>
    store.append(runId, rows).pipe(Effect.mapError((e) => new OutputError({ path, problem: e.problem })))
  return {
    stats: { ok: 0, judgeFailed: 0, transportFailed: 0, attempts: 0, damagedLines: 0, tornLines: 0 },
    state: (key) => stateOfRow(held.get(key)),
    judgment: (key) => {
      const row = held.get(key)
      return row === undefined || row.status === "attempt"
        ? undefined
        : Option.getOrUndefined(decodeJudgmentJson(row.body))
    },
    pendingRepair: (key) => {
      const row = held.get(key)
      return row?.status === "attempt" ? decodePendingRepairJson(row.body) : undefined
    },
    append: (js) => write(js.map((j) => ({ key: j.key, status: statusOf(j), body: JSON.stringify(j) }))),
    appendAttempt: (key, p) =>
      write([{
        key,
        status: "attempt",
        body: JSON.stringify({
          key,
          kind: "attempt",
          text: p.text,
          problem: p.problem,
          usage: p.usage,
          asks: p.asks,
          attempts: p.attempts
        })
      }]),
    path
  }
}

/** A wire task as the core plans it: the keys the coordinator computed, the task it sent, its rubric's one object. */
const planOf = (t: WireTask, rubric: Rubric): Plan => {
  const base = {
    pipeline: t.pipeline,
    caseId: t.caseId,
    ordinal: t.ordinal,
    iteration: t.iteration,
    rubric,
    vars: t.vars
  }
  return t.items !== undefined
    ? { list: true, rubric, keys: t.keys, task: { ...base, items: t.items } }
    : { list: false, rubric, keys: t.keys, task: { ...base, target: t.target ?? "answer" } }
}

/**
 * A batch's tasks through the judging core, over the store's journal: a judgment the store holds
 * and the run keeps is reused (a batch delivered again pays nothing twice); the rest are judged
 * within one of the runner's permits and appended to the store before the batch answers.
 */
export const judgeBatch = (
  payload: { readonly runId: string; readonly judge: JudgeOptions; readonly tasks: ReadonlyArray<WireTask> }
) =>
  Effect.gen(function*() {
    const store = yield* RunnerStore
    const judges = yield* RunnerJudges
    const { runId, tasks } = payload
    const held = new Map(yield* store.rows(runId, tasks.flatMap((t) => t.keys)))
    const judge = yield* judges.get(payload.judge)
    // The coordinator looked in the cache before sending; the runner never stops its judges; and it
    // makes its calls itself (never back through a cluster).
    const judgments = yield* Judgments.make.pipe(
      Effect.provideService(Judge, judge),
      Effect.provideService(ClusterJudging, undefined),
      Effect.provide(Layer.merge(JudgmentCache.layerNone, Shutdown.layerNever))
    )
    const core = yield* judgments.open({
      pipeline: tasks[0]?.pipeline ?? "",
      runId,
      rubrics: new Map(),
      journal: storeJournal(store, runId, held),
      retryFailed: payload.judge.retryFailed,
      around: judges.withPermit
    })
    const sink: Sink = { state: { done: 0, failed: 0, reused: 0 }, tokens: noTokens() }
    const judgeTask = (t: WireTask, waited: boolean) =>
      Effect.gen(function*() {
        if (waited) { for (const [key, row] of yield* store.rows(runId, t.keys)) held.set(key, row) }
        const plan = planOf(t, judges.sameRubric(t.rubric))
        const kept = core.fromJournal(plan, sink)
        if (kept !== undefined) return kept
        return yield* judgeNew(t, plan)
      })
    const judgeNew = (t: WireTask, plan: Plan): Effect.Effect<ReadonlyArray<Judgment>, FatalJudgeError | StoreFailed> =>
      core.judge(plan, { id: t.caseId, ordinal: t.ordinal }, sink).pipe(
        Effect.catchTags({
          OutputError: (e) => Effect.fail(new StoreFailed({ problem: e.message })),
          UsageError: (e) => Effect.die(e)
        }),
        Effect.flatMap((js) => {
          if (js !== undefined) return Effect.succeed(js)
          // Not judged: a misconfigured provider fails the batch (the coordinator stops); a stopped
          // judge leaves the batch to be delivered again.
          const fatal = core.fatal()
          return fatal !== undefined ? Effect.fail(fatal) : Effect.die(new Error("judge stopped"))
        })
      )
    const results = yield* Effect.forEach(
      tasks,
      (t) => judges.oneAtATime(`${runId}\n${t.keys.join("\n")}`, (waited) => judgeTask(t, waited)),
      { concurrency: "unbounded" }
    )
    return results.flat()
  })

export const layerJudgeShard = JudgeShard.toLayer(
  Effect.gen(function*() {
    const context = yield* Effect.context<RunnerStore | RunnerJudges>()
    return {
      JudgeBatch: (envelope) => judgeBatch(envelope.payload).pipe(Effect.provide(context))
    }
  }),
  { concurrency: "unbounded", maxIdleTime: "1 minute" }
)

// ---------------------------------------------------------------------------------------------
// The RateLimit entity (its state: SharedLimit.ts)

export const layerRateLimit = RateLimit.toLayer(
  Effect.sync(() => {
    const limit = makeSharedLimit()
    return {
      // Time is the entity's Clock (TestClock in tests); the tickets it hands out are on it.
      Reserve: (envelope) =>
        Effect.map(
          Effect.zip(Clock.currentTimeMillis, Random.next),
          ([now, random]) => limit.reserve(now, envelope.payload, random)
        ),
      Report: (envelope) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => limit.report(now, envelope.payload)))
    }
  }),
  { maxIdleTime: "10 minutes" }
)

/** Both entities of a runner, over its store and judges. */
export const layerEntities = (settings: RunnerSettings) =>
  Layer.mergeAll(layerJudgeShard, layerRateLimit).pipe(Layer.provide(layerJudges(settings)))
