/**
 * The judge seen by pipeline stages: a task in, a verdict out. A judgment that could not be made —
 * an unusable answer after its repairs, a request the provider refused, a server that kept failing —
 * is a verdict with `status: "failed"`, `score: null` and the reason (journaled). Two outcomes are
 * not verdicts: `JudgeStopped` (the run is stopping and this judgment never started: nothing to
 * journal, a resume asks it) and `FatalJudgeError` (the provider is misconfigured — key, model, URL,
 * unsupported request, unreachable — so every judgment would fail: the run stops).
 * Layers: `HeuristicJudge.layer` (offline, deterministic) and `LlmJudge.layer` (over `LlmProvider`).
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type { FatalJudgeError, OutputError } from "../domain/Errors.js"
import type { JudgeTraits } from "../domain/JudgeTraits.js"
import type { JudgeTask, ListJudgeTask, Verdict } from "../domain/Judgment.js"
import type { StructuredOutput } from "../providers/LlmProvider.js"
import type { RateGateStats } from "../providers/RateGate.js"
import type { BatchCalls } from "./CallReader.js"

/** The run stopped (Ctrl+C, or a fatal error elsewhere) while this judgment waited: it was never asked. */
export class JudgeStopped extends Data.TaggedError("JudgeStopped")<{}> {}

/** What a preflight found: how answers are constrained, what it cost. */
export interface PreflightReport {
  readonly structuredOutput: StructuredOutput
  readonly inputTokens: number
  readonly outputTokens: number
  readonly latencyMs: number
}

export class Judge extends Context.Tag("rag-eval/Judge")<Judge, {
  /** `heuristic`, `openai`, `mistral`, … */
  readonly provider: string
  readonly model: string
  /** Human label used in every report, e.g. "heuristic judge (lexical, deterministic)". */
  readonly label: string
  /** Parameters that change verdicts (temperature, seed…): recorded and part of judgment keys. */
  readonly params: Readonly<Record<string, unknown>>
  /** What callers need to know about this judge (local, deterministic, a language model): `domain/JudgeTraits.ts`. */
  readonly traits: JudgeTraits
  /**
   * The server, when it is not the provider's public API (credentials removed): part of every
   * judgment key and the run id, so another server's judgments are never reused for this one.
   */
  readonly endpoint?: string | undefined
  /** `OutputError`: a reply awaiting repair could not be journaled (a full disk): the run stops. */
  readonly judge: (task: JudgeTask) => Effect.Effect<Verdict, JudgeStopped | FatalJudgeError | OutputError>
  /**
   * Listwise: every item of the task in one call, one verdict per item in order; the call's tokens
   * are shared among the items' verdicts (`splitUsage`).
   */
  readonly judgeList: (
    task: ListJudgeTask
  ) => Effect.Effect<ReadonlyArray<Verdict>, JudgeStopped | FatalJudgeError | OutputError>
  /**
   * Remote judges: one minimal request before judging, so a bad key, model, URL or unsupported
   * structured-output mode is reported at once (and the mode falls back when the server needs it).
   * Absent for local judges, and with `--no-preflight`.
   */
  readonly preflight?: Effect.Effect<PreflightReport, JudgeStopped | FatalJudgeError> | undefined
  /** Remote judges: the rate gate's state (concurrency, 429s, pace), for progress and the manifest. */
  readonly gate?: Effect.Effect<RateGateStats> | undefined
  /** Remote judges whose provider has a Batch API: their calls as data (`--batch`). */
  readonly calls?: BatchCalls | undefined
  /** Remote judges: how answers are constrained now (after the preflight's fallback, if any). */
  readonly structuredOutput?: (() => StructuredOutput) | undefined
  /**
   * Judges that run locally may also offer plain synchronous versions (same verdicts): the runner
   * then judges a batch of cases in a plain loop, without an Effect per judgment.
   */
  readonly sync?: {
    readonly judge: (task: JudgeTask) => Verdict
    readonly judgeList: (task: ListJudgeTask) => ReadonlyArray<Verdict>
  } | undefined
}>() {}
