/**
 * `rag-eval judge-bench` (SPEC §7): the configured judge on public human-labelled sets, its agreement
 * with people beside the published figures of known judges — how a team chooses a judge.
 *
 * Built on the normal runner: each set is a built-in pipeline's input (`Sets.ts`), run as `rag-eval
 * run` would run it (`SetRunner`, given by the CLI) into an ordinary run directory — so the journal,
 * the cache, resume after a crash, `--batch`, rate limits and `--dry-run` are the run's own — and the
 * agreement is computed from that directory with calibrate's library (`Agreement.ts`). Running the
 * same command again finds the same runs and pays for nothing twice.
 */
import * as Effect from "effect/Effect"
import { defaultCalibrateSeed } from "../calibrate/Calibration.js"
import type { InputError, OutputError, UsageError } from "../domain/Errors.js"
import { traitsOfProvider } from "../domain/JudgeTraits.js"
import { thousands } from "../domain/Numbers.js"
import { readManifest } from "../domain/RunFiles.js"
import { defaultBootstrapResamples } from "../stats/Bootstrap.js"
import { expertQaFigures, ragCheckerFigures, relevanceFigures, type SetFigures } from "./Agreement.js"
import type { JudgeBenchResult, SetResult } from "./Result.js"
import { isSkipped, type PreparedSet, prepareSets, type SetName } from "./Sets.js"

/** What a set's run gave: its directory, or (`--dry-run`) the estimate it printed. */
export type SetRunOutcome = { readonly runDir: string } | { readonly estimate: string }

/** Runs a built-in pipeline on an input with the configured judge (the CLI's `rag-eval run`). */
export type SetRunner<E, R> = (pipeline: string, input: string) => Effect.Effect<SetRunOutcome, E, R>

export interface JudgeBenchOptions {
  readonly sets: ReadonlyArray<SetName>
  readonly sample?: number | undefined
  readonly sampleSeed: number
  readonly resamples?: number | undefined
  /** Where sampled inputs go (`<out>/judge-bench`). */
  readonly workDir: string
  readonly data?: string | undefined
  readonly shipped?: string | undefined
  readonly dryRun: boolean
  /** The judge as the flags name it, for a dry run (no manifest to read it from). */
  readonly judge: { readonly provider: string; readonly model: string }
  /** Progress lines (stderr). */
  readonly say?: ((line: string) => Effect.Effect<void>) | undefined
}

export const HEURISTIC_CAVEAT =
  "The heuristic judge's rules were chosen on these very sets (RAGChecker's and ExpertQA's development halves; its relevance thresholds on the LLMJudge test pairs): its figures here are optimistic, not a result. Its honest figures, measured on data its rules were not chosen on, are in docs/judge-quality.md."

const figuresOf = (
  set: PreparedSet,
  runDir: string,
  resamples: number
): Effect.Effect<SetFigures, InputError | UsageError> => {
  switch (set.info.name) {
    case "ragchecker":
      return ragCheckerFigures(runDir, set.labels, { resamples })
    case "expertqa":
      return expertQaFigures(runDir, set.labels, { resamples })
    case "relevance":
      return relevanceFigures(runDir, set.labels, { resamples })
  }
}

export const judgeBench = <E, R>(
  options: JudgeBenchOptions,
  runSet: SetRunner<E, R>
): Effect.Effect<JudgeBenchResult, E | InputError | UsageError | OutputError, R> =>
  Effect.gen(function*() {
    const say = options.say ?? (() => Effect.void)
    const resamples = options.resamples ?? defaultBootstrapResamples
    const prepared = yield* prepareSets(options.sets, {
      sample: options.sample,
      seed: options.sampleSeed,
      workDir: options.workDir,
      data: options.data,
      shipped: options.shipped
    })
    let judge = {
      ...options.judge,
      label: !traitsOfProvider(options.judge.provider).languageModel
        ? "heuristic judge"
        : `${options.judge.provider} ${options.judge.model}`
    }
    const sets: Array<SetResult> = []
    for (const set of prepared) {
      const base = { name: set.info.name, title: set.info.title, unit: set.info.unit }
      if (isSkipped(set)) {
        yield* say(`judge-bench: ${set.info.name} skipped: ${set.skipped}`)
        sets.push({ ...base, status: "skipped", reason: set.skipped, items: 0, of: 0, figures: [], notes: [] })
        continue
      }
      yield* say(
        `judge-bench: ${set.info.name}: ${thousands(set.items)} of ${
          thousands(set.of)
        } ${set.info.unit} (${set.info.pipeline})`
      )
      const outcome = yield* runSet(set.info.pipeline, set.input)
      if ("estimate" in outcome) {
        sets.push({
          ...base,
          status: "estimated",
          items: set.items,
          of: set.of,
          figures: [],
          notes: [],
          estimate: outcome.estimate
        })
        continue
      }
      const manifest = yield* readManifest(outcome.runDir)
      judge = { provider: manifest.judge.provider, model: manifest.judge.model, label: manifest.judge.label }
      const { figures, notes } = yield* figuresOf(set, outcome.runDir, resamples)
      const failed = manifest.counts?.failed ?? 0
      sets.push({
        ...base,
        status: "measured",
        items: set.items,
        of: set.of,
        run: {
          dir: outcome.runDir,
          runId: manifest.runId,
          pipeline: manifest.pipeline.name,
          cases: manifest.counts?.cases ?? manifest.input.cases,
          judgments: manifest.counts?.judgments ?? 0,
          failed: manifest.counts?.failed ?? 0,
          costUsd: manifest.cost?.usd ?? null
        },
        figures,
        notes: [
          ...(failed === 0
            ? []
            : [
              `${failed} judgment(s) failed: the figures leave out what they decide (the same command again asks the transport failures again, with --retry-failed the others too)`
            ]),
          ...notes
        ]
      })
    }
    return {
      tool: "rag-eval judge-bench",
      judge,
      caveat: traitsOfProvider(judge.provider).languageModel ? null : HEURISTIC_CAVEAT,
      dryRun: options.dryRun,
      sample: options.sample ?? null,
      sampleSeed: options.sampleSeed,
      bootstrap: { resamples, seed: defaultCalibrateSeed, level: 0.95 },
      sets
    } satisfies JudgeBenchResult
  })
