/**
 * Asking the target again after a retryable failure (`TargetError.retryable`), by the one retry
 * schedule every remote call uses (`providers/RetrySchedule.ts`):
 *
 * - `server`, `timeout`, `network`: exponential backoff — base · 2ⁿ, jittered ±20 %, capped at
 *   `maxDelayMs` — at most `maxRetries` times;
 * - `rate_limited` (429) is not a failure of the call and does not count against `maxRetries`: it
 *   waits the server's Retry-After (stretched by up to 20 %; never shorter), or backs off like a
 *   server error when the server gives none, until the call has waited `maxWaitMs` since its first
 *   429. Behind a rate gate that already pauses every caller on a 429 (`gatePauses`), the call is
 *   asked again at once and waits in the gate instead;
 * - fatal and per-case failures are never asked again.
 *
 * Everything runs on Effect's `Clock` and `Random`: `TestClock` drives it in tests.
 */
import * as Effect from "effect/Effect"
import type * as Schedule from "effect/Schedule"
import * as RetrySchedule from "../providers/RetrySchedule.js"
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

/** How a target's failure is retried. */
const retryClass = (error: TargetError): RetrySchedule.RetryClass =>
  !error.retryable
    ? RetrySchedule.final
    : error.kind === "rate_limited"
    ? RetrySchedule.wait(error.retryAfterMs)
    : RetrySchedule.backoff

/** The retry schedule over a call's failures (see the module comment); its output is why it gave up. */
export const retrySchedule = (options: RetryOptions = {}): Schedule.Schedule<string | undefined, TargetError> => {
  const d = RetrySchedule.defaultPolicy
  return RetrySchedule.retrySchedule({
    maxRetries: options.maxRetries ?? d.maxRetries,
    baseDelayMs: options.baseDelayMs ?? d.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? d.maxDelayMs,
    maxWaitMs: options.maxWaitMs ?? d.maxWaitMs,
    gatePauses: options.gatePauses ?? false
  }, retryClass)
}

/** `call`, asked again after retryable failures by `retrySchedule(options)`; the last failure stands. */
export const withRetries = <A, R>(
  call: Effect.Effect<A, TargetError, R>,
  options: RetryOptions = {}
): Effect.Effect<A, TargetError, R> => Effect.retry(call, retrySchedule(options))
