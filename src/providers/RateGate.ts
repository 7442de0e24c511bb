/**
 * The gate every LLM call goes through, shared by all workers of a run (SPEC §5):
 *
 * - at most `concurrency` calls in flight (default 8);
 * - at most `rpm` calls started and `tpm` estimated tokens spent in any 60-second window;
 * - one shared pause: a 429 sets a single "paused until" instant (the later of the current one and
 *   the new one) and nobody starts a call before it, so all workers honour Retry-After together
 *   instead of each hammering the API with its own backoff.
 *
 * The rate limits are sliding windows over reserved start times: each call reserves the earliest
 * start at which the last `rpm` starts (and the tokens of the last minute) still fit, then sleeps
 * until then. That is never looser than a token bucket or a fixed window on the server's side, it
 * is FIFO, and it needs no background fiber. Everything runs on Effect's `Clock`, so `TestClock`
 * drives it in tests.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as FifoSemaphore from "./FifoSemaphore.js"

export interface RateGateOptions {
  /** Calls in flight at once. Default 8. */
  readonly concurrency?: number | undefined
  /** Calls started per minute. Unlimited when absent. */
  readonly rpm?: number | undefined
  /** Estimated tokens per minute (the cost of a call is its estimate). Unlimited when absent. */
  readonly tpm?: number | undefined
}

export interface RateGateStats {
  /** Calls running now. */
  readonly inFlight: number
  /** Calls inside the gate still waiting for a permit, the pause or the rate limits. */
  readonly waiting: number
  /** Epoch millis (Clock time) until which calls are paused; 0 when never paused. */
  readonly pausedUntil: number
}

export class RateGate extends Context.Tag("rag-eval/RateGate")<RateGate, {
  /** Run `effect` once a permit, the pause and the rate limits allow it. */
  readonly run: <A, E, R>(estimatedTokens: number, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Pause every caller until at least now + `duration` (never shortens a pause already set). */
  readonly pause: (duration: Duration.DurationInput) => Effect.Effect<void>
  readonly stats: Effect.Effect<RateGateStats>
}>() {}

const WINDOW_MS = 60_000

/**
 * Reserved start times (and their costs) of the last window, oldest first. Starts are
 * non-decreasing, so entries that left the window for the latest start left it for every later
 * one and can be dropped.
 */
class SlidingWindow {
  private starts: Array<number> = []
  private costs: Array<number> = []
  private head = 0
  private total = 0

  constructor(readonly limit: number) {}

  /** The earliest start ≥ `notBefore` (itself ≥ every earlier start) at which `cost` more fits. */
  earliest(notBefore: number, cost: number): number {
    this.expire(notBefore)
    const c = this.clamp(cost)
    let at = notBefore
    let total = this.total
    // The oldest entries must leave the window before this one fits.
    for (let i = this.head; total + c > this.limit && i < this.starts.length; i++) {
      at = Math.max(at, this.starts[i]! + WINDOW_MS)
      total -= this.costs[i]!
    }
    return at
  }

  /** Record a start at `at` (≥ every earlier start, ≥ `earliest(…)`). */
  commit(at: number, cost: number) {
    this.expire(at)
    const c = this.clamp(cost)
    this.starts.push(at)
    this.costs.push(c)
    this.total += c
  }

  /** A call costing more than the whole limit would never fit: it gets the window to itself. */
  private clamp(cost: number) {
    return Math.min(Math.max(cost, 0), this.limit)
  }

  private expire(at: number) {
    while (this.head < this.starts.length && this.starts[this.head]! <= at - WINDOW_MS) {
      this.total -= this.costs[this.head]!
      this.head++
    }
    if (this.head > 1024 && this.head * 2 > this.starts.length) {
      this.starts = this.starts.slice(this.head)
      this.costs = this.costs.slice(this.head)
      this.head = 0
    }
  }
}

export const make = (options: RateGateOptions = {}): Effect.Effect<RateGate["Type"]> =>
  Effect.gen(function*() {
    const concurrency = Math.max(1, Math.floor(options.concurrency ?? 8))
    const permits = FifoSemaphore.make(concurrency)
    const windows: Array<{ readonly window: SlidingWindow; readonly tokens: boolean }> = []
    if (options.rpm !== undefined && options.rpm > 0) windows.push({ window: new SlidingWindow(options.rpm), tokens: false })
    if (options.tpm !== undefined && options.tpm > 0) windows.push({ window: new SlidingWindow(options.tpm), tokens: true })

    // Plain counters: they are only touched inside single synchronous steps.
    let pausedUntil = 0
    let lastStart = 0
    let inFlight = 0
    let waiting = 0

    /**
     * Sleep until the shared pause is over; loops because a new 429 may extend it meanwhile. Never
     * paused yet (the usual case): nothing to read, not even the clock.
     */
    const waitForPause: Effect.Effect<void> = Effect.suspend(() =>
      pausedUntil === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) =>
        pausedUntil > now
          ? Effect.zipRight(Effect.sleep(Duration.millis(pausedUntil - now)), waitForPause)
          : Effect.void)
    )

    /** Reserve a start instant in every window (at once, so they agree) and sleep until it. */
    const waitForRate = (estimatedTokens: number): Effect.Effect<void> =>
      windows.length === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => {
        // Agree on one instant that every window allows, then record it in all of them.
        let at = Math.max(now, lastStart)
        for (const { tokens, window } of windows) at = Math.max(at, window.earliest(at, tokens ? estimatedTokens : 1))
        for (const { tokens, window } of windows) window.commit(at, tokens ? estimatedTokens : 1)
        lastStart = at
        return at > now ? Effect.sleep(Duration.millis(at - now)) : Effect.void
      })

    const run = <A, E, R>(estimatedTokens: number, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        let started = false
        waiting++
        return waitForPause.pipe(
          Effect.zipRight(
            permits.withPermit(
              waitForRate(estimatedTokens).pipe(
                // A 429 may have arrived while we waited for a permit or the rate limits.
                Effect.zipRight(waitForPause),
                Effect.zipRight(Effect.sync(() => {
                  started = true
                  waiting--
                  inFlight++
                })),
                Effect.zipRight(effect)
              )
            )
          ),
          Effect.ensuring(Effect.sync(() => {
            if (started) inFlight--
            else waiting--
          }))
        )
      })

    const pause = (duration: Duration.DurationInput): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          pausedUntil = Math.max(pausedUntil, now + Duration.toMillis(duration))
        }))

    const stats = Effect.sync((): RateGateStats => ({ inFlight, waiting, pausedUntil }))

    return RateGate.of({ run, pause, stats })
  })

export const layer = (options: RateGateOptions = {}): Layer.Layer<RateGate> => Layer.effect(RateGate, make(options))
