/**
 * The LLM judge: renders the rubric, asks the provider for a JSON answer (schema-constrained), and
 * decodes it. It never invents a score (SPEC §4):
 *
 * - every HTTP attempt goes through the shared `RateGate` (pace, adaptive concurrency, the shared
 *   429 pause);
 * - 429 → never a failure: the gate pauses everyone, the call waits and is asked again, until the
 *   judgment has waited `maxWaitMs` since it first met a 429 — its own, or the shared pause one set
 *   (then it fails as a transport failure, asked again on resume);
 * - server errors, timeouts and network errors → exponential backoff with jitter, `maxRetries` times;
 * - a rejected request (a 4xx about this request) → no retry;
 * - a misconfigured provider (key, model, URL, unsupported request, unreachable) →
 *   `FatalJudgeError` at once when nothing has been answered yet, else after `fatalAfter` in a row;
 *   the gate then starts nothing more;
 * - an answer that does not decode → extract the JSON object from prose/fences, else ask again
 *   with the error (`repairAttempts` times);
 * - whatever is left is a `failed` verdict with `score: null`, the reason, its failure class and the
 *   raw text.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Schedule from "effect/Schedule"
import { FatalJudgeError, type OutputError } from "../domain/Errors.js"
import { llmTraits } from "../domain/JudgeTraits.js"
import {
  addUsage,
  type JudgeTask,
  type ListJudgeTask,
  type RepairCheckpoint,
  type Usage,
  type Verdict
} from "../domain/Judgment.js"
import { annotateSpan, traced } from "../domain/Spans.js"
import {
  type ChatRequest,
  type ChatResponse,
  LlmProvider,
  ProviderError,
  type StructuredOutput
} from "../providers/LlmProvider.js"
import * as RateGate from "../providers/RateGate.js"
import { GateStopped } from "../providers/RateGate.js"
import * as RetrySchedule from "../providers/RetrySchedule.js"
import {
  DEFAULT_REPAIR_ATTEMPTS,
  type Failure,
  listReader,
  type Outcome,
  pointReader,
  readerOf,
  type ReplyProblem,
  truncate,
  unusable
} from "./CallReader.js"
import { Judge, JudgeStopped, type PreflightReport } from "./Judge.js"

export interface LlmJudgeOptions {
  /** Retries after server errors, timeouts and network errors. Default 3. */
  readonly maxRetries?: number | undefined
  /** Re-asks after an answer that does not decode. Default 2. */
  readonly repairAttempts?: number | undefined
  /** How long one judgment may wait out 429s, from its first one (`--max-wait`). Default 10 min. */
  readonly maxWaitMs?: number | undefined
  /** First backoff delay. Default 500 ms; doubles each retry. */
  readonly baseDelayMs?: number | undefined
  /** Backoff cap. Default 30 s. */
  readonly maxDelayMs?: number | undefined
  /** Fatal-class errors in a row that stop a run once calls have been answered. Default 3. */
  readonly fatalAfter?: number | undefined
  /** Offer a preflight (default true; `--no-preflight` turns it off). */
  readonly preflight?: boolean | undefined
  /** Completes when the run stops (the first Ctrl+C): a backoff between attempts ends at once. */
  readonly stop?: Effect.Effect<void> | undefined
}

/** Output tokens assumed for the rate-limit estimate when `maxTokens` is not set. */
const assumedOutputTokens = 512

/** Estimated tokens of a request: ≈ 4 characters per token, plus the output budget. */
export const estimateTokens = (request: ChatRequest, maxTokens: number | undefined): number =>
  Math.ceil((request.system.length + request.user.length) / 4) + (maxTokens ?? assumedOutputTokens)

/** Internal: the reply did not decode into an answer on the rubric's scale (`final`: beyond a bound, not asked again). */
class AnswerError extends Data.TaggedError("AnswerError")<{
  readonly text: string
  readonly problem: string
  readonly final?: boolean | undefined
}> {}

// ---------------------------------------------------------------------------------------------
// Retry policy

/**
 * How the judge retries a provider error (`providers/RetrySchedule.ts`, shared with the target):
 * - a 429 is never a failure by itself: the gate has already paused everyone (Retry-After, capped),
 *   so the call is asked again at once and waits there — until this judgment has waited `maxWaitMs`
 *   since it first met a 429 (the wait budget, which the gate also sets when the judgment first
 *   waits out the shared pause; the gate ends a wait that would run past it);
 * - server errors, timeouts and network errors back off exponentially with jitter, `maxRetries`
 *   times (fatal-class errors that did not stop the run count here too: a flaky gateway);
 * - a rejected request is not asked again.
 */
const retryClass = (error: ProviderError): RetrySchedule.RetryClass =>
  error.kind === "rate_limited"
    ? RetrySchedule.wait(error.retryAfterMs)
    : error.kind === "rejected"
    ? RetrySchedule.final
    : RetrySchedule.backoff

/** The retry schedule over provider errors (see `retryClass`); its output is why it gave up. */
const retrySchedule = (
  options: {
    readonly maxRetries: number
    readonly maxWaitMs: number
    readonly baseDelayMs: number
    readonly maxDelayMs: number
  },
  wait?: RateGate.WaitBudget
): Schedule.Schedule<string | undefined, ProviderError> =>
  RetrySchedule.retrySchedule({ ...options, gatePauses: true }, retryClass, wait)

/** Internal: the retries gave up on a provider error, and why (the failed judgment's reason). */
class RetriesExhausted extends Data.TaggedError("RetriesExhausted")<{
  readonly error: ProviderError
  readonly why: string | undefined
}> {}

// ---------------------------------------------------------------------------------------------
// The judge

/** The preflight: the smallest request that shows the key, model, URL and answer format work. */
const PREFLIGHT: Omit<ChatRequest, "format"> = {
  system: "You are checking that an evaluation judge is reachable. Answer only with the JSON object requested.",
  user: "Reply with the JSON object {\"ok\": true}.",
  schema: {
    name: "preflight",
    schema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false }
  }
}
/** A 400 about the answer format (not about something else in the request): try the next mode. */
const FORMAT_REJECTED = /response_format|json_schema|json_object|structured output|schema/i
const FORMATS: ReadonlyArray<StructuredOutput> = ["json_schema", "json_object", "prompt"]

export const make = (options: LlmJudgeOptions = {}) =>
  Effect.gen(function*() {
    const provider = yield* LlmProvider
    const gate = yield* RateGate.RateGate
    const defaults = RetrySchedule.defaultPolicy
    const maxRetries = Math.max(0, options.maxRetries ?? defaults.maxRetries)
    const repairAttempts = Math.max(0, options.repairAttempts ?? DEFAULT_REPAIR_ATTEMPTS)
    const fatalAfter = Math.max(1, options.fatalAfter ?? 3)
    const scheduleOptions = {
      maxRetries,
      maxWaitMs: options.maxWaitMs ?? defaults.maxWaitMs,
      baseDelayMs: options.baseDelayMs ?? defaults.baseDelayMs,
      maxDelayMs: options.maxDelayMs ?? defaults.maxDelayMs
    }
    /** A call's retries with its own --max-wait budget (shared with the gate, which ends a wait past it). */
    const retries = () => {
      const wait: RateGate.WaitBudget = { maxWaitMs: scheduleOptions.maxWaitMs, since: undefined }
      return { wait, schedule: retrySchedule(scheduleOptions, wait) }
    }
    const stopped: Effect.Effect<never, GateStopped> = Effect.zipRight(
      options.stop ?? RateGate.never,
      Effect.fail(new GateStopped())
    )
    const { maxTokens, seed, temperature } = provider.params
    const params: Record<string, unknown> = {}
    if (temperature !== undefined) params.temperature = temperature
    if (seed !== undefined) params.seed = seed
    if (maxTokens !== undefined) params.maxTokens = maxTokens

    let format: StructuredOutput = "json_schema"
    /** Any call answered (then a fatal-class error has to repeat `fatalAfter` times to stop the run). */
    let answeredOnce = false
    let fatalStreak = 0

    /** The one line that says what is wrong and what to do about it. */
    const fatalLine = (e: ProviderError): string => {
      const who = `${provider.provider} at ${provider.host}`
      switch (e.kind) {
        case "unauthorized":
          return e.status === 403
            ? `${who} refused access with this API key (HTTP 403: ${e.detail}): check the key's permissions (project, organisation, region) or ${provider.keySource}`
            : `${who} rejected the API key (HTTP ${e.status ?? 401}): check ${provider.keySource}`
        case "not_found":
          return /model/i.test(e.detail)
            ? `${who} does not serve model "${provider.model}" (HTTP 404: ${e.detail}): check --model`
            : `${who} answered HTTP 404 for its chat-completions endpoint: check --base-url (it usually ends in /v1)`
        case "unsupported":
          return `${who} rejected the request as unsupported (HTTP ${
            e.status ?? 400
          }: ${e.detail}): check --model and the sampling flags${
            FORMAT_REJECTED.test(e.detail) ? "; without --no-preflight the answer format falls back by itself" : ""
          }`
        case "quota":
          return `${who} refused for quota or billing (HTTP ${
            e.status ?? 429
          }: ${e.detail}): check the account's plan and credit`
        default:
          return `cannot reach ${who} (${e.detail}): ${
            provider.provider === "ollama" ? "is it running?" : "is the server running? check --base-url"
          }`
      }
    }

    /**
     * A fatal-class error stops the run when nothing has been answered yet (a misconfiguration), or
     * when `fatalAfter` come in a row (a flaky gateway can send one): the gate starts nothing more.
     */
    const fatal = (e: ProviderError): Effect.Effect<never, FatalJudgeError> | undefined => {
      if (!e.fatal) return undefined
      fatalStreak++
      if (answeredOnce && fatalStreak < fatalAfter) return undefined
      return Effect.zipRight(
        gate.halt,
        Effect.fail(new FatalJudgeError({ line: fatalLine(e), kind: e.kind, status: e.status }))
      )
    }

    /** One request to the provider, as a span (`--trace-otlp`): provider, model, tokens. No URL, no header. */
    const complete = (request: ChatRequest) =>
      provider.complete(request).pipe(
        Effect.tap((r) =>
          annotateSpan({
            "rag_eval.input_tokens": r.usage.inputTokens,
            "rag_eval.output_tokens": r.usage.outputTokens
          })
        ),
        traced("LlmProvider.complete", {
          kind: "client",
          attributes: { "rag_eval.provider": provider.provider, "rag_eval.model": provider.model }
        })
      )

    /** One attempt through the gate; a success resets the streak of fatal-class errors. */
    const attempt = (request: ChatRequest, estimated: number, wait: RateGate.WaitBudget) =>
      gate.run(estimated, complete(request), wait).pipe(
        Effect.tap(() =>
          Effect.sync(() => {
            answeredOnce = true
            fatalStreak = 0
          })
        ),
        Effect.catchTag("ProviderError", (e): Effect.Effect<never, ProviderError | FatalJudgeError> =>
          fatal(e) ?? Effect.fail(e))
      )

    /** Attempts with retries (429s wait, transient errors back off); stops and fatal errors end it. */
    const send = (
      request: () => ChatRequest,
      estimated: number
    ): Effect.Effect<ChatResponse, ProviderError | RetriesExhausted | FatalJudgeError | JudgeStopped> =>
      Effect.suspend(() => {
        const { wait, schedule } = retries()
        return RetrySchedule.retryAfterFailure(
          Effect.suspend(() =>
            attempt(request(), estimated, wait)
          ),
          // Only provider errors reach the schedule (`retryable`).
          schedule as Schedule.Schedule<string | undefined, ProviderError | FatalJudgeError | GateStopped>,
          {
            retryable: (e) => e._tag === "ProviderError" && (e.retryable || e.fatal),
            interrupt: stopped,
            giveUp: (e, why) => e._tag === "ProviderError" ? new RetriesExhausted({ error: e, why }) : e
          }
        ).pipe(Effect.catchTag("GateStopped", () => Effect.fail(new JudgeStopped())))
      })

    /**
     * Ask until the reply decodes (repairing). The decoded answer, or why there is none (with the
     * failure class); with the tokens and attempts spent and the last text. Fails only when the run
     * stops or the provider turns out misconfigured.
     */
    const ask = <A>(
      base: ChatRequest,
      decode: (text: string) => Either.Either<A, ReplyProblem>,
      checkpoint?: RepairCheckpoint
    ) =>
      Effect.suspend(() => {
        const estimated = estimateTokens(base, maxTokens)
        // Per-judgment bookkeeping across every attempt (continued from a reply journaled before a
        // crash, when there is one); only touched sequentially.
        const prior = checkpoint?.prior
        let attempts = prior?.attempts ?? 0
        let asks = prior?.asks ?? 0
        let usage: Usage = prior?.usage ?? { inputTokens: 0, outputTokens: 0 }
        let lastText: string | undefined = prior?.text
        let repair: ChatRequest["repair"] = prior === undefined
          ? undefined
          : { previous: prior.text, error: prior.problem }
        // A listwise decoder learns from the journaled reply which hits it did grade.
        if (prior !== undefined) decode(prior.text)
        const totalAsks = repairAttempts + 1

        const call = send(() => {
          attempts++
          return { ...base, format, ...(repair === undefined ? {} : { repair }) }
        }, estimated)

        const once = Effect.suspend(() => {
          asks++
          return call
        }).pipe(
          Effect.flatMap((response) => {
            usage = addUsage(usage, response.usage)
            lastText = response.text
            return Either.match(decode(response.text), {
              onLeft: ({ final, problem }) => {
                repair = { previous: response.text, error: problem }
                const failed = Effect.fail(new AnswerError({ text: response.text, problem, final }))
                // A paid reply about to be re-asked is journaled first: a crash during the repair
                // loses no paid call, and a resume continues from it. A reply beyond a bound is not re-asked.
                return asks < totalAsks && final !== true && checkpoint !== undefined
                  ? Effect.zipRight(checkpoint.save({ text: response.text, problem, usage, asks, attempts }), failed)
                  : failed
              },
              onRight: (answer) => Effect.succeed(answer)
            })
          })
        )
        /** Asked again with the error after an answer that does not decode, until the asks run out. */
        const repairing: Effect.Effect<
          A,
          AnswerError | ProviderError | RetriesExhausted | FatalJudgeError | JudgeStopped | OutputError
        > = Effect.catchTag(
          once,
          "AnswerError",
          (e) => asks < totalAsks && e.final !== true ? repairing : Effect.fail(e)
        )
        const asking = asks >= totalAsks && prior !== undefined
          ? Effect.fail(new AnswerError({ text: prior.text, problem: prior.problem }))
          : repairing
        const outcome = (answer: Either.Either<A, Failure>): Outcome<A> => ({
          answer,
          usage,
          attempts,
          raw: lastText === undefined ? undefined : truncate(lastText)
        })
        return asking.pipe(
          Effect.map((a) => outcome(Either.right(a))),
          Effect.catchTags({
            AnswerError: (e) => Effect.sync(() => outcome(Either.left(unusable(asks, e.problem)))),
            // The schedule's own words for why it gave up.
            RetriesExhausted: ({ error, why }) =>
              Effect.sync(() =>
                outcome(Either.left({
                  reason: `provider error ${
                    why ?? `after ${attempts} attempt${attempts === 1 ? "" : "s"}`
                  }: ${error.message}`,
                  failure: "transport"
                }))
              ),
            // Not retried at all: a rejected request.
            ProviderError: (e) =>
              Effect.sync(() =>
                outcome(Either.left(
                  e.kind === "rejected"
                    ? { reason: `provider error: the request was rejected (${e.message})`, failure: "judge" }
                    : {
                      reason: `provider error after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${e.message}`,
                      failure: "transport"
                    }
                ))
              )
          }),
          // A defect here is still a failed judgment, with its reason (asked again on resume).
          Effect.catchAllDefect((defect) =>
            Effect.sync(() =>
              outcome(Either.left({ reason: `internal error: ${String(defect)}`, failure: "transport" }))
            )
          )
        )
      })

    const judge = (task: JudgeTask): Effect.Effect<Verdict, JudgeStopped | FatalJudgeError | OutputError> => {
      const reader = pointReader(task)
      return Effect.map(ask(reader.request, reader.decode, task.repair), (o) => reader.verdicts(o)[0]!)
    }

    const judgeList = (
      task: ListJudgeTask
    ): Effect.Effect<ReadonlyArray<Verdict>, JudgeStopped | FatalJudgeError | OutputError> => {
      if (task.items.length === 0) return Effect.succeed([])
      const reader = listReader(task)
      return Effect.map(ask(reader.request, reader.decode, task.repair), reader.verdicts)
    }

    /**
     * The preflight: the tiny request in each answer format, best first, until one is accepted; a
     * rejected key, model or URL stops here, before any judgment. Rate limits and transient errors
     * are waited out as for a judgment.
     */
    const preflight: Effect.Effect<PreflightReport, JudgeStopped | FatalJudgeError> = Effect.gen(function*() {
      const started = performance.now()
      const estimated = estimateTokens({ ...PREFLIGHT, format: "json_schema" }, 50)
      for (const mode of FORMATS) {
        const { wait, schedule } = retries()
        const result = yield* Effect.either(
          RetrySchedule.retryAfterFailure(
            gate.run(estimated, complete({ ...PREFLIGHT, format: mode }), wait),
            schedule as Schedule.Schedule<string | undefined, ProviderError | GateStopped>,
            { retryable: (e) => e._tag === "ProviderError" && e.retryable, interrupt: stopped }
          ).pipe(Effect.catchTag("GateStopped", () => Effect.fail(new JudgeStopped())))
        )
        if (Either.isRight(result)) {
          answeredOnce = true
          format = mode
          const usage = result.right.usage
          return {
            structuredOutput: mode,
            inputTokens: usage.inputTokens,
            outputTokens: usage.outputTokens,
            latencyMs: Math.round(performance.now() - started)
          }
        }
        const e = result.left
        if (e._tag === "JudgeStopped") return yield* e
        if (e.kind === "unsupported" && FORMAT_REJECTED.test(e.detail) && mode !== "prompt") continue
        const stop = fatal(e)
        if (stop !== undefined) return yield* stop
        // Still failing after the retries (5xx, timeouts): judging will meet the same server; go on.
        return {
          structuredOutput: mode,
          inputTokens: 0,
          outputTokens: 0,
          latencyMs: Math.round(performance.now() - started)
        }
      }
      return yield* new FatalJudgeError({
        line: fatalLine(new ProviderError({ kind: "unsupported", detail: "no answer format accepted" })),
        kind: "unsupported"
      })
    })

    return Judge.of({
      provider: provider.provider,
      model: provider.model,
      label: `${provider.provider} ${provider.model}`,
      params,
      traits: llmTraits,
      endpoint: provider.endpoint,
      judge,
      judgeList,
      preflight: options.preflight === false ? undefined : preflight,
      gate: gate.stats,
      structuredOutput: () => format,
      calls: provider.batchable === undefined ? undefined : {
        reader: readerOf,
        body: (request) => provider.batchable!.body({ ...request, format }),
        reply: provider.batchable.reply,
        asks: repairAttempts + 1
      }
    })
  })

/** `Judge` over the `LlmProvider`, sharing the `RateGate` with every other worker. */
export const layer = (options: LlmJudgeOptions = {}): Layer.Layer<Judge, never, LlmProvider | RateGate.RateGate> =>
  Layer.effect(Judge, make(options))
