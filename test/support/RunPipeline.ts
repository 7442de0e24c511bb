/**
 * Run a pipeline in-process with test layers: a real file system (temp dirs), silent progress,
 * and the judge layer of the caller's choice (heuristic, or an LLM judge over the fake server); or
 * its `--dry-run` estimate with the same defaults (`estimateWith`).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Judgments from "../../src/engine/Judgments.js"
import { type AnyPipeline, instantiate, type Pipeline } from "../../src/engine/Pipeline.js"
import type { PipelineOptions } from "../../src/engine/PipelineOptions.js"
import * as Progress from "../../src/engine/Progress.js"
import { precomputed, Retriever } from "../../src/engine/Retriever.js"
import { estimate, run, type RunOptions } from "../../src/engine/Runner.js"
import * as Shutdown from "../../src/engine/Shutdown.js"
import type { Judge } from "../../src/judges/Judge.js"
import { all as allReporters, layer as reportersLayer, type Reporter } from "../../src/report/Reporter.js"
import * as JudgmentCache from "../../src/store/JudgmentCache.js"
import * as JudgmentJournal from "../../src/store/JudgmentJournal.js"

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url))
/** `../shared/data` beside the repository: present in CI and on developer machines, absent on a user's clone. */
export const sharedData = (name: string) => Path.resolve(repoRoot, "..", "shared", "data", name)
export const sharedCsv = sharedData("rag_evaluation_07_2025.csv")
export const hasShared = fs.existsSync(sharedCsv)

export const tempDir = (prefix = "rag-eval-") => fs.mkdtempSync(Path.join(os.tmpdir(), prefix))

/**
 * The one run directory a CLI run made under `--out out` for `pipeline`; throws when there is not
 * exactly one. (No `expect` here: the benchmarks import this file, and run outside vitest.)
 */
export const runDirIn = (out: string, pipeline: string) => {
  const root = Path.join(out, pipeline)
  const ids = fs.readdirSync(root)
  if (ids.length !== 1) throw new Error(`expected one run directory in ${root}, found ${ids.length}: ${ids.join(", ")}`)
  return Path.join(root, ids[0]!)
}

/** The run directory a CLI run named on the last line of its stdout (`run: <dir>`). */
export const printedRunDir = (stdout: string) =>
  Path.resolve(repoRoot, stdout.trim().split("\n").at(-1)!.slice("run: ".length))

/** A pipeline file of the repository, built with the given options (none: every default). */
export const loadPipelineModule = async (name: string, options: PipelineOptions = {}) =>
  instantiate(
    (await import(Path.join(repoRoot, "pipelines", `${name}.ts`))).default as AnyPipeline,
    options
  ) as Pipeline<unknown, unknown>

/** Every built-in pipeline with its sample test set (repository-relative). */
export const builtinSamples: ReadonlyArray<readonly [pipeline: string, input: string]> = [
  ["rag-answers", "test-sets/rag-answers/sample.csv"],
  ["answer-synthesis", "test-sets/answer-synthesis/sample.json"],
  ["answer-correctness", "test-sets/answer-correctness/sample.jsonl"],
  ["course-retrieval", "test-sets/course-retrieval/sample.json"],
  ["search-relevance", "test-sets/search-relevance/sample.jsonl"],
  ["evidence-retrieval", "test-sets/evidence-retrieval/sample.jsonl"]
]

/** What a test's run or estimate takes unless it says otherwise. */
const testDefaults = {
  iterations: 1,
  concurrency: 8,
  maxFailures: 0,
  command: "test",
  fresh: false,
  retryFailed: false
} as const

export const runWith = <R, S>(
  pipeline: Pipeline<R, S>,
  judge: Layer.Layer<Judge, unknown>,
  options: Partial<RunOptions> & {
    readonly input: string
    readonly outRoot: string
    readonly cache?: boolean
    readonly reporters?: ReadonlyArray<Reporter>
  }
) =>
  run(pipeline, { ...testDefaults, ...options }).pipe(
    Effect.provide(
      Layer.mergeAll(
        Judgments.layer.pipe(Layer.provide(judge)),
        Layer.succeed(Retriever, pipeline.retrieve ?? precomputed),
        JudgmentJournal.layerFile,
        reportersLayer(options.reporters ?? allReporters),
        Progress.layerSilent,
        NodeContext.layer
      ).pipe(Layer.provideMerge(Layer.merge(
        options.cache === true
          ? JudgmentCache.layerFile(JudgmentCache.cacheDir(options.outRoot))
          : JudgmentCache.layerNone,
        Shutdown.layerNever
      )))
    )
  )

/**
 * `--dry-run` of a pipeline in-process: `estimate` with the same defaults as `runWith`, no cache, and the
 * pipeline's retriever unless the caller gives one.
 */
export const estimateWith = <R, S>(
  pipeline: Pipeline<R, S>,
  judge: Layer.Layer<Judge, unknown>,
  options: Partial<RunOptions> & { readonly input: string; readonly outRoot: string },
  retriever: Layer.Layer<Retriever> = Layer.succeed(Retriever, pipeline.retrieve ?? precomputed)
) =>
  estimate(pipeline, { ...testDefaults, ...options }).pipe(
    Effect.provide(
      Layer.mergeAll(Judgments.layerEstimate.pipe(Layer.provide(judge)), retriever, NodeContext.layer).pipe(
        Layer.provideMerge(JudgmentCache.layerNone)
      )
    )
  )
