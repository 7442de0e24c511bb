/**
 * A simulated rate-limited server and the clients that call it, on simulated time: a discrete-event
 * simulation (an event queue ordered by instant), so minutes of a run take milliseconds. It drives
 * the pure rate-control state machine (`src/providers/RateControl.ts`) exactly as its two shells
 * do — `RateGate` for one process, `RunnerHost` + the shared `RateLimit` entity for a cluster:
 *
 * - a judgment's attempt takes one of the gate's permits (FIFO; the controller's concurrency), asks
 *   the controller for a start (`reserve`), waits until it, confirms it (or reserves again), calls;
 *   a 429 sends the judgment round again (as `LlmJudge`'s retry schedule does), until `--max-wait`;
 * - in a cluster each runner has its own controller (concurrency, no rate of its own) and asks the
 *   shared one for every start over a message that takes `rpcMs` each way; 429s (and answers with
 *   rate-limit headers) are reported back to it.
 *
 * The server is a token bucket (`rpm` / 60 a second, `burst` capacity, full at the start) that
 * counts a request when it arrives (`netMs` after it leaves), answers a refused one at once with a
 * 429 and an accepted one after `latencyMs`. Its rules, each a switch:
 * - `chargeRejected`: a refused request costs a token too (OpenAI: "unsuccessful requests
 *   contribute to your per-minute limit"); the bucket then goes into debt;
 * - `headers`: none; `bucket` (OpenAI's `x-ratelimit-*`: limit = capacity, remaining, reset = time
 *   until full, as the bucket was when the request was counted); or `minute` — the per-minute
 *   figure announced as the limit while a smaller bucket is refilled;
 * - `retryAfter`: whole seconds rounded up (`Retry-After`), milliseconds, or none;
 * - `changes`: the limit moves to another rpm at given instants (the bucket's capacity stays).
 */
import { RateController, type RateControlOptions } from "../../src/providers/RateControl.js"
import type { RateLimitInfo } from "../../src/providers/RateLimitHeaders.js"
import { mulberry32Floats } from "../../src/stats/Paired.js"

export interface SimServerOptions {
  /** Requests per minute (Infinity: no limit). */
  readonly rpm: number
  readonly burst: number
  readonly chargeRejected?: boolean
  readonly headers?: "none" | "bucket" | "minute"
  readonly retryAfter?: "seconds" | "ms" | "none"
  readonly changes?: ReadonlyArray<{ readonly at: number; readonly rpm: number }>
}

export interface SimClientOptions extends RateControlOptions {
  /** Calls in flight at most (each runner's, in a cluster): the judgments worked on at once. */
  readonly concurrency: number
  /** `--max-wait`: a judgment fails once it has waited this long since its first 429. Default 10 min. */
  readonly maxWaitMs?: number
  /** One request before judging starts (the judge's preflight). Default false. */
  readonly preflight?: boolean
}

export interface SimRunOptions {
  readonly judgments: number
  /** Reply latency of an accepted request: a number, or drawn per request from [min, max]. */
  readonly latencyMs: number | readonly [number, number]
  /** One-way network delay. Default 1 ms. */
  readonly netMs?: number
  /** Up to this much more on the way to the server, drawn per request (requests may arrive out of order). Default 0. */
  readonly jitterMs?: number
  /** Cluster runners (each with the client's concurrency); absent: one process. */
  readonly runners?: number
  /**
   * A client that sends late, in a clump (a first wave opening its connections, a stalled event
   * loop): requests leaving in [from, to) reach the server at `to` (plus the network delay).
   */
  readonly stall?: { readonly from: number; readonly to: number }
  /** One-way delay of a message between a runner and the shared limit. Default 2 ms. */
  readonly rpcMs?: number
  readonly seed?: number
  /** Give up (the run stalled) after this much simulated time. Default 2 hours. */
  readonly horizonMs?: number
  /** Called every `every` ms of simulated time while the run goes (for diagnostics). */
  readonly trace?: {
    readonly every: number
    readonly at: (now: number, controllers: ReadonlyArray<RateController>) => void
  }
}

export interface SimResult {
  /** Requests that reached the server (the preflight included). */
  readonly requests: number
  readonly refused: number
  /** Requests, and refused ones, that arrived after the run's first second. */
  readonly requestsAfterFirstSecond: number
  readonly refusedAfterFirstSecond: number
  readonly accepted: number
  readonly judged: number
  readonly failed: number
  /** First request's arrival → last response. */
  readonly wallMs: number
  /** Arrival times of accepted requests. */
  readonly acceptedAt: ReadonlyArray<number>
  /** Arrival times of refused requests. */
  readonly refusedAt: ReadonlyArray<number>
  /** Each judgment's end (ok or failed) and when its first 429 came (when one did). */
  readonly ends: ReadonlyArray<
    { readonly endedAt: number; readonly ok: boolean; readonly firstLimitedAt: number | undefined }
  >
  /** True when the horizon was reached before every judgment ended. */
  readonly stalled: boolean
  readonly controllers: ReadonlyArray<RateController>
}

/** Seeded uniform floats in [0, 1) (mulberry32). */
const prng = mulberry32Floats

/** A binary heap of events by instant (ties in insertion order). */
class Events {
  private heap: Array<{ t: number; seq: number; run: () => void }> = []
  private seq = 0
  now = 0
  at(t: number, run: () => void) {
    const e = { t: Math.max(t, this.now), seq: this.seq++, run }
    const h = this.heap
    h.push(e)
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (h[p]!.t < e.t || (h[p]!.t === e.t && h[p]!.seq < e.seq)) break
      h[i] = h[p]!
      i = p
    }
    h[i] = e
  }
  /** Run events in order until none is left or the horizon is reached; false when the horizon stopped it. */
  run(horizon: number): boolean {
    const h = this.heap
    while (h.length > 0) {
      const top = h[0]!
      if (top.t > horizon) return false
      const last = h.pop()!
      if (h.length > 0) {
        h[0] = last
        let i = 0
        for (;;) {
          const l = 2 * i + 1
          const r = l + 1
          let m = i
          if (l < h.length && (h[l]!.t < h[m]!.t || (h[l]!.t === h[m]!.t && h[l]!.seq < h[m]!.seq))) m = l
          if (r < h.length && (h[r]!.t < h[m]!.t || (h[r]!.t === h[m]!.t && h[r]!.seq < h[m]!.seq))) m = r
          if (m === i) break
          const tmp = h[i]!
          h[i] = h[m]!
          h[m] = tmp
          i = m
        }
      }
      this.now = top.t
      top.run()
    }
    return true
  }
}

type Answer =
  | { readonly ok: true; readonly rateLimit: RateLimitInfo | undefined }
  | { readonly ok: false; readonly retryAfterMs: number | undefined; readonly rateLimit: RateLimitInfo | undefined }

/** The server: a token bucket counting requests as they arrive. */
export class SimServer {
  private level: number
  private at = 0
  private rate: number
  requests = 0
  refused = 0
  readonly acceptedAt: Array<number> = []
  readonly refusedAt: Array<number> = []
  constructor(readonly options: SimServerOptions) {
    this.rate = options.rpm / 60_000
    this.level = options.burst
  }
  private refill(now: number) {
    for (const change of this.options.changes ?? []) {
      if (change.at > this.at && change.at <= now) {
        this.level = Math.min(this.options.burst, this.level + (change.at - this.at) * this.rate)
        this.at = change.at
        this.rate = change.rpm / 60_000
      }
    }
    this.level = Math.min(this.options.burst, this.level + (now - this.at) * this.rate)
    this.at = now
  }
  private headers(): RateLimitInfo | undefined {
    const mode = this.options.headers ?? "none"
    if (mode === "none" || !Number.isFinite(this.rate)) return undefined
    const remaining = Math.max(0, Math.floor(this.level))
    const resetMs = Math.max(0, (this.options.burst - this.level) / this.rate)
    return {
      requests: { limit: mode === "bucket" ? this.options.burst : Math.round(this.rate * 60_000), remaining, resetMs }
    }
  }
  arrive(now: number): Answer {
    this.requests++
    if (!Number.isFinite(this.rate)) {
      this.acceptedAt.push(now)
      return { ok: true, rateLimit: undefined }
    }
    this.refill(now)
    if (this.level >= 1) {
      this.level -= 1
      this.acceptedAt.push(now)
      return { ok: true, rateLimit: this.headers() }
    }
    this.refused++
    this.refusedAt.push(now)
    if (this.options.chargeRejected === true) this.level -= 1
    const waitMs = (1 - this.level) / this.rate
    const mode = this.options.retryAfter ?? "seconds"
    const retryAfterMs = mode === "none"
      ? undefined
      : mode === "ms"
      ? Math.ceil(waitMs)
      : Math.max(1, Math.ceil(waitMs / 1000)) * 1000
    return { ok: false, retryAfterMs, rateLimit: this.headers() }
  }
}

/** The gate's permits: FIFO, the limit read from the controller after every outcome. */
class Permits {
  private held = 0
  private readonly queue: Array<() => void> = []
  constructor(private readonly events: Events, private readonly limit: () => number) {}
  take(then: () => void) {
    if (this.held < this.limit() && this.queue.length === 0) {
      this.held++
      then()
    } else {
      this.queue.push(then)
    }
  }
  release() {
    this.held--
    this.wake()
  }
  wake() {
    while (this.held < this.limit() && this.queue.length > 0) {
      this.held++
      const next = this.queue.shift()!
      this.events.at(this.events.now, next)
    }
  }
}

/** Simulate one run; see the module comment. */
export const simulate = (server: SimServerOptions, client: SimClientOptions, run: SimRunOptions): SimResult => {
  const events = new Events()
  const random = prng(run.seed ?? 1)
  const sim = new SimServer(server)
  const net = run.netMs ?? 1
  const rpc = run.rpcMs ?? 2
  const maxWaitMs = client.maxWaitMs ?? 10 * 60_000
  const latency = () =>
    typeof run.latencyMs === "number"
      ? run.latencyMs
      : run.latencyMs[0] + random() * (run.latencyMs[1] - run.latencyMs[0])
  const cluster = run.runners !== undefined
  const shared = cluster ? new RateController({ ...client, concurrency: Number.MAX_SAFE_INTEGER }, 0) : undefined
  const runnerCount = run.runners ?? 1
  const controllers = Array.from(
    { length: runnerCount },
    () =>
      new RateController(
        cluster
          ? {
            concurrency: client.concurrency,
            adaptive: client.adaptive,
            learnRate: false,
            maxPauseMs: client.maxPauseMs ?? maxWaitMs
          }
          : { ...client, maxPauseMs: client.maxPauseMs ?? maxWaitMs },
        0
      )
  )
  const permits = controllers.map((c) => new Permits(events, () => c.concurrency()))
  /** Paced starts are handed out one at a time (the gate's pacer), so a pace that rises applies to the next one. */
  const pacers = controllers.map(() => new Permits(events, () => 1))
  let firstArrival: number | undefined
  let lastResponse = 0
  let judged = 0
  let failed = 0
  const ends: Array<{ endedAt: number; ok: boolean; firstLimitedAt: number | undefined }> = []

  /** One HTTP attempt at `now` (the caller's start): the server's answer comes back to `done`. */
  const call = (done: (answer: Answer) => void) => {
    const leaves = run.stall !== undefined && events.now >= run.stall.from && events.now < run.stall.to
      ? run.stall.to
      : events.now
    const arrival = leaves + net + (run.jitterMs ?? 0) * random()
    events.at(arrival, () => {
      firstArrival ??= events.now
      const answer = sim.arrive(events.now)
      events.at(events.now + (answer.ok ? latency() : 0) + net, () => {
        lastResponse = Math.max(lastResponse, events.now)
        done(answer)
      })
    })
  }

  /** Through runner `r`'s gate: a permit, the local start, (cluster) the shared start, the call. */
  const attempt = (r: number, done: (answer: Answer) => void) => {
    const local = controllers[r]!
    permits[r]!.take(() => {
      let paced = false
      /** A start handed out, confirmed or (stale) handed out again — through the pacer whenever paced. */
      const admit = () => {
        paced = local.pacePerMs() !== undefined
        if (paced) pacers[r]!.take(reserve)
        else reserve()
      }
      const reserve = () => {
        const reservation = local.reserve(events.now, 1, random())
        events.at(reservation.at, () => {
          const confirmed = local.confirm(events.now, reservation)
          if (paced) pacers[r]!.release()
          if (!confirmed) return admit()
          const startedAt = events.now
          const finish = (answer: Answer, sharedStart?: number) => {
            permits[r]!.release()
            if (answer.ok) local.succeeded(events.now, startedAt, { rateLimit: answer.rateLimit })
            else {local.rateLimited(events.now, startedAt, {
                retryAfterMs: answer.retryAfterMs,
                rateLimit: answer.rateLimit
              })}
            permits[r]!.wake()
            if (shared !== undefined && sharedStart !== undefined && (!answer.ok || answer.rateLimit !== undefined)) {
              const report = events.now + rpc
              events.at(report, () => {
                if (answer.ok) shared.succeeded(events.now, sharedStart, { rateLimit: answer.rateLimit })
                else {shared.rateLimited(events.now, sharedStart, {
                    retryAfterMs: answer.retryAfterMs,
                    rateLimit: answer.rateLimit
                  })}
              })
            }
            done(answer)
          }
          if (shared === undefined) return call((answer) => finish(answer))
          // Reserve at the shared limit: the message takes rpcMs each way; the runner then sleeps
          // the wait it was given (so it starts one message later than the entity planned).
          const askShared = () =>
            events.at(events.now + rpc, () => {
              const sharedReservation = shared.reserveWithin(events.now, 1, random())
              if (sharedReservation.committed) shared.start(sharedReservation.at)
              const waitMs = sharedReservation.at - events.now
              events.at(events.now + rpc, () => {
                events.at(events.now + Math.max(0, waitMs), () =>
                  sharedReservation.committed ? call((answer) => finish(answer, sharedReservation.at)) : askShared())
              })
            })
          askShared()
        })
      }
      admit()
    })
  }

  // Judgments: each runner's pool takes the next judgment as one ends.
  let next = 0
  const judge = (r: number) => {
    if (next >= run.judgments) return
    next++
    let firstLimitedAt: number | undefined
    const once = () =>
      attempt(r, (answer) => {
        if (answer.ok) {
          judged++
          ends.push({ endedAt: events.now, ok: true, firstLimitedAt })
          return judge(r)
        }
        firstLimitedAt ??= events.now
        if (events.now - firstLimitedAt >= maxWaitMs) {
          failed++
          ends.push({ endedAt: events.now, ok: false, firstLimitedAt })
          return judge(r)
        }
        once()
      })
    once()
  }
  const startJudging = () => {
    for (let r = 0; r < runnerCount; r++) for (let w = 0; w < client.concurrency; w++) judge(r)
  }
  if (client.preflight === true) {
    const once = (): void => attempt(0, (answer) => (answer.ok ? startJudging() : once()))
    once()
  } else {
    startJudging()
  }
  if (run.trace !== undefined) {
    const trace = run.trace
    const all = shared === undefined ? controllers : [shared, ...controllers]
    const tick = () => {
      trace.at(events.now, all)
      if (judged + failed < run.judgments) events.at(events.now + trace.every, tick)
    }
    events.at(0, tick)
  }
  const finished = events.run(run.horizonMs ?? 2 * 3_600_000)
  const first = firstArrival ?? 0
  return {
    requests: sim.requests,
    refused: sim.refused,
    requestsAfterFirstSecond: sim.acceptedAt.filter((t) => t > first + 1000).length +
      sim.refusedAt.filter((t) => t > first + 1000).length,
    refusedAfterFirstSecond: sim.refusedAt.filter((t) => t > first + 1000).length,
    accepted: sim.acceptedAt.length,
    judged,
    failed,
    wallMs: lastResponse - first,
    acceptedAt: sim.acceptedAt,
    refusedAt: sim.refusedAt,
    ends,
    stalled: !finished || judged + failed < run.judgments,
    controllers: shared === undefined ? controllers : [shared, ...controllers]
  }
}

/**
 * The limit's ideal wall time for `accepted` requests: the burst at once, then one per refill —
 * or, when the concurrency is what bounds it, the calls back to back at full concurrency.
 */
export const idealMs = (server: SimServerOptions, accepted: number, latencyMs: number, concurrency: number): number => {
  const byLimit = Number.isFinite(server.rpm) ? Math.max(0, accepted - server.burst) / (server.rpm / 60_000) : 0
  const byConcurrency = Math.ceil(accepted / concurrency) * latencyMs
  return Math.max(byLimit, byConcurrency)
}
