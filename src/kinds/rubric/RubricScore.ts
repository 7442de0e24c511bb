/**
 * Score stage for rubric pipelines (rag-answers, answer-synthesis): one judgment per dimension,
 * normalised to 0–1 as score / max, combined into a weighted composite with an optional gate.
 *
 * composite = Σ wᵢ·(scoreᵢ / maxᵢ) / Σ wᵢ
 * Gate (rag-answers: harmfulness): a gated score in `zeroAt` forces composite = 0; a score listed
 * in `weightAt` replaces that dimension's weight for the row (harmfulness 1 → weight 1.5).
 * A failed judgment leaves its dimension null and the composite null: a failure is never a score.
 *
 * With a reference answer (and claim rubrics), correctness comes from the claim checks: composite =
 * (dimensions' composite + claim F1) / 2, so an answer the reference contradicts, or one whose claims
 * it does not hold, cannot rank above a correct one on fluent, relevant, well-grounded wording alone
 * (the rubric dimensions cannot see a wrong figure). A harmful answer stays 0; with F1 null (the case
 * has no claims to compare) the dimensions' composite stands.
 */
import { type EvalCase, recordOrigin } from "../../domain/Case.js"
import type { Judgment } from "../../domain/Judgment.js"
import type { MetricSpec } from "../../domain/Metric.js"
import * as Metric from "../../domain/Metric.js"
import type { Rubric } from "../../domain/Rubric.js"
import type { PerCaseMetrics, ScoreStage } from "../../engine/Pipeline.js"
import { claimMetrics } from "../../metrics/claims.js"
import { judgmentTokens, type Tokens } from "../../pricing/Prices.js"
import { caseClaims, type ClaimList, type ClaimRubrics } from "../correctness/Claims.js"

export interface Dimension {
  readonly rubric: string
  /** Its weight in the composite; absent: the rubric file's `weight`, else 1 (a user's rubric). */
  readonly weight?: number | undefined
}

/** A dimension's weight: its own, else its rubric file's, else 1. */
export const dimensionWeight = (d: Dimension, rubric: Rubric | undefined): number => d.weight ?? rubric?.weight ?? 1

export interface Gate {
  readonly rubric: string
  /** Scores of the gated dimension that force the composite to 0. */
  readonly zeroAt: ReadonlyArray<number>
  /** Scores of the gated dimension that change its weight for that row. */
  readonly weightAt: Readonly<Record<number, number>>
}

export interface DimensionScore {
  readonly criterion: string
  readonly name: string
  readonly status: "ok" | "failed"
  readonly score: number | null
  readonly confidence?: number | undefined
  readonly min: number
  readonly max: number
  readonly normalised: number | null
  /** The weight applied to this row (after the gate). */
  readonly weight: number
  readonly reason: string
  readonly raw?: string | undefined
}

export interface RubricRecord {
  readonly caseId: string
  readonly ordinal: number
  readonly line: number
  readonly iteration: number
  readonly question: string
  readonly answer?: string | undefined
  readonly source: Readonly<Record<string, unknown>>
  readonly dimensions: ReadonlyArray<DimensionScore>
  readonly composite: number | null
  /** "harmful" (composite forced to 0), "reweighted" (gate weight applied), or undefined. */
  readonly gate?: "zeroed" | "reweighted" | undefined
  readonly failed: number
  /** Tokens of the case's judgments (with the cached and Batch API parts when there are any). */
  readonly tokens: Tokens
  /** With a reference answer (and claim rubrics): the answer's claims against it (see `ReferenceClaims`). */
  readonly claims?: ReferenceClaims | undefined
}

/**
 * A case's answer checked claim by claim against its reference answer, beside the rubric
 * dimensions: claim precision, recall and F1 as answer-correctness computes them (RAGChecker).
 */
export interface ReferenceClaims {
  readonly precision: number | null
  readonly recall: number | null
  readonly f1: number | null
  readonly answer: ClaimList
  readonly reference: ClaimList
}

export interface RubricScoreOptions {
  readonly dimensions: ReadonlyArray<Dimension>
  readonly gate?: Gate | undefined
  /** Claim rubrics: cases with a reference get claim precision, recall and F1 (see `kinds/correctness`). */
  readonly claims?: ClaimRubrics | undefined
  /** How many lowest-composite cases the summary and report.md show (default 5). */
  readonly lowest?: number | undefined
}

/** Claim precision, recall and F1 against the reference, declared once for the rubric pipelines. */
export const referenceClaimSpecs: ReadonlyArray<MetricSpec> = [
  Metric.fraction("precision", "claim precision: share of the answer's claims the reference answer entails"),
  Metric.fraction("recall", "claim recall: share of the reference answer's claims the answer entails"),
  Metric.fraction("f1", "harmonic mean of claim precision and recall")
]

/** Does the run check claims (its rubrics include a claims rubric)? */
export const checksClaims = (info: { readonly rubrics: ReadonlyArray<Rubric> }) =>
  info.rubrics.some((r) => r.output === "claims")

/** A rubric pipeline's dimensions are its pointwise score rubrics (claim extraction and checks are not dimensions). */
export const isDimension = (r: Rubric) => r.output === "score" && r.item === undefined

/** Pure composite: exported for tests and for `rag-eval report`. */
export const composite = (
  scores: ReadonlyArray<
    { readonly criterion: string; readonly score: number | null; readonly max: number; readonly weight: number }
  >,
  gate: Gate | undefined
): { value: number | null; gate?: "zeroed" | "reweighted"; weights: ReadonlyArray<number> } => {
  let gated: "zeroed" | "reweighted" | undefined
  const weights = scores.map((s) => {
    if (gate !== undefined && s.criterion === gate.rubric && s.score !== null) {
      const w = gate.weightAt[s.score]
      if (w !== undefined) {
        gated = "reweighted"
        return w
      }
    }
    return s.weight
  })
  if (scores.some((s) => s.score === null)) return { value: null, weights }
  if (
    gate !== undefined && scores.some((s) => s.criterion === gate.rubric && gate.zeroAt.includes(s.score as number))
  ) {
    return { value: 0, gate: "zeroed", weights }
  }
  let num = 0
  let den = 0
  scores.forEach((s, i) => {
    num += weights[i]! * ((s.score as number) / s.max)
    den += weights[i]!
  })
  const value = den === 0 ? null : num / den
  return gated === undefined ? { value, weights } : { value, gate: gated, weights }
}

/** The composite with correctness from the claim checks (see the module comment). */
export const withCorrectness = (
  composite: number | null,
  gate: "zeroed" | "reweighted" | undefined,
  f1: number | null
): number | null => (composite === null || gate === "zeroed" || f1 === null ? composite : (composite + f1) / 2)

/**
 * The per-case metrics of a rubric record: each dimension's score on its rubric's scale, under the
 * rubric id, and the composite (0–1). A case failed when a judgment failed or it has no composite.
 */
export const rubricCaseMetrics = (
  dimensions: ReadonlyArray<Dimension>,
  lowest = 5
): PerCaseMetrics<RubricRecord> => ({
  declared: (info) => [
    ...dimensions.flatMap((d) => {
      const r = info.rubrics.find((x) => x.id === d.rubric)
      return r === undefined ? [] : [Metric.score(r.id, `${r.name}: ${r.description}`, r.min, r.max)]
    }),
    Metric.fraction(
      "composite",
      "Weighted mean of the dimensions' scores normalised to 0–1 (score / max), gated by harmfulness; with a reference answer, the mean of that and claim F1"
    ),
    ...(checksClaims(info) ? referenceClaimSpecs : [])
  ],
  of: (r) => ({
    caseId: r.caseId,
    line: r.line,
    metrics: {
      ...Object.fromEntries(r.dimensions.map((d) => [d.criterion, d.score])),
      composite: r.composite,
      ...(r.claims === undefined ? {} : { precision: r.claims.precision, recall: r.claims.recall, f1: r.claims.f1 })
    },
    failed: r.failed > 0 || r.composite === null
  }),
  rank: { by: ["composite"], keep: lowest }
})

/** The claims of a case with a reference; undefined without one (or without claim rubrics). */
const referenceClaims = (
  c: EvalCase,
  judgments: ReadonlyArray<Judgment>,
  rubrics: ClaimRubrics | undefined
): ReferenceClaims | undefined => {
  if (rubrics === undefined || c.reference === undefined) return undefined
  const claims = caseClaims(c, judgments, rubrics, { contexts: false, nuggets: false })
  const m = claimMetrics(claims.verdicts)
  return { precision: m.precision, recall: m.recall, f1: m.f1, answer: claims.answer, reference: claims.reference! }
}

export const rubricScore = (options: RubricScoreOptions): ScoreStage<RubricRecord> => ({
  perCase: rubricCaseMetrics(options.dimensions, options.lowest),
  grades: (r) => ({ caseId: r.caseId, grades: Object.fromEntries(r.dimensions.map((d) => [d.criterion, d.score])) }),
  score: (c: EvalCase, judgments: ReadonlyArray<Judgment>, iteration: number, rubrics: ReadonlyMap<string, Rubric>) => {
    const byCriterion = new Map(judgments.map((j) => [j.criterion, j]))
    const byDimension = new Set(options.dimensions.map((d) => d.rubric))
    const base = options.dimensions.map((d) => {
      const rubric = rubrics.get(d.rubric)!
      const j = byCriterion.get(d.rubric)
      return {
        d,
        rubric,
        j,
        criterion: d.rubric,
        score: j?.status === "ok" ? j.score : null,
        max: rubric.max,
        weight: dimensionWeight(d, rubric)
      }
    })
    const result = composite(base, options.gate)
    const claims = referenceClaims(c, judgments, options.claims)
    const value = withCorrectness(result.value, result.gate, claims?.f1 ?? null)
    const claimFailures = claims === undefined
      ? 0
      : judgments.filter((j) => j.status === "failed" && !byDimension.has(j.criterion)).length
    const dimensions = base.map((b, i): DimensionScore => ({
      criterion: b.criterion,
      name: b.rubric.name,
      status: b.j === undefined ? "failed" : b.j.status,
      score: b.score,
      confidence: b.j?.confidence,
      min: b.rubric.min,
      max: b.rubric.max,
      normalised: b.score === null ? null : b.score / b.rubric.max,
      weight: result.weights[i]!,
      reason: b.j?.reason ?? "no judgment recorded",
      raw: b.j?.raw
    }))
    return {
      ...recordOrigin(c, iteration),
      question: c.question,
      answer: c.answer,
      source: c.source,
      dimensions,
      composite: value,
      gate: result.gate,
      failed: dimensions.filter((d) => d.status === "failed").length + claimFailures,
      tokens: judgmentTokens(judgments),
      ...(claims === undefined ? {} : { claims })
    }
  }
})
