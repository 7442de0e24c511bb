/**
 * The generate stage's port: what the engine asks of a live system under test (`--target`) before a
 * case is judged, and nothing of how it is asked. The stage itself — keys, journal lines, retries,
 * the rate gate, the preflight, replay and estimate — is `target/Generate.ts`; what a target adds to
 * a pipeline's records, metrics and reports is `target/GeneratedView.ts`. The CLI provides the layer
 * (`target/Generate.ts` `layerLive`, `layerEstimate`, `layerReplay`); a run without `--target` has
 * none, and the engine never loads the target's code.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { EvalCase } from "../domain/Case.js"
import type { FatalJudgeError, OutputError, UsageError } from "../domain/Errors.js"
import type { TargetFields } from "../domain/RunFiles.js"
import type { RateGateStats } from "../providers/RateGate.js"
import type { OpenedJournal } from "../store/JudgmentJournal.js"
import type { Generates, Pipeline } from "./Pipeline.js"

/** The run directory's folder of the target's journal (`target/judgments.jsonl`): the engine opens it. */
export const TARGET_JOURNAL_DIR = "target"

/**
 * The target as the manifest records it (`RunFiles.TargetFields` without this invocation's counts):
 * masked configuration, its identity hash, the run settings.
 */
export type TargetDescription = Omit<typeof TargetFields.Type, "calls" | "rateLimited">

/** What a run tells the stage about itself. */
export interface GenerateContext {
  /** The run's target journal (read-only for `--dry-run`; absent for a fresh dry run). */
  readonly journal?: OpenedJournal | undefined
  readonly retryFailed: boolean
  /** `report --partial`: a case the journal lacks is left out instead of failing the replay. */
  readonly partial?: boolean | undefined
  /**
   * Later iterations will ask for the same cases: keep this invocation's answers in memory (the
   * journal's index holds what it held when opened, not what is appended since).
   */
  readonly remember?: boolean | undefined
}

/** The stage, opened for one run. */
export interface RunGenerating {
  /** The case as it is judged: answered, failed (with the reason), or skipped (the run is stopping). */
  readonly generate: (c: EvalCase, fills: Generates) => Effect.Effect<EvalCase, OutputError | UsageError>
  /** The first fatal error (401, 404, refused…): the run stops with its line. */
  readonly fatal: () => FatalJudgeError | undefined
  /** This invocation's counts: calls made (or, for `--dry-run`, that would be made), answers reused from the journal, failures. */
  readonly counts: { asked: number; reused: number; failed: number }
}

export class Generator extends Context.Tag("rag-eval/Generator")<Generator, {
  readonly mode: "live" | "replay" | "estimate"
  readonly description: TargetDescription
  /** Calls in flight at once (the stage's stream runs this many cases at a time). */
  readonly concurrency: number
  readonly open: (run: GenerateContext) => Effect.Effect<RunGenerating>
  /** The target's rate gate (live only). */
  readonly gate?: Effect.Effect<RateGateStats> | undefined
  /**
   * The pipeline with what the target adds to its records (how each answer was asked), per-case and
   * headline metrics (latency) and reports. The pipeline's own stages are untouched: this wraps them.
   */
  readonly decorate: <R, X>(pipeline: Pipeline<R, X>) => Pipeline<R, X>
}>() {}
