/**
 * The hook through which a run sends its judge calls to a cluster (`run … --cluster`) instead of
 * calling the judge itself. Absent (the default) in a local run.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { FatalJudgeError, OutputError } from "../domain/Errors.js"
import type { JudgeTask, Judgment, ListJudgeTask } from "../domain/Judgment.js"

export interface RemoteJudging {
  /** Judge calls the run keeps in flight (batches in flight × batch size): the ordered pool's workers. */
  readonly workers: number
  /**
   * One judge call's judgments (one per key), made by a runner and already in the run's journal;
   * undefined when the run stopped before it was sent.
   */
  readonly judge: (call: {
    readonly runId: string
    readonly keys: ReadonlyArray<string>
    readonly task: JudgeTask | ListJudgeTask
    /** What the journal held for the keys (a failure asked again is a new batch, not its stored reply). */
    readonly states?: ReadonlyArray<number | undefined> | undefined
  }) => Effect.Effect<ReadonlyArray<Judgment> | undefined, FatalJudgeError | OutputError>
}

export class ClusterJudging extends Context.Reference<ClusterJudging>()("rag-eval/ClusterJudging", {
  defaultValue: (): RemoteJudging | undefined => undefined
}) {}
