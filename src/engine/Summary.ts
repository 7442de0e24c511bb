/**
 * `summary.json` (schema `RunFiles.Summary`): the run's one authoritative summary — what a script or
 * a CI job reads. It holds the run (prompts only as id, version and hash: their texts are in
 * `prompts/`), the judgment counts, the cost, the headline metrics with their declarations (range,
 * direction: what gates and `compare` go by; mean ± std over iterations, per iteration), the per-case
 * metrics' declarations, the agreement between iterations and each iteration's full summary. The
 * per-iteration `metrics-iteration-N.json`, `cost-iteration-N.json` and `final-metrics.json` are
 * views of the same numbers, kept for tools that read them.
 */
import type { MetricSpec } from "../domain/Metric.js"
import { type Summary, SUMMARY_VERSION } from "../domain/RunFiles.js"
import type { Cost } from "../pricing/Prices.js"
import type { FinalMetrics } from "./Iterations.js"
import type { RunInfo } from "./Pipeline.js"

/** The run as summary.json records it: rubrics by id, version and hash, without their prompt texts. */
export const runWithoutPrompts = (info: RunInfo) => ({
  ...info,
  rubrics: info.rubrics.map((r) => ({
    id: r.id,
    version: r.version,
    name: r.name,
    hash: r.hash,
    path: r.path,
    min: r.min,
    max: r.max
  }))
})

export const summaryJson = (parts: {
  readonly info: RunInfo
  readonly judgments: { readonly total: number; readonly ok: number; readonly failed: number }
  readonly cost: Cost
  readonly final: FinalMetrics
  readonly summaries: ReadonlyArray<unknown>
  readonly partial: boolean
  readonly metricSpecs: ReadonlyArray<MetricSpec>
  readonly caseMetricSpecs: ReadonlyArray<MetricSpec>
  readonly headline: string | undefined
}): Summary => ({
  summaryVersion: SUMMARY_VERSION,
  authoritative: true,
  partial: parts.partial,
  run: runWithoutPrompts(parts.info),
  judgments: parts.judgments,
  cost: parts.cost,
  /** Headline metrics: the mean over iterations (the value with one iteration). */
  metrics: Object.fromEntries(Object.entries(parts.final.metrics).map(([k, m]) => [k, m.mean])),
  metricSpecs: parts.metricSpecs,
  caseMetricSpecs: parts.caseMetricSpecs,
  ...(parts.headline === undefined ? {} : { headline: parts.headline }),
  metricsAcrossIterations: parts.final.metrics,
  agreement: parts.final.agreement,
  iterations: parts.summaries
})
