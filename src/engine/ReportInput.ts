/**
 * The engine's port to the reporters: what a reporter is given (the run, an iteration's summary, its
 * records streamed again from disk on each call, the pipeline's report view and per-case metrics),
 * what it does with it, and the service holding the chosen ones. The formats themselves live in
 * `report/` and depend on this, never the other way round.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { OutputError } from "../domain/Errors.js"
import type { MetricSpec } from "../domain/Metric.js"
import type { ChosenDetails } from "./Details.js"
import type { FinalMetrics } from "./Iterations.js"
import type { CaseValues, ReportView, RunInfo, RunSummary } from "./Pipeline.js"

export interface ReportInput<R = unknown, X = unknown> {
  readonly info: RunInfo
  readonly summary: RunSummary<R, X>
  /** Re-readable: each call streams the records again from disk. */
  readonly records: () => Stream.Stream<R, OutputError>
  /**
   * The records at these ordinals (0-based, input order), each with its ordinal, in input order; the
   * other lines are skipped undecoded. Absent: filter `records()`.
   */
  readonly recordsAt?: ((ordinals: ReadonlySet<number>) => Stream.Stream<readonly [R, number], OutputError>) | undefined
  readonly view: ReportView<R, X>
  /**
   * The pipeline's per-case metrics: what ranks cases (`rank`: lowest first, ties by the next), what
   * counts as failed, what the HTML page charts.
   */
  readonly caseMetrics: {
    readonly declared: ReadonlyArray<MetricSpec>
    of(record: R): CaseValues
    readonly rank?: ReadonlyArray<string> | undefined
  }
  /** File name stem, e.g. `report` or `report-iteration-2`. */
  readonly stem: string
  /** The iteration's headline metrics (`Headline.ts`), with their declarations. */
  readonly metrics: Readonly<Record<string, number | null>>
  readonly metricSpecs: ReadonlyArray<MetricSpec>
  /** Set by `report --partial`: why the report is partial, shown on every page. */
  readonly partial?: string | undefined
  /** `--details N`: per-case details in report.md for at most N cases (default 100). */
  readonly details?: number | undefined
  /** report.md's cases with details, chosen by the engine while it wrote the records; absent: chosen from `records()`. */
  readonly chosen?: ChosenDetails | undefined
}

/** What the judging of a run came to, for its parameter table: judgments, tokens, cost. */
export interface Judged {
  readonly judgments: { readonly ok: number; readonly failed: number }
  readonly tokens: { readonly input: number; readonly output: number }
}

/** What a report written line by line as the records leave is given: what it knows before the first record. */
export type LinesInput<R = unknown> = Pick<ReportInput<R>, "info" | "view" | "stem">

/** A report that is one line per record after a header (the CSV): the engine writes it as the records leave. */
export interface LineReport<R = unknown> {
  readonly path: string
  readonly header: string
  /** The record's line (newline included), given its per-case values. */
  line(record: R, values: CaseValues): string
}

export interface Reporter {
  readonly format: string
  /** Writes its file(s) into `info.runDir`; returns the paths written. */
  readonly write: (input: ReportInput) => Effect.Effect<ReadonlyArray<string>, OutputError>
  /**
   * The same file as `write`, a line per record: the engine writes it while the records leave (in
   * input order), and the report needs no pass over the records read back from disk. A resume that
   * keeps earlier records, and `write` without it, read them back instead.
   */
  readonly lines?: (input: LinesInput) => LineReport
  /** The run's final report across iterations (iterations > 1), for formats that have one. */
  readonly writeFinal?: (
    info: RunInfo,
    final: FinalMetrics,
    partial?: string
  ) => Effect.Effect<ReadonlyArray<string>, OutputError>
}

/** The reporters a run writes with (`--format`). */
export class Reporters extends Context.Tag("rag-eval/Reporters")<Reporters, ReadonlyArray<Reporter>>() {}
