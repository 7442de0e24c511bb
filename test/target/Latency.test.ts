import { describe, expect, it } from "@effect/vitest"
import { targetLatency } from "../../src/target/Latency.js"

describe("targetLatency", () => {
  it("hand-computed: avg / P50 / P90 / P99 / max of every answer, TTFB of the streamed ones", () => {
    // latencies sorted: 100 200 300 400 1000 → mean 2000 / 5 = 400; P50 = 300;
    // P90: h = 4 · 0.9 = 3.6 → 400 + 0.6 · 600 = 760; P99: h = 3.96 → 400 + 0.96 · 600 = 976.
    // TTFB of the streamed (40, 10, 70) sorted 10 40 70 → mean 40; P50 40; P90: h = 1.8 → 40 + 0.8 · 30 = 64; P99: h = 1.98 → 69.4.
    const s = targetLatency([
      { latencyMs: 300, ttfbMs: 40, streamed: true },
      { latencyMs: 100, ttfbMs: 100, streamed: false },
      { latencyMs: 1000, ttfbMs: 10, streamed: true },
      { latencyMs: 200, ttfbMs: 200, streamed: false },
      { latencyMs: 400, ttfbMs: 70, streamed: true }
    ])
    expect(s.calls).toBe(5)
    expect(s.streamed).toBe(3)
    expect(s.total).toEqual({
      n: 5,
      mean: 400,
      p50: 300,
      p90: expect.closeTo(760, 9),
      p99: expect.closeTo(976, 9),
      max: 1000
    })
    expect(s.ttfb).toEqual({
      n: 3,
      mean: 40,
      p50: 40,
      p90: expect.closeTo(64, 9),
      p99: expect.closeTo(69.4, 9),
      max: 70
    })
  })

  it("no streamed answers: no TTFB; no answers: nothing", () => {
    expect(targetLatency([{ latencyMs: 5, ttfbMs: 5, streamed: false }])).toEqual({
      calls: 1,
      streamed: 0,
      total: { n: 1, mean: 5, p50: 5, p90: 5, p99: 5, max: 5 },
      ttfb: undefined
    })
    expect(targetLatency([])).toEqual({ calls: 0, streamed: 0, total: undefined, ttfb: undefined })
  })
})
