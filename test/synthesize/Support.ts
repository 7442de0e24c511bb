/**
 * Synthesis in-process with test layers: a real file system (temp dirs), silent progress, the judge of
 * the caller's choice (the heuristic, or an LLM judge over the fake server), the journal in files.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer } from "effect"
import type { UsageError } from "../../src/domain/Errors.js"
import * as Judgments from "../../src/engine/Judgments.js"
import * as Progress from "../../src/engine/Progress.js"
import * as Shutdown from "../../src/engine/Shutdown.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import type { Judge } from "../../src/judges/Judge.js"
import * as JudgmentCache from "../../src/store/JudgmentCache.js"
import * as JudgmentJournal from "../../src/store/JudgmentJournal.js"
import { dryRun, synthesize, type SynthesizeOptions } from "../../src/synthesize/Synthesize.js"

const layers = (judge: Layer.Layer<Judge, UsageError>, estimate = false) =>
  Layer.mergeAll(
    (estimate ? Judgments.layerEstimate : Judgments.layer).pipe(Layer.provide(judge)),
    JudgmentJournal.layerFile,
    Progress.layerSilent,
    NodeContext.layer
  ).pipe(Layer.provideMerge(Layer.merge(JudgmentCache.layerNone, Shutdown.layerNever)))

export const synthesizeWith = (
  options: SynthesizeOptions,
  judge: Layer.Layer<Judge, UsageError> = HeuristicJudge.layer
) => synthesize(options).pipe(Effect.provide(layers(judge)))

export const dryRunWith = (options: SynthesizeOptions, judge: Layer.Layer<Judge, UsageError> = HeuristicJudge.layer) =>
  dryRun(options).pipe(Effect.provide(layers(judge, true)))
