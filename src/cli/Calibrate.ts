/**
 * `rag-eval calibrate [<run-dir> | --judge FILE] --labels FILE [--relevant-at N] [--iteration N]
 * [--runs FILE…] [--format markdown|json] [--output FILE] [--seed N] [--resamples N] [--min-kappa X]`
 * (SPEC §7): agreement between a judge's grades and human labels. Reading is
 * `src/calibrate/RunGrades.ts` and `Labels.ts`, the statistics `src/calibrate/Calibration.ts`
 * (on `src/stats/`), the output `src/calibrate/Render.ts`.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as Path from "node:path"
import {
  calibrate,
  type Calibration,
  defaultCalibrateSeed,
  defaultRelevantAt,
  type JudgeGrades,
  KappaBelowMinimum,
  kappaGateFailures,
  type SystemRun
} from "../calibrate/Calibration.js"
import { readGradeFile, readQrelsFile } from "../calibrate/Labels.js"
import { calibrationJson, calibrationMarkdown, defaultMaxListed, summaryLines } from "../calibrate/Render.js"
import { readRunGrades } from "../calibrate/RunGrades.js"
import { loadStoreModule } from "../cluster/Peers.js"
import { type InputError, type OutputError, UsageError } from "../domain/Errors.js"
import { writeFileAtomic } from "../io/Files.js"
import { parseRun } from "../metrics/trec.js"
import { defaultBootstrapResamples } from "../stats/Bootstrap.js"
import { readTextFile } from "./Trec.js"

export type CalibrateFormat = "markdown" | "json"

export interface CalibrateArgs {
  /** A run directory whose judged grades are calibrated (or `judge`). */
  readonly runDir?: string | undefined
  /** A qrels file of judge grades (or `runDir`). */
  readonly judge?: string | undefined
  readonly labels: string
  /** Default: 4 for answer-synthesis, 2 otherwise. */
  readonly relevantAt?: number | undefined
  /** Run directory only; default 1. */
  readonly iteration?: number | undefined
  /** Run directory only: its journal when it is not the directory's file (`--store`). */
  readonly journal?: string | undefined
  /** TREC run files of systems to rank. */
  readonly runs?: ReadonlyArray<string> | undefined
  readonly format?: CalibrateFormat | undefined
  readonly output?: string | undefined
  readonly seed?: number | undefined
  readonly resamples?: number | undefined
  readonly minKappa?: number | undefined
  readonly maxListed?: number | undefined
}

export interface CalibrateResult {
  readonly calibration: Calibration
  /** The report in the chosen format. */
  readonly report: string
  /** `--min-kappa` failures, one line per criterion (empty when none or no gate). */
  readonly gateFailures: ReadonlyArray<string>
}

const readJudge = (args: CalibrateArgs): Effect.Effect<JudgeGrades, InputError | UsageError> =>
  Effect.gen(function*() {
    if (args.runDir !== undefined && args.judge !== undefined) {
      return yield* new UsageError({ problem: "give either a run directory or --judge FILE, not both" })
    }
    if (args.judge !== undefined) {
      if (args.iteration !== undefined) {
        return yield* new UsageError({ problem: "--iteration applies to a run directory, not to --judge qrels" })
      }
      const file = yield* readQrelsFile(args.judge)
      return {
        source: { kind: "qrels", file: args.judge, negative: file.negative },
        kind: "retrieval",
        grades: file.grades,
        rubrics: new Map(),
        rubricNames: new Map()
      } satisfies JudgeGrades
    }
    if (args.runDir === undefined) {
      return yield* new UsageError({
        problem: "give the judge's grades: a run directory (out/<pipeline>/<run-id>) or --judge FILE (qrels)"
      })
    }
    const run = yield* readRunGrades(args.runDir, { iteration: args.iteration, journal: args.journal })
    return {
      source: {
        kind: "run",
        run: run.run,
        order: run.order,
        tornLastLine: run.tornLastLine,
        otherLines: run.otherLines
      },
      kind: run.kind,
      grades: run.grades,
      rubrics: run.rubrics,
      rubricNames: run.rubricNames
    } satisfies JudgeGrades
  })

/** `--runs a.txt --runs b.txt` or `--runs a.txt,b.txt`. */
const runFiles = (runs: ReadonlyArray<string> | undefined): ReadonlyArray<string> =>
  (runs ?? []).flatMap((r) => r.split(",")).map((r) => r.trim()).filter((r) => r !== "")

/** The command's work, without printing or writing: read both sides, pair, measure, render. */
export const calibrateCommandWork = (args: CalibrateArgs): Effect.Effect<CalibrateResult, InputError | UsageError> =>
  Effect.gen(function*() {
    if (args.minKappa !== undefined && !(args.minKappa >= -1 && args.minKappa <= 1)) {
      return yield* new UsageError({ problem: `--min-kappa must be between -1 and 1, got ${args.minKappa}` })
    }
    if (
      args.resamples !== undefined &&
      !(Number.isInteger(args.resamples) && args.resamples >= 1 && args.resamples <= 1_000_000)
    ) {
      return yield* new UsageError({
        problem: `--resamples must be an integer from 1 to 1,000,000, got ${args.resamples}`
      })
    }
    const judge = yield* readJudge(args)
    const labels = yield* readGradeFile(args.labels)
    const runs: Array<SystemRun> = []
    for (const file of runFiles(args.runs)) {
      const text = yield* readTextFile(file)
      runs.push({ file, run: yield* parseRun(text, file) })
    }
    const pipeline = judge.source.kind === "run" ? judge.source.run.pipeline : undefined
    const calibration = yield* calibrate(judge, labels, {
      relevantAt: args.relevantAt ?? defaultRelevantAt(pipeline),
      seed: args.seed ?? defaultCalibrateSeed,
      resamples: args.resamples,
      runs
    })
    const report = args.format === "json"
      ? calibrationJson(calibration)
      : calibrationMarkdown(calibration, args.maxListed ?? defaultMaxListed)
    const gateFailures = args.minKappa === undefined ? [] : kappaGateFailures(calibration, args.minKappa)
    return { calibration, report, gateFailures }
  })

/**
 * Runs the calibration, prints the report (or writes it to `--output` and prints one summary line
 * per criterion) — and, calibrating a run directory, writes `calibration.json` into it for the HTML
 * report — then fails with `KappaBelowMinimum` (exit 1) when `--min-kappa` is not met — the
 * report is out first, so a failed gate still shows why.
 */
export const calibrateAndPrint = (
  args: CalibrateArgs
): Effect.Effect<CalibrateResult, InputError | UsageError | OutputError | KappaBelowMinimum> =>
  Effect.gen(function*() {
    const result = yield* calibrateCommandWork(args)
    // On a run directory, its calibration.json too (atomically): the run's HTML report shows it.
    if (args.runDir !== undefined) {
      const file = Path.join(args.runDir, "calibration.json")
      yield* writeFileAtomic(file, calibrationJson(result.calibration))
      yield* Console.error(`wrote ${file} (rag-eval report ${args.runDir} --format html shows it)`)
    }
    if (args.output === undefined) {
      yield* Console.log(result.report.replace(/\n$/, ""))
    } else {
      yield* writeFileAtomic(args.output, result.report)
      for (const line of summaryLines(result.calibration)) yield* Console.log(line)
      yield* Console.log(`wrote ${args.output}`)
    }
    if (result.gateFailures.length > 0) {
      return yield* new KappaBelowMinimum({ minimum: args.minKappa ?? 0, failures: [...result.gateFailures] })
    }
    return result
  })

export const calibrateCommand = Command.make(
  "calibrate",
  {
    runDir: Args.text({ name: "run-dir" }).pipe(
      Args.withDescription(
        "A run directory (out/<pipeline>/<run-id>) whose judged grades are calibrated; or give --judge instead"
      ),
      Args.optional
    ),
    judge: Options.text("judge").pipe(
      Options.withDescription(
        "The judge's grades as TREC qrels (`qid 0 docid grade`), instead of a run directory; criterion \"relevance\""
      ),
      Options.optional
    ),
    labels: Options.text("labels").pipe(
      Options.withDescription(
        "Human labels: TREC qrels (`qid 0 docid grade`) for retrieval judgments; a .csv, .json or .jsonl of id, criterion, grade for rubric " +
          "pipelines (criterion as rubric id `rag-answers/groundedness`, its last segment `groundedness`, or its name `Groundedness`)"
      )
    ),
    relevantAt: Options.integer("relevant-at").pipe(
      Options.withDescription(
        "Binary split for the binary κ: relevant means grade ≥ N (default 4 for answer-synthesis runs, its pass rule; 2 otherwise, for 0–3 scales)"
      ),
      Options.optional
    ),
    iteration: Options.integer("iteration").pipe(
      Options.withDescription("Which iteration of the run to calibrate (default 1)"),
      Options.optional
    ),
    runs: Options.text("runs").pipe(
      Options.withDescription(
        "TREC run files (`qid Q0 docid rank score tag`) of systems to rank by NDCG@10 and MAP under the human labels and under the judge's grades " +
          "(Kendall's τ-b between the two system rankings); repeat the flag or separate files with commas. Without it, only per-query NDCG@10 is compared"
      ),
      Options.repeated
    ),
    format: Options.choice("format", ["markdown", "json"]).pipe(
      Options.withDescription(
        "Report format: markdown (lists at most 20 unpaired items per list) or json (everything) (default markdown)"
      ),
      Options.withDefault("markdown" as const)
    ),
    output: Options.text("output").pipe(
      Options.withDescription("Write the report to FILE (atomically) and print only one summary line per criterion"),
      Options.optional
    ),
    seed: Options.integer("seed").pipe(
      Options.withDescription(`Seed of the bootstrap resampling (default ${defaultCalibrateSeed})`),
      Options.withDefault(defaultCalibrateSeed)
    ),
    resamples: Options.integer("resamples").pipe(
      Options.withDescription(`Bootstrap resamples for the 95% CIs (default ${defaultBootstrapResamples})`),
      Options.withDefault(defaultBootstrapResamples)
    ),
    minKappa: Options.float("min-kappa").pipe(
      Options.withDescription(
        "CI gate: exit 1, with one line per failing criterion, when Cohen's κ on the exact grades of any criterion is below X (or undefined)"
      ),
      Options.optional
    ),
    store: Options.text("store").pipe(
      Options.withDescription("The run's journal is in this PostgreSQL store (postgres://…), as run with --store"),
      Options.optional
    )
  },
  (flags) =>
    // --store: the run's journal is exported from PostgreSQL to a temporary file first
    Effect.flatMap(
      Option.isNone(flags.store) || Option.isNone(flags.runDir) ? Effect.succeed(undefined) : Effect.flatMap(
        loadStoreModule("--store", () => import("../store/PostgresStore.js")),
        (m) => m.exportJournal(flags.store.pipe(Option.getOrThrow), flags.runDir.pipe(Option.getOrThrow))
      ),
      (journal) =>
        calibrateAndPrint({
          journal,
          runDir: Option.getOrUndefined(flags.runDir),
          judge: Option.getOrUndefined(flags.judge),
          labels: flags.labels,
          relevantAt: Option.getOrUndefined(flags.relevantAt),
          iteration: Option.getOrUndefined(flags.iteration),
          runs: flags.runs,
          format: flags.format,
          output: Option.getOrUndefined(flags.output),
          seed: flags.seed,
          resamples: flags.resamples,
          minKappa: Option.getOrUndefined(flags.minKappa)
        }).pipe(
          Effect.ensuring(
            Effect.sync(() =>
              journal !== undefined && fs.rmSync(Path.dirname(journal), { recursive: true, force: true })
            )
          )
        )
    )
).pipe(
  Command.withDescription(
    "Agreement of a judge's grades with human labels: Cohen's κ (exact and binary), weighted κ, Krippendorff's α, confusion matrix, bias, bootstrap CIs, ranking agreement"
  )
)
