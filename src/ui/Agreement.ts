/**
 * The judge's agreement with a run's labels so far, for the run's page: `calibrate`'s own figures
 * (`calibrate/Calibration.ts`: Cohen's κ, exact agreement, weighted κ, Krippendorff's α, the
 * confusion matrix, per-grade precision and recall, each with its bootstrap CI) computed over the
 * labelled judgments only — no statistic is computed here.
 *
 * Each label kind has a builder that states its labels as calibrate's grades (`builders` below):
 * a rubric grade per criterion, a hit's relevance grade ("relevance", per query and hit, as qrels),
 * a claim's verdict and a nugget's support on their rubrics' 0 · 1 · 2 scales (contradicted ·
 * neutral · entailed; not · partial · support). The judge's side is the `judged` value each label
 * carries (taken from the run when the label was made). A label that only says "the judge is
 * wrong" has no value to pair: it is counted (`disagreedWithoutValue`), not guessed. Kinds with no
 * builder yet (per-case metric values, preferences between runs: calibrate for answers, issue #32,
 * adds their statistics) are listed as `pending` with their counts; a builder for them plugs in here.
 *
 * `moreForPlusMinus`: how many more labels would narrow the headline's 95% interval to ±0.1, if
 * agreement stays as it is — the interval's half-width shrinks as 1/√n, so n · (h / 0.1)² labels
 * in all.
 */
import * as Effect from "effect/Effect"
import { calibrate, type CalibrateOptions, type JudgeGrades } from "../calibrate/Calibration.js"
import { type CriterionGrades, putGrade, relevanceCriterion } from "../calibrate/Grades.js"
import type { GradeFile } from "../calibrate/Labels.js"
import type { InputError, UsageError } from "../domain/Errors.js"
import { type Label, type LabelTarget, targetKey } from "../domain/Label.js"
import type * as RunFiles from "../domain/RunFiles.js"
import { supportGrade, verdictGrade } from "./CaseTargets.js"
import type { Agreement, AgreementGroup } from "./Domain.js"
import type { LabelState } from "./LabelLog.js"

/** Resamples of the live figures (calibrate's default is 10,000; a page refreshes after every label). */
export const AGREEMENT_RESAMPLES = 2_000
export const AGREEMENT_SEED = 42
/** The interval the projection aims at: ±0.1. */
export const TARGET_HALF_WIDTH = 0.1

type Kind = AgreementGroup["kind"]

/** How one label kind becomes calibrate's grades: its groups (criteria), and each label's place and grades. */
interface Builder {
  readonly kind: Kind
  readonly gradeKind: "rubric" | "retrieval"
  /** The binary split of binary κ on this scale. */
  readonly relevantAt: (pipeline: string) => number
  /** The criterion (group) a label belongs to, and its title. */
  readonly criterion: (target: LabelTarget) => { readonly name: string; readonly title: string }
  /** The item within the case: "" for a judgment of the whole case. */
  readonly item: (target: LabelTarget) => string
  /** A value as a grade (the person's or the judge's); undefined when it is not one of this kind. */
  readonly grade: (value: Label["label"] | { readonly judged: Label["judged"] }) => number | null | undefined
}

const judgedGrade = (judged: Label["judged"]): number | null | undefined =>
  judged === undefined
    ? undefined
    : judged === null
    ? null
    : typeof judged === "number"
    ? judged
    : judged === "contradicted" || judged === "neutral" || judged === "entailed"
    ? verdictGrade(judged)
    : supportGrade(judged)

const builders: Partial<Record<LabelTarget["kind"], Builder>> = {
  grade: {
    kind: "grade",
    gradeKind: "rubric",
    relevantAt: (pipeline) => (pipeline === "answer-synthesis" ? 4 : 2),
    criterion: (
      t
    ) => (t.kind === "grade" ? { name: t.criterion, title: `Rubric grade: ${t.criterion}` } : { name: "", title: "" }),
    item: () => "",
    grade: (v) => ("judged" in v ? judgedGrade(v.judged) : "grade" in v ? v.grade : undefined)
  },
  hit: {
    kind: "hit",
    gradeKind: "retrieval",
    relevantAt: () => 2,
    criterion: () => ({ name: relevanceCriterion, title: "Hit relevance (0–3)" }),
    item: (t) => (t.kind === "hit" ? t.hitId : ""),
    grade: (v) => ("judged" in v ? judgedGrade(v.judged) : "grade" in v ? v.grade : undefined)
  },
  claim: {
    kind: "claim",
    gradeKind: "rubric",
    relevantAt: () => 2,
    criterion: () => ({ name: "claim verdict", title: "Claim verdicts (0 contradicted · 1 neutral · 2 entailed)" }),
    item: (t) => targetKey(t),
    grade: (v) => ("judged" in v ? judgedGrade(v.judged) : "verdict" in v ? verdictGrade(v.verdict) : undefined)
  },
  nugget: {
    kind: "nugget",
    gradeKind: "rubric",
    relevantAt: () => 2,
    criterion: () => ({ name: "nugget support", title: "Nugget support (0 not · 1 partial · 2 support)" }),
    item: (t) => targetKey(t),
    grade: (v) => ("judged" in v ? judgedGrade(v.judged) : "support" in v ? supportGrade(v.support) : undefined)
  }
}

const PENDING_NOTE: Partial<Record<LabelTarget["kind"], string>> = {
  metric:
    "per-case metric labels are kept; their correlation with the judge's values (Pearson, Kendall τ-b) comes with calibrate for answers",
  preference:
    "preference labels are kept; their agreement with the judges' metric deltas comes with calibrate for answers"
}

/** Labels more that would narrow an interval of `pairs` pairs to ±0.1 (0: it is already). */
export const moreLabelsFor = (estimate: typeof RunFiles.Estimate.Type, pairs: number): number | null => {
  if (estimate.ci === null || pairs < 2) return null
  const half = (estimate.ci.upper - estimate.ci.lower) / 2
  if (half <= TARGET_HALF_WIDTH) return 0
  // Rounded before the ceiling: 20 · (0.30000000000000004 / 0.1)² is 180, not 181.
  return Math.max(0, Math.ceil(Number((pairs * (half / TARGET_HALF_WIDTH) ** 2).toFixed(6))) - pairs)
}

interface Collected {
  readonly builder: Builder
  readonly title: string
  readonly judge: CriterionGrades
  readonly human: CriterionGrades
  labels: number
  disagreed: number
}

/** The labels of this run (or of any run: a hand-written file names none), latest per target. */
export const runLabels = (state: LabelState, runId: string): ReadonlyArray<Label> =>
  [...state.latest.values()].filter((l) => l.runId === undefined || l.runId === runId)

export const agreement = (
  state: LabelState,
  run: { readonly runId: string; readonly pipeline: string; readonly dir: string; readonly judge: string },
  options: { readonly resamples?: number; readonly seed?: number } = {}
): Effect.Effect<Agreement, InputError | UsageError> =>
  Effect.gen(function*() {
    const labels = runLabels(state, run.runId)
    const groups = new Map<string, Collected>()
    const pending = new Map<string, number>()
    let line = 0
    for (const label of labels) {
      line++
      const builder = builders[label.target.kind]
      if (builder === undefined) {
        pending.set(label.target.kind, (pending.get(label.target.kind) ?? 0) + 1)
        continue
      }
      const { name, title } = builder.criterion(label.target)
      const groupKey = `${builder.kind}\u0000${name}`
      let group = groups.get(groupKey)
      if (group === undefined) {
        group = { builder, title, judge: new Map(), human: new Map(), labels: 0, disagreed: 0 }
        groups.set(groupKey, group)
      }
      group.labels++
      const judged = builder.grade({ judged: label.judged })
      const human = "agree" in label.label
        ? (label.label.agree ? judged : undefined)
        : builder.grade(label.label)
      if (human === undefined || (human === null && "agree" in label.label)) {
        // "Wrong" without a value of one's own, or "right" about a judgment with no verdict.
        group.disagreed++
        continue
      }
      const item = builder.item(label.target)
      putGrade(group.judge, name, label.caseId, item, { grade: judged ?? null, line })
      putGrade(group.human, name, label.caseId, item, { grade: human, line })
    }
    const resamples = options.resamples ?? AGREEMENT_RESAMPLES
    const seed = options.seed ?? AGREEMENT_SEED
    const out: Array<AgreementGroup> = []
    for (const [, group] of groups) {
      const [name] = [...group.judge.keys(), ...group.human.keys()]
      const judge: JudgeGrades = {
        source: {
          kind: "run",
          run: {
            dir: run.dir,
            runId: run.runId,
            pipeline: run.pipeline,
            judge: run.judge,
            status: undefined,
            iteration: 1,
            iterations: 1
          },
          order: "records",
          tornLastLine: false,
          otherLines: 0
        },
        kind: group.builder.gradeKind,
        grades: group.judge,
        rubrics: new Map(),
        rubricNames: new Map()
      }
      const file: GradeFile = {
        file: "labels.jsonl",
        format: "jsonl",
        kind: group.builder.gradeKind,
        grades: group.human,
        count: group.labels,
        negative: 0
      }
      const settings: CalibrateOptions = { relevantAt: group.builder.relevantAt(run.pipeline), seed, resamples }
      const calibration = name === undefined ? undefined : yield* calibrate(judge, file, settings)
      const criterion = calibration?.criteria[0]
      if (criterion === undefined) {
        continue
      }
      const kappaDefined = criterion.cohenKappa.value !== null
      const headline = kappaDefined
        ? { statistic: "Cohen's κ", estimate: criterion.cohenKappa }
        : { statistic: "exact agreement", estimate: criterion.exactAgreement }
      out.push({
        kind: group.builder.kind,
        title: group.title,
        labels: group.labels,
        disagreedWithoutValue: group.disagreed,
        headline,
        exactAgreement: criterion.exactAgreement,
        moreForPlusMinus: moreLabelsFor(headline.estimate, criterion.pairs),
        calibration: criterion
      })
    }
    // Groups whose labels all lacked a value: counted, with nothing to measure yet.
    return {
      labels: labels.length,
      groups: out,
      pending: [...pending].map(([kind, count]) => ({
        kind,
        labels: count,
        note: PENDING_NOTE[kind as LabelTarget["kind"]] ?? "agreement for these labels is not computed yet"
      })),
      file: { lines: state.lines, skipped: [...state.skipped], torn: state.torn },
      bootstrap: { resamples, seed }
    }
  })
