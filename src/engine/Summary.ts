/**
 * `summary.json` (schema `RunFiles.Summary`): the run's one authoritative summary — what a script or
 * a CI job reads. It holds the run (prompts only as id, version and hash: their texts are in
 * `prompts/`), the judgment counts, the cost, the headline metrics with their declarations (range,
 * direction: what gates and `compare` go by) — each with its cases and 95% interval when the run has
 * one iteration (with several: mean ± std over iterations, and each iteration's intervals in
 * `iterations`) — the per-case
 * metrics' declarations, the agreement between iterations and each iteration's full summary. The
 * per-iteration `metrics-iteration-N.json`, `cost-iteration-N.json` and `final-metrics.json` are
 * views of the same numbers, kept for tools that read them.
 */
import type { MetricSpec } from "../domain/Metric.js"
import { type Summary, SUMMARY_VERSION } from "../domain/RunFiles.js"
import type { Cost } from "../pricing/Prices.js"
import type { FinalMetrics } from "./Iterations.js"
import type { RunInfo, RunSummary } from "./Pipeline.js"

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
  readonly summaries: ReadonlyArray<RunSummary>
  readonly partial: boolean
  readonly metricSpecs: ReadonlyArray<MetricSpec>
  readonly caseMetricSpecs: ReadonlyArray<MetricSpec>
  readonly rankBy: ReadonlyArray<string> | undefined
}): Summary => {
  // One iteration: each mean of a per-case metric with its cases and interval (the engine's fold).
  const only = parts.summaries.length === 1 ? parts.summaries[0]!.metrics : undefined
  return {
    summaryVersion: SUMMARY_VERSION,
    authoritative: true,
    partial: parts.partial,
    run: runWithoutPrompts(parts.info),
    judgments: parts.judgments,
    cost: parts.cost,
    metrics: Object.fromEntries(
      Object.entries(parts.final.metrics).map(([k, m]) => {
        const stats = only?.[k]
        return [k, { mean: m.mean, n: stats?.n ?? null, ci: stats?.ci ?? null }]
      })
    ),
    metricSpecs: parts.metricSpecs,
    caseMetricSpecs: parts.caseMetricSpecs,
    ...(parts.rankBy === undefined ? {} : { rankBy: parts.rankBy }),
    metricsAcrossIterations: parts.final.metrics,
    agreement: parts.final.agreement,
    iterations: parts.summaries
  }
}
