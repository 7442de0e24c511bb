/**
 * Score stage of the answer-synthesis pipeline (SPEC §2.2): two independent 1–5 judgments per case,
 * faithfulness (safety) and completeness (quality).
 *
 * overall = (faithfulness + completeness) / 2, null when either judgment failed.
 * pass    = faithfulness ≥ passAt AND completeness ≥ passAt (passAt = 4), in three-valued logic:
 *           true when both are known and reach passAt; false as soon as one known score is below it
 *           (the other cannot rescue the case); null (unknown) otherwise — a failed judgment is
 *           neither a pass nor a fail.
 * The record is a `RubricRecord` (built by `rubricScore`, so `rubricSummary` folds it too; its
 * composite is the mean of score / 5, i.e. overall / 5) plus these fields.
 */
import type { EvalCase } from "../../domain/Case.js"
import type { Judgment } from "../../domain/Judgment.js"
import * as Metric from "../../domain/Metric.js"
import type { Rubric } from "../../domain/Rubric.js"
import type { RunInfo, ScoreStage } from "../../engine/Pipeline.js"
import type { ClaimRubrics } from "../correctness/Claims.js"
import {
  checksClaims,
  type DimensionScore,
  referenceClaimSpecs,
  type RubricRecord,
  rubricScore
} from "../rubric/RubricScore.js"
import { contextLabel } from "./AnswerSynthesis.js"

/** Which rubric is which, and the pass threshold. Shared by the score, aggregate and report stages. */
export interface SynthesisConfig {
  readonly faithfulness: string
  readonly completeness: string
  /** A dimension passes at this score or above (SPEC: 4). */
  readonly passAt: number
  /** A user's own rubrics (`--rubrics`), judged beside the two; overall and pass stay theirs. */
  readonly extra?: ReadonlyArray<string> | undefined
}

/** The user's rubrics of a run, as loaded (for per-case and headline metrics). */
export const extraRubrics = (config: SynthesisConfig, info: RunInfo): ReadonlyArray<Rubric> =>
  (config.extra ?? []).flatMap((id) => info.rubrics.filter((r) => r.id === id))

export const defaultConfig: SynthesisConfig = {
  faithfulness: "answer-synthesis/faithfulness",
  completeness: "answer-synthesis/completeness",
  passAt: 4
}

export interface SynthesisRecord extends RubricRecord {
  /** Faithfulness score, null when the judgment failed. */
  readonly faithfulness: number | null
  readonly completeness: number | null
  /** (faithfulness + completeness) / 2, null when either is unknown. */
  readonly overall: number | null
  /** Both ≥ passAt; null when it cannot be decided (see the module comment). */
  readonly pass: boolean | null
  /** The judge's reasons (for a failed judgment: why it failed). */
  readonly reasons: { readonly faithfulness: string; readonly completeness: string }
  /** One-line labels of the context items (course name and code), in retrieval order. */
  readonly context: ReadonlyArray<string>
}

/** (f + c) / 2, or null when either is unknown. */
export const overallScore = (faithfulness: number | null, completeness: number | null): number | null =>
  faithfulness === null || completeness === null ? null : (faithfulness + completeness) / 2

/** Three-valued pass: see the module comment. */
export const passOf = (faithfulness: number | null, completeness: number | null, passAt: number): boolean | null => {
  if ((faithfulness !== null && faithfulness < passAt) || (completeness !== null && completeness < passAt)) return false
  if (faithfulness === null || completeness === null) return null
  return true
}

const find = (record: RubricRecord, criterion: string): DimensionScore | undefined =>
  record.dimensions.find((d) => d.criterion === criterion)

export const synthesisScore = (
  config: SynthesisConfig = defaultConfig,
  claims?: ClaimRubrics
): ScoreStage<SynthesisRecord> => {
  const base = rubricScore({
    dimensions: [
      { rubric: config.faithfulness, weight: 1 },
      { rubric: config.completeness, weight: 1 },
      ...(config.extra ?? []).map((rubric) => ({ rubric }))
    ],
    claims
  })
  return {
    // Faithfulness, completeness and overall on their 1–5 scale, and the verdict (1 pass, 0 fail).
    perCase: {
      declared: (info) => [
        Metric.score("faithfulness", "faithfulness (safety): supported by the context, nothing invented", 1, 5),
        Metric.score("completeness", "completeness (quality): explains why each item fits the question", 1, 5),
        Metric.score("overall", "(faithfulness + completeness) / 2", 1, 5),
        Metric.fraction(
          "faithfulnessPassRate",
          `1 when faithfulness is ≥ ${config.passAt}, 0 when below (its mean is the faithfulness pass rate)`
        ),
        Metric.fraction(
          "completenessPassRate",
          `1 when completeness is ≥ ${config.passAt}, 0 when below (its mean is the completeness pass rate)`
        ),
        // Named as its mean is in the summary, so `compare` and the gates say the same name.
        Metric.fraction(
          "overallPassRate",
          `1 when faithfulness and completeness are both ≥ ${config.passAt}, 0 when either is below (its mean is the overall pass rate)`
        ),
        ...(checksClaims(info) ? referenceClaimSpecs : []),
        ...extraRubrics(config, info).map((r) => Metric.score(r.id, `${r.name}: ${r.description}`, r.min, r.max))
      ],
      of: (r) => ({
        caseId: r.caseId,
        line: r.line,
        metrics: {
          faithfulness: r.faithfulness,
          completeness: r.completeness,
          overall: r.overall,
          faithfulnessPassRate: r.faithfulness === null ? null : r.faithfulness >= config.passAt ? 1 : 0,
          completenessPassRate: r.completeness === null ? null : r.completeness >= config.passAt ? 1 : 0,
          overallPassRate: r.pass === null ? null : r.pass ? 1 : 0,
          ...(r.claims === undefined
            ? {}
            : { precision: r.claims.precision, recall: r.claims.recall, f1: r.claims.f1 }),
          ...Object.fromEntries((config.extra ?? []).map((id) => [id, find(r, id)?.score ?? null]))
        },
        failed: r.failed > 0 || r.overall === null
      }),
      // No lowest list (the low-score analysis groups the failures); details go lowest overall first.
      rank: { by: ["overall"], keep: 0 }
    },
    // Agreement across iterations on each score and on the verdict (pass 1, fail 0, unknown null).
    grades: (r) => ({
      caseId: r.caseId,
      grades: {
        [config.faithfulness]: r.faithfulness,
        [config.completeness]: r.completeness,
        pass: r.pass === null ? null : r.pass ? 1 : 0
      }
    }),
    score: (
      c: EvalCase,
      judgments: ReadonlyArray<Judgment>,
      iteration: number,
      rubrics: ReadonlyMap<string, Rubric>
    ) => {
      const record = base.score(c, judgments, iteration, rubrics)
      const f = find(record, config.faithfulness)
      const k = find(record, config.completeness)
      const faithfulness = f?.score ?? null
      const completeness = k?.score ?? null
      return {
        ...record,
        faithfulness,
        completeness,
        overall: overallScore(faithfulness, completeness),
        pass: passOf(faithfulness, completeness, config.passAt),
        reasons: {
          faithfulness: f?.reason ?? "no judgment recorded",
          completeness: k?.reason ?? "no judgment recorded"
        },
        context: c.passages.map((p) => contextLabel(p.fields ?? p.text))
      }
    }
  }
}
