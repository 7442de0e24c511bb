/**
 * What a reporter is given: the run, an iteration's summary, its records (streamed again from disk
 * on each call), the pipeline's report view and per-case metrics. A leaf module: the reporters and
 * the HTML page import it, and nothing here imports them back.
 */
import type * as Stream from "effect/Stream"
import type { OutputError } from "../domain/Errors.js"
import type { MetricSpec } from "../domain/Metric.js"
import type { CaseValues, ReportView, RunInfo } from "../engine/Pipeline.js"
import type { Judged } from "./Sections.js"

export interface ReportInput<R = unknown, S = unknown> {
  readonly info: RunInfo
  readonly summary: S
  /** Re-readable: each call streams the records again from disk. */
  readonly records: () => Stream.Stream<R, OutputError>
  readonly view: ReportView<R, S>
  /**
   * The pipeline's per-case metrics, when it declares them: what ranks cases (the view's headline),
   * what counts as failed, what the HTML page charts.
   */
  readonly caseMetrics?: { readonly declared: ReadonlyArray<MetricSpec>; of(record: R): CaseValues } | undefined
  /** File name stem, e.g. `report` or `report-iteration-2`. */
  readonly stem: string
  /** The iteration's headline metrics (`aggregate.metrics`), with their declarations. */
  readonly metrics?: Readonly<Record<string, number | null>> | undefined
  readonly metricSpecs?: ReadonlyArray<MetricSpec> | undefined
  /** What this iteration's judging came to (judgments, tokens), for the run-parameter table. */
  readonly judged?: Judged | undefined
  /** Set by `report --partial`: why the report is partial, shown on every page. */
  readonly partial?: string | undefined
  /** `--details N`: per-case details in report.md for at most N cases (default 100). */
  readonly details?: number | undefined
}
