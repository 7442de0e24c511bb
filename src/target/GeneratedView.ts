/**
 * What a run with a target (`--target`) adds to any pipeline's results, in one place: each record
 * says whether its answer was generated (and how that call went), each case has its target latency
 * as a declared per-case metric (so `compare` pairs two systems' latencies case by case), the
 * summary has the target's latency (avg / P50 / P90 / P99 / max, and time to first byte of streamed
 * answers) as declared headline metrics, and every report (markdown, CSV, HTML, JSON) shows them,
 * marking generated answers as such. The pipeline's own stages are untouched: this wraps them.
 */
import type { Generated } from "../domain/Case.js"
import { csvNumber } from "../domain/CsvCell.js"
import { inline } from "../domain/Markdown.js"
import * as Metric from "../domain/Metric.js"
import { viewOf } from "../engine/DefaultView.js"
import type { TargetDescription } from "../engine/Generator.js"
import type { CaseValues, Pipeline, RunInfo, RunSummary } from "../engine/Pipeline.js"
import { type SpanStats, spanStats } from "../stats/Latency.js"

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

/**
 * The headline metrics the target adds beside the mean of its per-case latency (`targetLatencyMs`,
 * which the engine's fold gives with its interval): percentiles and failures.
 */
const headlineSpecs: ReadonlyArray<Metric.MetricSpec> = [
  Metric.ms("targetLatencyP50Ms", "median (P50) latency of the live system's answers"),
  Metric.ms("targetLatencyP90Ms", "P90 latency of the live system's answers"),
  Metric.ms("targetLatencyP99Ms", "P99 latency of the live system's answers"),
  Metric.ms("targetTtfbP50Ms", "median time to first byte of the streamed answers"),
  Metric.ms("targetTtfbP90Ms", "P90 time to first byte of the streamed answers"),
  Metric.count("targetFailures", "cases the live system gave no answer (failed, never scored as 0)")
]

const headlineOf = (t: TargetSummary): Record<string, number | null> => ({
  targetLatencyP50Ms: t.latencyMs?.p50 ?? null,
  targetLatencyP90Ms: t.latencyMs?.p90 ?? null,
  targetLatencyP99Ms: t.latencyMs?.p99 ?? null,
  targetTtfbP50Ms: t.ttfbMs?.p50 ?? null,
  targetTtfbP90Ms: t.ttfbMs?.p90 ?? null,
  targetFailures: t.answers.failed
})

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

/** The summary part a target adds (`extra.target`), beside the kind's own. */
type WithTarget<X> = X & { readonly target: TargetSummary }

/** The pipeline with the target's facts added to its records, metrics and reports. */
export const withGenerated = <R, X>(
  pipeline: Pipeline<R, X>,
  target: TargetDescription
): Pipeline<R & WithGenerated, WithTarget<X>> => {
  type R2 = R & WithGenerated
  const base = pipeline.aggregate
  const view = viewOf(pipeline)
  const perCase = pipeline.score.perCase
  /** The kind's view sees its own summary (the target's part is an extra key it ignores). */
  const own = (summary: RunSummary<R2, WithTarget<X>>) => summary as unknown as RunSummary<R, X>
  return {
    ...pipeline,
    score: {
      ...pipeline.score,
      score: (c, judgments, iteration, rubrics) => {
        const r = pipeline.score.score(c, judgments, iteration, rubrics)
        return (c.generated === undefined ? r : { ...r, generated: c.generated }) as R2
      },
      grades: pipeline.score.grades === undefined ? undefined : (r) => pipeline.score.grades!(r),
      perCase: {
        ...perCase,
        declared: (info) => [...perCase.declared(info), caseLatencySpec],
        of: (r) => {
          const values = perCase.of(r)
          return { ...values, metrics: { ...values.metrics, [CASE_LATENCY]: r.generated?.latencyMs ?? null } }
        }
      }
    },
    aggregate: {
      start: (info: RunInfo) => {
        const kind = base?.start(info)
        const latencies: Array<number> = []
        const ttfbs: Array<number> = []
        let generated = 0
        let failed = 0
        let fromInput = 0
        return {
          add: (r: R2, values: CaseValues) => {
            const g = r.generated
            if (g === undefined) fromInput++
            else if (g.status === "ok") {
              generated++
              if (g.latencyMs !== undefined) latencies.push(g.latencyMs)
              if (g.streamed === true && g.ttfbMs !== undefined) ttfbs.push(g.ttfbMs)
            } else failed++
            kind?.add(r, values)
          },
          finish: (): WithTarget<X> => ({
            ...(kind?.finish() as X),
            target: {
              url: target.config.url,
              answers: { generated, failed, fromInput },
              latencyMs: spanStats(latencies),
              ttfbMs: spanStats(ttfbs),
              streamed: ttfbs.length
            }
          })
        }
      },
      metrics: (x: WithTarget<X>) => ({ ...base?.metrics?.(x), ...headlineOf(x.target) }),
      headline: (info: RunInfo) => [...base?.headline?.(info) ?? [], ...headlineSpecs],
      lowScores: base?.lowScores === undefined ? undefined : (x: WithTarget<X>) => base.lowScores!(x)
    },
    report: {
      ...view,
      sections: (info, summary) => {
        const base = view.sections?.(info, own(summary)) ?? {}
        const section = [
          "## The system under test (--target)",
          "",
          "Answers marked *generated* came from the live system (the reports' `answer_source` column); latency is from sending the request to the end of the answer, time to first byte to its first byte (streamed answers only).",
          "",
          "| | |",
          "|---|---|",
          ...latencyRows(summary.extra.target).map(([k, v]) => `| ${inline(k)} | ${inline(v)} |`),
          ""
        ].join("\n")
        return { before: base.before, after: [...base.after ?? [], section] }
      },
      caseMarkdown: (info, r) => {
        const c = view.caseMarkdown(info, r)
        const g = r.generated
        const note = g === undefined
          ? ""
          : g.status === "ok"
          ? `*The answer was generated by the live system (--target)${
            g.latencyMs === undefined ? "" : ` in ${ms(g.latencyMs)}`
          }.*\n\n`
          : `*The live system gave no answer (--target): ${inline(g.reason ?? "failed")}.*\n\n`
        return { title: c.title, body: note + c.body }
      },
      csvHeader: (info) => [
        ...view.csvHeader(info),
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
      parameters: (
        info,
        summary
      ) => [...view.parameters?.(info, own(summary)) ?? [], ...latencyRows(summary.extra.target)],
      caseFailures: view.caseFailures === undefined ? undefined : (summary) => view.caseFailures!(own(summary)),
      flagged: view.flagged === undefined ? undefined : (summary) => view.flagged!(own(summary))
    }
  }
}
