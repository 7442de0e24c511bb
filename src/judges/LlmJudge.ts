/**
 * The LLM judge: renders the rubric, asks the provider for a JSON answer (schema-constrained), and
 * decodes it. It never fails and never invents a score (SPEC §4):
 *
 * - every HTTP attempt goes through the shared `RateGate`;
 * - 429 → the whole gate pauses for Retry-After (or a backoff), then the call is retried; these
 *   retries have their own, larger budget so a burst of 429s does not fail judgments quickly;
 * - server errors, timeouts and network errors → exponential backoff with jitter, `maxRetries` times;
 * - rejected requests (4xx) → no retry;
 * - an answer that does not decode → extract the JSON object from prose/fences, else ask again
 *   with the error (`repairAttempts` times);
 * - whatever is left is a `failed` verdict with `score: null`, the reason and the raw text.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Interval from "effect/ScheduleInterval"
import { type JudgeTask, type ListJudgeTask, splitUsage, type Usage, type Verdict } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import { type ChatRequest, LlmProvider, type ProviderError } from "../providers/LlmProvider.js"
import { RateGate } from "../providers/RateGate.js"
import { Judge } from "./Judge.js"
import { answerSchema, listAnswerSchema, render } from "./Prompt.js"

export interface LlmJudgeOptions {
  /** Retries after server errors, timeouts and network errors. Default 3. */
  readonly maxRetries?: number | undefined
  /** Re-asks after an answer that does not decode. Default 2. */
  readonly repairAttempts?: number | undefined
  /** Retries after 429s (each after the shared pause). Default `maxRetries * 3`. */
  readonly rateLimitRetries?: number | undefined
  /** First backoff delay. Default 500 ms; doubles each retry. */
  readonly baseDelayMs?: number | undefined
  /** Backoff cap. Default 30 s. */
  readonly maxDelayMs?: number | undefined
}

/** Output tokens assumed for the rate-limit estimate when `maxTokens` is not set. */
const assumedOutputTokens = 512
const rawLimit = 2000

/** Estimated tokens of a request: ≈ 4 characters per token, plus the output budget. */
export const estimateTokens = (request: ChatRequest, maxTokens: number | undefined): number =>
  Math.ceil((request.system.length + request.user.length) / 4) + (maxTokens ?? assumedOutputTokens)

// ---------------------------------------------------------------------------------------------
// Decoding the answer

/** Internal: the reply did not decode into an answer on the rubric's scale. */
class AnswerError extends Data.TaggedError("AnswerError")<{ readonly text: string; readonly problem: string }> {}

export interface Answer {
  readonly reasoning: string
  readonly score: number
  readonly confidence?: number | undefined
}

const tryParse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** End index (exclusive) of the balanced `{…}` starting at `start`, skipping braces inside strings. */
const balancedEnd = (text: string, start: number): number | undefined => {
  let depth = 0
  let inString = false
  for (let i = start; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === "\\") i++
      else if (c === "\"") inString = false
    } else if (c === "\"") {
      inString = true
    } else if (c === "{") {
      depth++
    } else if (c === "}") {
      depth--
      if (depth === 0) return i + 1
    }
  }
  return undefined
}

/**
 * Every JSON object a reply holds, in the order they appear: the whole text when it is one object;
 * otherwise each balanced `{…}` that parses (braces inside strings skipped), outermost first and not
 * looking inside one that parsed — whether in prose or in a ```json fence. A reply may show an
 * example before its answer ("for example {…, "score": 0} … my answer: {…}"), so the decoders take
 * the LAST object that decodes, not the first.
 */
export const jsonObjects = (text: string): Array<Record<string, unknown>> => {
  const whole = tryParse(text.trim())
  if (isObject(whole)) return [whole]
  const found: Array<Record<string, unknown>> = []
  for (let start = text.indexOf("{"); start !== -1;) {
    const end = balancedEnd(text, start)
    if (end === undefined) break
    const candidate = tryParse(text.slice(start, end))
    if (isObject(candidate)) {
      found.push(candidate)
      start = text.indexOf("{", end)
    } else {
      start = text.indexOf("{", start + 1)
    }
  }
  return found
}

/** The last JSON object in a reply (see `jsonObjects`); undefined when there is none. */
export const extractJsonObject = (text: string): Record<string, unknown> | undefined => jsonObjects(text).at(-1)

const answerDecoders = new WeakMap<Rubric, (u: unknown) => Either.Either<Answer, ParseResult.ParseError>>()

const answerDecoder = (rubric: Rubric) => {
  const cached = answerDecoders.get(rubric)
  if (cached !== undefined) return cached
  const scores = rubric.scale.map((v) => v.score)
  const decoder = Schema.decodeUnknownEither(Schema.Struct({
    reasoning: Schema.String,
    score: Schema.Union(Schema.Number, Schema.NumberFromString).pipe(
      Schema.filter((n) => scores.includes(n) || `score ${n} is not on the scale (${scores.join(", ")})`)
    ),
    confidence: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 5)))
  }))
  answerDecoders.set(rubric, decoder)
  return decoder
}

/**
 * Decode a reply into an answer on the rubric's scale: the last JSON object in it that is a valid
 * answer (an example shown earlier in the reply is not the answer); when none is, what is wrong
 * with the last object.
 */
export const decodeAnswer = (rubric: Rubric, text: string): Either.Either<Answer, string> => {
  if (text.trim() === "") return Either.left("the reply was empty")
  const objects = jsonObjects(text)
  if (objects.length === 0) return Either.left("the reply contains no valid JSON object")
  const decode = answerDecoder(rubric)
  let last: Either.Either<Answer, ParseResult.ParseError> | undefined
  for (let i = objects.length - 1; i >= 0; i--) {
    const result = decode(objects[i])
    if (Either.isRight(result)) return Either.right(result.right)
    last ??= result
  }
  return Either.mapLeft(last!, formatIssues)
}

const formatIssues = (e: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(e)
    .map((issue) => issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`)
    .join("; ")

/** Why a listwise reply is unusable; `items` holds what could be read per hit when the reply had a grade list. */
export interface ListAnswerProblem {
  readonly problem: string
  /** Per hit (in order): its answer, or why it has none. */
  readonly items?: ReadonlyArray<Answer | string> | undefined
}

/**
 * Decode a listwise reply `{ grades: [{ hit, reasoning, score[, confidence] }] }` for hits 1…n:
 * every hit graded exactly once, each grade on the rubric's scale. Entries are decoded one by one,
 * so a reply that fails still tells which hits it graded.
 */
export const decodeListAnswer = (rubric: Rubric, n: number, text: string): Either.Either<ReadonlyArray<Answer>, ListAnswerProblem> => {
  if (text.trim() === "") return Either.left({ problem: "the reply was empty" })
  const objects = jsonObjects(text)
  if (objects.length === 0) return Either.left({ problem: "the reply contains no valid JSON object" })
  // The last grade list that decodes whole; else the last one with a grades array, for what it says per hit.
  let fallback: ListAnswerProblem | undefined
  for (let i = objects.length - 1; i >= 0; i--) {
    const result = decodeGradeList(rubric, n, objects[i]!)
    if (Either.isRight(result)) return result
    if (fallback === undefined || (fallback.items === undefined && result.left.items !== undefined)) fallback = result.left
  }
  return Either.left(fallback!)
}

/** One object as a listwise answer (see `decodeListAnswer`). */
const decodeGradeList = (rubric: Rubric, n: number, json: Record<string, unknown>): Either.Either<ReadonlyArray<Answer>, ListAnswerProblem> => {
  const grades = json.grades
  if (!Array.isArray(grades)) return Either.left({ problem: "grades: expected an array with one entry per hit" })
  const items: Array<Answer | string> = Array.from({ length: n }, () => "no grade was given for this hit")
  const seen = new Set<number>()
  const problems: Array<string> = []
  grades.forEach((entry: unknown, index) => {
    const hit = isObject(entry) ? Number(entry.hit) : NaN
    if (!Number.isInteger(hit) || hit < 1 || hit > n) {
      problems.push(`grades.${index}.hit: expected a hit number from 1 to ${n}`)
      return
    }
    if (seen.has(hit)) {
      problems.push(`hit ${hit} is graded more than once`)
      items[hit - 1] = `hit ${hit} was graded more than once`
      return
    }
    seen.add(hit)
    Either.match(answerDecoder(rubric)(entry), {
      onLeft: (e) => {
        const problem = formatIssues(e)
        problems.push(`hit ${hit}: ${problem}`)
        items[hit - 1] = problem
      },
      onRight: (answer) => {
        items[hit - 1] = answer
      }
    })
  })
  const missing = items.flatMap((a, i) => (typeof a === "string" && !seen.has(i + 1) ? [i + 1] : []))
  if (missing.length > 0) problems.push(`no grade for hit${missing.length === 1 ? "" : "s"} ${missing.join(", ")}`)
  return problems.length === 0 ? Either.right(items as Array<Answer>) : Either.left({ problem: problems.join("; "), items })
}

// ---------------------------------------------------------------------------------------------
// Retry policy

interface RetryState {
  readonly transient: number
  readonly rateLimited: number
}

/** Backoff before retry `n` (0-based): base · 2ⁿ, jittered ±20 %, capped. */
const backoffMillis = (n: number, baseMs: number, capMs: number): Effect.Effect<number> =>
  Effect.map(Random.nextRange(0.8, 1.2), (jitter) => Math.min(capMs, baseMs * 2 ** n * jitter))

/**
 * The retry schedule over provider errors. A 429 pauses the whole gate (Retry-After, else a
 * backoff) and retries at once — the gate holds the call until the pause ends; the other retryable
 * kinds back off on their own; `rejected` stops.
 */
export const retrySchedule = (
  gate: RateGate["Type"],
  options: { readonly maxRetries: number; readonly rateLimitRetries: number; readonly baseDelayMs: number; readonly maxDelayMs: number }
): Schedule.Schedule<ProviderError, ProviderError> =>
  Schedule.makeWithState<RetryState, ProviderError, ProviderError>(
    { transient: 0, rateLimited: 0 },
    (now, error, state) => {
      if (error.kind === "rate_limited") {
        if (state.rateLimited >= options.rateLimitRetries) return Effect.succeed([state, error, ScheduleDecision.done])
        const next = { ...state, rateLimited: state.rateLimited + 1 }
        return (error.retryAfterMs === undefined
          ? backoffMillis(state.rateLimited, options.baseDelayMs, options.maxDelayMs)
          : Effect.succeed(error.retryAfterMs)).pipe(
            Effect.flatMap((ms) => gate.pause(ms)),
            Effect.as([next, error, ScheduleDecision.continueWith(Interval.after(now))] as const)
          )
      }
      if (!error.retryable || state.transient >= options.maxRetries) {
        return Effect.succeed([state, error, ScheduleDecision.done])
      }
      return Effect.map(
        backoffMillis(state.transient, options.baseDelayMs, options.maxDelayMs),
        (delay) =>
          [
            { ...state, transient: state.transient + 1 },
            error,
            ScheduleDecision.continueWith(Interval.after(now + delay))
          ] as const
      )
    }
  )

/**
 * `Effect.retry(self, schedule)`, except that the schedule's driver is built only once `self` has
 * failed, and the first failure is the schedule's first input. Nearly every call succeeds at once,
 * and `Effect.retry` builds a driver (a Ref, a context per attempt) for every call regardless.
 */
export const retryAfterFailure = <A, E, R>(self: Effect.Effect<A, E, R>, schedule: Schedule.Schedule<unknown, E>): Effect.Effect<A, E, R> =>
  Effect.catchAll(self, (first) =>
    Effect.flatMap(Schedule.driver(schedule), (driver) => {
      const retry = (error: E): Effect.Effect<A, E, R> =>
        Effect.matchEffect(driver.next(error), {
          onFailure: () => Effect.fail(error),
          onSuccess: () => Effect.catchAll(self, retry)
        })
      return retry(first)
    }))

// ---------------------------------------------------------------------------------------------
// The judge

const truncate = (text: string) => text.length > rawLimit ? text.slice(0, rawLimit) : text

export const make = (options: LlmJudgeOptions = {}) =>
  Effect.gen(function*() {
    const provider = yield* LlmProvider
    const gate = yield* RateGate
    const maxRetries = Math.max(0, options.maxRetries ?? 3)
    const repairAttempts = Math.max(0, options.repairAttempts ?? 2)
    const schedule = retrySchedule(gate, {
      maxRetries,
      rateLimitRetries: Math.max(0, options.rateLimitRetries ?? maxRetries * 3),
      baseDelayMs: options.baseDelayMs ?? 500,
      maxDelayMs: options.maxDelayMs ?? 30_000
    })
    const { maxTokens, seed, temperature } = provider.params
    const params: Record<string, unknown> = {}
    if (temperature !== undefined) params.temperature = temperature
    if (seed !== undefined) params.seed = seed
    if (maxTokens !== undefined) params.maxTokens = maxTokens

    /**
     * Ask until the reply decodes (repairing), through the gate and the retry schedule. Never fails:
     * the decoded answer, or why there is none; with the tokens and attempts spent and the last text.
     */
    const ask = <A>(base: ChatRequest, decode: (text: string) => Either.Either<A, string>) =>
      Effect.suspend(() => {
        const estimated = estimateTokens(base, maxTokens)
        // Per-judgment bookkeeping across every attempt; only touched sequentially.
        let attempts = 0
        let asks = 0
        let usage: Usage = { inputTokens: 0, outputTokens: 0 }
        let lastText: string | undefined
        let repair: ChatRequest["repair"]

        const call = retryAfterFailure(
          gate.run(
            estimated,
            Effect.suspend(() => {
              attempts++
              return provider.complete(repair === undefined ? base : { ...base, repair })
            })
          ),
          schedule
        )

        const once = Effect.suspend(() => {
          asks++
          return call
        }).pipe(
          Effect.flatMap((response) => {
            usage = {
              inputTokens: usage.inputTokens + response.usage.inputTokens,
              outputTokens: usage.outputTokens + response.usage.outputTokens
            }
            lastText = response.text
            return Either.match(decode(response.text), {
              onLeft: (problem) => {
                repair = { previous: response.text, error: problem }
                return Effect.fail(new AnswerError({ text: response.text, problem }))
              },
              onRight: (answer) => Effect.succeed(answer)
            })
          })
        )
        /** Asked again with the error after an answer that does not decode, `left` more times. */
        const repairing = (left: number): Effect.Effect<A, AnswerError | ProviderError> =>
          left === 0 ? once : Effect.catchTag(once, "AnswerError", () => repairing(left - 1))
        const decoded = repairing(repairAttempts)
        const outcome = (answer: Either.Either<A, string>) => ({
          answer,
          usage,
          attempts,
          raw: lastText === undefined ? undefined : truncate(lastText)
        })
        return decoded.pipe(
          Effect.map((a) => outcome(Either.right(a))),
          Effect.catchTags({
            AnswerError: (e) => Effect.sync(() => outcome(Either.left(`unusable answer after ${asks} ${asks === 1 ? "try" : "tries"}: ${e.problem}`))),
            ProviderError: (e) =>
              Effect.sync(() => outcome(Either.left(`provider error after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${e.message}`)))
          }),
          // A judge never fails the run; a defect here is still a failed judgment, with its reason.
          Effect.catchAllDefect((defect) => Effect.sync(() => outcome(Either.left(`internal error: ${String(defect)}`))))
        )
      })

    const judge = (task: JudgeTask): Effect.Effect<Verdict> => {
      const rubric = task.rubric
      return Effect.map(
        ask({ ...render(rubric, task.vars), schema: answerSchema(rubric) }, (text) => decodeAnswer(rubric, text)),
        (o): Verdict =>
          Either.match(o.answer, {
            onLeft: (reason) => ({ status: "failed", score: null, reason, raw: o.raw, usage: o.usage, attempts: o.attempts }),
            onRight: (answer) => ({
              status: "ok",
              score: answer.score,
              confidence: answer.confidence,
              reason: answer.reasoning,
              usage: o.usage,
              attempts: o.attempts
            })
          })
      )
    }

    const judgeList = (task: ListJudgeTask): Effect.Effect<ReadonlyArray<Verdict>> => {
      const rubric = task.rubric
      const n = task.items.length
      if (n === 0) return Effect.succeed([])
      const request: ChatRequest = { ...render(rubric, task.vars, task.items.map((i) => i.vars)), schema: listAnswerSchema(rubric, n) }
      // A reply missing some hits is re-asked (repair); if the last reply still misses some, the hits
      // it did grade keep their grades and only the others fail.
      let partial: ReadonlyArray<Answer | string> | undefined
      const decode = (text: string) => {
        const result = decodeListAnswer(rubric, n, text)
        if (Either.isLeft(result) && result.left.items !== undefined) partial = result.left.items
        return Either.mapLeft(result, (e) => e.problem)
      }
      return Effect.map(ask(request, decode), (o) => {
        const shares = splitUsage(o.usage, n)
        const items: ReadonlyArray<Answer | string> = Either.match(o.answer, {
          onRight: (answers) => answers,
          onLeft: (reason) => partial?.map((a) => typeof a === "string" ? `${reason} (this hit: ${a})` : a) ?? task.items.map(() => reason)
        })
        return items.map((a, i): Verdict =>
          typeof a === "string"
            ? { status: "failed", score: null, reason: a, raw: o.raw, usage: shares[i]!, attempts: o.attempts }
            : { status: "ok", score: a.score, confidence: a.confidence, reason: a.reasoning, usage: shares[i]!, attempts: o.attempts }
        )
      })
    }

    return Judge.of({
      provider: provider.provider,
      model: provider.model,
      label: `${provider.provider} ${provider.model}`,
      params,
      local: false,
      judge,
      judgeList
    })
  })

/** `Judge` over the `LlmProvider`, sharing the `RateGate` with every other worker. */
export const layer = (options: LlmJudgeOptions = {}): Layer.Layer<Judge, never, LlmProvider | RateGate> =>
  Layer.effect(Judge, make(options))
