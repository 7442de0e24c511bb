/**
 * The progress line's rate and ETA: new judgments a second from the first one seen — over the last
 * 30 s while the run works, over all of it at the end — so a resume's reading of what it keeps (no
 * new judgment, tens of seconds at a million cases) does not make the ETA many times too long.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as Progress from "../../src/engine/Progress.js"

describe("RateMeter", () => {
  it("counts no time before the first new judgment (a resume reading what it keeps)", () => {
    const meter = new Progress.RateMeter(0)
    // 30 s of kept cases read, observed every 200 ms: reused judgments only.
    for (let t = 200; t <= 30_000; t += 200) expect(meter.observe(t, 0)).toBe(0)
    // Then 17,000 new judgments a second for 2 s.
    let rate = 0
    for (let t = 30_200; t <= 32_000; t += 200) rate = meter.observe(t, (t - 30_000) * 17)
    expect(rate).toBeCloseTo(17_000, 6)
    expect(meter.overall(32_000, 34_000)).toBeCloseTo(17_000, 6)
    // Over the whole elapsed time (the rule before) it would have been 34,000 / 32 s.
    expect(34_000 / 32).toBeLessThan(1_100)
  })

  it("new work beginning between two observations: the next observation's rate is exact", () => {
    const meter = new Progress.RateMeter(0)
    expect(meter.observe(5_000, 0)).toBe(0)
    // New work began at 8 s, 20,000 a second: seen at 10 s (40,000), 15 s, 20 s.
    expect(meter.observe(10_000, 40_000)).toBe(8_000)
    expect(meter.observe(15_000, 140_000)).toBe(20_000)
    expect(meter.observe(20_000, 240_000)).toBe(20_000)
    // At the end: from the last observation without any (5 s), the only start it knows.
    expect(meter.overall(20_000, 240_000)).toBe(16_000)
  })

  it("while the run works, the last 30 s; at the end, all the new work", () => {
    const meter = new Progress.RateMeter(0)
    // 60 s at 100 a second, then 20 s at 1,000 a second, observed every 5 s (a non-terminal's lines).
    let fresh = 0
    let rate = 0
    for (let t = 5_000; t <= 80_000; t += 5_000) {
      fresh += t <= 60_000 ? 500 : 5_000
      rate = meter.observe(t, fresh)
    }
    // The last 30 s: 10 s at 100/s and 20 s at 1,000/s; at the end, all of it.
    expect(rate).toBeCloseTo((1_000 + 20_000) / 30, 6)
    expect(meter.overall(80_000, fresh)).toBeCloseTo((6_000 + 20_000) / 80, 6)
    // Work all done before the last observation (a run's last seconds writing reports): the last
    // line's rate is still the work's, not 0.
    expect(meter.observe(85_000, fresh)).toBeCloseTo((500 + 20_000) / 30, 6)
    expect(meter.overall(90_000, fresh)).toBeCloseTo(26_000 / 90, 6)
  })

  it("no new judgment: rate 0 and no ETA", () => {
    const meter = new Progress.RateMeter(1_000)
    expect(meter.observe(6_000, 0)).toBe(0)
    expect(meter.overall(9_000, 0)).toBe(0)
    expect(Progress.describe("rag-answers", { done: 72, failed: 0, reused: 72 }, 72, 0)).toBe(
      "rag-answers: 72/72 100% · 0.0/s · ETA --:-- · failed 0"
    )
  })
})

/** Progress off a terminal (a line every 5 s), its lines collected. */
const offTerminal = () => {
  const lines: Array<string> = []
  const progress = Progress.make({ tty: false, intervalMs: 5_000, write: (s) => lines.push(s.trimEnd()) })
  return { lines, progress }
}

/** A line without its rate and ETA. */
const withoutRate = (line: string) => line.replace(/ · [\d.]+\/s · ETA [-:\d]+/, "")

describe("the progress lines", () => {
  it.effect("a resume: the lines after its kept cases give the new work's rate and ETA; the last line its average", () =>
    Effect.gen(function*() {
      const { lines, progress } = offTerminal()
      yield* progress.track("answer-correctness", 1_000_000, (state) =>
        Effect.gen(function*() {
          // 30 s reading past 600,000 kept judgments.
          for (let s = 1; s <= 30; s++) {
            state.done += 20_000
            state.reused += 20_000
            yield* TestClock.adjust("1 second")
          }
          // Then 10,000 new judgments a second for 20 s.
          for (let s = 1; s <= 20; s++) {
            state.done += 10_000
            yield* TestClock.adjust("1 second")
          }
        }))
      // Lines at 5 s, 10 s, …, 50 s, and the last one.
      expect(lines).toHaveLength(11)
      for (const line of lines.slice(0, 6)) expect(line).toContain("· 0.0/s · ETA --:--")
      // At 50 s: 800,000 of 1,000,000 done, 10,000 a second, 200,000 left → 0:20 (the whole elapsed
      // time would have said 4,000 a second and 0:50).
      expect(lines[9]).toBe("answer-correctness: 800,000/1,000,000 80% · 10000.0/s · ETA 0:20 · failed 0")
      expect(lines[10]).toBe(lines[9])
    }))

  it.effect("off a terminal, no timed line once every judgment is done: the last line alone says 100%", () =>
    Effect.gen(function*() {
      const { lines, progress } = offTerminal()
      yield* progress.track("answer-correctness", 70, (state) =>
        Effect.gen(function*() {
          // 60 judgments by the line at 5 s, the last 10 just after; then 13 s writing reports: no line at 10 s or 15 s.
          state.done = 60
          yield* TestClock.adjust("5 seconds")
          state.done = 70
          yield* TestClock.adjust("13 seconds")
        }))
      expect(lines.map(withoutRate)).toEqual([
        "answer-correctness: 60/70 85% · failed 0",
        "answer-correctness: 70/70 100% · failed 0"
      ])
    }))

  it.effect("off a terminal, judgments found on the way (unplanned) count in the total: timed lines go on past the plan", () =>
    Effect.gen(function*() {
      const { lines, progress } = offTerminal()
      yield* progress.track("rag-answers", 10, (state) =>
        Effect.gen(function*() {
          // 10 planned; a --target's passages add 30 more: 20 done at 5 s is past the plan, not the end.
          state.unplanned = 30
          state.done = 20
          yield* TestClock.adjust("5 seconds")
          state.done = 40
          yield* TestClock.adjust("6 seconds")
        }))
      expect(lines.map(withoutRate)).toEqual([
        "rag-answers: 20/40 50% · failed 0",
        "rag-answers: 40/40 100% · failed 0"
      ])
    }))

  it.effect("a terminal of no size (a pseudo-terminal from script or a CI runner: 0 columns) gets 100, not a line cut to nothing", () =>
    Effect.gen(function*() {
      const written: Array<string> = []
      const progress = Progress.make({ tty: true, intervalMs: 200, write: (s) => written.push(s), columns: () => 0 })
      yield* progress.track("rag-answers", 10, (state) =>
        Effect.gen(function*() {
          state.done = 10
          yield* TestClock.adjust("1 second")
        }))
      const last = written.at(-1)!
      expect(last).toContain("rag-answers [")
      expect(last).toContain("10/10 100%")
      expect([...last.replace("\r\x1b[2K", "").trimEnd()].length).toBeLessThanOrEqual(99)
    }))

  it.effect("a replay (rag-eval report): nothing for a quick one off a terminal; a long one's lines count every judgment, no notes", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const progress = Progress.make({
        tty: false,
        intervalMs: 5_000,
        write: (s) => lines.push(s.trimEnd()),
        replay: true
      })
      const replayed = (seconds: number) =>
        progress.track("answer-correctness", 100_000 * seconds, (state) =>
          Effect.gen(function*() {
            yield* progress.note("resuming run abc: 0 of 10 judgments done")
            for (let s = 1; s <= seconds; s++) {
              state.done += 100_000
              state.reused += 100_000
              yield* TestClock.adjust("1 second")
            }
          }))
      yield* replayed(3)
      expect(lines).toEqual([])
      yield* replayed(12)
      expect(lines).toEqual([
        "answer-correctness: 500,000/1,200,000 41% · 100000.0/s · ETA 0:07 · failed 0",
        "answer-correctness: 1,000,000/1,200,000 83% · 100000.0/s · ETA 0:02 · failed 0",
        "answer-correctness: 1,200,000/1,200,000 100% · 100000.0/s · ETA 0:00 · failed 0"
      ])
    }))
})
