/**
 * `rag-eval report <run-dir>`: re-render every report of a run from its journal, with no API call.
 * The manifest says how the run was made (pipeline, input, judge, settings); the input must be
 * unchanged (same sha256), and every judgment must be in the journal.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Path from "node:path"
import { InputError, type OutputError, UsageError } from "../domain/Errors.js"
import type { Threshold } from "../domain/Gate.js"
import { traitsOfProvider } from "../domain/JudgeTraits.js"
import { readManifest } from "../domain/RunFiles.js"
import * as Judgments from "../engine/Judgments.js"
import { instantiate } from "../engine/Pipeline.js"
import * as Progress from "../engine/Progress.js"
import { precomputed, Retriever } from "../engine/Retriever.js"
import { run } from "../engine/Runner.js"
import { scanInput } from "../load/Rows.js"
import { layer as reportersLayer, type Reporter } from "../report/Reporter.js"
import { decodeVariables } from "../retrieval/RetrievalSetup.js"
import * as JudgmentJournal from "../store/JudgmentJournal.js"
import * as Generate from "../target/Generate.js"
import { isPipelineName, loadPipeline, promptDirsFor } from "./LoadPipeline.js"
import { recordedToOptions } from "./PipelineSettings.js"

/** `journal`: the run's journal when it is not the run directory's file (`--store postgres://…`). */
export const reportRun = (
  runDir: string,
  reporters: ReadonlyArray<Reporter>,
  options: {
    readonly partial?: boolean
    readonly details?: number
    readonly gates?: ReadonlyArray<Threshold> | undefined
    readonly journal?: Layer.Layer<JudgmentJournal.JudgmentJournal, OutputError> | undefined
  } = {}
) =>
  Effect.gen(function*() {
    const m = yield* readManifest(runDir)
    const manifestPath = Path.join(runDir, "manifest.json")
    const from = (p: string) => (Path.isAbsolute(p) || m.cwd === undefined ? p : Path.resolve(m.cwd, p))
    if (m.pipeline.file === undefined) {
      return yield* new UsageError({ problem: `${manifestPath} does not name its pipeline file` })
    }
    // The pipeline with the options it ran with, not whatever this shell or config has.
    const pipelineFile = isPipelineName(m.pipeline.file) ? m.pipeline.file : from(m.pipeline.file)
    const definition = yield* loadPipeline(pipelineFile)
    const pipelineOptions = m.options !== undefined
      ? recordedToOptions(m.options)
      : Either.map(Either.mapLeft(decodeVariables(m.env ?? {}), (e) => e.message), (d) => d.options)
    if (Either.isLeft(pipelineOptions)) {
      return yield* new InputError({ file: manifestPath, problem: pipelineOptions.left })
    }
    const pipeline = instantiate(definition, pipelineOptions.right)
    // From the run's own directory the path stays as the run recorded it, so reports come out the same.
    const input = m.cwd === process.cwd() ? m.input.path : from(m.input.path)
    const scan = yield* scanInput(input)
    if (scan.sha256 !== m.input.sha256) {
      return yield* new InputError({
        file: input,
        problem: `changed since run ${m.runId} was made (sha256 differs); its judgments no longer describe this file`
      })
    }
    // The run's judge, as far as keys and the run's identity go: nothing is called, the journal answers.
    const replay = Judgments.layerReplay({
      provider: m.judge.provider,
      model: m.judge.model,
      label: m.judge.label,
      params: m.judge.params,
      endpoint: m.judge.endpoint,
      traits: traitsOfProvider(m.judge.provider)
    }, { partial: options.partial })
    // A run that asked a live system (--target): its answers from the run's target journal, never asked again.
    const target = m.target === undefined ? Layer.empty : Generate.layerReplay(m.target)
    return yield* run(pipeline, {
      input,
      outRoot: Path.dirname(Path.dirname(runDir)),
      runId: m.runId,
      limit: m.limit,
      iterations: m.iterations,
      concurrency: m.concurrency,
      maxFailures: m.maxFailures ?? 0,
      command: m.command,
      pipelineFile: m.pipeline.file,
      promptDirs: promptDirsFor(pipelineFile),
      columns: m.columns === undefined
        ? undefined
        : Object.fromEntries(Object.entries(m.columns).map(([role, column]) => [role, column ?? undefined])),
      price: m.price ?? undefined,
      fresh: false,
      retryFailed: false,
      details: options.details,
      gates: options.gates
    }).pipe(Effect.provide(Layer.mergeAll(
      replay,
      target,
      Layer.succeed(Retriever, pipeline.retrieve ?? precomputed),
      options.journal ?? JudgmentJournal.layerFile,
      reportersLayer(reporters),
      // A million-case run's reports take minutes: progress on stderr (none for a quick one off a terminal).
      Progress.layerStderrReplay
    )))
  })
