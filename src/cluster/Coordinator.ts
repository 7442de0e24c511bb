/**
 * The coordinator's side of `run … --cluster`: judge calls from the ordered pool are gathered into
 * `JudgeBatch` messages of up to `batchSize` tasks and sent to the `JudgeShard` entities, with at
 * most `batchesInFlight` batches waiting for replies; each call gets its judgments back from its
 * batch's reply. Everything else in the run (validation, run id, manifest, order of records,
 * reports, Ctrl+C, resume) stays local and unchanged.
 *
 * - A batch's id is a hash of its tasks' keys and of the states the journal held for them when it
 *   was sent: the same batch sent again (a retried send) is one message, while a batch sent again
 *   on a resume after its judgments failed is a new message (not its stored failed reply).
 * - @effect/rpc 0.76.2 turns a socket write to a runner that just died into a defect
 *   (`Effect.orDie` in `RpcClient.makeProtocolSocket`); a send is retried on defects (a bounded
 *   number of times) — a message with a primary key is safe to send again.
 * - When the run is stopping (Ctrl+C, a fatal error), calls not yet sent are answered "not asked";
 *   batches already sent finish on the runners, and their judgments are in the journal.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import { type FatalJudgeError, OutputError } from "../domain/Errors.js"
import type { JudgeTask, Judgment, ListJudgeTask } from "../domain/Judgment.js"
import type { RemoteJudging } from "../engine/RemoteJudging.js"
import { sha256 } from "../judges/Prompt.js"
import { type JudgeOptions, JudgeShard, shardEntityId, type WireTask } from "./Protocol.js"

export interface CoordinatorOptions {
  readonly judge: JudgeOptions
  /** Tasks per batch (25–50 measured best). */
  readonly batchSize: number
  /** Batches waiting for replies at once (≈ 8 per runner). */
  readonly batchesInFlight: number
  /** True once the run is stopping: nothing more is sent. */
  readonly stopping?: (() => boolean) | undefined
  /** How long a batch may gather tasks before it is sent. Default 5 ms. */
  readonly lingerMs?: number | undefined
  /** Batches in flight as runners come and go: polled every few seconds, the limit follows it. */
  readonly batchesInFlightNow?: Effect.Effect<number> | undefined
  /** Runs once, before a run's first batch is sent (waiting for a killed coordinator's batches). */
  readonly beforeFirstBatch?: ((runId: string) => Effect.Effect<void>) | undefined
}

interface Pending {
  readonly runId: string
  readonly task: WireTask
  /** The journal's states of the task's keys when it was asked (part of the batch id). */
  readonly states: string
  readonly done: Deferred.Deferred<ReadonlyArray<Judgment> | undefined, FatalJudgeError | OutputError>
}

const wireTask = (keys: ReadonlyArray<string>, task: JudgeTask | ListJudgeTask): WireTask => ({
  keys,
  pipeline: task.pipeline,
  caseId: task.caseId,
  ordinal: task.ordinal,
  iteration: task.iteration,
  rubric: task.rubric,
  vars: task.vars,
  ...("items" in task
    ? { items: task.items.map((i) => ({ target: i.target, vars: i.vars })) }
    : { target: task.target })
})

/** Sends to a runner that just died fail as defects: retried, a bounded number of times, after a pause. */
const DEFECT_RETRIES = 20

export const make = (options: CoordinatorOptions) =>
  Effect.gen(function*() {
    const makeClient = yield* JudgeShard.client
    const queue = yield* Queue.unbounded<Pending>()
    const inFlight = yield* Effect.makeSemaphore(options.batchesInFlight)
    const stopping = options.stopping ?? (() => false)
    const started = new Set<string>()
    const firstBatch = yield* Effect.makeSemaphore(1)

    const send = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function*() {
        if (stopping()) {
          yield* Effect.forEach(batch, (p) => Deferred.succeed(p.done, undefined), { discard: true })
          return
        }
        const runId = batch[0]!.runId
        if (options.beforeFirstBatch !== undefined && !started.has(runId)) {
          started.add(runId)
          yield* firstBatch.withPermits(1)(options.beforeFirstBatch(runId))
        } else yield* firstBatch.withPermits(1)(Effect.void)
        const batchId = sha256(batch.map((p) => `${p.task.keys.join(",")}:${p.states}`).join(";")).slice(0, 24)
        const client = makeClient(shardEntityId(runId, batchId))
        const reply = yield* client.JudgeBatch({
          runId,
          batchId,
          judge: options.judge,
          tasks: batch.map((p) => p.task)
        }).pipe(
          Effect.sandbox,
          Effect.retry({
            times: DEFECT_RETRIES,
            schedule: Schedule.spaced("500 millis"),
            while: (cause) => !Cause.isFailType(cause) && !Cause.isInterruptedOnly(cause)
          }),
          Effect.unsandbox,
          Effect.either
        )
        if (reply._tag === "Left") {
          const e = reply.left
          const error = e._tag === "FatalJudgeError"
            ? e
            : e._tag === "StoreFailed"
            ? new OutputError({
              path: `the store (run ${runId})`,
              problem: `a runner could not save judgments: ${e.problem}`
            })
            : new OutputError({
              path: `the cluster (run ${runId})`,
              problem: `a batch could not be delivered: ${e._tag}${"message" in e ? `: ${String(e.message)}` : ""}`
            })
          yield* Effect.forEach(batch, (p) => Deferred.fail(p.done, error), { discard: true })
          return
        }
        let at = 0
        for (const p of batch) {
          const n = p.task.keys.length
          yield* Deferred.succeed(p.done, reply.right.slice(at, at + n))
          at += n
        }
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.forEach(batch, (p) => Deferred.failCause(p.done, cause as Cause.Cause<never>), { discard: true })
        )
      )

    const linger = options.lingerMs ?? 5
    // Gather a batch (a short linger lets the pool's workers fill it), then send it once a slot is free.
    const loop = Effect.gen(function*() {
      const first = yield* Queue.takeBetween(queue, 1, options.batchSize)
      let batch = Array.from(first)
      if (batch.length < options.batchSize) {
        yield* Effect.sleep(linger)
        batch = batch.concat(Array.from(yield* Queue.takeUpTo(queue, options.batchSize - batch.length)))
      }
      // Batches are per run (one coordinator runs one run; keep them apart anyway).
      const byRun = new Map<string, Array<Pending>>()
      for (const p of batch) {
        const list = byRun.get(p.runId)
        if (list === undefined) byRun.set(p.runId, [p])
        else list.push(p)
      }
      for (const list of byRun.values()) {
        yield* inFlight.take(1)
        yield* Effect.forkScoped(send(list).pipe(Effect.ensuring(inFlight.release(1))))
      }
    }).pipe(Effect.forever)
    yield* Effect.forkScoped(loop)
    if (options.batchesInFlightNow !== undefined) {
      let limit = options.batchesInFlight
      yield* Effect.forkScoped(options.batchesInFlightNow.pipe(
        Effect.flatMap((n) =>
          n === limit || n < 1 ? Effect.void : Effect.zipRight(inFlight.resize(n), Effect.sync(() => void (limit = n)))
        ),
        Effect.delay("5 seconds"),
        Effect.forever
      ))
    }

    const remote: RemoteJudging = {
      // Room for runners that join later (the batches in flight follow them; unsent calls cost nothing).
      workers: options.batchSize * Math.max(options.batchesInFlight, 32),
      judge: ({ runId, keys, task, states }) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<ReadonlyArray<Judgment> | undefined, FatalJudgeError | OutputError>()
          yield* Queue.offer(queue, {
            runId,
            task: wireTask(keys, task),
            states: (states ?? []).map((s) => s ?? "-").join(","),
            done
          })
          return yield* Deferred.await(done)
        })
    }
    return remote
  })
