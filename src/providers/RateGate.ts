/**
 * The gate every LLM call goes through, shared by all workers of a run (SPEC §5): the Effect shell
 * around the rate-control policy (`RateControl.ts`, a pure state machine — what to decide lives
 * there). The shell admits calls and reports their outcomes:
 *
 * - **Admission**: a permit (at most the controller's concurrency in flight, FIFO), then a start
 *   from the controller — after the shared pause, at the pace — slept until, and confirmed (a 429
 *   meanwhile, or a stalled process waking much later than planned, hands the slot out again). Paced
 *   starts are taken one at a time (a second FIFO of one permit), so a pace that rises meanwhile
 *   applies to the next one instead of to starts handed out long ahead.
 * - **Outcomes**: a success (with its rate-limit headers and real tokens), a 429 (Retry-After), any
 *   other failure; then the permits follow the controller's concurrency.
 * - **`--max-wait`**: a call that carries a `WaitBudget` never waits past it once its judgment has
 *   met a 429 (its own, or the shared pause one set): it ends with a `rate_limited` error instead.
 * - **Stopping**: when `stop` completes (the first Ctrl+C) or `halt` is called (a fatal error),
 *   every call still waiting ends at once with `GateStopped`; calls in flight are not touched.
 *
 * Time is Effect's `Clock` and randomness Effect's `Random`, so `TestClock` drives it in tests.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Random from "effect/Random"
import type * as Scope from "effect/Scope"
import { annotateSpan, traced } from "../domain/Spans.js"
import * as FifoSemaphore from "./FifoSemaphore.js"
import { type ChatResponse, ProviderError } from "./LlmProvider.js"
import { RateController, type RateControlOptions, type Reservation } from "./RateControl.js"

export { PACE_MARGIN } from "./RateControl.js"

export interface RateGateOptions extends RateControlOptions {
  /** Completes when the run stops (the first Ctrl+C): waiting calls end with `GateStopped`. */
  readonly stop?: Effect.Effect<void> | undefined
}

export interface RateGateStats {
  /** Calls running now. */
  readonly inFlight: number
  /** Calls inside the gate still waiting for a permit, the pause or the pace. */
  readonly waiting: number
  /** Epoch millis (Clock time) until which calls are paused; 0 when never paused. */
  readonly pausedUntil: number
  /** The concurrency limit now, the lowest it went, and the ceiling. */
  readonly concurrency: { readonly current: number; readonly min: number; readonly max: number }
  /** 429s received. */
  readonly rateLimited: number
  /** The pace in requests per minute now (set or learned); undefined when unpaced. */
  readonly rpm: number | undefined
}

/**
 * One judgment's `--max-wait`: how long it may wait out 429s, counted from `since` — the first
 * time it met one (its own 429, or the shared pause a 429 set). Shared by its attempts.
 */
export interface WaitBudget {
  readonly maxWaitMs: number
  since: number | undefined
}

/** A call that was still waiting in the gate when the run stopped or was halted: it never started. */
export class GateStopped extends Data.TaggedError("GateStopped")<{}> {}

export class RateGate extends Context.Tag("rag-eval/RateGate")<RateGate, {
  /**
   * Run one attempt once a permit, the pause and the pace allow it, and learn from its outcome (429s,
   * headers, latency). Fails with `GateStopped` when the run stops before the attempt could start,
   * and with a `rate_limited` `ProviderError` when `wait` is spent before it could.
   */
  readonly run: <R>(
    estimatedTokens: number,
    attempt: Effect.Effect<ChatResponse, ProviderError, R>,
    wait?: WaitBudget
  ) => Effect.Effect<ChatResponse, ProviderError | GateStopped, R>
  /** Pause every caller until at least now + `duration` (never shortens a pause already set). */
  readonly pause: (duration: Duration.DurationInput) => Effect.Effect<void>
  /** Start nothing more: every waiting call (and every later one) ends with `GateStopped`. */
  readonly halt: Effect.Effect<void>
  readonly stats: Effect.Effect<RateGateStats>
}>() {}

/** The error a call gets when its `--max-wait` is spent while it waits in the gate. */
export const waitSpent = (wait: WaitBudget) =>
  new ProviderError({
    kind: "rate_limited",
    detail: `still rate-limited when its --max-wait (${Math.round(wait.maxWaitMs / 1000)} s) ran out`
  })

export const make = (options: RateGateOptions = {}): Effect.Effect<RateGate["Type"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const control = new RateController(options, yield* Clock.currentTimeMillis)
    const permits = FifoSemaphore.make<GateStopped>(control.concurrency())
    /** Paced starts are handed out one at a time (see the module comment). */
    const pacer = FifoSemaphore.make<GateStopped>(1)
    /** Completed when the run stops or the gate is halted: every wait races it. */
    const stopSignal = yield* Deferred.make<void>()
    const stopped: Effect.Effect<void> = Deferred.await(stopSignal)
    let isStopped = false
    // Plain counters: only touched inside single synchronous steps.
    let inFlight = 0
    let waiting = 0

    /**
     * Completed, with its instant, by the first 429 of a limited spell (a fresh one once a call
     * succeeds again): a call queued for a permit since before that 429 starts its --max-wait then,
     * so every judgment behind a long Retry-After ends about --max-wait after the first 429 — not
     * one --max-wait after the calls ahead of it gave up.
     */
    let limitedSpell = Deferred.unsafeMake<number>(FiberId.none)
    let inSpell = false
    const stopNow = Effect.fail(new GateStopped())
    /** Sleep, unless the run stops first. */
    const sleepUnlessStopped = (ms: number): Effect.Effect<void, GateStopped> =>
      isStopped
        ? stopNow
        : ms <= 0
        ? Effect.void
        : Effect.raceFirst(Effect.sleep(Duration.millis(ms)), Effect.zipRight(stopped, stopNow))

    const followConcurrency = () => {
      if (permits.limit() !== control.concurrency()) permits.setLimit(control.concurrency())
    }

    /**
     * One start from the controller, slept until and confirmed: the reservation and its start
     * instant, or undefined when it went stale (reserve again). Holds the caller's permit (and the
     * pacer, when paced) throughout; gives its slot back when interrupted or stopped.
     */
    const startOnce = (
      cost: number,
      wait: WaitBudget | undefined,
      restore: <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    ) =>
      Effect.flatMap(
        Effect.zip(Clock.currentTimeMillis, Random.next),
        (
          [now, random]
        ): Effect.Effect<
          { readonly reservation: Reservation; readonly startedAt: number } | undefined,
          GateStopped | ProviderError
        > => {
          const reservation = control.reserve(now, cost, random)
          if (wait !== undefined && reservation.at > now && control.pausedUntil > now) wait.since ??= now
          const deadline = wait?.since === undefined ? Number.POSITIVE_INFINITY : wait.since + wait.maxWaitMs
          const giveBack = Effect.flatMap(Clock.currentTimeMillis, (t) =>
            Effect.sync(() => control.cancel(t, reservation)))
          if (reservation.at > deadline) {
            // Its --max-wait runs out first: wait that long, then end (the slot is not taken).
            return restore(sleepUnlessStopped(deadline - now)).pipe(
              Effect.zipRight(giveBack),
              Effect.zipRight(Effect.fail(waitSpent(wait!))),
              Effect.onInterrupt(() =>
                giveBack
              )
            )
          }
          return restore(sleepUnlessStopped(reservation.at - now)).pipe(
            Effect.onError(() => giveBack),
            Effect.zipRight(Clock.currentTimeMillis),
            Effect.map((startedAt) => control.confirm(startedAt, reservation) ? { reservation, startedAt } : undefined)
          )
        }
      )

    const run = <R>(
      estimatedTokens: number,
      attempt: Effect.Effect<ChatResponse, ProviderError, R>,
      wait?: WaitBudget
    ): Effect.Effect<ChatResponse, ProviderError | GateStopped, R> =>
      Effect.suspend(() => {
        waiting++
        let started = false
        /**
         * Wait for a permit or the pacer — no longer than the call's --max-wait once its judgment
         * has met a 429 (a call queued behind a pause has: it waits that pause out too).
         */
        const take = (semaphore: FifoSemaphore.FifoSemaphore<GateStopped>) =>
          Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<void, GateStopped | ProviderError> => {
            if (control.pausedUntil > now && wait !== undefined) wait.since ??= now
            // A free slot (the common case) is taken at once: nothing to race.
            if (wait === undefined || (wait.since === undefined && semaphore.available() > 0)) return semaphore.take
            const expire = (since: number) =>
              Effect.flatMap(Clock.currentTimeMillis, (t) =>
                Effect.zipRight(sleepUnlessStopped(since + wait.maxWaitMs - t), Effect.fail(waitSpent(wait))))
            return Effect.raceFirst(
              semaphore.take,
              wait.since !== undefined
                ? expire(wait.since)
                // Not limited yet: the budget starts at the spell's first 429, if one comes while queued.
                : Effect.flatMap(Deferred.await(limitedSpell), (at) =>
                  expire(wait.since ??= at))
            )
          })
        /** A permit, then (paced) the pacer, then a confirmed start; released again on failure. */
        const admit = Effect.uninterruptibleMask((restore) =>
          Effect.zipRight(
            restore(take(permits)),
            Effect.suspend(() => {
              // Paced or not is asked again for each start: a start of the unpaced first wave that a
              // 429 made stale is handed out again at the pace, one at a time like any paced start.
              const loop: Effect.Effect<
                { readonly reservation: Reservation; readonly startedAt: number },
                GateStopped | ProviderError
              > = Effect.suspend(() => {
                const once = startOnce(estimatedTokens, wait, restore)
                const start = control.pacePerMs() !== undefined
                  ? Effect.zipRight(restore(take(pacer)), Effect.ensuring(once, Effect.sync(() => pacer.release())))
                  : once
                return Effect.flatMap(start, (s) => s === undefined ? loop : Effect.succeed(s))
              })
              return Effect.onError(loop, () => Effect.sync(() => permits.release()))
            })
          )
        )
        // The wait for a slot, the pace or a 429's pause, as a span of its own (`--trace-otlp`).
        const waited = Effect.flatMap(Clock.currentTimeMillis, (queuedAt) =>
          admit.pipe(
            Effect.tap(({ startedAt }) => annotateSpan("rag_eval.wait_ms", startedAt - queuedAt)),
            traced("RateGate.wait", { attributes: { "rag_eval.waiting": waiting } })
          ))
        return waited.pipe(
          Effect.flatMap(({ reservation, startedAt }) => {
            started = true
            waiting--
            inFlight++
            return Effect.onExit(attempt, (exit) =>
              Effect.flatMap(Clock.currentTimeMillis, (now) =>
                Effect.sync(() => {
                  inFlight--
                  permits.release()
                  if (Exit.isSuccess(exit)) {
                    if (inSpell) {
                      inSpell = false
                      limitedSpell = Deferred.unsafeMake<number>(FiberId.none)
                    }
                    const usage = exit.value.usage
                    control.succeeded(now, startedAt, {
                      rateLimit: exit.value.rateLimit,
                      estimatedTokens: reservation.cost,
                      usedTokens: usage.inputTokens + usage.outputTokens
                    })
                  } else {
                    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
                    if (failure?.kind === "rate_limited") {
                      if (wait !== undefined) wait.since ??= now
                      if (!inSpell) {
                        inSpell = true
                        Deferred.unsafeDone(limitedSpell, Exit.succeed(now))
                      }
                      control.rateLimited(now, startedAt, {
                        retryAfterMs: failure.retryAfterMs,
                        rateLimit: failure.limits
                      })
                    } else {
                      control.failed(now, startedAt, { rateLimit: failure?.limits })
                    }
                  }
                  followConcurrency()
                })))
          }),
          Effect.ensuring(Effect.sync(() => {
            if (!started) waiting--
          }))
        )
      })

    const pause = (duration: Duration.DurationInput): Effect.Effect<void> =>
      Effect.flatMap(
        Clock.currentTimeMillis,
        (now) => Effect.sync(() => control.pause(now, Duration.toMillis(duration)))
      )

    const stopAll = Effect.suspend(() => {
      isStopped = true
      permits.close(new GateStopped())
      pacer.close(new GateStopped())
      return Deferred.succeed(stopSignal, undefined)
    }).pipe(Effect.asVoid)

    if (options.stop !== undefined) {
      // The first Ctrl+C: nothing waiting starts any more.
      yield* Effect.forkScoped(Effect.zipRight(options.stop, stopAll))
    }

    const stats = Effect.sync((): RateGateStats => {
      const s = control.stats()
      return {
        inFlight,
        waiting,
        pausedUntil: s.pausedUntil,
        concurrency: s.concurrency,
        rateLimited: s.rateLimited,
        rpm: s.rpm
      }
    })

    return RateGate.of({ run, pause, halt: stopAll, stats })
  })

export const layer = (options: RateGateOptions = {}): Layer.Layer<RateGate> => Layer.scoped(RateGate, make(options))

/** A deferred that never completes: the stop signal of a gate nobody stops (tests, the server). */
export const never: Effect.Effect<void> = Deferred.await(Deferred.unsafeMake<void>(FiberId.none))
