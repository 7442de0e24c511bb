/**
 * Asking the target again after a retryable failure (`TargetError.retryable`):
 *
 * - `server`, `timeout`, `network`: exponential backoff — base · 2ⁿ, jittered ±20 %, capped at
 *   `maxDelayMs` — at most `maxRetries` times;
 * - `rate_limited` (429) is not a failure of the call and does not count against `maxRetries`: it
 *   waits the server's Retry-After (stretched by up to 20 % so callers told the same instant do not
 *   all come back in the same millisecond; never shorter), or backs off like a server error when the
 *   server gives none, until the call has waited `maxWaitMs` since its first 429. Behind a rate gate
 *   that already pauses every caller on a 429 (`gatePauses`), the call is asked again at once and
 *   waits in the gate instead;
 * - fatal and per-case failures are never asked again.
 *
 * Everything runs on Effect's `Clock` and `Random`: `TestClock` drives it in tests.
 */
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Interval from "effect/ScheduleInterval"
import type { TargetError } from "./TargetError.js"

export interface RetryOptions {
  /** Retries after server errors, timeouts and network errors. Default 3. */
  readonly maxRetries?: number | undefined
  /** First backoff delay. Default 500 ms. */
  readonly baseDelayMs?: number | undefined
  /** Backoff cap. Default 30 s. */
  readonly maxDelayMs?: number | undefined
  /** How long one call may wait out 429s, from its first one (`--max-wait`). Default 10 min. */
  readonly maxWaitMs?: number | undefined
  /** A rate gate pauses every caller on a 429: ask again at once (and wait there). Default false. */
  readonly gatePauses?: boolean | undefined
}

interface RetryState {
  readonly transient: number
  readonly limited: number
  readonly firstLimitedAt: number | undefined
}

const defaults = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 30_000, maxWaitMs: 600_000 }

/** base · 2ⁿ · U[0.8, 1.2], capped. */
const backoff = (n: number, baseMs: number, capMs: number): Effect.Effect<number> =>
  Effect.map(Random.nextRange(0.8, 1.2), (jitter) => Math.min(capMs, baseMs * 2 ** n * jitter))

/** The retry schedule over a call's failures (see the module comment); its output is the last error. */
export const retrySchedule = (options: RetryOptions = {}): Schedule.Schedule<TargetError, TargetError> => {
  const maxRetries = options.maxRetries ?? defaults.maxRetries
  const base = options.baseDelayMs ?? defaults.baseDelayMs
  const cap = options.maxDelayMs ?? defaults.maxDelayMs
  const maxWait = options.maxWaitMs ?? defaults.maxWaitMs
  const done = (state: RetryState, error: TargetError) => Effect.succeed([state, error, ScheduleDecision.done] as const)
  const after = (state: RetryState, error: TargetError, at: number) =>
    [state, error, ScheduleDecision.continueWith(Interval.after(Math.round(at)))] as const
  return Schedule.makeWithState<RetryState, TargetError, TargetError>(
    { transient: 0, limited: 0, firstLimitedAt: undefined },
    (now, error, state) => {
      if (!error.retryable) return done(state, error)
      if (error.kind === "rate_limited") {
        const since = state.firstLimitedAt ?? now
        const waited = now - since
        if (waited >= maxWait) return done(state, error)
        const next = { ...state, limited: state.limited + 1, firstLimitedAt: since }
        if (options.gatePauses === true) return Effect.succeed(after(next, error, now))
        const delay = error.retryAfterMs !== undefined
          ? Effect.map(Random.nextRange(1, 1.2), (stretch) => error.retryAfterMs! * stretch)
          : backoff(state.limited, base, cap)
        // Never beyond the wait budget: the last attempt is made when it runs out.
        return Effect.map(delay, (ms) => after(next, error, now + Math.min(ms, maxWait - waited)))
      }
      if (state.transient >= maxRetries) return done(state, error)
      return Effect.map(
        backoff(state.transient, base, cap),
        (ms) => after({ ...state, transient: state.transient + 1 }, error, now + ms)
      )
    }
  )
}

/** `call`, asked again after retryable failures by `retrySchedule(options)`; the last failure stands. */
export const withRetries = <A, R>(
  call: Effect.Effect<A, TargetError, R>,
  options: RetryOptions = {}
): Effect.Effect<A, TargetError, R> => Effect.retry(call, retrySchedule(options))
