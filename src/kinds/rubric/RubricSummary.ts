/**
 * Aggregate stage for rubric pipelines: an online fold over records (constant memory), giving per
 * dimension the mean, standard deviation and score distribution, the composite's statistics, and
 * the lowest-composite rows (a bounded list) with the judge's reasons.
 */
import * as Metric from "../../domain/Metric.js"
import type { MetricSpec } from "../../domain/Metric.js"
import type { AggregateStage, RunInfo } from "../../engine/Pipeline.js"
import { compactTokens, type MutableTokens, noTokens, type Tokens } from "../../pricing/Prices.js"
import { empty, mean, push, std, type Welford } from "../../stats/Welford.js"
import { checksClaims, isDimension, referenceClaimSpecs, type RubricRecord } from "./RubricScore.js"

export interface DimensionSummary {
  readonly criterion: string
  readonly name: string
  readonly min: number
  readonly max: number
  /** Judgments scored (failed ones excluded). */
  readonly n: number
  readonly failed: number
  readonly mean: number | null
  readonly meanNormalised: number | null
  readonly std: number | null
  /** Count per score value, every value of the scale present (0 when unseen). */
  readonly distribution: Readonly<Record<string, number>>
}

export interface RubricSummary {
  readonly cases: number
  readonly judgments: { readonly ok: number; readonly failed: number }
  readonly dimensions: ReadonlyArray<DimensionSummary>
  readonly composite: {
    readonly n: number
    readonly missing: number
    readonly mean: number | null
    readonly std: number | null
    readonly min: number | null
    readonly max: number | null
    /** Ten buckets [0,0.1) … [0.9,1.0]. */
    readonly histogram: ReadonlyArray<number>
  }
  readonly gated: { readonly zeroed: number; readonly reweighted: number }
  /** Lowest composites first (ties by input order); at most `lowest` rows. */
  readonly lowest: ReadonlyArray<RubricRecord>
  /** Failed judgments (bounded list) with their reasons. */
  readonly failures: ReadonlyArray<
    {
      readonly caseId: string
      readonly line: number
      readonly criterion: string
      readonly reason: string
      readonly raw?: string | undefined
    }
  >
  readonly tokens: Tokens
  /** Claim precision, recall and F1 against the reference answers (runs that check claims): mean over the cases that have it. */
  readonly claims?:
    | ReadonlyArray<{ readonly name: string; readonly n: number; readonly mean: number | null }>
    | undefined
}

interface Acc {
  cases: number
  ok: number
  failed: number
  dims: Map<
    string,
    { name: string; min: number; max: number; w: Welford; norm: Welford; failed: number; dist: Map<number, number> }
  >
  comp: Welford
  compMin: number
  compMax: number
  missing: number
  histogram: number[]
  zeroed: number
  reweighted: number
  lowest: RubricRecord[]
  failures: RubricSummary["failures"][number][]
  input: number
  output: number
  /** The cached and Batch API parts of the tokens, when some case has them. */
  parts: MutableTokens | undefined
  /** Claim precision, recall, F1 (runs that check claims). */
  claims: ReadonlyArray<Welford> | undefined
}

const CLAIM_METRICS = ["precision", "recall", "f1"] as const

const MAX_FAILURES_LISTED = 50

/**
 * The headline metrics of a rubric run: per dimension its mean on the rubric's scale (under the
 * rubric id) and on 0–1 (`<id>.normalised`), the mean composite, and the failed judgments.
 */
export const rubricHeadline = (info: RunInfo): ReadonlyArray<MetricSpec> => [
  ...info.rubrics.filter(isDimension).flatMap((r) => [
    Metric.score(r.id, `mean ${r.name} on its ${r.min}–${r.max} scale`, r.min, r.max),
    Metric.fraction(`${r.id}.normalised`, `mean ${r.name} normalised to 0–1 (score / ${r.max})`)
  ]),
  Metric.fraction("composite", "mean composite (0–1)"),
  Metric.count("failed", "judgments recorded as failed (never scored)"),
  ...(checksClaims(info)
    ? referenceClaimSpecs.map((m) => ({
      ...m,
      description: `mean ${m.description}, over the cases with a reference answer`
    }))
    : [])
]

export const rubricSummary = (options: { readonly lowest: number }): AggregateStage<RubricRecord, RubricSummary> => ({
  init: (info: RunInfo): Acc => {
    const dims: Acc["dims"] = new Map()
    for (const r of info.rubrics.filter(isDimension)) {
      dims.set(r.id, {
        name: r.name,
        min: r.min,
        max: r.max,
        w: empty(),
        norm: empty(),
        failed: 0,
        dist: new Map(r.scale.map((v) => [v.score, 0]))
      })
    }
    return {
      cases: 0,
      ok: 0,
      failed: 0,
      dims,
      comp: empty(),
      compMin: Infinity,
      compMax: -Infinity,
      missing: 0,
      histogram: Array(10).fill(0),
      zeroed: 0,
      reweighted: 0,
      lowest: [],
      failures: [],
      input: 0,
      output: 0,
      parts: undefined,
      claims: checksClaims(info) ? CLAIM_METRICS.map(() => empty()) : undefined
    }
  },
  add: (accU, record) => {
    const acc = accU as Acc
    acc.cases++
    acc.input += record.tokens.input
    acc.output += record.tokens.output
    if (record.tokens.cachedInput !== undefined || record.tokens.batchInput !== undefined) {
      const parts = acc.parts ??= noTokens()
      parts.cachedInput += record.tokens.cachedInput ?? 0
      parts.batchInput += record.tokens.batchInput ?? 0
      parts.batchOutput += record.tokens.batchOutput ?? 0
      parts.batchCachedInput += record.tokens.batchCachedInput ?? 0
    }
    for (const d of record.dimensions) {
      const dim = acc.dims.get(d.criterion)
      if (dim === undefined) continue
      if (d.score === null) {
        acc.failed++
        dim.failed++
        if (acc.failures.length < MAX_FAILURES_LISTED) {
          acc.failures.push({
            caseId: record.caseId,
            line: record.line,
            criterion: d.criterion,
            reason: d.reason,
            raw: d.raw
          })
        }
      } else {
        acc.ok++
        push(dim.w, d.score)
        push(dim.norm, d.normalised!)
        dim.dist.set(d.score, (dim.dist.get(d.score) ?? 0) + 1)
      }
    }
    if (record.claims !== undefined && acc.claims !== undefined) {
      CLAIM_METRICS.forEach((name, i) => {
        const v = record.claims![name]
        if (v !== null) push(acc.claims![i]!, v)
      })
    }
    if (record.gate === "zeroed") acc.zeroed++
    if (record.gate === "reweighted") acc.reweighted++
    if (record.composite === null) {
      acc.missing++
    } else {
      push(acc.comp, record.composite)
      acc.compMin = Math.min(acc.compMin, record.composite)
      acc.compMax = Math.max(acc.compMax, record.composite)
      acc.histogram[Math.min(9, Math.floor(record.composite * 10))]!++
      // Keep the `lowest` smallest composites; records arrive in input order, so ties keep it.
      if (options.lowest > 0) {
        const list = acc.lowest
        if (list.length < options.lowest || record.composite < list[list.length - 1]!.composite!) {
          let i = list.length
          while (i > 0 && list[i - 1]!.composite! > record.composite) i--
          list.splice(i, 0, record)
          if (list.length > options.lowest) list.pop()
        }
      }
    }
    return acc
  },
  metrics: (s) => ({
    ...Object.fromEntries(
      s.dimensions.flatMap((d) => [[d.criterion, d.mean], [`${d.criterion}.normalised`, d.meanNormalised]])
    ),
    composite: s.composite.mean,
    failed: s.judgments.failed,
    ...Object.fromEntries((s.claims ?? []).map((c) => [c.name, c.mean]))
  }),
  headline: rubricHeadline,
  lowScores: (s) => ({ lowest: s.lowest, failures: s.failures }),
  finish: (accU): RubricSummary => {
    const acc = accU as Acc
    return {
      cases: acc.cases,
      judgments: { ok: acc.ok, failed: acc.failed },
      dimensions: [...acc.dims].map(([criterion, d]) => ({
        criterion,
        name: d.name,
        min: d.min,
        max: d.max,
        n: d.w.n,
        failed: d.failed,
        mean: mean(d.w),
        meanNormalised: mean(d.norm),
        std: std(d.w),
        distribution: Object.fromEntries([...d.dist].sort((a, b) => a[0] - b[0]).map(([k, v]) => [String(k), v]))
      })),
      composite: {
        n: acc.comp.n,
        missing: acc.missing,
        mean: mean(acc.comp),
        std: std(acc.comp),
        min: acc.comp.n === 0 ? null : acc.compMin,
        max: acc.comp.n === 0 ? null : acc.compMax,
        histogram: acc.histogram
      },
      gated: { zeroed: acc.zeroed, reweighted: acc.reweighted },
      lowest: acc.lowest,
      failures: acc.failures,
      tokens: acc.parts === undefined
        ? { input: acc.input, output: acc.output }
        : compactTokens({ ...acc.parts, input: acc.input, output: acc.output }),
      ...(acc.claims === undefined
        ? {}
        : { claims: CLAIM_METRICS.map((name, i) => ({ name, n: acc.claims![i]!.n, mean: mean(acc.claims![i]!) })) })
    }
  }
})
