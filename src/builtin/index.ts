/**
 * The built-in pipelines, addressable by name (`rag-eval run rag-answers …`) from any directory and
 * after `npm install rag-eval`. Each file is a complete pipeline definition: copy one into a project
 * (importing from "rag-eval") to change it, and run it by its path.
 */
import type { AnyPipeline } from "../engine/Pipeline.js"
import { correctnessInput } from "../kinds/correctness/CorrectnessInput.js"
import { courseInput } from "../kinds/course/CourseRetrieval.js"
import { evidenceInput } from "../kinds/evidence/EvidenceRetrieval.js"
import { searchInput } from "../kinds/search/SearchRelevance.js"
import { synthesisInput } from "../kinds/synthesis/AnswerSynthesis.js"
import { ragAnswersInput } from "../load/CaseMapping.js"
import type { InputDoc } from "../load/InputFields.js"
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

/** What each built-in pipeline reads (its loader's declaration), for `rag-eval pipelines` and `run <name> --help`. */
export const builtinInputs: ReadonlyMap<string, InputDoc> = new Map<string, InputDoc>([
  ["rag-answers", ragAnswersInput],
  ["answer-synthesis", synthesisInput],
  ["answer-correctness", correctnessInput],
  ["course-retrieval", courseInput],
  ["search-relevance", searchInput],
  ["evidence-retrieval", evidenceInput]
])
