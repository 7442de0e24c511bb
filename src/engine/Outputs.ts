/**
 * What a run writes besides its journal: the manifest (rewritten as the run starts, stops and ends),
 * each iteration's metrics, cost, low scores and reports, and the final metrics and summary.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import { thousands } from "../domain/Numbers.js"
import type { Rubric } from "../domain/Rubric.js"
import { encodeJson, Manifest, Summary } from "../domain/RunFiles.js"
import { readJsonLines, readJsonLinesAt, writeAtomic, writeFileAtomic, writeJsonAtomic } from "../io/Files.js"
import type { PreflightReport } from "../judges/Judge.js"
import { type Cost, cost, formatUsd, sumTokens, tokensOfCost } from "../pricing/Prices.js"
import type { StructuredOutput } from "../providers/LlmProvider.js"
import type { RateGateStats } from "../providers/RateGate.js"
import { viewOf } from "./DefaultView.js"
import type { ChosenDetails } from "./Details.js"
import { headlineSpecs, headlineValues } from "./Headline.js"
import { finalMarkdown, finalMetrics } from "./Iterations.js"
import type { Pipeline, RunInfo, RunSummary } from "./Pipeline.js"
import { Reporters, type ReportInput } from "./ReportInput.js"
import type { RunOptions, Validated } from "./RunTypes.js"
import { summaryJson } from "./Summary.js"

/** What changes in the manifest as the run goes: its status and, once known, its counts, cost and files. */
export type ManifestProgress =
  & Pick<Manifest, "status">
  & Partial<
    Pick<
      Manifest,
      | "stoppedAt"
      | "stoppedBy"
      | "endedAt"
      | "counts"
      | "tokens"
      | "cost"
      | "rateControl"
      | "batch"
      | "files"
      | "target"
    >
  >

/** The manifest of a run, given what is known so far (its status, counts, files…), typed by `RunFiles.Manifest`. */
export const manifestOf = <R, X>(parts: {
  readonly pipeline: Pipeline<R, X>
  readonly options: RunOptions
  readonly info: RunInfo
  readonly identityHash: string
  readonly input: Validated
  readonly rubricList: ReadonlyArray<Rubric>
  readonly structuredOutput?: (() => StructuredOutput) | undefined
  readonly startedAt: string
  readonly preflight: () => PreflightReport | undefined
}) =>
(progress: ManifestProgress): Manifest => {
  const { pipeline, options, info } = parts
  const preflight = parts.preflight()
  return {
    tool: "rag-eval",
    ...options.manifestExtra,
    node: process.version,
    command: options.command,
    cwd: process.cwd(),
    pipeline: { name: pipeline.name, file: options.pipelineFile },
    runId: info.runId,
    identity: parts.identityHash,
    input: info.input,
    columns: options.columns === undefined
      ? undefined
      : Object.fromEntries(Object.entries(options.columns).map(([role, column]) => [role, column ?? null])),
    limit: options.limit,
    iterations: options.iterations,
    judgmentsPerIteration: parts.input.tasks,
    concurrency: options.concurrency,
    maxFailures: options.maxFailures,
    judge: info.judge,
    retriever: info.retriever,
    price: options.price ?? null,
    prompts: parts.rubricList.map((r) => ({ id: r.id, version: r.version, hash: r.hash, path: r.path })),
    metricSpecs: headlineSpecs(pipeline, info),
    caseMetricSpecs: pipeline.score.perCase.declared(info),
    ...(preflight === undefined ? {} : { preflight }),
    ...(parts.structuredOutput === undefined ? {} : { structuredOutput: parts.structuredOutput() }),
    startedAt: parts.startedAt,
    ...progress
  }
}

/** Write the manifest, encoded through its schema. */
export const writeManifest = (path: string, manifest: Manifest) =>
  writeFileAtomic(path, encodeJson(Manifest, manifest, 2) + "\n")

/** The progress line's view of the gate: the concurrency level, 429s met, the pace, a pause under way. */
export const gateDetail = (gate: Effect.Effect<RateGateStats> | undefined) =>
  gate === undefined ? undefined : Effect.flatMap(gate, (g) =>
    Effect.map(Clock.currentTimeMillis, (now) =>
      [
        `concurrency ${g.concurrency.current}/${g.concurrency.max}`,
        ...(g.rateLimited > 0 ? [`429s ${thousands(g.rateLimited)}`] : []),
        ...(g.rpm !== undefined ? [`pace ${thousands(Math.round(g.rpm))}/min`] : []),
        ...(g.pausedUntil > now ? [`waiting out a rate limit (${Math.ceil((g.pausedUntil - now) / 1000)} s)`] : [])
      ].join(" · ")))

/** What the rate gate did (remote judges): the concurrency it settled on, the 429s it met, the pace. */
export const gateFigures = (gate: Effect.Effect<RateGateStats> | undefined) =>
  gate === undefined ? Effect.succeed({}) : Effect.map(gate, (g) => ({
    rateControl: {
      concurrency: { max: g.concurrency.max, min: g.concurrency.min, final: g.concurrency.current },
      rateLimited: g.rateLimited,
      ...(g.rpm === undefined ? {} : { pacedRpm: Math.round(g.rpm * 10) / 10 })
    }
  }))

/** An iteration's files: metrics, cost, low scores (when the pipeline has them) and every report. Returns their paths. */
export const writeIteration = <R, X>(parts: {
  readonly pipeline: Pipeline<R, X>
  readonly options: RunOptions
  readonly info: RunInfo
  readonly iteration: number
  readonly summary: RunSummary<R, X>
  readonly recordsPath: string
  readonly cost: Cost
  /** `report --partial`: the reports say they cover only the cases the journal holds whole. */
  readonly partial: boolean
  /** report.md's cases with details, chosen while the records were written (`Details.ts`). */
  readonly chosen?: ChosenDetails | undefined
  /** The reports already written as the records left (`Reporter.lines`), by format: their paths. */
  readonly written?: ReadonlyMap<string, string> | undefined
}) =>
  Effect.gen(function*() {
    const { pipeline, options, info, iteration, summary, recordsPath } = parts
    const judge = info.judge
    const reporters = yield* Reporters
    const files: Array<string> = []
    const metricsPath = Path.join(info.runDir, `metrics-iteration-${iteration}.json`)
    const costPath = Path.join(info.runDir, `cost-iteration-${iteration}.json`)
    yield* writeJsonAtomic(metricsPath, summary)
    yield* writeJsonAtomic(costPath, { iteration, provider: judge.provider, model: judge.model, ...parts.cost })
    files.push(metricsPath, costPath)
    const lowPath = Path.join(info.runDir, `low-scores-iteration-${iteration}.json`)
    yield* writeJsonAtomic(lowPath, lowScores(pipeline, summary))
    files.push(lowPath)
    const records = () => readJsonLines<R>(recordsPath)
    // Data files come from every record of the iteration, whatever the formats chosen.
    const view = viewOf(pipeline)
    for (const data of view.dataFiles?.(info, iteration, records()) ?? []) {
      const path = Path.join(info.runDir, data.name)
      yield* writeAtomic(path, data.content)
      files.push(path)
    }
    const perCase = pipeline.score.perCase
    const input: ReportInput<R, X> = {
      info,
      summary,
      records,
      recordsAt: (ordinals) => readJsonLinesAt<R>(recordsPath, ordinals),
      view,
      caseMetrics: { declared: perCase.declared(info), of: (r) => perCase.of(r), rank: perCase.rank?.by },
      stem: reportStem(options, iteration),
      metrics: headlineValues(pipeline, info, summary),
      metricSpecs: headlineSpecs(pipeline, info),
      partial: partialNote(parts.partial, info),
      details: options.details,
      chosen: parts.chosen
    }
    for (const reporter of reporters) {
      const written = parts.written?.get(reporter.format)
      files.push(...(written === undefined ? yield* reporter.write(input) : [written]))
    }
    return files
  })

/** An iteration's reports are `<stem>.md`, `<stem>.csv`…: `report`, or `report-iteration-N` when iterating. */
export const reportStem = (options: Pick<RunOptions, "iterations">, iteration: number): string =>
  options.iterations === 1 ? "report" : `report-iteration-${iteration}`

/**
 * `low-scores-iteration-N.json`: the lowest and the first failed cases (their case ids, lines and
 * per-case metrics), the first failed judgments, and what the kind adds (synthesis' low-score analysis).
 */
export const lowScores = <R, X>(pipeline: Pipeline<R, X>, summary: RunSummary<R, X>) => {
  const brief = (record: R) => {
    const { caseId, failed, line, metrics } = pipeline.score.perCase.of(record)
    return { caseId, line, failed, metrics }
  }
  return {
    rankBy: pipeline.score.perCase.rank?.by ?? [],
    lowest: summary.lowest.map(brief),
    failedCases: summary.failed.map(brief),
    failures: summary.failures,
    ...pipeline.aggregate?.lowScores?.(summary.extra)
  }
}

/** What every page of a partial report says (`report --partial`); undefined for a complete run. */
export const partialNote = (partial: boolean, info: RunInfo): string | undefined =>
  partial
    ? `rendered from what the journal of a stopped run holds: only cases whose every judgment is there are shown (the input has ${
      thousands(info.input.cases)
    } cases); metrics cover those cases only`
    : undefined

/** The run's final files: final metrics (with cost), the final report when iterating, summary.json. Returns the total cost and the paths. */
export const writeFinal = <R, X>(parts: {
  readonly pipeline: Pipeline<R, X>
  readonly options: RunOptions
  readonly info: RunInfo
  readonly summaries: ReadonlyArray<RunSummary<R, X>>
  readonly recordFiles: ReadonlyArray<string>
  readonly costs: ReadonlyArray<Cost>
  readonly judgments: { readonly total: number; readonly ok: number; readonly failed: number }
  readonly partial: boolean
}) =>
  Effect.gen(function*() {
    const { pipeline, options, info, summaries, costs } = parts
    const files: Array<string> = []
    const totalCost = cost(sumTokens(costs.map(tokensOfCost)), options.price)
    const final = yield* finalMetrics(pipeline, info, summaries, parts.recordFiles)
    const finalPath = Path.join(info.runDir, "final-metrics.json")
    yield* writeJsonAtomic(finalPath, { ...final, cost: { perIteration: costs, total: totalCost } })
    files.push(finalPath)
    if (options.iterations > 1) {
      const finalReport = Path.join(info.runDir, "final-report.md")
      yield* writeFileAtomic(
        finalReport,
        finalMarkdown(final, [
          ...costs.map((c, i) =>
            `- iteration ${i + 1}: ${thousands(c.inputTokens)} in / ${thousands(c.outputTokens)} out tokens, ${
              formatUsd(c.usd)
            }`
          ),
          `- total: ${thousands(totalCost.inputTokens)} in / ${thousands(totalCost.outputTokens)} out tokens, ${
            formatUsd(totalCost.usd)
          }`
        ])
      )
      files.push(finalReport)
    }
    if (options.iterations > 1) {
      for (const reporter of yield* Reporters) {
        if (reporter.writeFinal !== undefined) {
          files.push(...yield* reporter.writeFinal(info, final, partialNote(parts.partial, info)))
        }
      }
    }
    const summaryPath = Path.join(info.runDir, "summary.json")
    const summary = summaryJson({
      info,
      judgments: parts.judgments,
      cost: totalCost,
      final,
      summaries,
      partial: parts.partial,
      metricSpecs: headlineSpecs(pipeline, info),
      caseMetricSpecs: pipeline.score.perCase.declared(info),
      rankBy: pipeline.score.perCase.rank?.by
    })
    yield* writeFileAtomic(summaryPath, encodeJson(Summary, summary, 2) + "\n")
    files.push(summaryPath)
    return { totalCost, files }
  })
