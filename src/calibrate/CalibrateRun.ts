/**
 * A run directory calibrated against people's labels in the one labels format: the entry the CLI
 * (`rag-eval calibrate <run-dir> --labels FILE`) and the browser review's live agreement panel share.
 *
 * The run is read once (`readRunGrades`: its journal's grades, and its claim judgments); labels are
 * split by what they are about — rubric grades and hit grades go to the grade calibration
 * (`Calibration.ts`: κ, weighted κ, α…), claim verdicts, nugget grades, per-case metric values and
 * preferences to `Answers.ts` — and both parts land in one `Calibration` (`calibration.json`,
 * version 2). The per-case metrics (`case-metrics-iteration-N.jsonl`, read through `RunFiles`) are
 * read only when a metric or preference label needs them.
 *
 * Grade calibration pairs one label per item: when several people labelled the same grade, keep one
 * person's labels (`by`). Claim, metric and preference labels by several people are each a pair (as
 * RAGChecker's two annotators are).
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { loadRunCases, type RunCases } from "../compare/RunCases.js"
import { InputError, UsageError } from "../domain/Errors.js"
import { type Label, LABELS_FILE } from "../domain/Label.js"
import { CALIBRATION_VERSION, readManifest } from "../domain/RunFiles.js"
import { defaultBootstrapResamples } from "../stats/Bootstrap.js"
import { calibrateAnswers, type RunMetrics } from "./Answers.js"
import {
  calibrate,
  type Calibration,
  defaultCalibrateSeed,
  defaultRelevantAt,
  type JudgeGrades,
  type SystemRun
} from "./Calibration.js"
import { type CriterionGrades, putGrade, relevanceCriterion } from "./Grades.js"
import { type LabelContext, type LabelLine, type LabelSet, labelSetOf, readLabelFile } from "./LabelFile.js"
import type { GradeFile, GradeFileFormat } from "./Labels.js"
import { foldClaim } from "./RunClaims.js"
import { readRunGrades, type RunGrades, type RunGradesOptions } from "./RunGrades.js"

export interface CalibrateRunOptions extends RunGradesOptions {
  /** Other runs' directories, whose answers preferences compare with (`--runs DIR`). */
  readonly otherRuns?: ReadonlyArray<string> | undefined
  /** TREC run files to rank (retrieval runs; `--runs FILE`). */
  readonly systems?: ReadonlyArray<SystemRun> | undefined
  /** Keep only this person's labels. */
  readonly by?: string | undefined
  readonly relevantAt?: number | undefined
  readonly seed?: number | undefined
  readonly resamples?: number | undefined
}

/** A run as labels are paired with it: its grades and claims, and what the label reader needs to know. */
export interface LabelledRun {
  readonly dir: string
  readonly grades: RunGrades
  readonly context: LabelContext
  readonly otherRuns: ReadonlyArray<string>
}

/** The judge's side of the grade calibration, from a run. */
export const judgeOfRun = (run: RunGrades): JudgeGrades => ({
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
})

/** Reads a run directory (and the run ids of `otherRuns`) for pairing labels with it. */
export const readLabelledRun = (
  dir: string,
  options: CalibrateRunOptions = {}
): Effect.Effect<LabelledRun, InputError | UsageError> =>
  Effect.gen(function*() {
    const grades = yield* readRunGrades(dir, options)
    const otherRuns = options.otherRuns ?? []
    const otherIds: Array<string> = []
    for (const other of otherRuns) otherIds.push((yield* readManifest(other)).runId)
    const claims = grades.claims
    const context: LabelContext = {
      runId: grades.run.runId,
      otherRunId: otherIds[0],
      hasReference: (caseId) => {
        const c = claims.get(caseId)
        return c === undefined ? undefined : c.extraction.has("reference")
      },
      claimIndex: (caseId, side, text) => {
        const e = claims.get(caseId)?.extraction.get(side)
        if (e === undefined || e.status !== "ok") return undefined
        const folded = foldClaim(text)
        const i = e.claims.findIndex((c) => foldClaim(c) === folded)
        return i === -1 ? undefined : i + 1
      }
    }
    return { dir, grades, context, otherRuns }
  })

const runMetrics = (dir: string, iteration: number | undefined): Effect.Effect<RunMetrics, InputError | UsageError> =>
  Effect.map(loadRunCases(dir, { iteration }), (r: RunCases) => ({
    dir,
    runId: r.run.runId,
    cases: r.cases,
    metrics: r.metrics.map((name) => ({ name, direction: r.specs.get(name)?.direction ?? "none" }))
  }))

/** A grade or hit label's grade: its own, or the judged grade it agreed with; undefined: agree-only. */
const gradeOf = (l: Label): number | undefined => {
  const v = l.label
  if ("grade" in v) return v.grade
  if ("agree" in v && v.agree && typeof l.judged === "number") return l.judged
  return undefined
}

/** Grade and hit labels as the grade calibration's `GradeFile`. */
const gradeFileOf = (
  labels: LabelSet,
  gradeLabels: ReadonlyArray<LabelLine>,
  fallbackKind: GradeFile["kind"]
): Effect.Effect<GradeFile, InputError | UsageError> =>
  Effect.gen(function*() {
    const grades: CriterionGrades = new Map()
    const by = new Map<string, string>()
    const hits = gradeLabels.filter((l) => l.label.target.kind === "hit").length
    if (hits > 0 && hits < gradeLabels.length) {
      return yield* new UsageError({
        problem: `${labels.file}: the labels mix hit grades (${hits}) and rubric grades (${
          gradeLabels.length - hits
        }); calibrate one kind of run at a time`
      })
    }
    for (const l of gradeLabels) {
      const t = l.label.target
      const grade = gradeOf(l.label)!
      const [criterion, item] = t.kind === "hit" ? [relevanceCriterion, t.hitId] : t.kind === "grade" ?
        [t.criterion, ""] :
        ["", ""]
      const previous = putGrade(grades, criterion, l.label.caseId, item, { grade, line: l.line })
      const key = `${criterion}\u0000${l.label.caseId}\u0000${item}`
      if (previous !== undefined) {
        return yield* new InputError({
          file: labels.file,
          line: l.line,
          problem: `two people labelled ${
            t.kind === "hit" ?
              `hit "${item}" of case "${l.label.caseId}"` :
              `case "${l.label.caseId}", criterion "${criterion}"`
          } (${by.get(key) || "someone"} on line ${previous.line}, ${
            l.label.by || "someone"
          } here): grade calibration pairs one label per item — keep one person's labels with --by NAME`
        })
      }
      by.set(key, l.label.by)
    }
    return {
      file: labels.file,
      format: labels.format as GradeFileFormat,
      kind: gradeLabels.length === 0 ? fallbackKind : hits > 0 ? "retrieval" : "rubric",
      grades,
      count: gradeLabels.length,
      negative: 0
    } satisfies GradeFile
  })

/** The calibration of a run against a set of labels (both parts; see the module comment). */
export const calibrateLabelSet = (
  run: LabelledRun,
  labels: LabelSet,
  options: CalibrateRunOptions = {}
): Effect.Effect<Calibration, InputError | UsageError> =>
  Effect.gen(function*() {
    const kept = options.by === undefined ? labels.labels : labels.labels.filter((l) => l.label.by === options.by)
    const unresolved = options.by === undefined
      ? labels.unresolved
      : labels.unresolved.filter((u) => (u.by ?? "") === options.by)
    const gradeLabels: Array<LabelLine> = []
    const agreeOnly: Array<LabelLine> = []
    const answerLabels: Array<LabelLine> = []
    for (const l of kept) {
      const kind = l.label.target.kind
      if (kind === "grade" || kind === "hit") {
        if (gradeOf(l.label) === undefined) agreeOnly.push(l)
        else gradeLabels.push(l)
      } else answerLabels.push(l)
    }
    const judge = judgeOfRun(run.grades)
    const gradeFile = yield* gradeFileOf(labels, gradeLabels, judge.kind)
    const seed = options.seed ?? defaultCalibrateSeed
    const resamples = Math.floor(options.resamples ?? defaultBootstrapResamples)
    const base = yield* calibrate(judge, gradeFile, {
      relevantAt: options.relevantAt ?? defaultRelevantAt(run.grades.run.pipeline),
      seed,
      resamples,
      runs: options.systems
    })
    const needMetrics = answerLabels.some((l) =>
      l.label.target.kind === "metric" || l.label.target.kind === "preference"
    )
    const hasAnswers = answerLabels.length > 0 || unresolved.length > 0 || agreeOnly.length > 0
    if (!hasAnswers && options.otherRuns !== undefined && options.otherRuns.length > 0) {
      return yield* new UsageError({
        problem: "--runs with a run directory compares preferences between runs, but the labels hold no preferences"
      })
    }
    const iteration = options.iteration ?? 1
    const metrics = needMetrics ? yield* runMetrics(run.dir, iteration) : undefined
    const others: Array<RunMetrics> = []
    if (needMetrics) { for (const dir of run.otherRuns) others.push(yield* runMetrics(dir, undefined)) }
    const answers = hasAnswers
      ? calibrateAnswers({
        runId: run.grades.run.runId,
        claims: run.grades.claims,
        metrics,
        others,
        labels: answerLabels,
        unresolved,
        agreeOnly
      }, { seed, resamples })
      : null
    return {
      calibrationVersion: CALIBRATION_VERSION,
      ...base,
      // Every label read, not only the grades the grade calibration paired.
      labels: { ...base.labels, count: kept.length + unresolved.length },
      answers
    }
  })

/**
 * A judge's grades given as qrels (`--judge`), with no run: only grade labels can be paired (claim,
 * metric and preference labels need a run's judgments; `LabelFile.ts` refuses them without one).
 */
export const calibrateJudgeLabels = (
  judge: JudgeGrades,
  labels: LabelSet,
  options: CalibrateRunOptions = {}
): Effect.Effect<Calibration, InputError | UsageError> =>
  Effect.gen(function*() {
    const kept = options.by === undefined ? labels.labels : labels.labels.filter((l) => l.label.by === options.by)
    const other = kept.find((l) =>
      (l.label.target.kind !== "grade" && l.label.target.kind !== "hit") || gradeOf(l.label) === undefined
    )
    if (other !== undefined) {
      return yield* new InputError({
        file: labels.file,
        line: other.line,
        problem: `a ${other.label.target.kind} label ${
          gradeOf(other.label) === undefined &&
            (other.label.target.kind === "grade" || other.label.target.kind === "hit")
            ? "that only agrees or disagrees "
            : ""
        }is paired with a run's judgments: give the run directory (out/<pipeline>/<run-id>), not --judge`
      })
    }
    const gradeFile = yield* gradeFileOf(labels, kept, judge.kind)
    const base = yield* calibrate(judge, gradeFile, {
      relevantAt: options.relevantAt ?? defaultRelevantAt(undefined),
      seed: options.seed ?? defaultCalibrateSeed,
      resamples: options.resamples,
      runs: options.systems
    })
    return { calibrationVersion: CALIBRATION_VERSION, ...base }
  })

/**
 * The browser review's entry: a run directory and labels in memory (as `labels.jsonl` holds them),
 * calibrated as `rag-eval calibrate <run-dir>` would calibrate that file.
 */
export const calibrateRunLabels = (
  runDir: string,
  labels: ReadonlyArray<Label>,
  options: CalibrateRunOptions = {}
): Effect.Effect<Calibration, InputError | UsageError> =>
  Effect.flatMap(
    readLabelledRun(runDir, options),
    (run) => calibrateLabelSet(run, labelSetOf(labels, Path.join(runDir, LABELS_FILE)), options)
  )

/** The labels file `calibrate <run-dir>` reads when `--labels` is not given: the browser review's. */
export const defaultLabelsFile = (runDir: string): string | undefined => {
  const file = Path.join(runDir, LABELS_FILE)
  return fs.existsSync(file) ? file : undefined
}

/** Reads a labels file (CSV / JSON / JSONL, any form of `LabelFile.ts`) against a run. */
export const readLabelsFor = (
  run: LabelledRun | undefined,
  file: string,
  format: "csv" | "json" | "jsonl"
): Effect.Effect<LabelSet, InputError> => readLabelFile(file, format, run?.context)
