/**
 * Aggregate stage of the answer-synthesis pipeline: an online fold (constant memory) giving the
 * SPEC §2.2 metrics — mean of each dimension, pass rate of each (score ≥ passAt), overall pass rate —
 * with counts and tokens, the per-dimension distributions from `rubricSummary`, and the low-score
 * analysis.
 *
 * Rates never count an unknown as a pass or a fail:
 * - dimension pass rate = cases with score ≥ passAt / cases with that score known;
 * - overall pass rate   = passed / (passed + failed); `unknown` cases are reported apart.
 * A rate with an empty denominator is null.
 */
import * as Metric from "../../domain/Metric.js"
import type { AggregateStage, RunInfo } from "../../engine/Pipeline.js"
import { empty, mean, push, std, type Welford } from "../../stats/Welford.js"
import { checksClaims, referenceClaimSpecs } from "../rubric/RubricScore.js"
import { type DimensionSummary, type RubricSummary, rubricSummary } from "../rubric/RubricSummary.js"
import { type LowScoreAnalysis, lowScoreFold } from "./LowScores.js"
import { defaultConfig, extraRubrics, type SynthesisConfig, type SynthesisRecord } from "./SynthesisScore.js"

export interface DimensionMetrics {
  readonly criterion: string
  /** Scored cases (failed judgments excluded). */
  readonly n: number
  readonly failed: number
  readonly mean: number | null
  readonly std: number | null
  /** Cases with score ≥ passAt. */
  readonly passed: number
  readonly passRate: number | null
}

export interface SynthesisMetrics {
  readonly cases: number
  readonly passAt: number
  readonly faithfulness: DimensionMetrics
  readonly completeness: DimensionMetrics
  readonly overall: {
    /** Cases with an overall score (both judgments known). */
    readonly n: number
    readonly mean: number | null
    readonly std: number | null
    readonly passed: number
    readonly failed: number
    readonly unknown: number
    readonly passRate: number | null
  }
}

export interface SynthesisSummary {
  readonly metrics: SynthesisMetrics
  /** Per-dimension statistics with the full score distribution (from `rubricSummary`). */
  readonly dimensions: ReadonlyArray<DimensionSummary>
  readonly lowScores: LowScoreAnalysis
  readonly judgments: RubricSummary["judgments"]
  /** Failed judgments (bounded list) with their reasons. */
  readonly failures: RubricSummary["failures"]
  readonly tokens: RubricSummary["tokens"]
  /** Claim precision, recall and F1 against reference answers (`--columns reference=…`). */
  readonly claims?: RubricSummary["claims"]
}

const rate = (k: number, n: number) => (n === 0 ? null : k / n)

interface Acc {
  rubric: unknown
  low: ReturnType<ReturnType<typeof lowScoreFold>["init"]>
  cases: number
  fPassed: number
  cPassed: number
  overall: Welford
  passed: number
  failed: number
  unknown: number
}

export const synthesisSummary = (
  config: SynthesisConfig = defaultConfig,
  options?: { readonly examples?: number }
): AggregateStage<SynthesisRecord, SynthesisSummary> => {
  // The lowest-composite list of rubricSummary is replaced here by the low-score analysis.
  const rubric = rubricSummary({ lowest: 0 })
  const low = lowScoreFold({ passAt: config.passAt, examples: options?.examples })
  return {
    init: (info: RunInfo): Acc => ({
      rubric: rubric.init(info),
      low: low.init(),
      cases: 0,
      fPassed: 0,
      cPassed: 0,
      overall: empty(),
      passed: 0,
      failed: 0,
      unknown: 0
    }),
    add: (accU, r) => {
      const acc = accU as Acc
      acc.rubric = rubric.add(acc.rubric, r)
      acc.low = low.add(acc.low, r)
      acc.cases++
      if (r.faithfulness !== null && r.faithfulness >= config.passAt) acc.fPassed++
      if (r.completeness !== null && r.completeness >= config.passAt) acc.cPassed++
      if (r.overall !== null) push(acc.overall, r.overall)
      if (r.pass === true) acc.passed++
      else if (r.pass === false) acc.failed++
      else acc.unknown++
      return acc
    },
    metrics: (s) => ({
      faithfulness: s.metrics.faithfulness.mean,
      completeness: s.metrics.completeness.mean,
      overall: s.metrics.overall.mean,
      faithfulnessPassRate: s.metrics.faithfulness.passRate,
      completenessPassRate: s.metrics.completeness.passRate,
      overallPassRate: s.metrics.overall.passRate,
      undecided: s.metrics.overall.unknown,
      failedJudgments: s.judgments.failed,
      ...Object.fromEntries((s.claims ?? []).map((c) => [c.name, c.mean])),
      ...Object.fromEntries(
        s.dimensions.filter((d) => config.extra?.includes(d.criterion) === true)
          .flatMap((d) => [[d.criterion, d.mean], [`${d.criterion}.normalised`, d.meanNormalised]])
      )
    }),
    headline: (info) => [
      Metric.score("faithfulness", "mean faithfulness (1–5)", 1, 5),
      Metric.score("completeness", "mean completeness (1–5)", 1, 5),
      Metric.score("overall", "mean overall score (1–5)", 1, 5),
      Metric.fraction("faithfulnessPassRate", `share of cases with faithfulness ≥ ${config.passAt}`),
      Metric.fraction("completenessPassRate", `share of cases with completeness ≥ ${config.passAt}`),
      Metric.fraction("overallPassRate", `share of cases that pass (both ≥ ${config.passAt})`),
      Metric.count("undecided", "cases whose verdict is unknown (a judgment failed)"),
      Metric.count("failedJudgments", "judgments recorded as failed (never scored)"),
      ...(checksClaims(info)
        ? referenceClaimSpecs.map((m) => ({
          ...m,
          description: `mean ${m.description}, over the cases with a reference answer`
        }))
        : []),
      ...extraRubrics(config, info).flatMap((r) => [
        Metric.score(r.id, `mean ${r.name} on its ${r.min}–${r.max} scale (your rubric)`, r.min, r.max),
        Metric.fraction(`${r.id}.normalised`, `mean ${r.name} normalised to 0–1 (score / ${r.max})`)
      ])
    ],
    lowScores: (s) => s.lowScores,
    finish: (accU, info): SynthesisSummary => {
      const acc = accU as Acc
      const base = rubric.finish(acc.rubric, info)
      const dimension = (criterion: string, passed: number): DimensionMetrics => {
        const d = base.dimensions.find((x) => x.criterion === criterion)
        const n = d?.n ?? 0
        return {
          criterion,
          n,
          failed: d?.failed ?? 0,
          mean: d?.mean ?? null,
          std: d?.std ?? null,
          passed,
          passRate: rate(passed, n)
        }
      }
      return {
        metrics: {
          cases: acc.cases,
          passAt: config.passAt,
          faithfulness: dimension(config.faithfulness, acc.fPassed),
          completeness: dimension(config.completeness, acc.cPassed),
          overall: {
            n: acc.overall.n,
            mean: mean(acc.overall),
            std: std(acc.overall),
            passed: acc.passed,
            failed: acc.failed,
            unknown: acc.unknown,
            passRate: rate(acc.passed, acc.passed + acc.failed)
          }
        },
        dimensions: base.dimensions,
        lowScores: low.finish(acc.low),
        judgments: base.judgments,
        failures: base.failures,
        tokens: base.tokens,
        ...(base.claims === undefined ? {} : { claims: base.claims })
      }
    }
  }
}
