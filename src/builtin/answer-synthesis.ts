/**
 * answer-synthesis — faithfulness and completeness, pass/fail (SPEC §2.2).
 *
 * Input: a JSON/JSONL test set of `{ queryLogId, question, answer, context }` where context is the
 * list of retrieved items (courses with name, code and matched learning outcomes). Two independent
 * 1–5 judgments per answer: faithfulness (safety: only the context) and completeness (quality:
 * "bridging" each course to the user's goal). overall = (f + c) / 2; pass = both ≥ passAt.
 * With a reference answer field named by `--columns reference=…`, each answer is also checked claim
 * by claim against it (claim precision, recall, F1). Build a test set from query logs with `rag-eval build-test-set`. To change the threshold, copy this file
 * into your project (import from "rag-eval") and run it by its path.
 */
import * as Pipeline from "../engine/Pipeline.js"
import * as UserRubrics from "../judges/UserRubrics.js"
import { claimRubrics } from "../kinds/correctness/Claims.js"
import { withClaims } from "../kinds/correctness/ClaimStage.js"
import * as Reports from "../kinds/rubric/RubricReport.js"
import * as Scoring from "../kinds/rubric/RubricScore.js"
import * as Summary from "../kinds/rubric/RubricSummary.js"
import * as Synthesis from "../kinds/synthesis/AnswerSynthesis.js"
import * as SynthesisReports from "../kinds/synthesis/SynthesisReport.js"
import * as SynthesisScoring from "../kinds/synthesis/SynthesisScore.js"
import * as SynthesisSummary from "../kinds/synthesis/SynthesisSummary.js"

const config: SynthesisScoring.SynthesisConfig = {
  faithfulness: "answer-synthesis/faithfulness",
  completeness: "answer-synthesis/completeness",
  passAt: 4
}

/** What answer-synthesis gives its rubrics' templates (`synthesisVars`). */
const variables = ["question", "answer", "context"]

// Two record types, whichever the options choose: the engine is generic in them.
export default Pipeline.make<unknown, unknown>({
  name: "answer-synthesis",
  description:
    "Course-recommendation answers judged for faithfulness to the retrieved context (safety) and for explaining why each course fits (completeness); a case passes when both are ≥ 4. --rubrics DIR adds your own.",
  options: ["rubrics", "onlyRubrics"],
  build: (options) => {
    const own = UserRubrics.dimensionsOf(options, { builtin: [config.faithfulness, config.completeness], variables })
    if (own.only) {
      // Your rubrics alone: the generic rubric stages (their composite, distributions and reports).
      return {
        userRubrics: own.user,
        load: Synthesis.loadTestSet(),
        generate: { answer: true, contexts: true },
        judge: Synthesis.judgeSynthesis(own.dimensions.map((d) => d.rubric)),
        score: Scoring.rubricScore({ dimensions: own.dimensions, lowest: 5 }),
        aggregate: Summary.rubricSummary(),
        report: Reports.rubricReport({
          dimensions: own.dimensions,
          title: "Answer synthesis evaluation (your rubrics)"
        })
      } as Pipeline.PipelineStages<unknown, unknown>
    }
    const withExtra: SynthesisScoring.SynthesisConfig = { ...config, extra: own.dimensions.map((d) => d.rubric) }
    return {
      userRubrics: own.user,
      load: Synthesis.loadTestSet(),
      // `--target`: the answer (and, with --target-contexts, the context items) from the live system.
      generate: { answer: true, contexts: true },
      // With a reference answer field (--columns reference=…): claim precision, recall and F1 too.
      judge: withClaims(
        Synthesis.judgeSynthesis([config.faithfulness, config.completeness, ...withExtra.extra!]),
        claimRubrics
      ),
      score: SynthesisScoring.synthesisScore(withExtra, claimRubrics),
      aggregate: SynthesisSummary.synthesisSummary(withExtra),
      report: SynthesisReports.synthesisReport({ title: "Answer synthesis evaluation", config: withExtra })
    } as Pipeline.PipelineStages<unknown, unknown>
  }
})
