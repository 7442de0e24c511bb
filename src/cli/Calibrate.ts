/**
 * `rag-eval calibrate [<run-dir> | --judge FILE] [--labels FILE] [--relevant-at N] [--iteration N]
 * [--runs FILE|DIR…] [--by NAME] [--format markdown|json] [--output FILE] [--seed N] [--resamples N]
 * [--min-kappa X]` (SPEC §7): agreement between a judge and human labels. Reading is
 * `src/calibrate/RunGrades.ts`, `Labels.ts` (qrels) and `LabelFile.ts` (every other labels file),
 * pairing `CalibrateRun.ts`, the statistics `Calibration.ts` (grades) and `Answers.ts` (claims,
 * metrics, preferences) on `src/stats/`, the output `Render.ts`.
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
  calibrateJudgeLabels,
  calibrateLabelSet,
  defaultLabelsFile,
  judgeOfRun,
  readLabelledRun,
  readLabelsFor
} from "../calibrate/CalibrateRun.js"
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
import { gradeFileFormat, readQrelsFile } from "../calibrate/Labels.js"
import { calibrationJson, calibrationMarkdown, defaultMaxListed, summaryLines } from "../calibrate/Render.js"
import { loadStoreModule } from "../cluster/Peers.js"
import { type InputError, type OutputError, UsageError } from "../domain/Errors.js"
import { LABELS_FILE } from "../domain/Label.js"
import { CALIBRATION_VERSION } from "../domain/RunFiles.js"
import { writeFileAtomic } from "../io/Files.js"
import { parseRun } from "../metrics/trec.js"
import { defaultBootstrapResamples } from "../stats/Bootstrap.js"
import { readTextFile } from "./Trec.js"

export type CalibrateFormat = "markdown" | "json"

export interface CalibrateArgs {
  /** A run directory whose judgments are calibrated (or `judge`). */
  readonly runDir?: string | undefined
  /** A qrels file of judge grades (or `runDir`). */
  readonly judge?: string | undefined
  /** Default: the run directory's `labels.jsonl` (the browser review's), when there is one. */
  readonly labels?: string | undefined
  /** Default: 4 for answer-synthesis, 2 otherwise. */
  readonly relevantAt?: number | undefined
  /** Run directory only; default 1. */
  readonly iteration?: number | undefined
  /** Run directory only: its journal when it is not the directory's file (`--store`). */
  readonly journal?: string | undefined
  /** TREC run files of systems to rank, or run directories preferences compare with. */
  readonly runs?: ReadonlyArray<string> | undefined
  /** Keep only this person's labels. */
  readonly by?: string | undefined
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

const readJudgeQrels = (
  file: string,
  iteration: number | undefined
): Effect.Effect<JudgeGrades, InputError | UsageError> =>
  Effect.gen(function*() {
    if (iteration !== undefined) {
      return yield* new UsageError({ problem: "--iteration applies to a run directory, not to --judge qrels" })
    }
    const grades = yield* readQrelsFile(file)
    return {
      source: { kind: "qrels", file, negative: grades.negative },
      kind: "retrieval",
      grades: grades.grades,
      rubrics: new Map(),
      rubricNames: new Map()
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
    if (args.runDir !== undefined && args.judge !== undefined) {
      return yield* new UsageError({ problem: "give either a run directory or --judge FILE, not both" })
    }
    if (args.runDir === undefined && args.judge === undefined) {
      return yield* new UsageError({
        problem: "give the judge's grades: a run directory (out/<pipeline>/<run-id>) or --judge FILE (qrels)"
      })
    }
    // --runs: TREC run files (systems to rank), or run directories (answers preferences compare with)
    const systems: Array<SystemRun> = []
    const otherRuns: Array<string> = []
    for (const entry of runFiles(args.runs)) {
      if (fs.existsSync(entry) && fs.statSync(entry).isDirectory()) {
        if (args.runDir === undefined) {
          return yield* new UsageError({
            problem:
              `--runs ${entry} is a run directory: preferences between runs need the run directory to calibrate, not --judge`
          })
        }
        otherRuns.push(entry)
        continue
      }
      const text = yield* readTextFile(entry)
      systems.push({ file: entry, run: yield* parseRun(text, entry) })
    }
    const options = {
      iteration: args.iteration,
      journal: args.journal,
      otherRuns,
      systems,
      by: args.by,
      relevantAt: args.relevantAt,
      seed: args.seed,
      resamples: args.resamples
    }
    const run = args.runDir === undefined ? undefined : yield* readLabelledRun(args.runDir, options)
    const labelsFile = args.labels ?? (args.runDir === undefined ? undefined : defaultLabelsFile(args.runDir))
    if (labelsFile === undefined) {
      return yield* new UsageError({
        problem: args.runDir === undefined
          ? "give the human labels with --labels FILE"
          : `give the human labels with --labels FILE (${
            Path.join(args.runDir, LABELS_FILE)
          }, where rag-eval ui writes them, does not exist)`
      })
    }
    const format = gradeFileFormat(labelsFile)
    let calibration: Calibration
    if (format === "qrels") {
      if (args.by !== undefined) {
        return yield* new UsageError({ problem: "--by needs labels with a person (not qrels)" })
      }
      const judge = run === undefined ? yield* readJudgeQrels(args.judge!, args.iteration) : judgeOfRun(run.grades)
      const pipeline = judge.source.kind === "run" ? judge.source.run.pipeline : undefined
      const base = yield* calibrate(judge, yield* readQrelsFile(labelsFile), {
        relevantAt: args.relevantAt ?? defaultRelevantAt(pipeline),
        seed: args.seed ?? defaultCalibrateSeed,
        resamples: args.resamples,
        runs: systems
      })
      calibration = { calibrationVersion: CALIBRATION_VERSION, ...base }
    } else {
      const labels = yield* readLabelsFor(run, labelsFile, format)
      calibration = run === undefined
        ? yield* calibrateJudgeLabels(yield* readJudgeQrels(args.judge!, args.iteration), labels, options)
        : yield* calibrateLabelSet(run, labels, options)
    }
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
        "Human labels (default: the run directory's labels.jsonl, which rag-eval ui writes): TREC qrels (`qid 0 docid grade`) for retrieval judgments; " +
          "or a .jsonl of the labels format, or a .csv / .json / .jsonl with one label a row — id, criterion, grade (rubric grades; criterion as rubric id " +
          "`rag-answers/groundedness`, its last segment or its name) · id, claim (text or number), verdict (entailed, neutral, contradicted; " +
          "optional side, against) · id, metric, value · id_a, id_b, preference (−2 … 2; optional aspect)"
      ),
      Options.optional
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
          "(Kendall's τ-b between the two system rankings); or another run directory, whose answers preference labels compare with the run's. " +
          "Repeat the flag or separate entries with commas"
      ),
      Options.repeated
    ),
    by: Options.text("by").pipe(
      Options.withDescription(
        "Only this person's labels (the labels' `by`, or a flat file's by / annotator column): grade calibration pairs one label per item"
      ),
      Options.optional
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
          labels: Option.getOrUndefined(flags.labels),
          by: Option.getOrUndefined(flags.by),
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
    "Agreement of a judge with human labels: grades (Cohen's κ exact and binary, weighted κ, Krippendorff's α, confusion matrix, bias, ranking agreement), claim verdicts (κ, balanced accuracy, precision/recall per verdict), metric values and preferences (Pearson, Kendall's τ-b), with bootstrap CIs"
  )
)
