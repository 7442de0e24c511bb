/**
 * The gate every LLM call goes through, shared by all workers of a run (SPEC §5). It exists so a
 * run against a rate-limited API ends with every judgment made, at close to the limit's pace:
 *
 * - **Concurrency**: at most `concurrency` calls in flight. With `adaptive` (the default) the limit
 *   moves between 1 and `concurrency` by AIMD: halved on a 429 (once per episode: only a 429 for a
 *   call started after the last cut counts), one more after a window of successes as wide as the
 *   limit — never below what the current pace needs (Little's law: pace × latency).
 * - **Pacing**: `rpm` / `tpm` are token buckets (GCRA): starts are spread evenly at the rate, with
 *   up to `burst` requests (default one second's worth) at once; the token bucket holds one
 *   second's worth of `tpm`. A 429'd attempt gives its request and tokens back; a finished call's
 *   estimate is corrected to its real tokens. So that network jitter never makes requests arrive
 *   faster than the server's own bucket allows, the request bucket starts one request short of full
 *   and the rate is paced at 95%: the server's bucket keeps a request's slack, and gains more (a
 *   server that reads its requests in bunches, as a loaded one does, sees them no faster than allowed).
 * - **Learning the limit** (adaptive): a server that answers 429 without being asked for a rate
 *   gets one anyway — the rate of successful starts over the last seconds when it said no, less
 *   10% — which is then probed upward: fast (50%/s) while the server's rate is unknown, 10%/s back
 *   up to just under the rate it last allowed, then 1%/s above it (faster the longer it says yes). Rate-limit headers
 *   (`x-ratelimit-remaining-*` / `reset-*`, see RateLimitHeaders.ts) pause new starts *before*
 *   the server's bucket runs dry, counting the calls already in flight.
 * - **One shared pause**: a 429 sets a single "paused until" instant (Retry-After, capped at
 *   `maxPauseMs`; 1 s doubling when the server gives none) that nobody starts a call before, and
 *   then the waiting calls restart spread over a jitter window — never every worker in one tick.
 * - **Stopping**: when `stop` completes (the first Ctrl+C) or `halt` is called (a fatal error),
 *   every call still waiting ends at once with `GateStopped`; calls in flight are not touched.
 *
 * Everything runs on Effect's `Clock` and `Random`, so `TestClock` drives it in tests.
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
import * as FifoSemaphore from "./FifoSemaphore.js"
import type { ChatResponse, ProviderError } from "./LlmProvider.js"
import { type RateLimitInfo, refillMs } from "./RateLimitHeaders.js"

export interface RateGateOptions {
  /** The most calls in flight at once (the AIMD ceiling). Default 8. */
  readonly concurrency?: number | undefined
  /** AIMD concurrency and learning the server's rate from its 429s and headers. Default true. */
  readonly adaptive?: boolean | undefined
  /** Requests per minute (a token bucket). Unlimited when absent (unless learned). */
  readonly rpm?: number | undefined
  /** Estimated tokens per minute (a token bucket holding one second's worth). */
  readonly tpm?: number | undefined
  /** Requests that may start at once under `rpm`. Default one second's worth (at least 1). */
  readonly burst?: number | undefined
  /**
   * With `adaptive`: also learn the server's rate from 429s and rate-limit headers and pace at it.
   * Default true. A cluster runner turns it off: the rate is learned once for the whole cluster
   * (`cluster/SharedLimit.ts`), as each runner's own share would add up to too much.
   */
  readonly learnRate?: boolean | undefined
  /** The longest single pause a Retry-After may impose. Default 10 minutes. */
  readonly maxPauseMs?: number | undefined
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

/** A call that was still waiting in the gate when the run stopped or was halted: it never started. */
export class GateStopped extends Data.TaggedError("GateStopped")<{}> {}

export class RateGate extends Context.Tag("rag-eval/RateGate")<RateGate, {
  /**
   * Run one attempt once a permit, the pause and the pace allow it, and learn from its outcome (429s,
   * headers, latency). Fails with `GateStopped` when the run stops before the attempt could start.
   */
  readonly run: <R>(estimatedTokens: number, attempt: Effect.Effect<ChatResponse, ProviderError, R>) => Effect.Effect<ChatResponse, ProviderError | GateStopped, R>
  /** Pause every caller until at least now + `duration` (never shortens a pause already set). */
  readonly pause: (duration: Duration.DurationInput) => Effect.Effect<void>
  /** Start nothing more: every waiting call (and every later one) ends with `GateStopped`. */
  readonly halt: Effect.Effect<void>
  readonly stats: Effect.Effect<RateGateStats>
}>() {}

// ---------------------------------------------------------------------------------------------
// Pieces

/**
 * GCRA (the generic cell rate algorithm, i.e. a token bucket kept as one number): the bucket is
 * full at `tat` ("theoretical arrival time"); a start of `cost` units conforms at `t` when the debt
 * (tat − t) · rate plus the cost fits in the capacity.
 */
export class Gcra {
  private tat: number | undefined
  /**
   * @param perMs units refilled per millisecond
   * @param capacity bucket size in units
   * @param short units missing from the bucket at the first use (it starts that far from full)
   */
  constructor(public perMs: number, public capacity: number, private readonly short = 0) {}

  /** The earliest start ≥ `now` at which `cost` units conform. */
  earliest(now: number, cost: number): number {
    this.tat ??= now + Math.min(this.short, this.capacity - 1) / this.perMs
    const c = Math.min(cost, this.capacity)
    return Math.max(now, this.tat - (this.capacity - c) / this.perMs)
  }

  /** Take `cost` units at `at` (≥ `earliest(…)`). */
  commit(at: number, cost: number) {
    this.tat = Math.max(this.tat ?? at, at) + cost / this.perMs
  }

  /** Give `cost` units back (a 429'd attempt), or take more (negative: a call that used more). */
  refund(cost: number) {
    if (this.tat !== undefined) this.tat -= cost / this.perMs
  }
}

/** Starts of successful calls (Clock millis) over the last `windowMs`, for the observed rate. */
export class RecentStarts {
  private times: Array<number> = []
  private headIndex = 0
  constructor(readonly windowMs: number) {}
  add(t: number) {
    this.times.push(t)
    // Starts are roughly in order: expire from the head as we go, so a long run holds one window.
    if ((this.times.length & 1023) === 0) this.expire(t)
  }
  /** Successful starts over the last window. */
  count(now: number): number {
    this.expire(now)
    return this.times.length - this.headIndex
  }
  private expire(now: number) {
    while (this.headIndex < this.times.length && this.times[this.headIndex]! <= now - this.windowMs) this.headIndex++
    if (this.headIndex > 1024 && this.headIndex * 2 > this.times.length) {
      this.times = this.times.slice(this.headIndex)
      this.headIndex = 0
    }
  }
  /** Successful starts per millisecond over the last window (at least `minMs` of it). */
  rate(now: number, sinceFirst: number, minMs: number): number {
    return this.count(now) / Math.max(minMs, Math.min(this.windowMs, now - sinceFirst))
  }
}

/** Safety margin on a requested rate: the server's bucket gains 5% slack against jitter. */
export const PACE_MARGIN = 0.95
/** A learned rate starts 10% under what the server let through when it said no. */
export const LEARN_DECREASE = 0.9
/** A learned rate is probed upward by 1% per second without a 429 … */
const PROBE_PER_MS = 0.01 / 1000
/** … by 10% per second while it is well under the rate the server last allowed … */
const FAST_PROBE_PER_MS = 0.1 / 1000
/** … and by 50% per second while that rate is not known yet (the first guess may be far off). */
const DISCOVERY_PROBE_PER_MS = 0.5 / 1000
/** Successes needed in the window before they are taken for a rate. */
export const MIN_SUCCESSES = 5
/** After this long without a 429, the slow probe speeds up by 1% per second each second. */
const ACCELERATE_AFTER_MS = 5000
/** The window over which successful starts are counted to learn a rate. */
export const OBSERVE_MS = 5000
/** A 429 without Retry-After pauses 1 s, doubling while 429s follow each other (capped at 30 s). */
export const DEFAULT_PAUSE_MS = 1000
const MAX_DEFAULT_PAUSE_MS = 30_000
/** Restarts after a pause spread over at most this long. */
const MAX_JITTER_MS = 1000

/**
 * A learned rate probed upward from `lastProbeAt` to `now`: quickly back to just under the rate the
 * server last allowed (`ceilingPerMs`), or up to where it says no when that is not known yet; then
 * creeping above it, faster the longer no 429 came since `lastCutAt` (the estimate may have been low).
 */
export const probedRate = (learnedPerMs: number, ceilingPerMs: number | undefined, now: number, lastProbeAt: number, lastCutAt: number): number => {
  const below = ceilingPerMs === undefined || learnedPerMs < ceilingPerMs * 0.97
  const quiet = Math.max(0, now - lastCutAt - ACCELERATE_AFTER_MS)
  const step = ceilingPerMs === undefined
    ? DISCOVERY_PROBE_PER_MS
    : below
    ? FAST_PROBE_PER_MS
    : Math.min(FAST_PROBE_PER_MS, PROBE_PER_MS * (1 + quiet / 1000))
  const cap = below && ceilingPerMs !== undefined ? ceilingPerMs * 0.97 : Number.POSITIVE_INFINITY
  return Math.max(learnedPerMs, Math.min(learnedPerMs * (1 + step * (now - lastProbeAt)), cap))
}

/**
 * The rate to learn at a 429 (per ms): 10% under the lower of the current pace and the rate observed
 * getting through (0: not enough seen); undefined when neither is known.
 */
export const cutRate = (currentPerMs: number | undefined, observedPerMs: number): number | undefined => {
  const base = currentPerMs === undefined
    ? (observedPerMs > 0 ? observedPerMs : undefined)
    : observedPerMs > 0 ? Math.min(currentPerMs, observedPerMs) : currentPerMs
  return base === undefined ? undefined : Math.max(base * LEARN_DECREASE, 1 / 60_000)
}

/** The pause after a 429 without Retry-After: one start's worth at the pace, else 1 s doubling per consecutive pause (capped). */
export const pauseAfter429 = (pacePerMs: number | undefined, consecutive429: number): number =>
  pacePerMs !== undefined
    ? Math.max(1 / pacePerMs, 50)
    : Math.min(MAX_DEFAULT_PAUSE_MS, DEFAULT_PAUSE_MS * 2 ** Math.min(5, consecutive429 - 1))

export const make = (options: RateGateOptions = {}): Effect.Effect<RateGate["Type"]> =>
  Effect.gen(function*() {
    const max = Math.max(1, Math.floor(options.concurrency ?? 8))
    const adaptive = options.adaptive ?? true
    const learn = adaptive && (options.learnRate ?? true)
    const maxPauseMs = options.maxPauseMs ?? 10 * 60_000
    const permits = FifoSemaphore.make<GateStopped>(max)
    /** Completed when the run stops or the gate is halted: every wait races it. */
    const stopSignal = yield* Deferred.make<void>()
    const stopped: Effect.Effect<void> = Deferred.await(stopSignal)
    let isStopped = false

    // The requested pace (fixed) and the learned one (adaptive); the gate paces at the lower.
    const userRps = options.rpm !== undefined && options.rpm > 0 ? (options.rpm / 60) * PACE_MARGIN : undefined
    const burst = Math.max(1, options.burst ?? (options.rpm !== undefined ? options.rpm / 60 : 1))
    // It starts one request short of a full burst: the server's bucket keeps one request's slack
    // against network jitter from the first second on (the 5% margin adds more as the run goes).
    const requests = new Gcra((userRps ?? 1) / 1000, burst, 1)
    let learnedPerMs: number | undefined
    const tokens = options.tpm !== undefined && options.tpm > 0 ? new Gcra((options.tpm / 60_000) * PACE_MARGIN, Math.max(1, options.tpm / 60)) : undefined
    const pacePerMs = (): number | undefined => {
      const user = userRps === undefined ? undefined : userRps / 1000
      if (learnedPerMs === undefined) return user
      return user === undefined ? learnedPerMs : Math.min(user, learnedPerMs)
    }
    const applyPace = () => {
      const pace = pacePerMs()
      if (pace !== undefined) requests.perMs = pace
    }

    // Plain counters: only touched inside single synchronous steps.
    let pausedUntil = 0
    let jitterMs = 0
    let inFlight = 0
    let waiting = 0
    let rateLimited = 0
    let consecutive429 = 0
    let lastPauseAt = Number.NEGATIVE_INFINITY
    let minLimit = max
    let lastCutAt = Number.NEGATIVE_INFINITY
    let successesSinceChange = 0
    let firstStartAt: number | undefined
    let lastProbeAt = 0
    /** The rate the server let through when it last said no (per ms): where probing slows down. */
    let ceilingPerMs: number | undefined
    let succeededSinceCut = true
    /** Exponentially weighted mean latency of successful calls (ms). */
    let latencyMs: number | undefined
    const successes = new RecentStarts(OBSERVE_MS)
    /** Start times of calls in flight, to count the calls a header's `remaining` does not know of. */
    const starts = new Map<number, number>()
    let nextCall = 0

    const stopNow = Effect.fail(new GateStopped())
    /** Sleep, unless the run stops first. */
    const sleepUnlessStopped = (ms: number): Effect.Effect<void, GateStopped> =>
      isStopped ? stopNow : ms <= 0 ? Effect.void : Effect.raceFirst(Effect.sleep(Duration.millis(ms)), Effect.zipRight(stopped, stopNow))

    /**
     * Sleep until the shared pause is over, plus this caller's share of the jitter window; loops
     * because a new 429 may extend the pause meanwhile. Never paused (the usual case): nothing to read.
     */
    const waitForPause: Effect.Effect<void, GateStopped> = Effect.suspend(() =>
      isStopped ? stopNow : pausedUntil === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) =>
        pausedUntil <= now ? Effect.void : Effect.flatMap(Random.next, (r) => {
          const until = pausedUntil
          return Effect.zipRight(sleepUnlessStopped(until - now + r * jitterMs), waitForPause)
        }))
    )

    /** Reserve a start in every bucket (at once, so they agree); the instant to start at. */
    const reserve = (now: number, cost: number): number => {
      const paced = pacePerMs() !== undefined
      let at = now
      if (paced) at = Math.max(at, requests.earliest(now, 1))
      if (tokens !== undefined) at = Math.max(at, tokens.earliest(now, cost))
      if (paced) requests.commit(at, 1)
      if (tokens !== undefined) tokens.commit(at, cost)
      return at
    }
    const giveBack = (cost: number) => {
      if (pacePerMs() !== undefined) requests.refund(1)
      tokens?.refund(cost)
    }

    const setLimit = (limit: number) => {
      permits.setLimit(limit)
      minLimit = Math.min(minLimit, limit)
      successesSinceChange = 0
    }

    /** Pause every start until now + `ms` (capped); `spread` restarts over a jitter window after it. */
    const setPause = (now: number, ms: number, spread = true) => {
      const until = now + Math.min(ms, maxPauseMs)
      if (spread) lastPauseAt = now
      if (until > pausedUntil) {
        jitterMs = spread ? Math.min(MAX_JITTER_MS, Math.max(ms, 20)) : 0
        pausedUntil = until
      }
    }

    /** A success: AIMD's additive increase, the observed rate, the learned rate's probe. */
    const onSuccess = (now: number, startedAt: number, response: ChatResponse, estimated: number) => {
      consecutive429 = 0
      // Only a call started after the last cut says the cut pace works.
      if (startedAt >= lastCutAt) succeededSinceCut = true
      successes.add(startedAt)
      const took = now - startedAt
      latencyMs = latencyMs === undefined ? took : latencyMs * 0.9 + took * 0.1
      if (tokens !== undefined) tokens.refund(estimated - (response.usage.inputTokens + response.usage.outputTokens || estimated))
      if (!adaptive) return
      if (++successesSinceChange >= permits.limit() && permits.limit() < max) setLimit(permits.limit() + 1)
      if (learnedPerMs !== undefined && now > lastProbeAt) {
        // Quickly back to just under the rate the server last allowed (or up to where it says no,
        // when that is not known yet); then creep above it, faster the longer no 429 comes (the
        // estimate may have been low).
        learnedPerMs = probedRate(learnedPerMs, ceilingPerMs, now, lastProbeAt, lastCutAt)
        lastProbeAt = now
        applyPace()
      }
    }

    /**
     * A 429: give the start back, pause everyone; and once per episode (a 429 for a call started after
     * the last cut, with a success since for a call started after it too — the server's bucket needs
     * time to refill, and the 429s meanwhile say nothing new) cut concurrency and the learned rate.
     */
    const onRateLimited = (now: number, startedAt: number, error: ProviderError, estimated: number) => {
      rateLimited++
      // Consecutive pauses, not 429s: the calls of one wave all meet the same empty bucket.
      if (startedAt >= lastPauseAt) consecutive429++
      giveBack(estimated)
      if (adaptive && startedAt >= lastCutAt && succeededSinceCut) {
        succeededSinceCut = false
        lastCutAt = now
        // What the server let through lately is the best estimate of its rate.
        // Fewer than a handful of successes (the first wave's answers may not even be in yet) say
        // nothing about a rate; over less than a couple of seconds (a first burst, calls still in
        // flight) it is a rough guess: good enough to pace by, not to slow the probing down at.
        const seen = successes.count(now)
        const observed = seen >= MIN_SUCCESSES ? successes.rate(now, firstStartAt ?? now, 1000) : 0
        if (observed > 0 && now - (firstStartAt ?? now) >= 2000) ceilingPerMs = observed
        const cut = cutRate(pacePerMs(), observed)
        if (cut !== undefined && learn) {
          learnedPerMs = cut
          lastProbeAt = now
          applyPace()
        }
        // Never below what the pace needs in flight (pace × latency), nor below 1.
        const pace = pacePerMs()
        const needed = pace !== undefined && latencyMs !== undefined ? Math.ceil(pace * latencyMs * 1.25) : 1
        setLimit(Math.max(1, Math.min(permits.limit(), Math.max(needed, Math.floor(permits.limit() / 2)))))
      }
      setPause(now, error.retryAfterMs ?? pauseAfter429(pacePerMs(), consecutive429))
    }

    /**
     * Rate-limit headers. The request bucket's refill rate ((limit − remaining) / reset) is the
     * server's rate: once the bucket is half empty the gate paces at it (95%), so it never runs dry.
     * And when a bucket (less the calls started after this one, which the server had not counted
     * yet) is about to run dry anyway, new starts wait until enough has come back — no jitter: the
     * pace spreads them.
     */
    const onHeaders = (now: number, startedAt: number, info: RateLimitInfo | undefined, nextCost: number) => {
      if (info === undefined || !adaptive) return
      const requestsState = info.requests
      const perMs = requestsState === undefined ? undefined : refillMs(requestsState, 1)
      if (learn && perMs !== undefined && requestsState!.remaining! <= requestsState!.limit! / 2) {
        ceilingPerMs = 1 / perMs
        learnedPerMs = ceilingPerMs * PACE_MARGIN
        lastProbeAt = now
        applyPace()
      }
      let startedSince = 0
      for (const t of starts.values()) if (t > startedAt) startedSince++
      const check = (state: RateLimitInfo["requests"], needed: number) => {
        if (state?.remaining === undefined) return
        const short = needed - state.remaining
        if (short <= 0) return
        const pace = pacePerMs()
        setPause(now, refillMs(state, short) ?? (pace !== undefined ? short / pace : 1000), false)
      }
      check(info.requests, startedSince + 1)
      check(info.tokens, (startedSince + 1) * nextCost)
    }

    const run = <R>(estimatedTokens: number, attempt: Effect.Effect<ChatResponse, ProviderError, R>): Effect.Effect<ChatResponse, ProviderError | GateStopped, R> =>
      Effect.suspend(() => {
        waiting++
        let started = false
        const id = nextCall++
        /**
         * Wait for the pause, a permit and the pace. True when the attempt may start (holding a
         * permit); false when a 429 arrived meanwhile (the start and permit were given back).
         */
        const admitOnce: Effect.Effect<boolean, GateStopped> = Effect.uninterruptibleMask((restore) =>
          restore(waitForPause).pipe(
            Effect.zipRight(restore(permits.take)),
            Effect.zipRight(Clock.currentTimeMillis),
            Effect.flatMap((now) => {
              const at = reserve(now, estimatedTokens)
              return restore(sleepUnlessStopped(at - now)).pipe(
                Effect.onError(() => Effect.sync(() => {
                  giveBack(estimatedTokens)
                  permits.release()
                })),
                Effect.zipRight(Clock.currentTimeMillis),
                Effect.map((t) => {
                  if (pausedUntil <= t) return true
                  giveBack(estimatedTokens)
                  permits.release()
                  return false
                })
              )
            })
          )
        )
        // Looped outside the mask: inside it, a nested mask's `restore` would stay uninterruptible.
        const admit: Effect.Effect<void, GateStopped> = Effect.flatMap(admitOnce, (admitted) => admitted ? Effect.void : admit)
        return admit.pipe(
          Effect.zipRight(Clock.currentTimeMillis),
          Effect.flatMap((startedAt) => {
            started = true
            waiting--
            inFlight++
            firstStartAt ??= startedAt
            starts.set(id, startedAt)
            return Effect.onExit(attempt, (exit) =>
              Effect.flatMap(Clock.currentTimeMillis, (now) =>
                Effect.sync(() => {
                  inFlight--
                  starts.delete(id)
                  permits.release()
                  if (Exit.isSuccess(exit)) {
                    onSuccess(now, startedAt, exit.value, estimatedTokens)
                    onHeaders(now, startedAt, exit.value.rateLimit, estimatedTokens)
                  } else {
                    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
                    if (failure?.kind === "rate_limited") onRateLimited(now, startedAt, failure, estimatedTokens)
                    else if (failure !== undefined) onHeaders(now, startedAt, failure.limits, estimatedTokens)
                  }
                })))
          }),
          Effect.ensuring(Effect.sync(() => {
            if (!started) waiting--
          }))
        )
      })

    const pause = (duration: Duration.DurationInput): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => setPause(now, Duration.toMillis(duration))))

    const stopAll = Effect.suspend(() => {
      isStopped = true
      permits.close(new GateStopped())
      return Deferred.succeed(stopSignal, undefined)
    }).pipe(Effect.asVoid)

    if (options.stop !== undefined) {
      // The first Ctrl+C: nothing waiting starts any more.
      yield* Effect.forkDaemon(Effect.zipRight(options.stop, stopAll))
    }

    const stats = Effect.sync((): RateGateStats => {
      const pace = pacePerMs()
      return {
        inFlight,
        waiting,
        pausedUntil,
        concurrency: { current: permits.limit(), min: minLimit, max },
        rateLimited,
        rpm: pace === undefined ? undefined : pace * 60_000
      }
    })

    return RateGate.of({ run, pause, halt: stopAll, stats })
  })

export const layer = (options: RateGateOptions = {}): Layer.Layer<RateGate> => Layer.effect(RateGate, make(options))

/** A deferred that never completes: the stop signal of a gate nobody stops (tests, the server). */
export const never: Effect.Effect<void> = Deferred.await(Deferred.unsafeMake<void>(FiberId.none))
