/**
 * The one retry schedule of every remote call rag-eval makes — a judge's chat completion
 * (`judges/LlmJudge.ts`) and a call to the user's RAG service (`target/Retry.ts`) — over the
 * failures of one call, each sorted by the caller into one of three classes:
 *
 * - `wait` (a 429) is not a failure of the call and does not count against `maxRetries`: behind a
 *   rate gate that pauses every caller on a 429 (`gatePauses`), the call is asked again at once and
 *   waits in the gate; otherwise it waits the server's Retry-After (stretched by up to 20 % so
 *   callers told the same instant do not all come back in the same millisecond; never shorter), or
 *   backs off as below when the server gives none. Either way only until the call has waited
 *   `maxWaitMs` since its first 429 (`--max-wait`) — and never past it;
 * - `backoff` (5xx, timeouts, network errors): exponential backoff — base · 2ⁿ, jittered ±20 %,
 *   capped at `maxDelayMs` — at most `maxRetries` times;
 * - `final`: never asked again.
 *
 * The schedule's output is why it stopped — `still rate-limited after waiting 10 min (--max-wait
 * 10 min)`, `after 4 attempts` — or undefined while it goes on (and for a final failure, which the
 * caller words itself): a failed judgment's reason comes from it (`retryAfterFailure`'s `giveUp`).
 *
 * Everything runs on Effect's `Clock` and `Random`: `TestClock` drives it in tests.
 */
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Interval from "effect/ScheduleInterval"
import type { WaitBudget } from "./RateGate.js"

/** How one failure is retried (see the module comment). */
export type RetryClass =
  | { readonly _tag: "wait"; readonly retryAfterMs?: number | undefined }
  | { readonly _tag: "backoff" }
  | { readonly _tag: "final" }

export const wait = (retryAfterMs?: number | undefined): RetryClass => ({ _tag: "wait", retryAfterMs })
export const backoff: RetryClass = { _tag: "backoff" }
export const final: RetryClass = { _tag: "final" }

export interface RetryPolicy {
  /** Retries after `backoff` failures. */
  readonly maxRetries: number
  /** First backoff delay (ms). */
  readonly baseDelayMs: number
  /** Backoff cap (ms). */
  readonly maxDelayMs: number
  /** How long one call may wait out 429s, from its first one (ms, `--max-wait`). */
  readonly maxWaitMs: number
  /** A rate gate pauses every caller on a 429: ask again at once (and wait there). */
  readonly gatePauses: boolean
}

/** The defaults of `--max-retries` and `--max-wait`, and of the backoff. */
export const defaultPolicy: RetryPolicy = {
  maxRetries: 3,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  maxWaitMs: 10 * 60_000,
  gatePauses: false
}

interface RetryState {
  /** `backoff` failures so far. */
  readonly transient: number
  /** 429s so far (the backoff's exponent when the server gives no Retry-After). */
  readonly limited: number
  /** Clock time of the call's first 429: its wait budget runs from there. */
  readonly firstLimitedAt: number | undefined
}

/** Backoff before retry `n` (0-based): base · 2ⁿ · U[0.8, 1.2], capped. */
const backoffMillis = (n: number, baseMs: number, capMs: number): Effect.Effect<number> =>
  Effect.map(Random.nextRange(0.8, 1.2), (jitter) => Math.min(capMs, baseMs * 2 ** n * jitter))

/** "45.5 s", "10 min". */
const formatWait = (ms: number): string =>
  ms >= 60_000 ? `${+(ms / 60_000).toFixed(1)} min` : `${+(ms / 1000).toFixed(1)} s`

const attemptsWord = (n: number) => `after ${n} attempt${n === 1 ? "" : "s"}`

/**
 * The retry schedule over one call's failures, each sorted by `classify` (see the module comment).
 * `wait`, when given, is the call's wait budget shared with the rate gate: its first 429 is the
 * earlier of the schedule's and the gate's (a call that first waited out the shared pause another
 * call set), and the schedule writes it back for the gate to end a wait that would run past it.
 */
export const retrySchedule = <E>(
  policy: RetryPolicy,
  classify: (error: E) => RetryClass,
  wait?: WaitBudget
): Schedule.Schedule<string | undefined, E> => {
  const done = (state: RetryState, why: string | undefined) =>
    Effect.succeed([state, why, ScheduleDecision.done] as const)
  const after = (state: RetryState, at: number) =>
    [state, undefined, ScheduleDecision.continueWith(Interval.after(Math.round(at)))] as const
  return Schedule.makeWithState<RetryState, E, string | undefined>(
    { transient: 0, limited: 0, firstLimitedAt: undefined },
    (now, error, state) => {
      const how = classify(error)
      switch (how._tag) {
        case "final":
          return done(state, undefined)
        case "wait": {
          const since = Math.min(state.firstLimitedAt ?? now, wait?.since ?? now)
          if (wait !== undefined) wait.since = since
          const waited = now - since
          if (waited >= policy.maxWaitMs) {
            return done(
              state,
              `still rate-limited after waiting ${formatWait(waited)} (--max-wait ${formatWait(policy.maxWaitMs)})`
            )
          }
          const next = { ...state, limited: state.limited + 1, firstLimitedAt: since }
          if (policy.gatePauses) return Effect.succeed(after(next, now))
          const delay = how.retryAfterMs !== undefined
            ? Effect.map(Random.nextRange(1, 1.2), (stretch) => how.retryAfterMs! * stretch)
            : backoffMillis(state.limited, policy.baseDelayMs, policy.maxDelayMs)
          // Never beyond the wait budget: the last attempt is made when it runs out.
          return Effect.map(delay, (ms) => after(next, now + Math.min(ms, policy.maxWaitMs - waited)))
        }
        case "backoff": {
          if (state.transient >= policy.maxRetries) return done(state, attemptsWord(state.transient + 1))
          return Effect.map(
            backoffMillis(state.transient, policy.baseDelayMs, policy.maxDelayMs),
            (ms) => after({ ...state, transient: state.transient + 1 }, now + ms)
          )
        }
      }
    }
  )
}

/**
 * `Effect.retry(self, schedule)` over the errors `retryable` accepts, except that the schedule's
 * driver is built only once `self` has failed, and the first failure is the schedule's first input.
 * Nearly every call succeeds at once, and `Effect.retry` builds a driver (a Ref, a context per
 * attempt) for every call regardless. `interrupt`, when it completes first, ends a wait between
 * attempts with its own failure (the first Ctrl+C ends a backoff at once). When the schedule gives
 * up, `giveUp` turns the last error and the schedule's last output (why it stopped) into the
 * failure; without it, the last error stands.
 */
export const retryAfterFailure = <A, E, R, Out = unknown, E2 = never, E3 = E>(
  self: Effect.Effect<A, E, R>,
  schedule: Schedule.Schedule<Out, E>,
  options: {
    readonly retryable?: (error: E) => boolean
    readonly interrupt?: Effect.Effect<never, E2>
    readonly giveUp?: (error: E, why: Out) => E3
  } = {}
): Effect.Effect<A, E | E2 | E3, R> => {
  const retryable = options.retryable ?? (() => true)
  const giveUp = options.giveUp
  return Effect.catchAll(
    self,
    (first): Effect.Effect<A, E | E2 | E3, R> =>
      !retryable(first) ? Effect.fail(first) : Effect.flatMap(Schedule.driver(schedule), (driver) => {
        /** The schedule is done: the error stands, or what `giveUp` makes of it with the schedule's last output. */
        const stop = (error: E): Effect.Effect<never, E | E3> =>
          giveUp === undefined
            ? Effect.fail(error)
            : Effect.flatMap(Effect.orDie(driver.last), (why) => Effect.fail(giveUp(error, why)))
        const retry = (error: E): Effect.Effect<A, E | E2 | E3, R> => {
          // The driver fails (with None) when the schedule is done.
          const next: Effect.Effect<unknown, E | E2 | E3> = Effect.catchAll(driver.next(error), () => stop(error))
          return Effect.matchEffect(
            options.interrupt === undefined ? next : Effect.raceFirst(next, options.interrupt),
            {
              onFailure: Effect.fail,
              onSuccess: () => Effect.catchAll(self, (e) => retryable(e) ? retry(e) : Effect.fail(e))
            }
          )
        }
        return retry(first)
      })
  )
}
