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
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import { BatchDetached, BudgetReached, type FatalJudgeError, Stopped, TooManyFailures } from "../domain/Errors.js"
import { thousands } from "../domain/Numbers.js"
import { compactTokens, cost, type Cost, noTokens } from "../pricing/Prices.js"
import { removeLeftovers, writeJsonAtomic } from "../report/Files.js"
import { Progress } from "../report/Progress.js"
import { ClusterJudging } from "../cluster/RemoteJudging.js"
import { JudgmentCache } from "../store/JudgmentCache.js"
import { withOverlay } from "../store/JournalOverlay.js"
import { JudgmentJournal } from "../store/JudgmentJournal.js"
import { type BatchPhase, runBatchPhase } from "./BatchJudging.js"
import { make as makeBudget } from "./Budget.js"
import { makeJudging } from "./Judging.js"
import { gateDetail, gateFigures, manifestOf, writeFinal, writeIteration } from "./Outputs.js"
import type { Pipeline } from "./Pipeline.js"
import { recordsWriter } from "./Records.js"
import type { RunOptions, RunOutcome } from "./RunTypes.js"
import { Shutdown } from "./Shutdown.js"
import { checkRunDir, ensureWritableDir, prepare } from "./Validate.js"

export type { Estimate, RunOptions, RunOutcome } from "./RunTypes.js"
export { canonicalJson, judgmentKey, keyJson, stringRecordJson, taskKey, toJudgment } from "./JudgmentKey.js"
export { ESTIMATED_OUTPUT_TOKENS, estimate } from "./Estimate.js"

export const run = <R, S>(pipeline: Pipeline<R, S>, options: RunOptions) =>
  Effect.gen(function*() {
    const { judge, retriever, rubrics, rubricList, input, identityHash, info } = yield* prepare(pipeline, options)
    const { runId, runDir } = info
    const journals = yield* JudgmentJournal
    const cache = yield* JudgmentCache
    const progress = yield* Progress
    const shutdown = yield* Shutdown

    yield* ensureWritableDir(runDir)
    yield* checkRunDir(runDir, identityHash, options.fresh)
    const opened = yield* journals.open(runDir, { fresh: options.fresh })
    // issue 15: --batch journals before the normal pass reads: that pass must see it (JournalOverlay.ts).
    const journal = options.batch !== undefined && options.replay !== true ? withOverlay(opened) : opened
    const total = input.tasks * options.iterations
    // What the journal holds that this run keeps: successes, and judge failures unless --retry-failed.
    // Transport failures (5xx, timeouts, rate limits past --max-wait) are always asked again.
    const keptOk = journal.stats.ok
    const keptFailed = options.retryFailed ? 0 : journal.stats.judgeFailed
    const leftovers = removeLeftovers(runDir)
    if (leftovers.length > 0) yield* progress.note(`removed what a killed run left behind: ${leftovers.join(", ")}`)
    // The preflight (one tiny request: key, model, URL, answer format) is sent once the input is
    // valid (bad input costs nothing) and only when something is left to judge; it runs while the
    // run starts up and is awaited before the first judge call.
    const preflightFiber = options.replay === true || judge.preflight === undefined || keptOk + keptFailed >= total
      ? undefined
      : yield* Effect.fork(judge.preflight)
    if (keptOk + keptFailed > 0) {
      const failedNote = keptFailed > 0 ? ` (${thousands(keptFailed)} failed judgment${keptFailed === 1 ? "" : "s"} kept; --retry-failed asks again)` : ""
      yield* progress.note(`resuming run ${runId}: ${thousands(Math.min(keptOk + keptFailed, total))} of ${thousands(total)} judgments done${failedNote}`)
    }
    if (journal.stats.damagedLines > 0) {
      yield* progress.note(`journal: skipped ${thousands(journal.stats.damagedLines)} damaged line(s) in the middle (torn by an older version on a full disk); their judgments are made again`)
    }
    if (journal.stats.tornLines > 0) {
      yield* progress.note(`journal: dropped a torn last line (written during a crash); that judgment is made again`)
    }

    const remote = yield* ClusterJudging // `--cluster`: judge calls go to the runners (undefined in a local run)
    // --- issue 15: --max-cost (Budget.ts) and the keys --batch collects (counted as judged now)
    const budget = options.maxCostUsd === undefined || options.price === undefined ? undefined : makeBudget(options.maxCostUsd, options.price)
    const collected = new Set<string>()
    // ---
    const judging = makeJudging({ pipeline, options, runId, judge, retriever, rubrics, journal, cache, shutdown, preflightFiber, remote, budget, collected })
    const { tally } = judging
    const manifestPath = Path.join(runDir, "manifest.json")
    const manifest = manifestOf({ pipeline, options, info, identityHash, input, rubricList, judge, startedAt: new Date().toISOString(), preflight: judging.preflight })
    const writeManifest = (value: unknown) => options.replay === true ? Effect.void : writeJsonAtomic(manifestPath, value)
    yield* writeManifest(manifest({ status: "running" }))

    /** Stopped by Ctrl+C, or by a fatal provider error: the manifest says so; the journal holds what finished. */
    const stopped = () =>
      Effect.flatMap(gateFigures(judge), (gate) => {
        const fatal = judging.fatal()
        return writeManifest(manifest({
          status: "stopped",
          stoppedAt: new Date().toISOString(),
          ...(fatal === undefined ? {} : { stoppedBy: fatal.line }),
          ...(fatal === undefined && budget?.reached() === true ? { stoppedBy: `--max-cost ${budget.capUsd}: the next call would pass the budget` } : {}),
          counts: { judgments: tally.total, ok: tally.ok, failed: tally.failed },
          ...gate
        })).pipe(
          Effect.zipRight(Effect.fail<FatalJudgeError | Stopped | BudgetReached>(
            fatal ??
              (budget?.reached() === true
                ? new BudgetReached({ budgetUsd: budget.capUsd, judgments: tally.total - tally.reused - tally.cached, spentUsd: budget.spentUsd(), runDir, savedIn: journal.path })
                // (--batch: what the batches brought in counts as saved even when the normal pass has not read it yet)
                : new Stopped({ done: keptOk + keptFailed + Math.max(tally.total - tally.reused, collected.size), total, runDir, savedIn: journal.path }))
          ))
        )
      })

    // --- issue 15: --batch (BatchJudging.ts): what is left to judge goes through the provider's Batch
    // API first; the pass below then finds it in the journal (and judges synchronously only what the
    // batches left: --batch-repair sync, or what kept going unanswered).
    let batchPhase: BatchPhase | undefined
    if (options.batch !== undefined && options.replay !== true && !judge.local) {
      const phase = yield* runBatchPhase({
        pipeline, options, batch: options.batch, runId, runDir, judge, retriever, journal, cache, shutdown, progress, judging, budget
      }).pipe(Effect.catchTag("FatalJudgeError", (e) =>
        writeManifest(manifest({ status: "stopped", stoppedAt: new Date().toISOString(), stoppedBy: e.line })).pipe(Effect.zipRight(Effect.fail(e)))))
      batchPhase = phase
      for (const key of phase.collected) collected.add(key)
      if (phase.outcome === "stopped") return yield* stopped()
      if (phase.outcome === "detached") {
        yield* writeManifest(manifest({ status: "submitted", batch: batchFacts(phase, options.batch.repair) }))
        return yield* new BatchDetached({ inFlight: phase.inFlight, batches: phase.openBatches, runDir })
      }
    }
    // ---

    const summaries: Array<S> = []
    const recordFiles: Array<string> = []
    const costs: Array<Cost> = []
    const files: Array<string> = options.replay === true ? [] : [manifestPath]
    for (let iteration = 1; iteration <= options.iterations; iteration++) {
      const label = options.iterations === 1 ? pipeline.name : `${pipeline.name} ${iteration}/${options.iterations}`
      const recordsPath = Path.join(runDir, `records-iteration-${iteration}.jsonl`)
      const iterTokens = noTokens()
      const acc = yield* progress.track(label, input.tasks, (state) =>
        Effect.scoped(Effect.gen(function*() {
          const writer = yield* recordsWriter(recordsPath)
          let folded = pipeline.aggregate.init(info)
          yield* judging.judgeIteration(iteration, state, iterTokens, (record) =>
            Effect.map(writer.write(JSON.stringify(record)), () => {
              folded = pipeline.aggregate.add(folded, record)
            }))
          // Stopping: drop the incomplete records file; the journal holds every finished judgment.
          if (judging.stopping()) return yield* stopped()
          yield* writer.close
          return folded
        })), gateDetail(judge))
      const summary = pipeline.aggregate.finish(acc, info)
      const iterationCost = cost(compactTokens(iterTokens), options.price)
      summaries.push(summary)
      recordFiles.push(recordsPath)
      costs.push(iterationCost)
      files.push(recordsPath)
      files.push(...yield* writeIteration({ pipeline, options, info, judge, iteration, summary, recordsPath, cost: iterationCost }))
    }

    const judgments = { total: tally.total, ok: tally.ok, failed: tally.failed }
    const final = yield* writeFinal({ pipeline, options, info, summaries, recordFiles, costs, judgments })
    files.push(...final.files)
    const outcome: RunOutcome<S> = {
      info,
      summaries,
      judgments: { ...judgments, reused: tally.reused, cached: tally.cached },
      tokens: { input: tally.input, output: tally.output },
      cost: final.totalCost,
      files
    }
    yield* writeManifest(manifest({
      ...(yield* gateFigures(judge)),
      status: tally.failed > options.maxFailures ? "failed" : "complete",
      endedAt: new Date().toISOString(),
      counts: { cases: input.cases, judgments: tally.total, ok: tally.ok, failed: tally.failed, reusedFromJournal: tally.reused, fromCache: tally.cached },
      tokens: outcome.tokens,
      cost: final.totalCost,
      ...(batchPhase === undefined ? {} : { batch: batchFacts(batchPhase, options.batch!.repair) }),
      files: files.map((f) => Path.relative(runDir, f))
    }))
    return outcome
  })

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
    ? Effect.fail(new TooManyFailures({ failed: outcome.judgments.failed, allowed: maxFailures, runDir: outcome.info.runDir }))
    : Effect.succeed(outcome)
