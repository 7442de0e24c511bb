/**
 * answer-correctness — answers checked claim by claim (SPEC §2.6).
 *
 * Input: CSV, JSON or JSONL with `id`, `question`, `answer` and at least one of `reference` (the
 * gold answer), `contexts` (the retrieved passages) and `nuggets`. The answer and the reference are
 * decomposed into claims; each claim is checked against the reference, the answer and each context
 * (entailed, neutral, contradicted). Per case: precision, recall and F1 against the reference;
 * faithfulness and the context metrics against the contexts (RAGChecker); nugget recall (TREC RAG
 * 2024); the unsupported claims counted; whether the answer abstained; pass or fail by `--pass-if`.
 * To change it, copy this file into your project (import from "rag-eval") and run it by its path.
 */
import * as Effect from "effect/Effect"
import { InputError } from "../domain/Errors.js"
import * as Pipeline from "../engine/Pipeline.js"
import { claimRubrics } from "../kinds/correctness/Claims.js"
import { claimStage } from "../kinds/correctness/ClaimStage.js"
import { loadCorrectness } from "../kinds/correctness/CorrectnessInput.js"
import { correctnessReport } from "../kinds/correctness/CorrectnessReport.js"
import { correctnessScore, DEFAULT_PASS_IF, parsePassIf } from "../kinds/correctness/CorrectnessScore.js"
import { correctnessSummary } from "../kinds/correctness/CorrectnessSummary.js"

export default Pipeline.make({
  name: "answer-correctness",
  description:
    "Answers checked claim by claim against a reference answer, the retrieved passages or nuggets: what the answer got right, missed and made up (RAGChecker's claim metrics, TREC RAG nugget recall), and pass or fail per case.",
  options: ["passIf"],
  build: (options) => {
    const parsed = parsePassIf(options.passIf ?? DEFAULT_PASS_IF)
    const load = loadCorrectness()
    return {
      // A bad --pass-if is refused before anything is judged, with the flag and the problem (exit 2).
      load: "problem" in parsed
        ? {
          ...load,
          checkColumns: () => Effect.fail(new InputError({ file: "--pass-if", problem: parsed.problem }))
        }
        : load,
      // `--target`: the answer (and, with --target-contexts, the passages) from the live system.
      generate: { answer: true, contexts: true },
      judge: claimStage(claimRubrics),
      score: correctnessScore(claimRubrics, "problem" in parsed ? [] : parsed.conditions),
      aggregate: correctnessSummary(),
      report: correctnessReport({ title: "Answer correctness, claim by claim" })
    }
  }
})
