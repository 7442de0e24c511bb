/**
 * rag-answers — multi-dimension answer quality (SPEC §2.1).
 *
 * Input: a CSV (or JSON/JSONL) with the question, the conversation history, the numbered retrieved
 * fragments and the assistant's answer. Each answer is judged once per dimension; scores are
 * normalised (score / max) and combined into a weighted composite, gated by harmfulness. With a
 * reference answer column (`--columns reference=…`), the answer is also checked claim by claim
 * against it (claim precision, recall and F1, as answer-correctness computes them).
 * To change weights, the gate or the column names, copy this file into your project (import from
 * "rag-eval" instead of the relative paths) and run it by its path.
 */
import * as Pipeline from "../engine/Pipeline.js"
import * as Stages from "../engine/Stages.js"
import * as UserRubrics from "../judges/UserRubrics.js"
import { claimRubrics } from "../kinds/correctness/Claims.js"
import { withClaims } from "../kinds/correctness/ClaimStage.js"
import * as Reports from "../kinds/rubric/RubricReport.js"
import * as Scoring from "../kinds/rubric/RubricScore.js"
import * as Summary from "../kinds/rubric/RubricSummary.js"
import * as Columns from "../load/CaseMapping.js"

const dimensions: ReadonlyArray<Scoring.Dimension> = [
  { rubric: "rag-answers/answer-relevance", weight: 1.0 },
  { rubric: "rag-answers/clarity", weight: 1.0 },
  { rubric: "rag-answers/completeness", weight: 1.0 },
  { rubric: "rag-answers/conciseness", weight: 1.0 },
  { rubric: "rag-answers/groundedness", weight: 1.0 },
  { rubric: "rag-answers/harmfulness", weight: 1.0 }
]

/** Harmful (0) → composite 0; questionable (1) → harmfulness weighs 1.5 in that row. */
const gate: Scoring.Gate = { rubric: "rag-answers/harmfulness", zeroAt: [0], weightAt: { 1: 1.5 } }

/** What rag-answers gives its rubrics' templates (`Stages.answerVars`). */
const variables = ["question", "history", "passages", "answer"]

export default Pipeline.make({
  name: "rag-answers",
  description:
    "RAG answer quality on six rubric dimensions, with a harmfulness-gated weighted composite; --rubrics DIR adds your own.",
  options: ["rubrics", "onlyRubrics"],
  build: (options) => {
    const own = UserRubrics.dimensionsOf(options, { builtin: dimensions.map((d) => d.rubric), variables })
    // --only-rubrics: the user's rubrics alone, so no harmfulness gate.
    const dims = own.only ? own.dimensions : [...dimensions, ...own.dimensions]
    const gated = own.only ? undefined : gate
    return {
      userRubrics: own.user,
      load: Stages.loadRows({ columns: Columns.ragAnswersColumns }),
      // `--target`: the answer (and, with --target-contexts, the fragments) from the live system.
      generate: Stages.generatesAnswer,
      // With a reference column (--columns reference=…): claim precision, recall and F1 too.
      judge: withClaims(Stages.judgeAnswer(dims.map((d) => d.rubric)), claimRubrics),
      score: Scoring.rubricScore({ dimensions: dims, gate: gated, claims: claimRubrics, lowest: 5 }),
      aggregate: Summary.rubricSummary(),
      report: Reports.rubricReport({ dimensions: dims, gate: gated, title: "RAG answer evaluation" })
    }
  }
})
