/**
 * Run the rag-answers pipeline in-process through the real runner (`src/engine/Runner.ts`), with
 * the CLI's default reporters (markdown + csv), the file journal, silent progress and the judge
 * layer of the caller's choice — and time its phases without touching src/:
 *
 * - the Judge service is wrapped to note the first judge call and the last verdict;
 * - each Reporter is wrapped to time its `write`;
 * so a run splits into: setup + validation (start → first judge call), judging (first call → last
 * verdict), records tail (last verdict → first report), reports, and the final summary/manifest.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer, Redacted } from "effect"
import { performance } from "node:perf_hooks"
import * as Judgments from "../src/engine/Judgments.js"
import { type AnyPipeline, instantiate, type Pipeline } from "../src/engine/Pipeline.js"
import * as Progress from "../src/engine/Progress.js"
import { precomputed, Retriever } from "../src/engine/Retriever.js"
import { run, type RunOutcome } from "../src/engine/Runner.js"
import * as Shutdown from "../src/engine/Shutdown.js"
import * as HeuristicJudge from "../src/judges/HeuristicJudge.js"
import { Judge } from "../src/judges/Judge.js"
import * as LlmJudge from "../src/judges/LlmJudge.js"
import * as OpenAiProvider from "../src/providers/OpenAiProvider.js"
import * as RateGate from "../src/providers/RateGate.js"
import { csv, markdown, type Reporter, Reporters } from "../src/report/Reporter.js"
import * as JudgmentCache from "../src/store/JudgmentCache.js"
import * as JudgmentJournal from "../src/store/JudgmentJournal.js"

export const loadRagAnswers = async () =>
  instantiate((await import("../pipelines/rag-answers.js")).default as AnyPipeline, {}) as Pipeline<unknown, unknown>

/**
 * LLM judge over an OpenAI-compatible endpoint (the fake server), behind a RateGate of `concurrency`.
 * No preflight: the figures are throughput, and the preflight is one request before it (one round
 * trip, overlapping validation); bench [6] runs the CLI with it.
 */
export const llmJudgeLayer = (baseURL: string, concurrency: number) =>
  LlmJudge.layer({ preflight: false }).pipe(
    Layer.provide(Layer.merge(
      OpenAiProvider.layer({
        provider: "openai-compatible",
        model: "fake-judge",
        baseURL,
        apiKey: Redacted.make("bench-key"),
        timeoutMs: 60_000
      }),
      RateGate.layer({ concurrency })
    ))
  )

export const heuristicJudgeLayer = HeuristicJudge.layer

export interface PhaseTimes {
  /** ms since the run effect started (performance.now() based). */
  firstJudgeCall: number | undefined
  lastVerdict: number | undefined
  reportStart: number | undefined
  reportEnd: number | undefined
  reports: Array<{ format: string; ms: number }>
  calls: number
}

export interface TimedRun {
  readonly outcome: RunOutcome<unknown>
  /** performance.now() when the run effect started; phase marks below are relative to it. */
  readonly startMs: number
  readonly marks: {
    readonly firstJudgeCall: number
    readonly lastVerdict: number
    readonly reportStart: number
    readonly reportEnd: number
  }
  readonly wallMs: number
  /** Process CPU (user + system) during the run, ms. */
  readonly cpuMs: number
  readonly phases: {
    readonly setupAndValidationMs: number
    readonly judgingMs: number
    readonly recordsTailMs: number
    readonly reportsMs: number
    readonly reportsByFormat: ReadonlyArray<{ format: string; ms: number }>
    readonly finishMs: number
  }
}

const timedJudge = (times: PhaseTimes, t0: () => number) =>
  Layer.effect(
    Judge,
    Effect.map(Judge, (inner) =>
      Judge.of({
        ...inner,
        judge: (task) => {
          times.calls++
          if (times.firstJudgeCall === undefined) times.firstJudgeCall = performance.now() - t0()
          return Effect.map(inner.judge(task), (v) => {
            times.lastVerdict = performance.now() - t0()
            return v
          })
        },
        // The runner's synchronous path for local judges, timed the same way.
        sync: inner.sync === undefined ? undefined : {
          judge: (task) => {
            times.calls++
            if (times.firstJudgeCall === undefined) times.firstJudgeCall = performance.now() - t0()
            const v = inner.sync!.judge(task)
            times.lastVerdict = performance.now() - t0()
            return v
          },
          judgeList: inner.sync.judgeList
        }
      }))
  )

const timedReporter = (reporter: Reporter, times: PhaseTimes, t0: () => number): Reporter => ({
  format: reporter.format,
  write: (input) =>
    Effect.suspend(() => {
      const start = performance.now()
      if (times.reportStart === undefined) times.reportStart = start - t0()
      return Effect.ensuring(
        reporter.write(input),
        Effect.sync(() => {
          const end = performance.now()
          times.reports.push({ format: reporter.format, ms: end - start })
          times.reportEnd = end - t0()
        })
      )
    })
})

/** One run of `pipeline` over `input`, writing under `outRoot`, with phase timings. */
export const timedRun = (
  pipeline: Pipeline<unknown, unknown>,
  judge: Layer.Layer<Judge, unknown>,
  options: {
    readonly input: string
    readonly outRoot: string
    readonly concurrency: number
    readonly reporters?: ReadonlyArray<Reporter>
    /** The cross-run judgment cache: "file" is the CLI default (under `<outRoot>/.cache`), "none" is --no-cache. */
    readonly cache?: "file" | "none"
    /** Around the whole run, e.g. tracing off (as the CLI without --trace-otlp) or an OTLP tracer (bench/tracing.ts). */
    readonly around?: <A, E>(self: Effect.Effect<A, E>) => Effect.Effect<A, E>
  }
): Promise<TimedRun> => {
  const times: PhaseTimes = {
    firstJudgeCall: undefined,
    lastVerdict: undefined,
    reportStart: undefined,
    reportEnd: undefined,
    reports: [],
    calls: 0
  }
  let start = 0
  const t0 = () => start
  const reporters = (options.reporters ?? [markdown, csv]).map((r) => timedReporter(r, times, t0))
  const layers = Layer.mergeAll(
    Judgments.layer.pipe(Layer.provide(timedJudge(times, t0).pipe(Layer.provide(judge)))),
    Layer.succeed(Retriever, pipeline.retrieve ?? precomputed),
    JudgmentJournal.layerFile,
    Layer.succeed(Reporters, reporters),
    Progress.layerSilent,
    NodeContext.layer
  ).pipe(Layer.provideMerge(Layer.merge(
    options.cache === "file"
      ? JudgmentCache.layerFile(JudgmentCache.cacheDir(options.outRoot))
      : JudgmentCache.layerNone,
    Shutdown.layerNever
  )))
  const program = Effect.suspend(() => {
    start = performance.now()
    return run(pipeline, {
      input: options.input,
      outRoot: options.outRoot,
      iterations: 1,
      concurrency: options.concurrency,
      maxFailures: 0,
      command: "bench",
      fresh: true,
      retryFailed: false
    })
  })
  return Effect.runPromise(
    Effect.gen(function*() {
      const cpu = process.cpuUsage()
      const provided = Effect.provide(program, layers)
      const outcome = yield* (options.around === undefined ? provided : options.around(provided))
      const wallMs = performance.now() - start
      const used = process.cpuUsage(cpu)
      const first = times.firstJudgeCall ?? 0
      const last = times.lastVerdict ?? first
      const reportStart = times.reportStart ?? last
      const reportEnd = times.reportEnd ?? reportStart
      return {
        outcome,
        startMs: start,
        marks: { firstJudgeCall: first, lastVerdict: last, reportStart, reportEnd },
        wallMs,
        cpuMs: (used.user + used.system) / 1000,
        phases: {
          setupAndValidationMs: first,
          judgingMs: last - first,
          recordsTailMs: reportStart - last,
          reportsMs: reportEnd - reportStart,
          reportsByFormat: times.reports,
          finishMs: wallMs - reportEnd
        }
      } satisfies TimedRun
    }) as Effect.Effect<TimedRun, unknown>
  )
}
