/**
 * The judge seen by pipeline stages: a task in, a verdict out. It never fails — an unusable answer
 * after all retries is a verdict with `status: "failed"`, `score: null` and the reason.
 * Layers: `HeuristicJudge.layer` (offline, deterministic) and `LlmJudge.layer` (over `LlmProvider`).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { JudgeTask, ListJudgeTask, Verdict } from "../domain/Judgment.js"

export class Judge extends Context.Tag("rag-eval/Judge")<Judge, {
  /** `heuristic`, `openai`, `mistral`, … */
  readonly provider: string
  readonly model: string
  /** Human label used in every report, e.g. "heuristic judge (lexical, deterministic)". */
  readonly label: string
  /** Parameters that change verdicts (temperature, seed…): recorded and part of judgment keys. */
  readonly params: Readonly<Record<string, unknown>>
  /** True when verdicts are computed locally and synchronously (the runner then batches work). */
  readonly local: boolean
  readonly judge: (task: JudgeTask) => Effect.Effect<Verdict>
  /**
   * Listwise: every item of the task in one call, one verdict per item in order. Never fails either;
   * the call's tokens are shared among the items' verdicts (`splitUsage`).
   */
  readonly judgeList: (task: ListJudgeTask) => Effect.Effect<ReadonlyArray<Verdict>>
  /**
   * Local judges may also offer plain synchronous versions (same verdicts): the runner then judges a
   * batch of cases in a plain loop, without an Effect per judgment.
   */
  readonly sync?: {
    readonly judge: (task: JudgeTask) => Verdict
    readonly judgeList: (task: ListJudgeTask) => ReadonlyArray<Verdict>
  } | undefined
}>() {}
