/**
 * The cluster's protocol (SPEC §9): what a coordinator (`rag-eval run … --cluster`) and the runners
 * (`rag-eval runner`) say to each other through @effect/cluster.
 *
 * - **`JudgeShard`** entities take `JudgeBatch` messages: 25–50 judgment tasks of consecutive cases
 *   (their variables, not rendered prompts), with the run's judge options (provider, model,
 *   parameters, base URL — never a key: a runner uses its own), answered with the tasks'
 *   judgments. Messages are persisted, with the primary key `runId/batchId`: a batch sent twice
 *   (a retried send, a coordinator restarted) is one message, and a batch whose runner died is
 *   delivered again to the runner that takes its shard over. One judgment per message measured
 *   3–5× slower (client and SQL cost per message).
 * - **`RateLimit`** entities (one per provider/model/server) run the rate-control policy for every
 *   runner at once (`SharedLimit.ts`: `--rpm` / `--tpm` / `--burst`, the shared pause after a 429,
 *   the server's rate learned from every runner's 429s and headers): `Reserve` answers how long to
 *   wait before a call may start, `Report` tells it a 429 or a success with rate-limit headers.
 */
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import * as Schema from "effect/Schema"
import { FatalJudgeError } from "../domain/Errors.js"
import { Judgment } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"

/** The run's judge, as a runner rebuilds it (its key comes from the runner's own flags or environment). */
export const JudgeOptions = Schema.Struct({
  provider: Schema.String,
  model: Schema.String,
  baseUrl: Schema.optional(Schema.String),
  temperature: Schema.optional(Schema.Number),
  seed: Schema.optional(Schema.Number),
  timeoutMs: Schema.Number,
  maxRetries: Schema.Number,
  maxWaitMs: Schema.Number,
  /** The run's limits, held for the whole cluster by the `RateLimit` entity. */
  rpm: Schema.optional(Schema.Number),
  tpm: Schema.optional(Schema.Number),
  burst: Schema.optional(Schema.Number),
  /** The run's `--adaptive` (default true): the cluster learns the server's rate from 429s. */
  adaptive: Schema.optional(Schema.Boolean),
  /** `--retry-failed`: a journaled judge failure is asked again rather than reused. */
  retryFailed: Schema.Boolean
})
export type JudgeOptions = typeof JudgeOptions.Type

const Vars = Schema.Record({ key: Schema.String, value: Schema.String })

/** One judge call: a pointwise task (one key) or a listwise one (a key per item). */
export const WireTask = Schema.Struct({
  keys: Schema.Array(Schema.String),
  pipeline: Schema.String,
  caseId: Schema.String,
  ordinal: Schema.Number,
  iteration: Schema.Number,
  /** The rubric as loaded by the coordinator (templates and hash travel with the task). */
  rubric: Schema.Unknown as Schema.Schema<Rubric>,
  vars: Vars,
  target: Schema.optional(Schema.String),
  items: Schema.optional(Schema.Array(Schema.Struct({ target: Schema.String, vars: Vars })))
})
export type WireTask = typeof WireTask.Type

/** A runner could not write to the store (its judgments are not saved): the coordinator stops. */
export class StoreFailed extends Schema.TaggedError<StoreFailed>()("StoreFailed", { problem: Schema.String }) {}

export const JudgeBatch = Rpc.make("JudgeBatch", {
  payload: {
    /** `<pipeline>/<run-id>`: where the runner journals the judgments. */
    runId: Schema.String,
    batchId: Schema.String,
    judge: JudgeOptions,
    tasks: Schema.Array(WireTask)
  },
  /** The judgments of every task, in task order (a list task gives one per item). */
  success: Schema.Array(Judgment),
  error: Schema.Union(FatalJudgeError, StoreFailed),
  primaryKey: ({ batchId, runId }) => `${runId}/${batchId}`
}).annotate(ClusterSchema.Persisted, true)

export const JudgeShard = Entity.make("JudgeShard", [JudgeBatch])

/** The run's limits, carried by every rate-limit message (the entity is shared by the runs on one server). */
const Limits = {
  rpm: Schema.optional(Schema.Number),
  tpm: Schema.optional(Schema.Number),
  burst: Schema.optional(Schema.Number),
  adaptive: Schema.optional(Schema.Boolean),
  /** The run's `--max-wait`: the longest pause a Retry-After may impose. */
  maxPauseMs: Schema.optional(Schema.Number)
}

export const Reserve = Rpc.make("Reserve", {
  payload: { ...Limits, tokens: Schema.Number },
  /**
   * Milliseconds to wait, then start (`committed`) or ask again; the ticket a report gives back;
   * whether the wait is a 429's pause.
   */
  success: Schema.Struct({
    waitMs: Schema.Number,
    ticket: Schema.Number,
    committed: Schema.Boolean,
    paused: Schema.Boolean
  })
})

/** A bucket's state as rate-limit headers reported it. */
const Bucket = Schema.Struct({
  limit: Schema.optional(Schema.Number),
  remaining: Schema.optional(Schema.Number),
  resetMs: Schema.optional(Schema.Number)
})

/** A call's outcome the shared limit learns from: a 429, or a success with rate-limit headers. */
export const Report = Rpc.make("Report", {
  payload: {
    ...Limits,
    ticket: Schema.Number,
    outcome: Schema.Literal("ok", "rate_limited"),
    retryAfterMs: Schema.optional(Schema.Number),
    rateLimit: Schema.optional(Schema.Struct({ requests: Schema.optional(Bucket), tokens: Schema.optional(Bucket) }))
  }
})

export const RateLimit = Entity.make("RateLimit", [Reserve, Report])

/** Entities per run that batches are spread over (by the hash of the batch id). */
export const SHARDS_PER_RUN = 64

export const shardEntityId = (runId: string, batchId: string) =>
  `${runId}#${Number.parseInt(batchId.slice(0, 6), 16) % SHARDS_PER_RUN}`

/** The rate-limit entity of a judge: every runner calling the same model on the same server shares it. */
export const rateLimitEntityId = (judge: Pick<JudgeOptions, "provider" | "model" | "baseUrl">) =>
  `${judge.provider}|${judge.model}|${judge.baseUrl ?? ""}`
