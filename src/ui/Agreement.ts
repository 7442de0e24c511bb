/**
 * The judge's agreement with a run's labels so far, for the run's page: exactly what `rag-eval
 * calibrate <run-dir>` computes from the same labels (`calibrate/CalibrateRun.ts`
 * `calibrateRunLabels`: grades and hits through `Calibration.ts` — κ, weighted κ, α…; claim
 * verdicts, nugget grades, per-case metric values and preferences through `Answers.ts` — κ,
 * balanced accuracy, Pearson's r, Kendall's τ-b — each with its bootstrap CI and the labels more a
 * ±0.1 interval needs). No statistic is computed here.
 *
 * Live, at any size: calibrate reads a run directory whole (its journal, records, per-case
 * metrics), so the review gives it the **labelled slice** of the run instead — a temporary run
 * directory holding the run's manifest and, for the labelled cases only, their journal lines,
 * records and per-case metric rows (and the same of the runs preferences compare with), cut from
 * the review's indexes. Every figure over the labels is the same as on the whole run (they pair
 * labels with the labelled cases' judgments only); what differs is the lists of judgments nobody
 * labelled, which the page does not show.
 *
 * `summarise` turns calibrate's result into the panel's groups: per kind of label its headline
 * statistic (Cohen's κ; Pearson's r for values and preferences) with its CI, a second figure, the
 * pairs, and the labels more for ±0.1 (calibrate's `narrowing`).
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { calibrateRunLabels } from "../calibrate/CalibrateRun.js"
import { InputError, type UsageError } from "../domain/Errors.js"
import type { Label } from "../domain/Label.js"
import { type Calibration, caseMetricsFile } from "../domain/RunFiles.js"
import type * as RunFiles from "../domain/RunFiles.js"
import type { Agreement, AgreementGroup } from "./Domain.js"
import type { LabelState } from "./LabelLog.js"

/** Resamples of the live figures (calibrate's default is 10,000; the page asks after every label). */
export const AGREEMENT_RESAMPLES = 2_000
export const AGREEMENT_SEED = 42

/** The labels of this run (or of any run: a hand-written file names none), latest per target. */
export const runLabels = (state: LabelState, runId: string): ReadonlyArray<Label> =>
  [...state.latest.values()].filter((l) => l.runId === undefined || l.runId === runId)

/** One run's part of a labelled slice: its directory's manifest and the labelled cases' lines. */
export interface SliceRun {
  readonly dir: string
  /** Per iteration (1-based, all of them for a run preferences compare with; else the first). */
  readonly iterations: ReadonlyArray<{
    readonly iteration: number
    readonly records: ReadonlyArray<string>
    readonly caseMetrics: ReadonlyArray<string>
  }>
  /** Journal lines of the labelled cases (iteration 1). */
  readonly journal: ReadonlyArray<string>
}

const writeSlice = (root: string, name: string, run: SliceRun): string => {
  const dir = Path.join(root, name)
  fs.mkdirSync(dir, { recursive: true })
  fs.copyFileSync(Path.join(run.dir, "manifest.json"), Path.join(dir, "manifest.json"))
  const lines = (xs: ReadonlyArray<string>) => (xs.length === 0 ? "" : xs.join("\n") + "\n")
  fs.writeFileSync(Path.join(dir, "judgments.jsonl"), lines(run.journal))
  for (const it of run.iterations) {
    fs.writeFileSync(Path.join(dir, `records-iteration-${it.iteration}.jsonl`), lines(it.records))
    fs.writeFileSync(Path.join(dir, caseMetricsFile(it.iteration)), lines(it.caseMetrics))
  }
  return dir
}

/** calibrate over the labelled slice of a run (and of the runs its preference labels compare with). */
export const calibrateSlice = (
  run: SliceRun,
  others: ReadonlyArray<SliceRun>,
  labels: ReadonlyArray<Label>,
  options: { readonly resamples?: number; readonly seed?: number } = {}
): Effect.Effect<Calibration, InputError | UsageError> =>
  Effect.acquireUseRelease(
    Effect.try({
      try: () => fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-ui-slice-")),
      catch: (e) => new InputError({ file: os.tmpdir(), problem: `cannot write a temporary directory: ${String(e)}` })
    }),
    (root) =>
      Effect.flatMap(
        Effect.try({
          try: () => ({
            dir: writeSlice(root, "run", run),
            otherRuns: others.map((o, i) => writeSlice(root, `other-${i + 1}`, o))
          }),
          catch: (e) => new InputError({ file: root, problem: `cannot write the labelled slice: ${String(e)}` })
        }),
        ({ dir, otherRuns }) =>
          calibrateRunLabels(dir, labels, {
            otherRuns,
            seed: options.seed ?? AGREEMENT_SEED,
            resamples: options.resamples ?? AGREEMENT_RESAMPLES
          })
      ),
    (root) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
  )

type Estimate = typeof RunFiles.Estimate.Type
type Headline = typeof RunFiles.Headline.Type
type Narrowing = typeof RunFiles.Narrowing.Type

const more = (n: Narrowing | undefined): { readonly more: number | null; readonly moreNote?: string } =>
  n === undefined ? { more: null } : n.more === null ? { more: null, moreNote: n.reason ?? "no CI" } : { more: n.more }

const plain = (e: Estimate | Headline): Estimate => ({
  value: e.value,
  ...(e.reason === undefined ? {} : { reason: e.reason }),
  ci: e.ci,
  undefinedResamples: e.undefinedResamples
})

/** The panel's groups, from calibrate's result. */
export const summarise = (calibration: Calibration | undefined, labels: number, state: LabelState): Agreement => {
  const groups: Array<AgreementGroup> = []
  const file = { lines: state.lines, skipped: [...state.skipped], torn: state.torn }
  if (calibration === undefined) {
    return {
      labels,
      groups,
      agreeOnly: null,
      unpaired: [],
      file,
      bootstrap: { resamples: AGREEMENT_RESAMPLES, seed: AGREEMENT_SEED },
      calibration: null
    }
  }
  for (const c of calibration.criteria) {
    if (c.pairs === 0 && c.labelsWithoutJudgment.count === 0) continue
    groups.push({
      kind: calibration.kind === "retrieval" ? "hit" : "grade",
      title: calibration.kind === "retrieval" ? "Hit relevance (0–3)" : `Rubric grade: ${c.criterion}`,
      pairs: c.pairs,
      headline: { statistic: "Cohen's κ", estimate: c.cohenKappa },
      second: { statistic: "exact agreement", estimate: c.exactAgreement },
      ...more(c.narrowing?.cohenKappa)
    })
  }
  const answers = calibration.answers ?? null
  for (const [kind, v] of [["claim", answers?.claims], ["nugget", answers?.nuggets]] as const) {
    if (v === undefined || v === null) continue
    groups.push({
      kind,
      title: kind === "claim"
        ? "Claim verdicts (contradicted · neutral · entailed)"
        : "Nugget support (not · partial · support)",
      pairs: v.pairs,
      headline: { statistic: "Cohen's κ", estimate: plain(v.cohenKappa) },
      second: { statistic: "balanced accuracy", estimate: plain(v.balancedAccuracy) },
      ...more(v.cohenKappa.narrowing)
    })
  }
  for (const m of answers?.metrics ?? []) {
    groups.push({
      kind: "metric",
      title: `Per-case metric: ${m.metric}`,
      pairs: m.pairs,
      headline: { statistic: "Pearson's r", estimate: plain(m.pearson) },
      second: { statistic: "Kendall's τ-b", estimate: plain(m.kendallTauB) },
      ...more(m.pearson.narrowing)
    })
  }
  for (const p of answers?.preferences?.rows ?? []) {
    groups.push({
      kind: "preference",
      title: `Preferences against Δ ${p.metric}${p.aspect === null ? "" : ` (${p.aspect})`}`,
      pairs: p.pairs,
      headline: { statistic: "Pearson's r", estimate: plain(p.pearson) },
      second: { statistic: "Kendall's τ-b", estimate: plain(p.kendallTauB) },
      ...more(p.pearson.narrowing)
    })
  }
  const agreeOnly = answers?.agreeOnly ?? null
  return {
    labels,
    groups,
    agreeOnly: agreeOnly === null
      ? null
      : { labels: agreeOnly.labels, agreed: agreeOnly.agreed, share: agreeOnly.share },
    unpaired: [
      ...(answers?.unpaired.items ?? []).map((u) => ({ caseId: u.caseId, target: u.target, reason: u.reason })),
      ...calibration.criteria.flatMap((c) =>
        c.labelsWithoutJudgment.items.map((u) => ({
          caseId: u.id,
          target: u.item === undefined ? c.criterion : `${c.criterion}:${u.item}`,
          reason: "no judgment of the judge to pair with"
        }))
      )
    ],
    file,
    bootstrap: { resamples: calibration.bootstrap.resamples, seed: calibration.bootstrap.seed },
    calibration
  }
}
