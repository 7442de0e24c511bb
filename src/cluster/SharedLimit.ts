/**
 * The state behind the cluster's `RateLimit` entity: one per provider/model/server, asked by every
 * runner before each call. It does for the whole cluster what `providers/RateGate.ts` does for one
 * process, and uses the same rules and constants:
 *
 * - **`--rpm` / `--tpm`** are token buckets (GCRA) paced at 95% of the rate; `--burst` requests may
 *   start at once (default one second's worth), the bucket starting one request short of a `--burst`
 *   given, and with a single request without one (a cautious start).
 * - **One shared pause**: a 429 anywhere pauses every runner's starts (Retry-After, capped at the
 *   run's `--max-wait`; 1 s doubling while 429s follow each other when the server gives none).
 * - **Learning the server's rate** (the run's `--adaptive`, default on): the entity sees every start
 *   in the cluster, so on a 429 it takes the rate the cluster's calls got through over the last
 *   seconds (starts less 429s), less 10%, as the cluster's pace — once per episode: a 429 for a call
 *   that started before the last cut says nothing new — and probes it upward as the local gate does
 *   (50%/s while the server's rate is unknown, 10%/s back up to just under it, then 1%/s, faster the
 *   longer no 429 comes). Each runner's gate keeps its own AIMD concurrency but learns no rate of its
 *   own: three runners each pacing at their share plus a margin would not add up to the server's.
 *
 * A reservation returns how long to wait and a ticket (the instant it was asked for, on the
 * entity's clock) that a 429 report carries back, so the entity can tell an old call's 429 from a new one
 * whatever the runners' clocks say. Rebuilt on another runner after its host died, the state starts
 * empty: a cautious start (the buckets one request short of full, nothing learned yet).
 */
import * as RateGate from "../providers/RateGate.js"

export interface ReserveRequest {
  readonly rpm?: number | undefined
  readonly tpm?: number | undefined
  readonly burst?: number | undefined
  /** Estimated tokens of the call (for `tpm`). */
  readonly tokens: number
  /** Learn the server's rate from 429s (the run's `--adaptive`). Default true. */
  readonly adaptive?: boolean | undefined
}

export interface Reservation {
  /** Milliseconds to wait before the call may start. */
  readonly waitMs: number
  /** The instant the reservation was asked for (the entity's clock), for a later 429 report. */
  readonly ticket: number
}

export interface SharedLimitStats {
  /** The pace the cluster starts calls at (requests per minute), when one applies. */
  readonly rpm: number | undefined
  /** The rate learned from 429s (requests per minute), when one was. */
  readonly learnedRpm: number | undefined
  readonly pausedUntil: number
  readonly cuts: number
  readonly rateLimited: number
}

export const makeSharedLimit = () => {
  let requests: RateGate.Gcra | undefined
  let tokens: RateGate.Gcra | undefined
  let pausedUntil = 0
  // Learning (as RateGate's; see there)
  let learnedPerMs: number | undefined
  let ceilingPerMs: number | undefined
  let lastCutAt = Number.NEGATIVE_INFINITY
  let lastProbeAt = 0
  let firstStartAt: number | undefined
  let consecutive429 = 0
  let lastPauseAt = Number.NEGATIVE_INFINITY
  let cuts = 0
  let rateLimited = 0
  let userPerMs: number | undefined
  /** Start instants given out (nondecreasing but for `tpm`'s waits); some lie ahead of now. */
  let starts: Array<number> = []
  const refused = new RateGate.RecentStarts(RateGate.OBSERVE_MS)

  /** Starts over the last window that have begun by now (a start given for later has not). */
  const startedInWindow = (now: number): number => {
    let head = 0
    while (head < starts.length && starts[head]! <= now - RateGate.OBSERVE_MS) head++
    if (head > 0) starts = starts.slice(head)
    let ahead = 0
    for (let i = starts.length - 1; i >= 0 && starts[i]! > now; i--) ahead++
    return starts.length - ahead
  }

  const pacePerMs = (): number | undefined =>
    learnedPerMs === undefined ? userPerMs : userPerMs === undefined ? learnedPerMs : Math.min(userPerMs, learnedPerMs)

  /** The learned rate's probe upward, as time passes without a 429. */
  const probe = (now: number) => {
    if (learnedPerMs === undefined || now <= lastProbeAt) return
    learnedPerMs = RateGate.probedRate(learnedPerMs, ceilingPerMs, now, lastProbeAt, lastCutAt)
    lastProbeAt = now
  }

  const reserve = (now: number, limit: ReserveRequest): Reservation => {
    userPerMs = limit.rpm !== undefined && limit.rpm > 0 ? (limit.rpm * RateGate.PACE_MARGIN) / 60_000 : undefined
    if (limit.adaptive === false) learnedPerMs = undefined
    probe(now)
    let at = Math.max(now, pausedUntil)
    const pace = pacePerMs()
    if (pace !== undefined) {
      const burst = Math.max(1, limit.burst ?? (limit.rpm !== undefined ? limit.rpm / 60 : 1))
      if (requests === undefined || requests.capacity !== burst) {
        // A --burst given says the server takes that many at once: start one short of it. Without
        // one, start with a single request (the bucket fills while the cluster is idle): runners
        // joining a run must not open with a wave the server's bucket may be smaller than.
        requests = new RateGate.Gcra(pace, burst, limit.burst !== undefined ? 1 : burst)
      }
      requests.perMs = pace
      at = requests.earliest(at, 1)
      requests.commit(at, 1)
    }
    if (limit.tpm !== undefined && limit.tpm > 0) {
      const perMs = (limit.tpm * RateGate.PACE_MARGIN) / 60_000
      const capacity = Math.max(1, limit.tpm / 60)
      if (tokens === undefined || tokens.perMs !== perMs) tokens = new RateGate.Gcra(perMs, capacity, capacity)
      const cost = Math.min(limit.tokens, capacity)
      at = tokens.earliest(at, cost)
      tokens.commit(at, cost)
    }
    firstStartAt ??= at
    starts.push(at)
    if (starts.length > 4096 && starts[0]! <= now - RateGate.OBSERVE_MS) startedInWindow(now)
    return { waitMs: at - now, ticket: now }
  }

  /**
   * A runner's call got a 429: pause every start, and (adaptive, once per episode) cut the
   * cluster's pace to what got through lately, less 10%.
   */
  const limited = (now: number, report: { readonly ticket: number; readonly retryAfterMs?: number | undefined; readonly maxPauseMs: number; readonly adaptive?: boolean | undefined }) => {
    rateLimited++
    refused.add(now)
    // Consecutive pauses, not 429s (one wave's calls all meet the same empty bucket); a quiet spell resets.
    if (now - lastPauseAt > 10 * RateGate.DEFAULT_PAUSE_MS) consecutive429 = 0
    if (report.ticket >= lastPauseAt) consecutive429++
    if (report.adaptive !== false) {
      const span = Math.max(1000, Math.min(RateGate.OBSERVE_MS, now - (firstStartAt ?? now)))
      const through = Math.max(0, startedInWindow(now) - refused.count(now))
      const observed = through >= RateGate.MIN_SUCCESSES ? through / span : 0
      if (report.ticket > lastCutAt) {
        lastCutAt = now
        cuts++
        if (observed > 0 && now - (firstStartAt ?? now) >= 2000) ceilingPerMs = observed
        learnedPerMs = RateGate.cutRate(pacePerMs(), observed) ?? learnedPerMs
      } else if (learnedPerMs !== undefined && observed > 0 && observed * RateGate.LEARN_DECREASE < learnedPerMs) {
        // The same episode's other 429s arrive after the cut (their calls were in flight): each one
        // the cut counted as getting through lowers the estimate to what really did.
        learnedPerMs = Math.max(observed * RateGate.LEARN_DECREASE, 1 / 60_000)
        if (ceilingPerMs !== undefined && now - (firstStartAt ?? now) >= 2000) ceilingPerMs = Math.min(ceilingPerMs, observed)
      }
      lastProbeAt = now
    }
    // (The request bucket takes the new pace at the next reservation.)
    const ms = Math.min(report.maxPauseMs, report.retryAfterMs ?? RateGate.pauseAfter429(pacePerMs(), consecutive429))
    lastPauseAt = now
    pausedUntil = Math.max(pausedUntil, now + ms)
  }

  const stats = (): SharedLimitStats => {
    const pace = pacePerMs()
    return {
      rpm: pace === undefined ? undefined : pace * 60_000,
      learnedRpm: learnedPerMs === undefined ? undefined : learnedPerMs * 60_000,
      pausedUntil,
      cuts,
      rateLimited
    }
  }

  return { reserve, limited, stats }
}
