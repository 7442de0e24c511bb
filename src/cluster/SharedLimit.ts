/**
 * The state behind the cluster's `RateLimit` entity: one per provider/model/server, asked by every
 * runner before each call. It runs the same rate-control state machine as a local run's gate
 * (`providers/RateControl.ts`), fed by every runner's events, so the cluster follows one policy:
 * `--rpm` / `--tpm` / `--burst`, one shared pause after a 429 (Retry-After as a floor, capped at the
 * run's `--max-wait`), and — with `--adaptive` (the default) — the server's rate learned from every
 * runner's 429s and rate-limit headers. Each runner's own gate keeps its AIMD concurrency and learns
 * no rate of its own: three runners each pacing at their share plus a margin would overshoot.
 *
 * A reservation is a start the entity hands out (on its own clock: time comes from the caller, the
 * entity's `Clock`); the runner waits `waitMs` and starts. A start further ahead than the controller's
 * horizon is not handed out (`committed` false): the runner asks again then, so a pace that rises
 * meanwhile applies to it. The start instant is the ticket a report carries back, so the entity can
 * tell which start a 429 answered whatever the runners' clocks say. Rebuilt on another runner after
 * its host died, or asked with other limits (another run), the state starts afresh.
 */
import { RateController, type RateControlStats } from "../providers/RateControl.js"
import type { RateLimitInfo } from "../providers/RateLimitHeaders.js"

/** The run's limits, as every message carries them. */
export interface SharedLimitOptions {
  readonly rpm?: number | undefined
  readonly tpm?: number | undefined
  readonly burst?: number | undefined
  /** Learn the server's rate (the run's `--adaptive`). Default true. */
  readonly adaptive?: boolean | undefined
  /** The longest pause a Retry-After may impose (the run's `--max-wait`). */
  readonly maxPauseMs?: number | undefined
}

export interface ReserveRequest extends SharedLimitOptions {
  /** Estimated tokens of the call (for `tpm`). */
  readonly tokens: number
}

export interface Reservation {
  /** Milliseconds to wait: then start (committed), or ask again (not committed). */
  readonly waitMs: number
  /** The start instant handed out (the entity's clock), for a later report. */
  readonly ticket: number
  readonly committed: boolean
  /** True when the wait is a 429's pause (it counts against the judgment's `--max-wait`). */
  readonly paused: boolean
}

export interface OutcomeReport extends SharedLimitOptions {
  readonly ticket: number
  readonly outcome: "ok" | "rate_limited"
  readonly retryAfterMs?: number | undefined
  readonly rateLimit?: RateLimitInfo | undefined
}

export type SharedLimitStats = RateControlStats

export const makeSharedLimit = () => {
  let control: RateController | undefined
  let key = ""
  /** The controller for these limits (a new one when they change: another run). */
  const controllerFor = (now: number, options: SharedLimitOptions): RateController => {
    const k = JSON.stringify([options.rpm, options.tpm, options.burst, options.adaptive, options.maxPauseMs])
    if (control === undefined || k !== key) {
      key = k
      // Its concurrency is no decision here: each runner's gate holds its own.
      control = new RateController({ ...options, concurrency: Number.MAX_SAFE_INTEGER }, now)
    }
    return control
  }

  const reserve = (now: number, request: ReserveRequest, random: number): Reservation => {
    const c = controllerFor(now, request)
    const r = c.reserveWithin(now, request.tokens, random)
    if (r.committed) c.start(r.at)
    return { waitMs: Math.max(0, r.at - now), ticket: r.at, committed: r.committed, paused: c.pausedUntil > now }
  }

  /** A runner's call answered: a 429 (pause everyone, learn), or a success with rate-limit headers. */
  const report = (now: number, report: OutcomeReport) => {
    const c = controllerFor(now, report)
    if (report.outcome === "rate_limited") {
      c.rateLimited(now, report.ticket, { retryAfterMs: report.retryAfterMs, rateLimit: report.rateLimit })
    } else c.succeeded(now, report.ticket, { rateLimit: report.rateLimit })
  }

  const stats = (): SharedLimitStats | undefined => control?.stats()

  return { reserve, report, stats }
}
