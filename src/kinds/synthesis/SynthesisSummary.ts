/**
 * What answer-synthesis folds of its own, beside the engine's fold (the means and intervals of
 * faithfulness, completeness, overall and their pass rates — per-case metrics whose means are the
 * SPEC §2.2 metrics — the failed cases, the failures and counts: `engine/CaseFold.ts`): each
 * dimension's score distribution, the passes counted, and the low-score analysis.
 *
 * Rates never count an unknown as a pass or a fail (they are the per-case metrics' means):
 * - dimension pass rate = cases with score ≥ passAt / cases with that score known;
 * - overall pass rate   = passed / (passed + failed); `undecided` cases are reported apart.
 */
import * as Metric from "../../domain/Metric.js"
import type { AggregateStage } from "../../engine/Pipeline.js"
import { normalisedHeadline, normalisedName, type RubricSummary, rubricSummary } from "../rubric/RubricSummary.js"
import { type LowScoreAnalysis, lowScoreFold } from "./LowScores.js"
import { defaultConfig, type SynthesisConfig, type SynthesisRecord } from "./SynthesisScore.js"

/** The summary part of answer-synthesis' own fold (`RunSummary.extra`). */
export interface SynthesisSummary {
  readonly passAt: number
  /** Cases with faithfulness (completeness) ≥ passAt. */
  readonly faithfulnessPassed: number
  readonly completenessPassed: number
  /** Cases that pass, fail, or are undecided (a judgment failed and the other score did not fail them). */
  readonly passed: number
  readonly failed: number
  readonly undecided: number
  /** Each dimension's distribution and normalised mean (the rubric pipelines' fold). */
  readonly rubrics: RubricSummary
  readonly lowScores: LowScoreAnalysis
}

export const synthesisSummary = (
  config: SynthesisConfig = defaultConfig,
  options?: { readonly examples?: number }
): AggregateStage<SynthesisRecord, SynthesisSummary> => {
  const rubric = rubricSummary()
  const isExtra = (id: string) => config.extra?.includes(id) === true
  return {
    start: (info) => {
      const rubrics = rubric.start(info)
      const low = lowScoreFold({ passAt: config.passAt, examples: options?.examples })
      const init = () => ({
        low: low.init(),
        faithfulnessPassed: 0,
        completenessPassed: 0,
        passed: 0,
        failed: 0,
        undecided: 0
      })
      let s = init()
      return {
        add: (r, values) => {
          rubrics.add(r, values)
          s.low = low.add(s.low, r)
          if (r.faithfulness !== null && r.faithfulness >= config.passAt) s.faithfulnessPassed++
          if (r.completeness !== null && r.completeness >= config.passAt) s.completenessPassed++
          if (r.pass === true) s.passed++
          else if (r.pass === false) s.failed++
          else s.undecided++
        },
        save: () => structuredClone({ own: s, rubrics: rubrics.save!() }),
        restore: (state) => {
          const saved = structuredClone(state) as { own: ReturnType<typeof init>; rubrics: unknown }
          rubrics.restore!(saved.rubrics)
          s = saved.own
        },
        finish: () => ({
          passAt: config.passAt,
          faithfulnessPassed: s.faithfulnessPassed,
          completenessPassed: s.completenessPassed,
          passed: s.passed,
          failed: s.failed,
          undecided: s.undecided,
          rubrics: rubrics.finish(),
          lowScores: low.finish(s.low)
        })
      }
    },
    metrics: (x) => ({
      undecided: x.undecided,
      ...Object.fromEntries(
        Object.entries(x.rubrics.normalised).filter(([id]) => isExtra(id)).map(([id, v]) => [normalisedName(id), v])
      )
    }),
    headline: (info) => [
      Metric.count("undecided", "cases whose verdict is unknown (a judgment failed)"),
      ...normalisedHeadline(info, isExtra)
    ],
    lowScores: (x) => ({ analysis: x.lowScores })
  }
}
