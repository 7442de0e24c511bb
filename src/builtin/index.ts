/**
 * The built-in pipelines, addressable by name (`rag-eval run rag-answers …`) from any directory and
 * after `npm install rag-eval`. Each file is a complete pipeline definition: copy one into a project
 * (importing from "rag-eval") to change it, and run it by its path.
 */
import type { AnyPipeline } from "../engine/Pipeline.js"
import answerCorrectness from "./answer-correctness.js"
import answerSynthesis from "./answer-synthesis.js"
import courseRetrieval from "./course-retrieval.js"
import evidenceRetrieval from "./evidence-retrieval.js"
import ragAnswers from "./rag-answers.js"
import searchRelevance from "./search-relevance.js"

export { answerCorrectness, answerSynthesis, courseRetrieval, evidenceRetrieval, ragAnswers, searchRelevance }

/** Built-in pipelines by name, in the order `rag-eval pipelines` lists them. */
export const builtins: ReadonlyMap<string, AnyPipeline> = new Map<string, AnyPipeline>([
  ["rag-answers", ragAnswers],
  ["answer-synthesis", answerSynthesis],
  ["answer-correctness", answerCorrectness],
  ["course-retrieval", courseRetrieval],
  ["search-relevance", searchRelevance],
  ["evidence-retrieval", evidenceRetrieval]
])
