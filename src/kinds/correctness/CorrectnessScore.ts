/**
 * Score stage of answer-correctness: a case's judgments read back as claims with verdicts
 * (`Claims.caseClaims`) and turned into RAGChecker's and AutoNuggetizer's metrics
 * (`metrics/claims.ts`). Each metric is declared once here (name, range, direction) for the
 * per-case file, compare, reports and gates.
 */
import type { EvalCase } from "../../domain/Case.js"
import type { Judgment } from "../../domain/Judgment.js"
import * as Metric from "../../domain/Metric.js"
import type { MetricSpec } from "../../domain/Metric.js"
import type { PerCaseMetrics, ScoreStage } from "../../engine/Pipeline.js"
import { type ClaimMetrics, claimMetrics } from "../../metrics/claims.js"
import { addUsageTo, compactTokens, noTokens, type Tokens } from "../../pricing/Prices.js"
import { allSources, type CaseClaims, caseClaims, type ClaimRubrics, type ClaimSources } from "./Claims.js"

/** The claim metrics, declared once: name, meaning, range and direction. */
export const claimMetricSpecs: ReadonlyArray<MetricSpec> = [
  Metric.fraction("precision", "share of the answer's claims the reference entails"),
  Metric.fraction("recall", "share of the reference's claims the answer entails"),
  Metric.fraction("f1", "harmonic mean of claim precision and recall"),
  Metric.fraction("faithfulness", "share of the answer's claims some context entails"),
  Metric.fraction("contextRecall", "share of the reference's claims some context entails"),
  Metric.fraction("contextPrecision", "share of contexts that entail at least one reference claim"),
  Metric.fraction("contextUtilization", "of the reference claims the contexts held, the share the answer states"),
  Metric.fraction("hallucination", "share of answer claims that are wrong and in no context", "lower"),
  Metric.fraction(
    "selfKnowledge",
    "share of answer claims that are right but in no context (the model knew them)",
    "none"
  ),
  Metric.fraction(
    "noiseSensitivityRelevant",
    "share of answer claims that are wrong and taken from a relevant context",
    "lower"
  ),
  Metric.fraction(
    "noiseSensitivityIrrelevant",
    "share of answer claims that are wrong and taken only from irrelevant contexts",
    "lower"
  ),
  Metric.fraction("nuggetRecall", "share of nuggets the answer supports fully (strict)"),
  Metric.fraction("nuggetRecallPartial", "nuggets supported, partial support counting ½"),
  Metric.fraction(
    "vitalNuggetRecall",
    "share of vital nuggets the answer supports fully (TREC RAG 2024's primary score)"
  ),
  Metric.fraction("vitalNuggetRecallPartial", "vital nuggets supported, partial support counting ½")
]

export const claimMetricNames = claimMetricSpecs.map((m) => m.name) as ReadonlyArray<keyof ClaimMetrics>

/** Metrics a record ranks by, first known wins: F1 against a reference, else faithfulness, else nugget recall. */
export const headlineOf = (m: ClaimMetrics): number | null => m.f1 ?? m.faithfulness ?? m.nuggetRecall

export interface CorrectnessRecord {
  readonly caseId: string
  readonly ordinal: number
  readonly line: number
  readonly iteration: number
  readonly question: string
  readonly answer: string
  readonly reference?: string | undefined
  /** The contexts' texts, in order (what `context:<k>` in the claims refers to). */
  readonly contexts: ReadonlyArray<string>
  readonly source: Readonly<Record<string, unknown>>
  readonly claims: CaseClaims
  readonly metrics: ClaimMetrics
  /** F1, else faithfulness, else nugget recall: what reports rank the case by (null: none known). */
  readonly score: number | null
  /** Judgments recorded as failed. */
  readonly failed: number
  readonly failures: ReadonlyArray<
    { readonly criterion: string; readonly target: string; readonly reason: string; readonly raw?: string | undefined }
  >
  readonly tokens: Tokens
}

export const correctnessCaseMetrics: PerCaseMetrics<CorrectnessRecord> = {
  declared: () => [
    ...claimMetricSpecs,
    Metric.fraction("score", "the case's F1, else faithfulness, else nugget recall (what reports rank by)")
  ],
  of: (r) => ({
    caseId: r.caseId,
    line: r.line,
    metrics: { ...r.metrics, score: r.score },
    failed: r.failed > 0 || r.score === null
  }),
  rank: { by: ["score"], keep: 10 }
}

/** The record of one case: claims with verdicts, metrics, failures and tokens. */
export const correctnessRecord = (
  c: EvalCase,
  judgments: ReadonlyArray<Judgment>,
  iteration: number,
  rubrics: ClaimRubrics,
  sources: ClaimSources = allSources
): CorrectnessRecord => {
  const claims = caseClaims(c, judgments, rubrics, sources)
  const metrics = claimMetrics(claims.verdicts)
  const tokens = noTokens()
  for (const j of judgments) addUsageTo(tokens, j.usage, j.via)
  const failures = judgments.filter((j) => j.status === "failed").map((j) => ({
    criterion: j.criterion,
    target: j.target,
    reason: j.reason,
    ...(j.raw === undefined ? {} : { raw: j.raw })
  }))
  return {
    caseId: c.id,
    ordinal: c.ordinal,
    line: c.line,
    iteration,
    question: c.question,
    answer: c.answer ?? "",
    ...(c.reference === undefined ? {} : { reference: c.reference }),
    contexts: sources.contexts ? c.passages.map((p) => p.text) : [],
    source: c.source,
    claims,
    metrics,
    score: headlineOf(metrics),
    failed: failures.length,
    failures,
    tokens: compactTokens(tokens)
  }
}

export const correctnessScore = (rubrics: ClaimRubrics): ScoreStage<CorrectnessRecord> => ({
  perCase: correctnessCaseMetrics,
  grades: (r) => ({ caseId: r.caseId, grades: { ...r.metrics } }),
  score: (c, judgments, iteration) => correctnessRecord(c, judgments, iteration, rubrics)
})
