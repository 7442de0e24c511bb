/**
 * The built-in pipelines, addressable by name (`rag-eval run rag-answers …`) from any directory and
 * after `npm install rag-eval`. Each file is a complete pipeline definition: copy one into a project
 * (importing from "rag-eval") to change it, and run it by its path.
 */
import type { OptionName } from "../engine/OptionSpecs.js"
import { type AnyPipeline, declaredOptions, instantiate } from "../engine/Pipeline.js"
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

/** The built-in pipelines' names, in order (what `run --help` lists). */
export const builtinNames: ReadonlyArray<string> = [...builtins.keys()]

/**
 * The built-in pipelines that accept `--target` (they declare what the live system fills, `generate`),
 * as their help names them: read off the pipelines themselves, built with their defaults.
 */
export const targetPipelines: ReadonlyArray<string> = [...builtins].filter(([, p]) =>
  instantiate(p, {}).generate !== undefined
).map(([name]) => name)

/** The built-in pipelines that take an option (`--listwise`, `--rubrics`…), as its help names them. */
export const builtinsTaking = (option: OptionName): ReadonlyArray<string> =>
  [...builtins].filter(([, p]) => declaredOptions(p).includes(option)).map(([name]) => name)
