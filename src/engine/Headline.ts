/**
 * A run's headline metrics — what summaries print, `--fail-under` / `--fail-over` gate and `compare`
 * names — derived, never declared twice: the mean of every per-case metric under its own name (with
 * its range and direction), the failed judgments of a pipeline that judges, and what the kind's own
 * fold adds (micro recall, pass counts, normalised means). One name, range and direction per metric,
 * by construction.
 */
import * as Metric from "../domain/Metric.js"
import type { MetricSpec } from "../domain/Metric.js"
import type { Pipeline, RunInfo, RunSummary } from "./Pipeline.js"

/** The count of failed judgments, in every pipeline that judges. */
export const FAILED_JUDGMENTS = "failedJudgments"

const judges = (info: RunInfo) => info.rubrics.length > 0

/** What the headline metrics come from: the per-case metrics and the kind's own fold. */
type Stages<R, X> = Pick<Pipeline<R, X>, "score" | "aggregate">

/** The headline metrics' declarations. */
export const headlineSpecs = <R, X>(pipeline: Stages<R, X>, info: RunInfo): ReadonlyArray<MetricSpec> => [
  ...pipeline.score.perCase.declared(info).map((m) => ({ ...m, description: `mean over the cases: ${m.description}` })),
  ...(judges(info) ? [Metric.count(FAILED_JUDGMENTS, "judgments recorded as failed (never scored)")] : []),
  ...pipeline.aggregate?.headline?.(info) ?? []
]

/** The headline metrics' values in one iteration's summary (null: unknown, never 0). */
export const headlineValues = <R, X>(
  pipeline: Stages<R, X>,
  info: RunInfo,
  summary: RunSummary<R, X>
): Readonly<Record<string, number | null>> => ({
  ...Object.fromEntries(Object.values(summary.metrics).map((m) => [m.name, m.mean])),
  ...(judges(info) ? { [FAILED_JUDGMENTS]: summary.judgments.failed } : {}),
  ...pipeline.aggregate?.metrics?.(summary.extra)
})
