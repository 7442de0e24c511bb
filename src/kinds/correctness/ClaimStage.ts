/**
 * The judge stage of claim judging (see `Claims.ts`): extraction, then checks, as a chained stage.
 * answer-correctness uses it alone; rag-answers and answer-synthesis add it beside their rubric
 * dimensions when a case has a reference (`withClaims`).
 */
import type { EvalCase } from "../../domain/Case.js"
import type { Judgment } from "../../domain/Judgment.js"
import type { JudgeSpec, JudgeStage } from "../../engine/Pipeline.js"
import {
  allSources,
  type ClaimRubrics,
  type ClaimSources,
  extractionRound,
  nextRound,
  plannedRounds,
  rubricIds
} from "./Claims.js"

export const claimStage = (rubrics: ClaimRubrics, sources: ClaimSources = allSources): JudgeStage => ({
  rubrics: rubricIds(rubrics),
  tasks: (c) => extractionRound(c, rubrics, sources),
  next: (c, earlier) => nextRound(c, earlier, rubrics, sources),
  planned: (c) => plannedRounds(c, rubrics, sources)
})

/**
 * A stage's judgments plus claim precision, recall and F1 for the cases with a reference: the
 * stage's own specs and the claim extraction go in the first round; the checks follow. The stage
 * must be single-round (no `next` of its own). Cases have a reference only when the run names its
 * column (`--columns reference=…`), and only then does the run use (and name in its identity) the
 * claim rubrics: a run without one is the run it was before claims existed.
 */
export const withClaims = (stage: JudgeStage, rubrics: ClaimRubrics): JudgeStage => {
  const sources: ClaimSources = { contexts: false, nuggets: false }
  const claims = (c: EvalCase) => c.reference !== undefined
  return {
    rubrics: [...stage.rubrics, ...rubricIds(rubrics)],
    rubricsFor: (
      columns
    ) => (columns?.["reference"] === undefined ? stage.rubrics : [...stage.rubrics, ...rubricIds(rubrics)]),
    tasks: (c) => [...stage.tasks(c), ...(claims(c) ? extractionRound(c, rubrics, sources) : [])],
    next: (
      c: EvalCase,
      earlier: ReadonlyArray<Judgment>
    ): ReadonlyArray<JudgeSpec> => (claims(c) ? nextRound(c, earlier, rubrics, sources) : []),
    planned: (c) => [...stage.tasks(c), ...(claims(c) ? plannedRounds(c, rubrics, sources) : [])]
  }
}
