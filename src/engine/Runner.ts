/**
 * The runner drives a pipeline: validate → load → retrieve → judge → score → aggregate → report.
 *
 * - All input is validated (structure, columns, every case) before the first judge call (Validate.ts).
 * - Judgments are appended to the run's journal as each finishes; a re-run of the same command
 *   derives the same run id and skips what the journal already holds (Judging.ts).
 * - Cases are processed concurrently but records leave in input order, so reports and CSVs are
 *   stable; records are streamed to disk and aggregated online (memory is flat in the case count)
 *   (Records.ts); the manifest, metrics and reports are written as iterations end (Outputs.ts).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as fs from "node:fs"
import * as Path from "node:path"
import {
  BatchDetached,
  BudgetReached,
  type FatalJudgeError,
  Stopped,
  TooManyFailures,
  UsageError
} from "../domain/Errors.js"
import type { Judgment } from "../domain/Judgment.js"
import { thousands } from "../domain/Numbers.js"
import { type CaseMetrics, caseMetricsFile, type Manifest } from "../domain/RunFiles.js"
import { VERSION } from "../domain/Version.js"
import { atomicWriter, removeLeftovers } from "../io/Files.js"
import { compactTokens, type Cost, cost, noTokens } from "../pricing/Prices.js"
import { withOverlay } from "../store/JournalOverlay.js"
import { JudgmentJournal } from "../store/JudgmentJournal.js"
import { type BatchPhase, runBatchPhase } from "./BatchJudging.js"
import * as CaseFold from "./CaseFold.js"
import { viewOf } from "./DefaultView.js"
import { DEFAULT_DETAILS, detailsChooser, type DetailsState } from "./Details.js"
import { TARGET_JOURNAL_DIR } from "./Generator.js"
import {
  guardOf,
  headerLine,
  keepRecords,
  keptPartial,
  resumeFile,
  resumeLine,
  SNAPSHOT_EVERY,
  snapshotFile,
  writeSnapshot
} from "./HeldRecords.js"
import { firstRecordFromJournal, judgeIteration } from "./Judging.js"
import { Judgments } from "./Judgments.js"
import {
  gateDetail,
  gateFigures,
  manifestOf,
  reportStem,
  writeFinal,
  writeIteration,
  writeManifest
} from "./Outputs.js"
import type { CaseValues, Pipeline, RunSummary } from "./Pipeline.js"
import { Progress } from "./Progress.js"
import { recordsWriter } from "./Records.js"
import { ClusterJudging } from "./RemoteJudging.js"
import { Reporters } from "./ReportInput.js"
import type { RunOptions, RunOutcome } from "./RunTypes.js"
import { spentBefore } from "./Spent.js"
import { checkRunDir, ensureWritableDir, prepare } from "./Validate.js"

export { ESTIMATED_OUTPUT_TOKENS } from "./Budget.js"
export { estimate } from "./Estimate.js"
export {
  canonicalJson,
  canonicalJsonByReplacer,
  judgmentKey,
  keyJson,
  stringRecordJson,
  taskKey,
  toJudgment
} from "./JudgmentKey.js"
export type { Estimate, RunOptions, RunOutcome } from "./RunTypes.js"

export const run = <R, X>(given: Pipeline<R, X>, options: RunOptions) =>
  Effect.gen(function*() {
    const prepared = yield* Effect.withSpan(prepare(given, options), "Runner.validate")
    const { retriever, rubrics, rubricList, input, identityHash, info, generator } = prepared
    options = prepared.options
    const { runId, runDir } = info
    // --target: the pipeline's records, metrics and reports also tell how the live system answered.
    const fills = generator === undefined ? undefined : given.generate
    const pipeline = fills === undefined ? given : generator!.decorate(given)
    const judgments = yield* Judgments
    const reporters = yield* Reporters
    const view = viewOf(pipeline)
    const journals = yield* JudgmentJournal
    const progress = yield* Progress
    const remote = yield* ClusterJudging // `--cluster`: judge calls go to the runners (undefined in a local run)

    yield* ensureWritableDir(runDir)
    yield* checkRunDir(runDir, identityHash, options.fresh)
    const opened = yield* journals.open(runDir, { fresh: options.fresh })
    // --batch journals before the normal pass reads: that pass must see it (JournalOverlay.ts).
    const journal = options.batch !== undefined ? withOverlay(opened) : opened
    const total = input.tasks * options.iterations
    // What the journal holds that this run keeps: successes, and judge failures unless --retry-failed.
    // Transport failures (5xx, timeouts, rate limits past --max-wait) are always asked again.
    const keptOk = journal.stats.ok
    const keptFailed = options.retryFailed ? 0 : journal.stats.judgeFailed
    if (keptOk + keptFailed > 0) {
      const failedNote = keptFailed > 0
        ? ` (${thousands(keptFailed)} failed judgment${keptFailed === 1 ? "" : "s"} kept; --retry-failed asks again)`
        : ""
      yield* progress.note(
        `resuming run ${runId}: ${thousands(Math.min(keptOk + keptFailed, total))} of ${
          thousands(total)
        } judgments done${failedNote}`
      )
    }
    if (journal.stats.damagedLines > 0) {
      yield* progress.note(
        `journal: skipped ${
          thousands(journal.stats.damagedLines)
        } damaged line(s) in the middle (torn by an older version on a full disk); their judgments are made again`
      )
    }
    if (journal.stats.tornLines > 0) {
      yield* progress.note(`journal: dropped a torn last line (written during a crash); that judgment is made again`)
    }

    // The keys --batch collects are counted as judged now, not reused.
    const collected = new Set<string>()
    const core = yield* judgments.open({
      pipeline: pipeline.name,
      runId,
      rubrics,
      journal,
      retryFailed: options.retryFailed,
      // The preflight (one tiny request: key, model, URL, answer format) is sent once the input is
      // valid (bad input costs nothing) and only when something is left to judge.
      preflight: keptOk + keptFailed < total,
      maxCostUsd: options.maxCostUsd,
      price: options.price,
      spentBefore: options.maxCostUsd === undefined || options.price === undefined || options.fresh
        ? undefined
        : yield* spentBefore(journal.path, runDir, options.price),
      collected
    })
    const { tally, budget } = core
    // A local judge's run keeps the records a killed or stopped run wrote (HeldRecords.ts): its
    // resume starts judging where they end instead of rebuilding them from the journal.
    const keepsRecords = core.mode === "live" && core.sync && !options.fresh && !options.retryFailed &&
      options.batch === undefined && fills === undefined && remote === undefined
    const snapshotCases = options.snapshotEvery ?? SNAPSHOT_EVERY
    const leftovers = removeLeftovers(runDir, keepsRecords ? keptPartial : undefined)
    if (leftovers.length > 0) yield* progress.note(`removed what a killed run left behind: ${leftovers.join(", ")}`)
    // --target: its answers' journal (target/judgments.jsonl: the same store), opened beside the judgments'.
    const targetDir = Path.join(runDir, TARGET_JOURNAL_DIR)
    if (fills !== undefined && core.mode !== "replay") yield* ensureWritableDir(targetDir)
    const targetJournal = fills === undefined ? undefined : yield* journals.open(targetDir, { fresh: options.fresh })
    const target = targetJournal === undefined
      ? undefined
      : yield* generator!.open({
        journal: targetJournal,
        retryFailed: options.retryFailed,
        partial: core.partial,
        remember: options.iterations > 1
      })
    if (
      targetJournal !== undefined && targetJournal.stats.ok + targetJournal.stats.judgeFailed > 0 &&
      core.mode !== "replay"
    ) {
      yield* progress.note(
        `resuming the target's answers: ${thousands(targetJournal.stats.ok)} answered${
          targetJournal.stats.judgeFailed > 0
            ? `, ${thousands(targetJournal.stats.judgeFailed)} failed (kept; --retry-failed asks again)`
            : ""
        } — not asked again`
      )
    }
    const fatalOf = () => target?.fatal() ?? core.fatal()
    const targetFacts = () =>
      generator === undefined || target === undefined ?
        Effect.succeed({}) :
        Effect.map(generator.gate ?? Effect.succeed(undefined), (g) => ({
          target: {
            ...generator.description,
            calls: { ...target.counts },
            ...(g === undefined ? {} : { rateLimited: g.rateLimited })
          }
        }))
    // `rag-eval report`: the journal is read, never written; so is the manifest.
    const replay = core.mode === "replay"
    const manifestPath = Path.join(runDir, "manifest.json")
    const manifestBase = manifestOf({
      pipeline,
      options,
      info,
      identityHash,
      input,
      rubricList,
      structuredOutput: judgments.structuredOutput,
      startedAt: new Date().toISOString(),
      preflight: core.preflight
    })
    const manifest = (progress: Parameters<typeof manifestBase>[0]): Manifest =>
      manifestBase(
        generator === undefined || fills === undefined
          ? progress
          : { target: { ...generator.description }, ...progress }
      )
    const saveManifest = (value: Manifest) => replay ? Effect.void : writeManifest(manifestPath, value)
    yield* saveManifest(manifest({ status: "running" }))

    /** Stopped by Ctrl+C, or by a fatal provider error: the manifest says so; the journal holds what finished. */
    const stopped = () =>
      Effect.flatMap(Effect.zip(gateFigures(judgments.gate), targetFacts()), ([gate, targetPart]) => {
        const fatal = fatalOf()
        return saveManifest(manifest({
          ...targetPart,
          status: "stopped",
          stoppedAt: new Date().toISOString(),
          ...(fatal === undefined ? {} : { stoppedBy: fatal.line }),
          ...(fatal === undefined && budget?.reached() === true
            ? { stoppedBy: `--max-cost ${budget.capUsd}: the next call would pass the budget` }
            : {}),
          counts: { judgments: tally.total, ok: tally.ok, failed: tally.failed },
          ...gate
        })).pipe(
          Effect.zipRight(Effect.fail<FatalJudgeError | Stopped | BudgetReached>(
            fatal ??
              (budget?.reached() === true
                ? new BudgetReached({
                  budgetUsd: budget.capUsd,
                  judgments: tally.total - tally.reused - tally.cached,
                  spentUsd: budget.spentUsd(),
                  runDir,
                  savedIn: journal.path
                })
                // (--batch: what the batches brought in counts as saved even when the normal pass has not read it yet)
                : new Stopped({
                  done: keptOk + keptFailed + Math.max(tally.total - tally.reused, collected.size),
                  total,
                  runDir,
                  savedIn: journal.path
                }))
          ))
        )
      })

    // --batch (BatchJudging.ts): what is left to judge goes through the provider's Batch API first;
    // the pass below then finds it in the journal (and judges synchronously only what the batches
    // left: --batch-repair sync, or what kept going unanswered).
    let batchPhase: BatchPhase | undefined
    if (options.batch !== undefined && !replay && !judgments.identity.traits.runsLocally) {
      if (judgments.calls === undefined) {
        return yield* new UsageError({
          problem: `--batch: ${judgments.identity.provider} has no Batch API here; run without --batch`
        })
      }
      const phase = yield* runBatchPhase({
        pipeline,
        options,
        batch: options.batch,
        runId,
        runDir,
        retriever,
        journal,
        progress,
        core,
        calls: judgments.calls
      }).pipe(Effect.catchTag("FatalJudgeError", (e) =>
        saveManifest(manifest({ status: "stopped", stoppedAt: new Date().toISOString(), stoppedBy: e.line })).pipe(
          Effect.zipRight(Effect.fail(e))
        )))
      batchPhase = phase
      for (const key of phase.collected) {
        collected.add(key)
      }
      if (phase.outcome === "stopped") {
        return yield* stopped()
      }
      if (phase.outcome === "detached") {
        yield* saveManifest(manifest({ status: "submitted", batch: batchFacts(phase, options.batch.repair) }))
        return yield* new BatchDetached({ inFlight: phase.inFlight, batches: phase.openBatches, runDir })
      }
    }

    const scheduling = {
      pipeline,
      options,
      retriever,
      rubrics,
      core,
      workers: remote?.workers ?? options.concurrency,
      generate: target === undefined || fills === undefined
        ? undefined
        : { stage: target, fills, concurrency: generator!.concurrency }
    }
    const perCase = pipeline.score.perCase
    const declared = perCase.declared(info)
    /**
     * A record's `case-metrics-iteration-N.jsonl` line. `CaseMetrics` encodes each of its fields as
     * it is (no transformation: `test/domain/RunFiles.test.ts`), so the line is the typed value's
     * JSON rather than a pass of the Schema's encoder for every case (≈7 µs a case and its garbage:
     * ~1% of a heuristic answer-correctness run, 2 cores, Node 20).
     */
    const caseLine = ({ caseId, failed, line, metrics }: CaseValues, iteration: number) =>
      JSON.stringify({ caseId, line, iteration, metrics, failed } satisfies CaseMetrics)
    const summaries: Array<RunSummary<R, X>> = []
    const recordFiles: Array<string> = []
    const costs: Array<Cost> = []
    const files: Array<string> = replay ? [] : [manifestPath]
    for (let iteration = 1; iteration <= options.iterations; iteration++) {
      const label = options.iterations === 1 ? pipeline.name : `${pipeline.name} ${iteration}/${options.iterations}`
      const recordsPath = Path.join(runDir, `records-iteration-${iteration}.jsonl`)
      const casesPath = Path.join(runDir, caseMetricsFile(iteration))
      const tokens = noTokens()
      let judged = { ok: 0, failed: 0 }
      const stem = reportStem(options, iteration)
      /** The reports written as the records left, by format (`Reporter.lines`). */
      const written = new Map<string, string>()
      // The engine's fold (means, intervals, lowest and failed cases, failures) and the kind's own.
      const foldOptions = { declared, rankBy: perCase.rank?.by, lowest: perCase.rank?.keep }
      let fold = CaseFold.make<R>(foldOptions)
      const own = pipeline.aggregate?.start(info)
      // report.md's cases with details, chosen as the records leave (the reports do not read them all back to choose).
      const detailsLimit = options.details ?? DEFAULT_DETAILS
      let details = detailsChooser(detailsLimit, perCase.rank?.by ?? [])
      const add = (record: R, values: CaseValues, caseJudgments: ReadonlyArray<Judgment>) => {
        fold.add(record, values, caseJudgments)
        own?.add(record, values)
        details.add(values)
      }
      // The three folds' snapshot (HeldRecords.ts), when the kind's own fold can be saved.
      const snapshotPath = Path.join(runDir, snapshotFile(iteration))
      const snapshots = keepsRecords && (own === undefined || (own.save !== undefined && own.restore !== undefined))
      const saveFolds = (): FoldsState<R> => ({ fold: fold.save(), own: own?.save?.(), details: details.save() })
      const restoreFolds = (state: unknown) => {
        const saved = state as FoldsState<R>
        const restored = CaseFold.make<R>(foldOptions, saved.fold)
        const chooser = detailsChooser(detailsLimit, perCase.rank?.by ?? [], saved.details)
        if (own !== undefined) {
          own.restore!(saved.own)
        }
        fold = restored
        details = chooser
      }
      const resumePath = Path.join(runDir, resumeFile(iteration))
      const guard = guardOf({
        version: VERSION,
        identity: identityHash,
        command: options.recordsCommand ?? options.command,
        pipeline: pipeline.name,
        iteration
      })
      const kept = keepsRecords
        ? yield* keepRecords({
          files: {
            records: `${recordsPath}.partial`,
            cases: `${casesPath}.partial`,
            resume: `${resumePath}.partial`
          },
          guard,
          // What the journal gives now for the first case, compared with the record on disk.
          firstFromJournal: firstRecordFromJournal(scheduling, iteration),
          fold: (record) =>
            add(record as R, perCase.of(record as R), []),
          snapshot: snapshots ? { path: snapshotPath, restore: restoreFolds } : undefined,
          stopping: core.stopping,
          note: progress.note
        })
        : { cases: 0, judgments: 0 }
      // Files written again from the start: a snapshot of the old ones is not theirs.
      if (kept.cases === 0) fs.rmSync(snapshotPath, { force: true })
      yield* progress.track(label, input.tasks, (state) =>
        Effect.scoped(Effect.gen(function*() {
          const writing = { append: kept.cases > 0, keep: keepsRecords ? stoppedBy : undefined }
          const writer = yield* recordsWriter(recordsPath, writing)
          // Each record's per-case metrics: what `compare` pairs cases by.
          const cases = yield* recordsWriter(casesPath, writing)
          // Which records a resume may keep, and the judgments behind each (HeldRecords.ts).
          const resumeWriter = keepsRecords ? yield* recordsWriter(resumePath, writing) : undefined
          if (resumeWriter !== undefined && kept.cases === 0) yield* resumeWriter.write(headerLine(guard))
          // The reports that are a line a record (the CSV) are written as the records leave, not from
          // the records read back at the end; a resume that keeps records reads them back instead.
          const lineReports = kept.cases > 0 ? [] : yield* Effect.forEach(
            reporters.flatMap((r) =>
              r.lines === undefined ? [] : [{ format: r.format, report: r.lines({ info, view, stem }) }]
            ),
            ({ format, report }) => Effect.map(atomicWriter(report.path), (writer) => ({ format, report, writer }))
          )
          for (const l of lineReports) yield* l.writer.write(l.report.header)
          let resume = resumeWriter
          /** Cases in the files, and at the last snapshot. */
          let inFiles = kept.cases
          let snapshotAt = kept.cases
          core.countHeld({ state, tokens }, kept.judgments)
          /**
           * A record, out: its case-metrics and resume lines, the record, the reports written as
           * records leave, the folds, and the folds' snapshot where the three files end together.
           * Composed, not an `Effect.gen`: with a generator per record that captured it, V8 promoted
           * far more of every case to the old generation (20,000 heuristic answer-correctness cases,
           * `node --trace-gc-nvp`: 297 MB promoted and 31 full collections with it, 247 MB and 24
           * without; ~5% less CPU — docs/benchmarks.md).
           */
          const emit = (record: R, caseJudgments: ReadonlyArray<Judgment>) => {
            const values = perCase.of(record)
            const lines = cases.write(caseLine(values, iteration)).pipe(
              Effect.zipRight(resume === undefined ? Effect.void : resume.write(resumeLine(caseJudgments))),
              // The records last, and the other two written out with them: every complete record
              // on disk has its case-metrics and resume lines (what a resume keeps: HeldRecords.ts).
              Effect.zipRight(Effect.suspend(() => {
                inFiles++
                return writer.write(JSON.stringify(record))
              })),
              Effect.map((wrote) => wrote && resume !== undefined)
            )
            return Effect.flatMap(lines, (together) => {
              const flushed = together ? Effect.zipRight(cases.flush, resume!.flush) : Effect.void
              const reports = lineReports.length === 0 ? Effect.void : Effect.forEach(
                lineReports,
                (l) => l.writer.write(l.report.line(record, values)),
                { discard: true }
              )
              return flushed.pipe(
                Effect.zipRight(reports),
                Effect.zipRight(Effect.suspend(() => {
                  add(record, values, caseJudgments)
                  // The folds saved where the three files end together (a resume starts from here).
                  if (!together || !snapshots || inFiles - snapshotAt < snapshotCases) return Effect.void
                  snapshotAt = inFiles
                  return Effect.all({ records: writer.size, cases: cases.size, resume: resume!.size }).pipe(
                    Effect.flatMap((sizes) =>
                      writeSnapshot(snapshotPath, { guard, cases: inFiles, sizes, state: saveFolds() })
                    )
                  )
                }))
              )
            })
          }
          yield* judgeIteration(scheduling, iteration, { state, tokens }, emit, {
            skip: kept.cases,
            // A case without a record (stopping): the records after it are not the cases after it,
            // so a resume keeps none of them.
            gap: () => {
              resume = undefined
            }
          })
          // Stopping: the journal holds every finished judgment; the unfinished records are removed,
          // or (a local judge) kept for the resume.
          if (core.stopping()) {
            return yield* stopped()
          }
          yield* writer.close
          yield* cases.close
          for (const l of lineReports) {
            yield* l.writer.commit
            written.set(l.format, l.report.path)
          }
          if (resumeWriter !== undefined) {
            yield* resumeWriter.close
            fs.rmSync(resumePath, { force: true })
            fs.rmSync(snapshotPath, { force: true })
          }
          judged = { ok: state.done - state.failed, failed: state.failed }
        })), gateDetail(judgments.gate))
      const summary = fold.finish({ judgments: judged, tokens: compactTokens(tokens) }, own?.finish() as X)
      const iterationCost = cost(compactTokens(tokens), options.price)
      summaries.push(summary)
      recordFiles.push(recordsPath)
      costs.push(iterationCost)
      files.push(recordsPath, casesPath)
      files.push(
        ...yield* writeIteration({
          pipeline,
          options,
          info,
          iteration,
          summary,
          recordsPath,
          cost: iterationCost,
          partial: core.partial,
          chosen: details.result(),
          written
        }).pipe(Effect.withSpan("Runner.reports", { attributes: { "rag_eval.iteration": iteration } }))
      )
    }

    const counts = { total: tally.total, ok: tally.ok, failed: tally.failed }
    const final = yield* writeFinal({
      pipeline,
      options,
      info,
      summaries,
      recordFiles,
      costs,
      judgments: counts,
      partial: core.partial
    }).pipe(Effect.withSpan("Runner.final"))
    files.push(...final.files)
    const outcome: RunOutcome<RunSummary<R, X>> = {
      info,
      summaries,
      judgments: { ...counts, reused: tally.reused, cached: tally.cached },
      tokens: { input: tally.input, output: tally.output },
      cost: final.totalCost,
      files
    }
    yield* saveManifest(manifest({
      ...(yield* gateFigures(judgments.gate)),
      ...(yield* targetFacts()),
      status: tally.failed > options.maxFailures ? "failed" : "complete",
      endedAt: new Date().toISOString(),
      counts: {
        cases: input.cases,
        judgments: tally.total,
        ok: tally.ok,
        failed: tally.failed,
        reusedFromJournal: tally.reused,
        fromCache: tally.cached
      },
      tokens: outcome.tokens,
      cost: final.totalCost,
      ...(batchPhase === undefined ? {} : { batch: batchFacts(batchPhase, options.batch!.repair) }),
      files: files.map((f) => Path.relative(runDir, f))
    }))
    return outcome
  })

/** What a resume's snapshot holds of an iteration's folds (`HeldRecords.writeSnapshot`). */
interface FoldsState<R> {
  readonly fold: CaseFold.CaseFoldState<R>
  readonly own: unknown
  readonly details: DetailsState
}

/** A run stopped (Ctrl+C, SIGTERM, a fatal judge error, the budget) — not a failure to read or write. */
const stoppedBy = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && Option.exists(
    Cause.failureOption(exit.cause),
    (e) =>
      Predicate.isTagged(e, "Stopped") || Predicate.isTagged(e, "BudgetReached") ||
      Predicate.isTagged(e, "FatalJudgeError")
  )

/** The manifest's record of a --batch run: its batches, and how many judgments this invocation collected from them. */
const batchFacts = (phase: BatchPhase, repair: "sync" | "batch") => ({
  repair,
  judgmentsCollected: phase.collected.size,
  callsResubmitted: phase.resubmitted,
  note: "judgment lines made through a batch carry \"via\": \"batch\" in judgments.jsonl",
  batches: phase.batches
})

/** Fail with exit code 1 when more judgments failed than allowed (after every file is written). */
export const checkFailures = <S>(outcome: RunOutcome<S>, maxFailures: number) =>
  outcome.judgments.failed > maxFailures
    ? Effect.fail(
      new TooManyFailures({ failed: outcome.judgments.failed, allowed: maxFailures, runDir: outcome.info.runDir })
    )
    : Effect.succeed(outcome)
