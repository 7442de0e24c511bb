/**
 * The rate-control policy (src/providers/RateControl.ts) against simulated rate-limited servers
 * (test/support/RateSim.ts): minutes of simulated time each, in milliseconds of real time, so the
 * targets of SPEC §5 are asserted here — never on a real clock:
 *
 * - without `--rpm`, at 60, 600 and 3,000 requests/min, burst 1 and 10, for servers that charge
 *   rejected requests and servers that do not, with and without `x-ratelimit-*` headers (and with
 *   headers announcing a per-minute limit larger than the bucket refilled), latency 20 and 500 ms,
 *   concurrency 8 and 64: after the first second at most 5% of requests meet a 429 (1% with
 *   headers), the run takes at most 1.15× the limit's ideal, and no judgment fails;
 * - with `--rpm` (the server's own limit): at most 1% of requests meet a 429, at most 1.10×;
 * - a limit halved mid-run, then restored, is followed; the cluster (three runners, one shared
 *   limit) reaches the same targets; `--rpm` at the limit with a stream of 429s does not stall; no
 *   limit costs nothing.
 *
 * The ideal: the accepted requests less the bucket's burst at the limit's rate — or, when the
 * concurrency bounds the run (8 calls of 500 ms cannot reach 3,000 a minute), the calls back to back
 * at full concurrency. A run lasts at least a minute of simulated time; on a server that charges
 * rejected requests the first wave (concurrency − burst requests refused at once) costs that many
 * requests' worth of the limit whatever is done, which a run of that length absorbs.
 */
import { describe, expect, it } from "vitest"
import { RateController, StartLog } from "../../src/providers/RateControl.js"
import { idealMs, type SimServerOptions, simulate } from "../support/RateSim.js"

/** Judgments per run: 20, 4 and 2 minutes of the limit. */
const JUDGMENTS: Readonly<Record<number, number>> = { 60: 1200, 600: 2400, 3000: 6000 }

const share = (r: { readonly refusedAfterFirstSecond: number; readonly requestsAfterFirstSecond: number }) =>
  r.refusedAfterFirstSecond / Math.max(1, r.requestsAfterFirstSecond)

const matrix = (withRpm: boolean) => {
  for (const rpm of [60, 600, 3000]) {
    describe(`${rpm} requests/min`, () => {
      for (const burst of [1, 10]) {
        for (const chargeRejected of [false, true]) {
          for (const headers of ["none", "bucket", "minute"] as const) {
            for (const latency of [20, 500]) {
              for (const concurrency of [8, 64]) {
                const name = `burst ${burst}, ${
                  chargeRejected ? "rejected requests charged" : "rejected requests free"
                }, headers ${headers}, ${latency} ms, concurrency ${concurrency}`
                it(name, () => {
                  const server: SimServerOptions = { rpm, burst, chargeRejected, headers, retryAfter: "seconds" }
                  const r = simulate(server, { concurrency, preflight: true, rpm: withRpm ? rpm : undefined }, {
                    judgments: JUDGMENTS[rpm]!,
                    latencyMs: latency,
                    seed: 7
                  })
                  const ratio = r.wallMs / idealMs(server, r.accepted, latency, concurrency)
                  expect(r.stalled).toBe(false)
                  expect(r.failed).toBe(0)
                  expect(share(r)).toBeLessThanOrEqual(withRpm || headers !== "none" ? 0.01 : 0.05)
                  // The whole run, its first wave included: ≤ 5% (the worst here: 3.8%, 60/min, 20 ms, 64).
                  expect(r.refused / r.requests).toBeLessThanOrEqual(0.05)
                  expect(ratio).toBeLessThanOrEqual(withRpm ? 1.10 : 1.15)
                })
              }
            }
          }
        }
      }
    })
  }
}

describe("without --rpm: ≤ 5% 429s after the first second (≤ 1% with x-ratelimit headers), ≤ 1.15× the limit's ideal, no judgment failed", () =>
  matrix(false))

describe("with --rpm (the server's own limit): ≤ 1% 429s, ≤ 1.10× the limit's ideal, no judgment failed", () =>
  matrix(true))

describe("headers announcing a per-minute limit larger than the bucket refilled", () => {
  for (const rpm of [600, 3000]) {
    // (`remaining` is a whole number: the refill rate read from it is up to a token's worth high.)
    it(`never raise the pace more than 2% above what the bucket refills (${rpm}/min, bucket 10)`, () => {
      const server: SimServerOptions = { rpm, burst: 10, headers: "minute", retryAfter: "seconds" }
      let fastest = 0
      const r = simulate(server, { concurrency: 32, preflight: true }, {
        judgments: rpm,
        latencyMs: 100,
        trace: { every: 100, at: (_, [control]) => (fastest = Math.max(fastest, control!.stats().rpm ?? 0)) }
      })
      expect(r.failed).toBe(0)
      expect(fastest).toBeGreaterThan(0.9 * rpm)
      expect(fastest).toBeLessThanOrEqual(1.02 * rpm)
    })
  }
})

describe("a clump of arrivals against a server whose headers give its rate", () => {
  // The first wave's requests reach the server late and together (their connections open at once;
  // a busy process sends late), so the server refuses some at a pace under its rate. The headers
  // still say the rate: the pace must stay near it, not be learned again from the clump's 429s
  // (it once fell to one request a second for ~15 s, and a 300-judgment run took 4× its ideal).
  for (const chargeRejected of [false, true]) {
    it(`3,000/min, bucket 20, the first wave (sent from 20 ms) reaching it at once at 200 ms, rejected requests ${chargeRejected ? "charged" : "free"}: the pace never falls below 80% of the limit after the first second`, () => {
      const server: SimServerOptions = {
        rpm: 3000,
        burst: 20,
        chargeRejected,
        headers: "bucket",
        retryAfter: "seconds"
      }
      let slowest = Number.POSITIVE_INFINITY
      const r = simulate(server, { concurrency: 32, preflight: true }, {
        judgments: 3000,
        latencyMs: 20,
        stall: { from: 20, to: 200 },
        trace: {
          every: 50,
          at: (now, [control]) => {
            if (now > 1000) slowest = Math.min(slowest, control!.stats().rpm ?? Number.POSITIVE_INFINITY)
          }
        }
      })
      expect(r.failed).toBe(0)
      expect(r.refused).toBeGreaterThan(0)
      expect(slowest).toBeGreaterThanOrEqual(0.8 * 3000)
    })
  }
})

describe("a limit halved mid-run (at 60 s), then restored (at 120 s)", () => {
  const windowOf = (r: ReturnType<typeof simulate>, from: number, to: number) => ({
    accepted: r.acceptedAt.filter((t) => t >= from && t < to).length,
    refused: r.refusedAt.filter((t) => t >= from && t < to).length
  })
  for (const rpm of [600, 3000]) {
    for (const burst of [1, 10]) {
      for (const chargeRejected of [false, true]) {
        for (const headers of ["none", "bucket"] as const) {
          it(`${rpm}/min, burst ${burst}, ${chargeRejected ? "charged" : "free"}, headers ${headers}`, () => {
            const server: SimServerOptions = {
              rpm,
              burst,
              chargeRejected,
              headers,
              retryAfter: "seconds",
              changes: [{ at: 60_000, rpm: rpm / 2 }, { at: 120_000, rpm }]
            }
            const r = simulate(server, { concurrency: 32, preflight: true }, {
              judgments: rpm * 4,
              latencyMs: 100,
              seed: 7
            })
            expect(r.failed).toBe(0)
            // Followed down: while halved, the run goes at ≥ 65% of the halved limit with ≤ 3% 429s —
            // with headers, ≥ 95% and none after the first seconds.
            const halved = windowOf(r, 70_000, 120_000)
            const perMinute = (halved.accepted / 50) * 60
            expect(perMinute).toBeGreaterThanOrEqual((headers === "none" ? 0.65 : 0.95) * (rpm / 2))
            expect(halved.refused / (halved.accepted + halved.refused)).toBeLessThanOrEqual(
              headers === "none" ? 0.03 : 0
            )
            // Followed up: ≥ 80% of the restored limit over 5 seconds, within 90 s (10 s with headers).
            let restoredAfter = Number.POSITIVE_INFINITY
            for (let t = 120_000; t < 300_000 && restoredAfter === Number.POSITIVE_INFINITY; t += 1_000) {
              if ((windowOf(r, t, t + 5_000).accepted / 5) * 60 >= 0.8 * rpm) restoredAfter = t + 5_000 - 120_000
            }
            expect(restoredAfter).toBeLessThanOrEqual(headers === "none" ? 90_000 : 10_000)
            // And over the whole run, after the first second: ≤ 2% 429s (none … with headers, ≤ 0.5%).
            expect(share(r)).toBeLessThanOrEqual(headers === "none" ? 0.02 : 0.005)
          })
        }
      }
    }
  }
})

describe("the cluster: three runners (16 calls in flight each) asking one shared limit, 600 requests/min, burst 10", () => {
  for (const chargeRejected of [true, false]) {
    for (const headers of ["none", "bucket"] as const) {
      for (const rpm of [undefined, 600]) {
        it(`${chargeRejected ? "charged" : "free"}, headers ${headers}, ${rpm === undefined ? "no --rpm" : "--rpm 600"}: the single-process targets (the first wave excepted)`, () => {
          const server: SimServerOptions = { rpm: 600, burst: 10, chargeRejected, headers, retryAfter: "seconds" }
          const r = simulate(server, { concurrency: 16, preflight: true, rpm }, {
            judgments: 2400,
            latencyMs: 50,
            runners: 3,
            rpcMs: 2,
            seed: 3
          })
          expect(r.failed).toBe(0)
          expect(r.stalled).toBe(false)
          expect(share(r)).toBeLessThanOrEqual(rpm !== undefined || headers !== "none" ? 0.01 : 0.05)
          expect(r.wallMs / idealMs(server, r.accepted, 50, 48)).toBeLessThanOrEqual(rpm !== undefined ? 1.10 : 1.15)
        })
      }
    }
  }
})

describe("--rpm at the server's own limit with a stream of 429s does not stall", () => {
  // 3,000/min, a bucket of 20, 32 in flight, --rpm 3000 with a burst larger than the server's
  // (its old default: a second's worth), arrivals jittered: the first wave and jitter refuse calls.
  for (const burst of [undefined, 50]) {
    it(`--burst ${burst ?? "default"}: finishes at ≥ 90% of the limit's pace`, () => {
      const server: SimServerOptions = { rpm: 3000, burst: 20, retryAfter: "seconds" }
      const r = simulate(server, { concurrency: 32, rpm: 3000, burst, preflight: true }, {
        judgments: 3000,
        latencyMs: 20,
        jitterMs: 3,
        seed: 5
      })
      expect(r.stalled).toBe(false)
      expect(r.failed).toBe(0)
      if (burst !== undefined) expect(r.refused).toBeGreaterThan(0)
      const limitPace = (r.accepted - 20) / (3000 / 60_000)
      expect(limitPace / r.wallMs).toBeGreaterThanOrEqual(0.9)
    })
  }
})

describe("no limit, no cost", () => {
  it("1,200 calls at 100 ms, concurrency 32, no limit: never paced, within 1% of back to back (the preflight's round trip included)", () => {
    const r = simulate({ rpm: Number.POSITIVE_INFINITY, burst: 1 }, { concurrency: 32, preflight: true }, {
      judgments: 1200,
      latencyMs: 100,
      netMs: 0
    })
    expect(r.controllers[0]!.stats().rpm).toBeUndefined()
    expect(r.wallMs).toBeLessThanOrEqual(1.01 * (100 + Math.ceil(1200 / 32) * 100))
  })
  for (const [latencyMs, concurrency] of [[100, 32], [20, 64], [500, 8]] as const) {
    it(`the spread first wave costs at most a quarter of a latency: ${latencyMs} ms, concurrency ${concurrency}, 100 rounds`, () => {
      const judgments = 100 * concurrency
      const r = simulate({ rpm: Number.POSITIVE_INFINITY, burst: 1 }, { concurrency, preflight: true }, {
        judgments,
        latencyMs,
        netMs: 0
      })
      expect(r.refused).toBe(0)
      // 3,906.25 ms against 3,900 at 100 ms and 32 (+0.16%).
      expect(r.wallMs).toBeLessThanOrEqual(latencyMs + 100 * latencyMs + latencyMs / 4)
    })
  }
})

describe("arrivals reordered by network jitter (±3 ms, latency 80–120 ms; no --rpm, no headers; 8 seeds, both charging rules)", () => {
  // Starts a few ms apart (the first wave) may reach the server in the other order: a refusal
  // followed by a start let through says nothing about the rate. Before the fit allowed for that,
  // 60/min with a bucket of 10 took up to 3.16× its ideal (the pace held at 15/min: only a bucket
  // that does not charge refusals explained the reordered wave), 10,000/min up to 1.33×.
  const shapes = [
    { rpm: 60, burst: 10, judgments: 240 },
    { rpm: 600, burst: 10, judgments: 1200 },
    { rpm: 3000, burst: 10, judgments: 6000 },
    { rpm: 10_000, burst: 10, judgments: 10_000 }
  ] as const
  for (const shape of shapes) {
    it(`${shape.rpm}/min, burst ${shape.burst}, ${shape.judgments} judgments: ≤ 1.15× the ideal, ≤ 5% of all requests met a 429, none failed`, () => {
      for (let seed = 1; seed <= 8; seed++) {
        const server: SimServerOptions = {
          rpm: shape.rpm,
          burst: shape.burst,
          chargeRejected: seed % 2 === 0,
          headers: "none",
          retryAfter: "seconds"
        }
        const r = simulate(server, { concurrency: 32, preflight: true }, {
          judgments: shape.judgments,
          latencyMs: [80, 120],
          jitterMs: 3,
          seed
        })
        expect(r.failed).toBe(0)
        expect(r.refused / r.requests, `seed ${seed}`).toBeLessThanOrEqual(0.05)
        expect(r.wallMs / idealMs(server, r.accepted, 100, 32), `seed ${seed}`).toBeLessThanOrEqual(1.15)
      }
    })
  }
})

describe("the first wave against an unknown limit (no --rpm, no x-ratelimit headers; the whole run counted, its first wave included)", () => {
  // The bench's case (bench/rate-limits.ts, 300 judgments at 600/min, burst 10, concurrency 32)
  // and other shapes of limit, each a run of 1 to 5 minutes of the limit at 100 ms latency:
  // the share of all requests that met a 429, and the wall time ÷ the limit's ideal. Before the
  // wave was spread, the bench's case had 23 of 324 requests refused (7.1%), 22 in the first wave.
  const shapes: ReadonlyArray<
    {
      readonly rpm: number
      readonly burst: number
      readonly judgments: number
      readonly concurrency: number
      readonly latencyMs: number
      readonly share: number
      readonly ratio: number
    }
  > = [
    { rpm: 600, burst: 10, judgments: 300, concurrency: 32, latencyMs: 100, share: 0.05, ratio: 1.15 },
    { rpm: 600, burst: 10, judgments: 300, concurrency: 8, latencyMs: 100, share: 0.05, ratio: 1.15 },
    { rpm: 600, burst: 10, judgments: 300, concurrency: 64, latencyMs: 100, share: 0.05, ratio: 1.15 },
    { rpm: 600, burst: 10, judgments: 300, concurrency: 32, latencyMs: 500, share: 0.05, ratio: 1.15 },
    { rpm: 600, burst: 1, judgments: 1200, concurrency: 32, latencyMs: 100, share: 0.05, ratio: 1.15 },
    { rpm: 600, burst: 100, judgments: 1200, concurrency: 32, latencyMs: 100, share: 0.05, ratio: 1.15 },
    { rpm: 60, burst: 10, judgments: 120, concurrency: 32, latencyMs: 100, share: 0.05, ratio: 1.15 },
    { rpm: 3000, burst: 20, judgments: 3000, concurrency: 32, latencyMs: 100, share: 0.05, ratio: 1.15 },
    { rpm: 10_000, burst: 100, judgments: 10_000, concurrency: 32, latencyMs: 100, share: 0.05, ratio: 1.15 },
    // 10,000/min with a bucket of 10: 1.13× (1.21× while a probe refused above a pace that held
    // sent the pace back to one a second: after a long run at one pace a bucket of any size fits).
    { rpm: 10_000, burst: 10, judgments: 10_000, concurrency: 32, latencyMs: 100, share: 0.05, ratio: 1.15 },
    { rpm: 10_000, burst: 10, judgments: 30_000, concurrency: 32, latencyMs: 100, share: 0.05, ratio: 1.15 }
  ]
  for (const shape of shapes) {
    for (const chargeRejected of [false, true]) {
      it(
        `${shape.rpm}/min, burst ${shape.burst}, ${shape.judgments} judgments, concurrency ${shape.concurrency}, ${shape.latencyMs} ms, rejected requests ${
          chargeRejected ? "charged" : "free"
        }: ≤ ${100 * shape.share}% of all requests met a 429, ≤ ${shape.ratio}× the ideal, none failed`,
        () => {
          const server: SimServerOptions = {
            rpm: shape.rpm,
            burst: shape.burst,
            chargeRejected,
            headers: "none",
            retryAfter: "seconds"
          }
          const r = simulate(server, { concurrency: shape.concurrency, preflight: true }, {
            judgments: shape.judgments,
            latencyMs: shape.latencyMs,
            seed: 7
          })
          expect(r.failed).toBe(0)
          expect(r.stalled).toBe(false)
          expect(r.refused / r.requests).toBeLessThanOrEqual(shape.share)
          expect(r.wallMs / idealMs(server, r.accepted, shape.latencyMs, shape.concurrency)).toBeLessThanOrEqual(
            shape.ratio
          )
        }
      )
    }
  }

  it("the bench's case: the first wave meets a few 429s (≤ 4 of its 32 calls; 22 when sent at once)", () => {
    for (const chargeRejected of [false, true]) {
      const server: SimServerOptions = { rpm: 600, burst: 10, chargeRejected, headers: "none", retryAfter: "seconds" }
      const r = simulate(server, { concurrency: 32, preflight: true }, { judgments: 300, latencyMs: 100, seed: 7 })
      const first = r.refusedAt[0]!
      expect(r.refusedAt.filter((t) => t < first + 50).length).toBeLessThanOrEqual(4)
    }
  })
})

describe("StartLog.fittingRates: the refill rates a token bucket would have answered the starts with", () => {
  /** The answers of a bucket (rate per ms, capacity) to starts at `times`, full at the first. */
  const answers = (rate: number, capacity: number, times: ReadonlyArray<number>, charged = false) => {
    let level = capacity
    let at = times[0]!
    return times.map((t) => {
      level = Math.min(capacity, level + (t - at) * rate)
      at = t
      if (level >= 1) {
        level -= 1
        return true
      }
      if (charged) level -= 1
      return false
    })
  }
  const logOf = (times: ReadonlyArray<number>, accepted: ReadonlyArray<boolean>) => {
    const log = new StartLog()
    times.forEach((t, i) => {
      log.add(t)
      if (!accepted[i]) log.markRefused(t)
    })
    return log
  }

  for (const charged of [false, true]) {
    // Sent 15 a second, 1.5× what refills: the range holds the true rate and lies below the rate
    // sent. Not charging, the bucket answers one start in three with a 429 from the first second on,
    // which pins the floor within 4%; charging, it is driven below empty and refuses nearly every
    // start after the first wave (27 of 300 accepted), which bounds the rate from above only.
    it(`a bucket of 10 at 10 a second, sent 15 a second for 20 s (${charged ? "charging" : "not charging"} rejected requests): the range holds its rate, below the rate sent`, () => {
      const times = Array.from({ length: 300 }, (_, i) => i * (1000 / 15))
      const accepted = answers(0.01, 10, times, charged)
      expect(accepted.filter(Boolean).length).toBe(charged ? 27 : 209)
      const log = logOf(times, accepted)
      for (const rules of ["either", charged ? "charged" : "free"] as const) {
        const fit = log.fittingRates(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2000, 0, rules)!
        expect(fit.low).toBeLessThanOrEqual(0.01)
        expect(fit.high).toBeGreaterThanOrEqual(0.01)
        expect(fit.high).toBeLessThan(0.015 * 1.02)
        if (!charged) expect(fit.low).toBeGreaterThan(0.0096)
      }
    })
  }

  it("a limit that changed midway fits no single bucket", () => {
    const times = Array.from({ length: 600 }, (_, i) => i * 50)
    const before = answers(0.01, 10, times.slice(0, 300))
    const after = answers(0.004, 10, times.slice(300).map((t) => t - times[300]!)).map((ok, i) => ok && i > 0)
    expect(
      logOf(times, [...before, ...after]).fittingRates(
        Number.POSITIVE_INFINITY,
        Number.NEGATIVE_INFINITY,
        2000,
        0,
        "free"
      )
    ).toBeUndefined()
  })

  it("only accepted starts: any rate above what they needed fits (nothing refused, nothing bounds it)", () => {
    const times = Array.from({ length: 100 }, (_, i) => i * 100)
    const fit = logOf(times, times.map(() => true)).fittingRates(
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      2000,
      0
    )!
    expect(fit.high).toBeGreaterThan(0.5)
  })
})

describe("a server that refuses every request (a Retry-After longer than the run)", () => {
  it("the learned pace does not rise while every request is refused", () => {
    const c = new RateController({ concurrency: 32, maxPauseMs: 10_000 }, 0)
    // The first, unpaced wave: all 32 refused.
    for (let i = 0; i < 32; i++) c.confirm(0, c.reserve(0, 1, 0.5))
    for (let i = 0; i < 32; i++) c.rateLimited(5, 0, { retryAfterMs: 1000 })
    const learned = c.pacePerMs()!
    expect(learned).toBeGreaterThan(0)
    // Ten minutes of starts at the pace, each refused 5 ms later.
    let starts = 0
    for (let now = 5; now < 600_000;) {
      const r = c.reserve(now, 1, 0.5)
      now = Math.max(now, r.at)
      if (!c.confirm(now, r)) continue
      starts++
      c.rateLimited(now + 5, now, { retryAfterMs: 1000 })
      now += 5
      expect(c.pacePerMs()!).toBeLessThanOrEqual(learned)
    }
    expect(starts).toBeGreaterThan(100)
    // One answer, and it may rise again.
    const r = c.reserve(600_000, 1, 0.5)
    c.confirm(r.at, r)
    c.succeeded(r.at + 5, r.at)
    for (let i = 0, now = r.at + 5; i < 10; i++) {
      const next = c.reserve(now, 1, 0.5)
      now = next.at
      c.confirm(now, next)
      c.succeeded(now + 5, now)
    }
    expect(c.pacePerMs()!).toBeGreaterThan(learned)
  })
})

describe("the first wave in a busy process", () => {
  // Concurrency 32 after a 100 ms preflight: 8 starts at once, then one every 100 / (4 × 32) ms.
  const afterPreflight = () => {
    const c = new RateController({ concurrency: 32 }, 0)
    const preflight = c.reserve(0, 1, 0.5)
    c.confirm(0, preflight)
    c.succeeded(100, 0)
    return c
  }
  const spacing = 100 / (4 * 32)

  it("a spread start woken on time goes; one woken more than a spacing late is spaced again from when it woke", () => {
    const c = afterPreflight()
    const wave = Array.from({ length: 12 }, () => c.reserve(100, 1, 0.5))
    expect(wave.slice(0, 8).map((r) => r.at)).toEqual(Array(8).fill(100))
    wave.slice(8).forEach((r, i) => expect(r.at).toBeCloseTo(100 + (i + 1) * spacing, 9))
    for (const r of wave.slice(0, 9)) expect(c.confirm(r.at, r)).toBe(true)
    // The process was busy: the 10th and 11th wake 3 ms after their instants, in the same turn. Not
    // started — they would leave together, before a 429 to the earlier ones could be read.
    const woke = wave[9]!.at + 3
    expect(c.confirm(woke, wave[9]!)).toBe(false)
    expect(c.confirm(woke, wave[10]!)).toBe(false)
    // Asked again, they are a spacing apart from when they woke, after the 12th's instant.
    const again = [c.reserve(woke, 1, 0.5), c.reserve(woke, 1, 0.5)]
    expect(again[0]!.at).toBeCloseTo(woke + spacing, 9)
    expect(again[1]!.at).toBeCloseTo(woke + 2 * spacing, 9)
    expect(again.every((r) => c.confirm(r.at, r))).toBe(true)
  })

  it("without a limit nothing is lost: every start of the wave goes, at most a spacing late each", () => {
    const c = afterPreflight()
    // Each start costs the process 1 ms (more than the 0.78 ms spacing): a start woken late is
    // handed a new instant; every one of the 32 starts, and no two within 0.5 ms of each other.
    let now = 100
    const started: Array<number> = []
    const pending = Array.from({ length: 32 }, () => c.reserve(100, 1, 0.5))
    while (pending.length > 0) {
      pending.sort((a, b) => a.at - b.at)
      const r = pending.shift()!
      now = Math.max(now, r.at)
      if (c.confirm(now, r)) {
        started.push(now)
        if (started.length > 8) now += 1
      } else {
        pending.push(c.reserve(now, 1, 0.5))
      }
    }
    expect(started.length).toBe(32)
    const spread = started.slice(8)
    spread.slice(1).forEach((t, i) => expect(t - spread[i]!).toBeGreaterThanOrEqual(0.5))
    expect(spread.at(-1)! - 100).toBeLessThan(24 * (1 + spacing) + 1)
  })
})
