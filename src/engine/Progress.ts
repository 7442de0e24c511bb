/**
 * Progress on stderr while a run works: on a TTY a bar redrawn in place (done/total, rate, ETA,
 * failures); otherwise a plain line every few seconds. Results go to stdout and files, never here.
 */
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

/** The text of one progress report (exported for tests). */
export const describe = (
  label: string,
  state: ProgressState,
  total: number,
  elapsedMs: number,
  width?: number,
  detail = ""
): string => {
  total += state.unplanned ?? 0
  const fresh = state.done - state.reused
  const rate = elapsedMs > 0 ? fresh / (elapsedMs / 1000) : 0
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

const make = (options: { readonly tty: boolean; readonly intervalMs: number; readonly write: (s: string) => void }) => {
  const track = <A, E, R>(
    label: string,
    total: number,
    work: (state: ProgressState) => Effect.Effect<A, E, R>,
    detail?: Effect.Effect<string>
  ): Effect.Effect<A, E, R> =>
    Effect.gen(function*() {
      const state: ProgressState = { done: 0, failed: 0, reused: 0 }
      const started = Date.now()
      const width = () => (process.stderr.columns ?? 100)
      const draw = (final: boolean) =>
        Effect.flatMap(detail ?? Effect.succeed(""), (extra) =>
          Effect.sync(() => {
            const text = describe(label, state, total, Date.now() - started, options.tty ? width() : undefined, extra)
            options.write(options.tty ? `\r\x1b[2K${text}${final ? "\n" : ""}` : `${text}\n`)
          }))
      const ticker = yield* draw(false).pipe(
        Effect.repeat(Schedule.spaced(Duration.millis(options.intervalMs))),
        Effect.delay(Duration.millis(options.tty ? 0 : options.intervalMs)),
        Effect.forkDaemon
      )
      return yield* work(state).pipe(
        Effect.ensuring(Fiber.interrupt(ticker).pipe(Effect.zipRight(draw(true))))
      )
    })
  return Progress.of({ note: (line) => Effect.sync(() => options.write(line + "\n")), track })
}

/** stderr progress: a redrawn bar on a TTY, a line every 5 s otherwise. */
export const layerStderr = Layer.sync(Progress, () => {
  const tty = process.stderr.isTTY === true
  return make({ tty, intervalMs: tty ? 200 : 5000, write: (s) => process.stderr.write(s) })
})

/** Silent progress for tests and library use. */
export const layerSilent = Layer.succeed(
  Progress,
  Progress.of({
    note: () => Effect.void,
    track: (_label, _total, work) => work({ done: 0, failed: 0, reused: 0 })
  })
)
