/**
 * What a run with a target (`--target`) adds to any pipeline's results, in one place: each record
 * says whether its answer was generated (and how that call went), each case has its target latency
 * as a declared per-case metric (so `compare` pairs two systems' latencies case by case), the
 * summary has the target's latency (avg / P50 / P90 / P99 / max, and time to first byte of streamed
 * answers) as declared headline metrics, and every report (markdown, CSV, HTML, JSON) shows them,
 * marking generated answers as such. The pipeline's own stages are untouched: this wraps them.
 */
import * as Stream from "effect/Stream"
import type { Generated } from "../domain/Case.js"
import { inline } from "../domain/Markdown.js"
import * as Metric from "../domain/Metric.js"
import { csvNumber } from "../report/Csv.js"
import { type SpanStats, spanStats } from "../stats/Latency.js"
import type { TargetDescription } from "./Generate.js"
import type { Pipeline, RunInfo } from "./Pipeline.js"

/** A record with how its answer was asked of the target. */
type WithGenerated = { readonly generated?: Generated | undefined }

/** The target's part of a summary (`summary.target`). */
export interface TargetSummary {
  readonly url: string
  /** Cases whose answer the target gave, failed to give, or that kept their input's answer. */
  readonly answers: { readonly generated: number; readonly failed: number; readonly fromInput: number }
  /** Latency of the answered calls, ms (undefined with none). */
  readonly latencyMs?: SpanStats | undefined
  /** Time to first byte of the streamed answers, ms (undefined with none). */
  readonly ttfbMs?: SpanStats | undefined
  readonly streamed: number
}

export const CASE_LATENCY = "targetLatencyMs"

/** The per-case metric: the target's latency for that case. */
export const caseLatencySpec: Metric.MetricSpec = Metric.ms(
  CASE_LATENCY,
  "the live system's latency for this case: request sent → answer read to its end (--target)"
)

/** The headline metrics the target adds (present when at least one answer was timed). */
const headlineSpecs: ReadonlyArray<Metric.MetricSpec> = [
  Metric.ms("targetLatencyAvgMs", "mean latency of the live system's answers (--target)"),
  Metric.ms("targetLatencyP50Ms", "median (P50) latency of the live system's answers"),
  Metric.ms("targetLatencyP90Ms", "P90 latency of the live system's answers"),
  Metric.ms("targetLatencyP99Ms", "P99 latency of the live system's answers"),
  Metric.ms("targetTtfbP50Ms", "median time to first byte of the streamed answers"),
  Metric.ms("targetTtfbP90Ms", "P90 time to first byte of the streamed answers"),
  Metric.count("targetFailures", "cases the live system gave no answer (failed, never scored as 0)")
]

const headlineOf = (t: TargetSummary): Record<string, number | null> => ({
  targetLatencyAvgMs: t.latencyMs?.mean ?? null,
  targetLatencyP50Ms: t.latencyMs?.p50 ?? null,
  targetLatencyP90Ms: t.latencyMs?.p90 ?? null,
  targetLatencyP99Ms: t.latencyMs?.p99 ?? null,
  targetTtfbP50Ms: t.ttfbMs?.p50 ?? null,
  targetTtfbP90Ms: t.ttfbMs?.p90 ?? null,
  targetFailures: t.answers.failed
})

interface Acc<A> {
  readonly base: A
  readonly latencies: Array<number>
  readonly ttfbs: Array<number>
  generated: number
  failed: number
  fromInput: number
}

const ms = (x: number | undefined) => (x === undefined ? "–" : `${x < 10 ? x.toFixed(1) : Math.round(x)} ms`)

/** The summary's latency as table rows (markdown and the run-parameter table). */
const latencyRows = (t: TargetSummary): Array<readonly [string, string]> => {
  const span = (s: SpanStats | undefined) =>
    s === undefined
      ? "no answer timed"
      : `avg ${ms(s.mean)} · P50 ${ms(s.p50)} · P90 ${ms(s.p90)} · P99 ${ms(s.p99)} · max ${ms(s.max)} (n = ${s.n})`
  return [
    ["target", t.url],
    ["answers", `${t.answers.generated} generated, ${t.answers.failed} failed, ${t.answers.fromInput} from the input`],
    ["target latency", span(t.latencyMs)],
    ...(t.streamed > 0 ? [["target time to first byte (streamed)", span(t.ttfbMs)] as const] : [])
  ]
}

const targetOf = (summary: unknown): TargetSummary | undefined =>
  (summary as { readonly target?: TargetSummary }).target

/** The pipeline with the target's facts added to its records, metrics and reports. */
export const withGenerated = <R, S>(
  pipeline: Pipeline<R, S>,
  target: TargetDescription
): Pipeline<R & WithGenerated, S & { readonly target: TargetSummary }> => {
  type R2 = R & WithGenerated
  type S2 = S & { readonly target: TargetSummary }
  const base = pipeline.aggregate
  const view = pipeline.report
  const perCase = pipeline.score.perCase
  return {
    ...pipeline,
    score: {
      ...pipeline.score,
      score: (c, judgments, iteration, rubrics) => {
        const r = pipeline.score.score(c, judgments, iteration, rubrics)
        return (c.generated === undefined ? r : { ...r, generated: c.generated }) as R2
      },
      grades: pipeline.score.grades === undefined ? undefined : (r) => pipeline.score.grades!(r),
      perCase: perCase === undefined ? undefined : {
        declared: (info) => [...perCase.declared(info), caseLatencySpec],
        of: (r) => {
          const values = perCase.of(r)
          return { ...values, metrics: { ...values.metrics, [CASE_LATENCY]: r.generated?.latencyMs ?? null } }
        }
      }
    },
    aggregate: {
      init: (info: RunInfo): Acc<unknown> => ({
        base: base.init(info),
        latencies: [],
        ttfbs: [],
        generated: 0,
        failed: 0,
        fromInput: 0
      }),
      add: (acc: Acc<unknown>, r: R2) => {
        const g = r.generated
        if (g === undefined) acc.fromInput++
        else if (g.status === "ok") {
          acc.generated++
          if (g.latencyMs !== undefined) acc.latencies.push(g.latencyMs)
          if (g.streamed === true && g.ttfbMs !== undefined) acc.ttfbs.push(g.ttfbMs)
        } else acc.failed++
        return { ...acc, base: base.add(acc.base, r) }
      },
      finish: (acc: Acc<unknown>, info: RunInfo): S2 => {
        const summary = base.finish(acc.base, info)
        const t: TargetSummary = {
          url: target.config.url,
          answers: { generated: acc.generated, failed: acc.failed, fromInput: acc.fromInput },
          latencyMs: spanStats(acc.latencies),
          ttfbMs: spanStats(acc.ttfbs),
          streamed: acc.ttfbs.length
        }
        return { ...summary, target: t }
      },
      metrics: (s: S2) => ({ ...base.metrics?.(s), ...headlineOf(s.target) }),
      headline: (info: RunInfo) => [...base.headline?.(info) ?? [], ...headlineSpecs],
      lowScores: base.lowScores === undefined ? undefined : (s: S2) => base.lowScores!(s)
    },
    report: {
      ...view,
      markdown: (info, summary, records) => {
        const t = targetOf(summary)
        const section = t === undefined ? "" : [
          "",
          "## The system under test (--target)",
          "",
          "Answers marked *generated* came from the live system (the reports' `answer_source` column); latency is from sending the request to the end of the answer, time to first byte to its first byte (streamed answers only).",
          "",
          "| | |",
          "|---|---|",
          ...latencyRows(t).map(([k, v]) => `| ${inline(k)} | ${inline(v)} |`),
          ""
        ].join("\n")
        return view.markdown(info, summary, records).pipe(Stream.concat(Stream.make(section)))
      },
      csvHeader: (
        info,
        summary
      ) => [
        ...view.csvHeader(info, summary),
        "answer_source",
        "generated_answer",
        "target_latency_ms",
        "target_ttfb_ms",
        "target_error"
      ],
      csvRow: (info, r) => {
        const g = r.generated
        const answer = g?.status === "ok" ? (r as { readonly answer?: string }).answer ?? "" : ""
        return [
          ...view.csvRow(info, r),
          g === undefined ? "input" : g.status === "ok" ? "generated" : "generation failed",
          answer,
          g?.latencyMs === undefined ? "" : csvNumber(g.latencyMs, 1),
          g?.streamed === true && g.ttfbMs !== undefined ? csvNumber(g.ttfbMs, 1) : "",
          g?.status === "failed" ? g.reason ?? "" : ""
        ]
      },
      parameters: (info, summary) => {
        const t = targetOf(summary)
        return [...view.parameters?.(info, summary) ?? [], ...(t === undefined ? [] : latencyRows(t))]
      }
    }
  }
}
