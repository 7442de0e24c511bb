/**
 * Progress on stderr while a run works: on a TTY a bar redrawn in place (done/total, rate, ETA,
 * failures); otherwise a plain line every few seconds. Results go to stdout and files, never here.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { thousands } from "../domain/Numbers.js"

export interface ProgressState {
  done: number
  failed: number
  /** Judgments skipped because the journal or cache already had them. */
  reused: number
  /**
   * Judgments the plan did not count (or counted too many of, negative): passages a `--target` or a
   * live retriever returned, claims a judge found beyond the offline stand-in's. Added to the total.
   */
  unplanned?: number
}

export class Progress extends Context.Tag("rag-eval/Progress")<Progress, {
  /**
   * Start reporting a phase of `total` judgments; the returned effect stops it and prints the last
   * state. `detail`, when given, is appended to each line (the judge's concurrency, 429s, pace).
   */
  readonly track: <A, E, R>(
    label: string,
    total: number,
    work: (state: ProgressState) => Effect.Effect<A, E, R>,
    detail?: Effect.Effect<string>
  ) => Effect.Effect<A, E, R>
  /** One-line notes (provider defaults, resume lines). */
  readonly note: (line: string) => Effect.Effect<void>
}>() {}

const fmt = thousands

const eta = (seconds: number) => {
  if (!Number.isFinite(seconds) || seconds < 0) return "--:--"
  const s = Math.round(seconds)
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  const r = s % 60
  return h > 0
    ? `${h}:${String(m).padStart(2, "0")}:${String(r).padStart(2, "0")}`
    : `${m}:${String(r).padStart(2, "0")}`
}

/**
 * The pace of a phase's new judgments (not the reused ones), in judgments a second, from the first
 * new judgment seen: a resume first reads past what it keeps (tens of seconds at a million cases,
 * reused judgments only), and a rate over the whole elapsed time said 682/s with an ETA of 15:47
 * where the run was judging 17,000 a second and had 30 s left. While the phase runs, the rate is
 * over the last `windowMs` (a pace that changes — a rate limit learned, a slower part of the input —
 * shows within that window); the last line's is over all the new work.
 */
export class RateMeter {
  /** The last observation with no new judgment yet: the new work began after it. */
  private began: Sample
  /** Observations with new judgments, oldest first; the oldest the last one at least a window old, if any is. */
  private samples: Array<Sample> = []

  constructor(startedAt: number, private readonly windowMs = 30_000) {
    this.began = { at: startedAt, fresh: 0 }
  }

  /** Observe `fresh` new judgments at `at` (ms); returns the rate over the last window. */
  observe(at: number, fresh: number): number {
    if (this.samples.length === 0) {
      if (fresh <= 0) {
        this.began = { at, fresh: 0 }
        return 0
      }
      this.samples.push({ at, fresh })
      // The only estimate yet: the new work began somewhere since the last observation.
      return perSecond(this.began, at, fresh)
    }
    this.samples.push({ at, fresh })
    while (this.samples.length > 2 && this.samples[1]!.at <= at - this.windowMs) this.samples.shift()
    return perSecond(this.samples[0]!, at, fresh)
  }

  /**
   * The rate over all the new work, up to `at`: from the last observation without any (within one
   * observation of its start). Not from the first one with some — the work may all have been done by
   * then (a run that spends its last seconds writing reports), which said 0.0/s.
   */
  overall(at: number, fresh: number): number {
    return fresh > 0 ? perSecond(this.began, at, fresh) : 0
  }
}

interface Sample {
  readonly at: number
  readonly fresh: number
}

const perSecond = (from: Sample, at: number, fresh: number) =>
  at > from.at ? (fresh - from.fresh) / ((at - from.at) / 1000) : 0

/** The judgments a phase has: those planned, and those found on the way (`unplanned`). */
const totalOf = (state: ProgressState, planned: number): number => planned + (state.unplanned ?? 0)

/** The text of one progress report (exported for tests); `rate`: new judgments a second (`RateMeter`). */
export const describe = (
  label: string,
  state: ProgressState,
  total: number,
  rate: number,
  width?: number,
  detail = ""
): string => {
  total = totalOf(state, total)
  const remaining = Math.max(0, total - state.done)
  const pct = total === 0 ? 100 : Math.floor((state.done / total) * 100)
  const tail = `${fmt(state.done)}/${fmt(total)} ${pct}% · ${rate.toFixed(1)}/s · ETA ${
    eta(rate > 0 ? remaining / rate : NaN)
  } · failed ${fmt(state.failed)}${detail === "" ? "" : ` · ${detail}`}`
  if (width === undefined) return `${label}: ${tail}`
  // One line that fits the terminal (a wrapped line cannot be redrawn in place): the bar shrinks,
  // then goes, then the text is cut — never wider than width − 1 (some terminals wrap at the last column).
  const room = Math.max(1, width - 1)
  const barWidth = Math.min(40, room - tail.length - label.length - 4)
  if (barWidth < 5) return cutTo(`${label}: ${tail}`, room)
  const filled = total === 0 ? barWidth : Math.round((state.done / total) * barWidth)
  return cutTo(`${label} [${"█".repeat(filled)}${"░".repeat(barWidth - filled)}] ${tail}`, room)
}

/** At most `width` characters (code points), `…` marking a cut. */
const cutTo = (text: string, width: number): string => {
  const chars = [...text]
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`
}

/** The Progress service writing with `write` (exported for tests; `layerStderr` is the CLI's). */
export const make = (options: {
  readonly tty: boolean
  readonly intervalMs: number
  readonly write: (s: string) => void
  /** The terminal's width (default: stderr's); 0 or none — a pseudo-terminal of no size, as `script` or some CI runners make — is taken as 100. */
  readonly columns?: () => number | undefined
  /**
   * A replay of a run's journal (`rag-eval report`): every judgment is a reused one, so the rate
   * counts them all; no notes (the runner's "resuming run …" is not news there); and without a
   * terminal the last line only when an earlier one was shown — a quick report says nothing.
   */
  readonly replay?: boolean
}) => {
  const replay = options.replay === true
  const track = <A, E, R>(
    label: string,
    total: number,
    work: (state: ProgressState) => Effect.Effect<A, E, R>,
    detail?: Effect.Effect<string>
  ): Effect.Effect<A, E, R> =>
    Effect.gen(function*() {
      const state: ProgressState = { done: 0, failed: 0, reused: 0 }
      const meter = new RateMeter(yield* Clock.currentTimeMillis)
      const width = () => {
        const columns = options.columns === undefined ? process.stderr.columns : options.columns()
        return columns !== undefined && columns > 0 ? columns : 100
      }
      let shown = false
      const draw = (final: boolean) =>
        Effect.all([detail ?? Effect.succeed(""), Clock.currentTimeMillis]).pipe(Effect.flatMap(([extra, now]) =>
          Effect.sync(() => {
            if (final && replay && !options.tty && !shown) return
            // Off a terminal, a timed line once every judgment is done would say again what the
            // last line says (a slow machine's run that takes a while to write its reports after).
            const all = totalOf(state, total)
            if (!final && !options.tty && all > 0 && state.done >= all) return
            shown = true
            const fresh = replay ? state.done : state.done - state.reused
            const rate = final ? meter.overall(now, fresh) : meter.observe(now, fresh)
            const text = describe(label, state, total, rate, options.tty ? width() : undefined, extra)
            options.write(options.tty ? `\r\x1b[2K${text}${final ? "\n" : ""}` : `${text}\n`)
          })
        ))
      const ticker = yield* draw(false).pipe(
        Effect.repeat(Schedule.spaced(Duration.millis(options.intervalMs))),
        Effect.delay(Duration.millis(options.tty ? 0 : options.intervalMs)),
        Effect.forkDaemon
      )
      return yield* work(state).pipe(
        Effect.ensuring(Fiber.interrupt(ticker).pipe(Effect.zipRight(draw(true))))
      )
    })
  return Progress.of({
    note: (line) => replay ? Effect.void : Effect.sync(() => options.write(line + "\n")),
    track
  })
}

/** stderr progress: a redrawn bar on a TTY, a line every 5 s otherwise. */
export const layerStderr = Layer.sync(Progress, () => {
  const tty = process.stderr.isTTY === true
  return make({ tty, intervalMs: tty ? 200 : 5000, write: (s) => process.stderr.write(s) })
})

/** `layerStderr` for a replay of a run's journal (`rag-eval report`; see `make`'s `replay`). */
export const layerStderrReplay = Layer.sync(Progress, () => {
  const tty = process.stderr.isTTY === true
  return make({ tty, intervalMs: tty ? 200 : 5000, write: (s) => process.stderr.write(s), replay: true })
})

/** Silent progress for tests and library use. */
export const layerSilent = Layer.succeed(
  Progress,
  Progress.of({
    note: () => Effect.void,
    track: (_label, _total, work) => work({ done: 0, failed: 0, reused: 0 })
  })
)
