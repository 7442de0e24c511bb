/**
 * rag-eval as a library: the stages pipeline files compose, the runner, and the service Tags
 * whose Layers the CLI chooses (judge, provider, retriever, journal, reporters, progress).
 */
export * as Pipeline from "./pipeline/Pipeline.js"
export * as Stages from "./pipeline/Stages.js"
export * as Runner from "./pipeline/Runner.js"
export * as Retriever from "./pipeline/Retriever.js"
export * as Scoring from "./pipeline/RubricScore.js"
export * as Summary from "./pipeline/RubricSummary.js"
export * as Reports from "./report/RubricReport.js"
export * as Columns from "./load/CaseMapping.js"
export * as Judge from "./judges/Judge.js"
export * as HeuristicJudge from "./judges/HeuristicJudge.js"
export * as LlmJudge from "./judges/LlmJudge.js"
export * as LlmProvider from "./providers/LlmProvider.js"
export * as OpenAiProvider from "./providers/OpenAiProvider.js"
export * as RateGate from "./providers/RateGate.js"
export * as JudgmentJournal from "./store/JudgmentJournal.js"
export * as Errors from "./domain/Errors.js"
export type { EvalCase, Passage } from "./domain/Case.js"
export type { Judgment, JudgeTask, Verdict } from "./domain/Judgment.js"
export type { Rubric } from "./domain/Rubric.js"
