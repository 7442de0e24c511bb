/**
 * A judge's agreement with people on each `judge-bench` set, computed from the set's run directory
 * with calibrate's library — the same pairing and statistics `rag-eval calibrate` gives a team's own
 * labels — and the protocol of each set's authors:
 *
 * - **RAGChecker** (its `meta_eval.py`): per pair, delta = metric(second answer) − metric(first), a
 *   missing delta replaced by the median delta, each delta repeated for both annotators, Pearson's r
 *   against their preferences: claim precision ~ correctness, recall ~ completeness, F1 ~ overall.
 *   (`Answers.ts` preferences; CIs over the pairs.)
 * - **ExpertQA**: a claim is supported when the judge finds its faithfulness — the share of its
 *   (sub-)claims some cited passage entails — at least 0.5 (LLM-AggreFact's binary task); balanced
 *   accuracy and Cohen's κ of that against the expert's "Complete", with bootstrap CIs over the
 *   claims; and Pearson's r of faithfulness itself with the label. A claim the judge gave no
 *   faithfulness (no claims extracted, a failed check) is left out and counted.
 * - **Relevance**: Cohen's κ of the judge's 0–3 grades with NIST's, and on relevant (≥ 2) or not
 *   (`Calibration.ts`; CIs over the graded passages).
 */
import * as Effect from "effect/Effect"
import { calibrateLabelSet, judgeOfRun, readLabelledRun } from "../calibrate/CalibrateRun.js"
import { calibrate, defaultCalibrateSeed } from "../calibrate/Calibration.js"
import { readLabelFile } from "../calibrate/LabelFile.js"
import { readQrelsFile } from "../calibrate/Labels.js"
import { loadRunCases } from "../compare/RunCases.js"
import type { InputError, UsageError } from "../domain/Errors.js"
import type * as RunFiles from "../domain/RunFiles.js"
import { bootstrapTable } from "../stats/Bootstrap.js"
import { balancedAccuracy, cohenKappa, tableOf } from "../stats/Kappa.js"
import { EXPERTQA_BALANCED_ACCURACY, type PublishedFigure, RAGCHECKER, RELEVANCE } from "./Published.js"
import type { Figure } from "./Result.js"

export interface AgreementOptions {
  readonly resamples: number
  readonly seed?: number | undefined
}

export interface SetFigures {
  readonly figures: ReadonlyArray<Figure>
  readonly notes: ReadonlyArray<string>
}

const figure = (
  name: string,
  description: string,
  e: typeof RunFiles.Estimate.Type,
  units: number,
  published: ReadonlyArray<PublishedFigure>
): Figure => ({
  name,
  description,
  value: e.value,
  ...(e.reason === undefined ? {} : { reason: e.reason }),
  ci: e.ci,
  units,
  published
})

const unpairedNote = (a: RunFiles.AnswerCalibration | null | undefined): Array<string> =>
  a === null || a === undefined || a.unpaired.count === 0 ? [] : [
    `${a.unpaired.count} label(s) made no pair: ${
      [...new Set(a.unpaired.items.map((u) => u.reason))].slice(0, 3).join("; ")
    } (rag-eval calibrate lists them)`
  ]

/** RAGChecker's meta-evaluation on a run of its cases (see the module comment). */
export const ragCheckerFigures = (
  runDir: string,
  preferences: string,
  options: AgreementOptions
): Effect.Effect<SetFigures, InputError | UsageError> =>
  Effect.gen(function*() {
    const run = yield* readLabelledRun(runDir)
    const labels = yield* readLabelFile(preferences, "jsonl", run.context)
    const c = yield* calibrateLabelSet(run, labels, { resamples: options.resamples, seed: options.seed })
    const rows = c.answers?.preferences?.rows ?? []
    const pairs: ReadonlyArray<readonly [string, "correctness" | "completeness" | "overall"]> = [
      ["precision", "correctness"],
      ["recall", "completeness"],
      ["f1", "overall"]
    ]
    const figures = pairs.map(([metric, aspect]): Figure => {
      const row = rows.find((r) => r.metric === metric && r.aspect === aspect)
      const name = `${metric === "f1" ? "F1" : `claim ${metric}`} ~ ${aspect}`
      const description =
        `Pearson's r of per-pair ${metric} deltas with the annotators' ${aspect} preferences (RAGChecker's meta_eval)`
      return row === undefined
        ? {
          name,
          description,
          value: null,
          reason: `no pair has ${metric} for both answers`,
          ci: null,
          units: 0,
          published: RAGCHECKER[aspect]
        }
        : figure(name, description, row.pearson, row.pairs, RAGCHECKER[aspect])
    })
    const filled = pairs.map(([metric, aspect]) => rows.find((r) => r.metric === metric && r.aspect === aspect))
      .filter((r) => r !== undefined && r.filled > 0)
      .map((r) => `${r!.metric} ${r!.filled}`)
    return {
      figures,
      notes: [
        ...(filled.length === 0
          ? []
          : [
            `pairs where a metric was null for an answer got the median delta (as meta_eval.py does): ${
              filled.join(", ")
            }`
          ]),
        ...unpairedNote(c.answers)
      ]
    }
  })

/** ExpertQA: claims supported or not, against the experts (see the module comment). */
export const expertQaFigures = (
  runDir: string,
  labelsFile: string,
  options: AgreementOptions
): Effect.Effect<SetFigures, InputError | UsageError> =>
  Effect.gen(function*() {
    const run = yield* readLabelledRun(runDir)
    const labels = yield* readLabelFile(labelsFile, "jsonl", run.context)
    const c = yield* calibrateLabelSet(run, labels, { resamples: options.resamples, seed: options.seed })
    const cases = yield* loadRunCases(runDir, { iteration: 1 })
    const human: Array<number> = []
    const judge: Array<number> = []
    let noValue = 0
    for (const l of labels.labels) {
      const v = l.label.label
      if (!("value" in v)) continue
      const faithfulness = cases.cases.get(l.label.caseId)?.["faithfulness"] ?? null
      if (faithfulness === null) {
        noValue++
        continue
      }
      human.push(v.value >= 0.5 ? 1 : 0)
      judge.push(faithfulness >= 0.5 ? 1 : 0)
    }
    const table = tableOf(human, judge, [0, 1])
    const statistics = [balancedAccuracy, cohenKappa]
    const boot = bootstrapTable(table, statistics, {
      seed: options.seed ?? defaultCalibrateSeed,
      resamples: options.resamples
    })
    const est = (i: number): typeof RunFiles.Estimate.Type => {
      const v = statistics[i]!(table)
      return {
        value: v.value,
        ...(v.reason === undefined ? {} : { reason: v.reason }),
        ci: v.value === null ? null : boot.intervals[i] ?? null,
        undefinedResamples: boot.undefinedResamples[i] ?? 0
      }
    }
    const r = c.answers?.metrics.find((m) => m.metric === "faithfulness")
    return {
      figures: [
        figure(
          "balanced accuracy",
          "a claim is supported when its faithfulness is ≥ 0.5; (true-positive rate + true-negative rate) / 2 against the expert's \"Complete\"",
          est(0),
          human.length,
          EXPERTQA_BALANCED_ACCURACY
        ),
        figure(
          "Cohen's κ",
          "the same supported-or-not verdicts against the expert's, chance-corrected",
          est(1),
          human.length,
          []
        ),
        ...(r === undefined ? [] : [
          figure(
            "faithfulness ~ Complete",
            "Pearson's r of the judge's faithfulness (0–1) with the expert's label (1 Complete, 0 not)",
            r.pearson,
            r.pairs,
            []
          )
        ])
      ],
      notes: [
        ...(noValue === 0
          ? []
          : [
            `${noValue} claim(s) left out: the judge gave them no faithfulness (no claim extracted, or a failed check)`
          ]),
        "the published figures are on LLM-AggreFact's ExpertQA set (the same source, its test split): comparable, not the same items",
        ...unpairedNote(c.answers)
      ]
    }
  })

/** The relevance set: κ of the judge's grades with NIST's (see the module comment). */
export const relevanceFigures = (
  runDir: string,
  qrels: string,
  options: AgreementOptions
): Effect.Effect<SetFigures, InputError | UsageError> =>
  Effect.gen(function*() {
    const run = yield* readLabelledRun(runDir)
    const labels = yield* readQrelsFile(qrels)
    const c = yield* calibrate(judgeOfRun(run.grades), labels, {
      relevantAt: 2,
      seed: options.seed ?? defaultCalibrateSeed,
      resamples: options.resamples
    })
    const k = c.criteria.find((x) => x.criterion === "relevance")
    if (k === undefined) {
      return {
        figures: [],
        notes: ["the run graded no hit (no relevance judgments in its journal)"]
      }
    }
    const missing = k.labelsWithoutJudgment.count + k.judgeFailed.count
    return {
      figures: [
        figure("Cohen's κ (4 grades)", "the judge's 0–3 grades against NIST's", k.cohenKappa, k.pairs, RELEVANCE.kappa),
        figure(
          "Cohen's κ (relevant ≥ 2)",
          "relevant (grade ≥ 2) or not, the judge's against NIST's",
          k.binaryKappa,
          k.pairs,
          RELEVANCE.binaryKappa
        )
      ],
      notes: missing === 0
        ? []
        : [`${k.labelsWithoutJudgment.count} graded passage(s) without a judgment, ${k.judgeFailed.count} failed`]
    }
  })
