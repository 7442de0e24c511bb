/**
 * People's labels on answers against what a run's judge said (SPEC §7, calibrate for answers): the
 * pairing and the figures, pure — the run's claim judgments (`RunClaims.ts`) and per-case metrics
 * (`compare/RunCases.ts`) and the labels (`LabelFile.ts`) are read before.
 *
 * - **Claim verdicts** (and nugget grades): a claim label names the case, whose claim (`side`), its
 *   number and what it was checked against; it pairs with the judge's verdict of that check
 *   (`contexts`: the contexts together, `RunClaims.contextsVerdict`). A label with the claim's text
 *   pairs only when the judge's claim of that number reads the same (case, spacing and end
 *   punctuation aside), or with the judge's claim that does — labels made on one judge's claims pair
 *   with another judge's only where the texts match; a label without text made on another run does
 *   not pair. Figures, humans as the reference, each with a bootstrap CI (`stats/Bootstrap.ts`
 *   `bootstrapTable`): exact agreement, Cohen's κ (three values), κ of "entailed or not", balanced
 *   accuracy (mean recall over the values the humans gave) of the three values and of "entailed or
 *   not", per value precision and recall, the confusion matrix; and the same per part (answer claims
 *   against the reference, reference claims against the answer, claims against the contexts).
 * - **Metric values**: a label's value of a per-case metric against the run's value of it; per
 *   metric, Pearson's r and Kendall's τ-b with bootstrap CIs over the labelled cases.
 * - **Preferences** (RAGChecker's meta-evaluation, its `meta_eval.py`): for a pair of answers A, B
 *   and each per-case metric with a direction, delta = metric(B) − metric(A) (negated for a
 *   lower-is-better metric, so agreement is r > 0); a delta missing because either value is null is
 *   replaced by the median of the metric's other deltas (counted as `filled`); each delta repeated
 *   for every label on the pair, Pearson's r (and τ-b) against the preferences, per aspect, with
 *   bootstrap CIs over the pairs (a pair's labels stay together).
 * - **Agree-only labels** (`{ agree }` with nothing to pair: a disagreement on a three-value scale, or
 *   an agreement whose judged value was not recorded): the share that agree, with a CI.
 *
 * Nothing is dropped silently: every label that makes no pair is listed with the reason.
 */
import type { ClaimAgainst, Label } from "../domain/Label.js"
import { targetKey } from "../domain/Label.js"
import type * as RunFiles from "../domain/RunFiles.js"
import { bootstrapTable, bootstrapUnits, type Interval, narrowing } from "../stats/Bootstrap.js"
import {
  balancedAccuracy,
  binaryKappa,
  binaryTable,
  cohenKappa,
  columnSums,
  type ContingencyTable,
  emptyTable,
  exactAgreement,
  precisionOf,
  recallOf,
  rowSums,
  type Value
} from "../stats/Kappa.js"
import { kendallTauB, pearson, unitCorrelations } from "../stats/RankCorrelation.js"
import type { LabelLine, UnpairedLabel } from "./LabelFile.js"
import {
  againstText,
  contextsVerdict,
  foldClaim,
  type RunClaims,
  type Scored,
  SUPPORTS,
  VERDICTS
} from "./RunClaims.js"

export type AnswerCalibration = RunFiles.AnswerCalibration
type Estimate = typeof RunFiles.Estimate.Type
type Headline = typeof RunFiles.Headline.Type
type VerdictAgreement = typeof RunFiles.VerdictAgreement.Type
type VerdictCalibration = typeof RunFiles.VerdictCalibration.Type
type MetricAgreement = typeof RunFiles.MetricAgreement.Type
type PreferenceAgreement = typeof RunFiles.PreferenceAgreement.Type

/** A run's per-case metrics as `compare` reads them (`RunCases`), the parts pairing needs. */
export interface RunMetrics {
  readonly dir: string
  readonly runId: string
  /** caseId → metric → value. */
  readonly cases: ReadonlyMap<string, Readonly<Record<string, number | null>>>
  /** Metric names and directions, in declaration order. */
  readonly metrics: ReadonlyArray<{ readonly name: string; readonly direction: "higher" | "lower" | "none" }>
}

export interface AnswerInputs {
  readonly runId: string
  readonly claims: RunClaims
  /** This run's per-case metrics (undefined: not read, as no label needs them). */
  readonly metrics?: RunMetrics | undefined
  /** Other runs preferences compare with (`--runs DIR`). */
  readonly others?: ReadonlyArray<RunMetrics> | undefined
  /** Claim, nugget, metric and preference labels (grades and hits go to `Calibration.ts`). */
  readonly labels: ReadonlyArray<LabelLine>
  /** Labels that could not be formed against the run (`LabelSet.unresolved`). */
  readonly unresolved?: ReadonlyArray<UnpairedLabel> | undefined
  /** Agree-only labels of grades and hits, counted with the answers' own. */
  readonly agreeOnly?: ReadonlyArray<LabelLine> | undefined
}

export interface AnswerOptions {
  readonly seed: number
  readonly resamples: number
  /** The half-width `narrowing` aims at (default 0.1). */
  readonly halfWidth?: number | undefined
}

// ---------------------------------------------------------------------------------------------
// Small pieces

const estimateOf = (value: Value, ci: Interval | null, undefinedResamples: number): Estimate => ({
  value: value.value,
  ...(value.reason === undefined ? {} : { reason: value.reason }),
  ci: value.value === null ? null : ci,
  undefinedResamples: value.value === null ? 0 : undefinedResamples
})

const headlineOf = (e: Estimate, units: number, halfWidth: number): Headline => ({
  ...e,
  narrowing: narrowing(e.ci, units, halfWidth)
})

const unpaired = (l: LabelLine, reason: string): UnpairedLabel => ({
  line: l.line,
  caseId: l.label.caseId,
  target: targetKey(l.label.target),
  ...(l.label.by === "" ? {} : { by: l.label.by }),
  reason
})

/** A metric name folded for matching a label's to the run's: `Context_Recall` = `contextRecall`. */
export const foldMetric = (name: string): string => name.toLowerCase().replace(/[^a-z0-9@]/g, "")

const meanOf = (xs: ReadonlyArray<number>): number | null =>
  xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

// ---------------------------------------------------------------------------------------------
// Verdict scales

const POSITIVE = 2

const verdictStatistics: ReadonlyArray<(t: ContingencyTable) => Value> = [
  exactAgreement,
  cohenKappa,
  (t) => binaryKappa(t, POSITIVE),
  balancedAccuracy,
  (t) => balancedAccuracy(binaryTable(t, POSITIVE))
]

const tableOfPairs = (pairs: ReadonlyArray<readonly [number, number]>): ContingencyTable => {
  const t = emptyTable([0, 1, 2])
  for (const [h, j] of pairs) t.counts[h * 3 + j]! += 1
  return t
}

const agreementOf = (
  name: string,
  pairs: ReadonlyArray<readonly [number, number]>,
  options: AnswerOptions,
  extra: ReadonlyArray<(t: ContingencyTable) => Value> = []
): {
  readonly agreement: VerdictAgreement
  readonly extra: ReadonlyArray<Estimate>
  readonly table: ContingencyTable
} => {
  const halfWidth = options.halfWidth ?? 0.1
  const table = tableOfPairs(pairs)
  const statistics = [...verdictStatistics, ...extra]
  const boot = bootstrapTable(table, statistics, { seed: options.seed, resamples: options.resamples })
  const est = (i: number) =>
    estimateOf(statistics[i]!(table), boot.intervals[i] ?? null, boot.undefinedResamples[i] ?? 0)
  const n = pairs.length
  return {
    agreement: {
      name,
      pairs: n,
      exactAgreement: est(0),
      cohenKappa: headlineOf(est(1), n, halfWidth),
      binaryKappa: est(2),
      balancedAccuracy: headlineOf(est(3), n, halfWidth),
      binaryBalancedAccuracy: headlineOf(est(4), n, halfWidth)
    },
    extra: extra.map((_, i) => est(verdictStatistics.length + i)),
    table
  }
}

interface ScalePair {
  readonly human: number
  readonly judge: number
  readonly part: string
}

const verdictCalibration = (
  scale: ReadonlyArray<string>,
  pairs: ReadonlyArray<ScalePair>,
  partOrder: ReadonlyArray<string>,
  name: string,
  options: AnswerOptions
): VerdictCalibration => {
  const perValue = scale.flatMap((_, g) => [
    (t: ContingencyTable) => precisionOf(t, g),
    (t: ContingencyTable) => recallOf(t, g)
  ])
  const all = agreementOf(name, pairs.map((p) => [p.human, p.judge] as const), options, perValue)
  const r = rowSums(all.table)
  const c = columnSums(all.table)
  const parts = partOrder.flatMap((part) => {
    const these = pairs.filter((p) => p.part === part)
    return these.length === 0 || these.length === pairs.length
      ? []
      : [agreementOf(part, these.map((p) => [p.human, p.judge] as const), options).agreement]
  })
  return {
    ...all.agreement,
    scale,
    positive: scale[POSITIVE]!,
    confusion: scale.map((_, h) => Array.from(all.table.counts.subarray(h * 3, h * 3 + 3))),
    perValue: scale.map((value, g) => ({
      value,
      judge: c[g]!,
      human: r[g]!,
      precision: all.extra[2 * g]!,
      recall: all.extra[2 * g + 1]!
    })),
    parts
  }
}

const CLAIM_PARTS = [
  "answer claims against the reference",
  "reference claims against the answer",
  "answer claims against the contexts",
  "reference claims against the contexts"
] as const

const partOf = (side: "answer" | "reference", against: ClaimAgainst): string =>
  typeof against === "string" && against !== "contexts"
    ? `${side} claims against the ${against}`
    : `${side} claims against the contexts`

// ---------------------------------------------------------------------------------------------
// Pairing

/** The person's value on a three-value scale, or why there is none to pair. */
const scaleValue = (
  l: Label,
  scale: ReadonlyArray<string>,
  field: "verdict" | "support"
): number | { readonly agreeOnly: boolean } | { readonly wrong: string } => {
  const v = l.label
  if (field in v) return scale.indexOf((v as Record<string, string>)[field]!)
  if ("agree" in v) {
    if (v.agree && typeof l.judged === "string" && scale.includes(l.judged)) return scale.indexOf(l.judged)
    return { agreeOnly: true }
  }
  return { wrong: `a ${l.target.kind} label gives a ${field}, this one gives ${Object.keys(v).join(", ")}` }
}

const numericValue = (
  l: Label,
  field: "value" | "preference"
): number | { readonly agreeOnly: boolean } | { readonly wrong: string } => {
  const v = l.label
  if (field in v) return (v as Record<string, number>)[field]!
  if ("agree" in v) {
    if (field === "value" && v.agree && typeof l.judged === "number") return l.judged
    return { agreeOnly: true }
  }
  return { wrong: `a ${l.target.kind} label gives a ${field}, this one gives ${Object.keys(v).join(", ")}` }
}

/** The calibration of people's answer labels against the run (see the module comment). */
export const calibrateAnswers = (inputs: AnswerInputs, options: AnswerOptions): AnswerCalibration => {
  const halfWidth = options.halfWidth ?? 0.1
  const unpairedList: Array<UnpairedLabel> = [...(inputs.unresolved ?? [])]
  const agreeOnly: Array<boolean> = []
  for (const l of inputs.agreeOnly ?? []) if ("agree" in l.label.label) agreeOnly.push(l.label.label.agree)
  const counts = { claim: 0, nugget: 0, metric: 0, preference: 0 }
  const claimPairs: Array<ScalePair> = []
  const nuggetPairs: Array<ScalePair> = []
  const metricPairs = new Map<string, Map<string, Array<readonly [number, number]>>>()
  const preferenceLabels: Array<{ readonly l: LabelLine; readonly value: number }> = []
  const thisRun = (l: Label) => l.runId === undefined || l.runId === inputs.runId

  /** The person's value, or undefined when there is none to pair: then counted (agree-only) or listed (wrong kind). */
  const usable = (
    l: LabelLine,
    value: number | { readonly agreeOnly: boolean } | { readonly wrong: string }
  ): number | undefined => {
    if (typeof value === "number") return value
    if ("agreeOnly" in value) agreeOnly.push("agree" in l.label.label && l.label.label.agree)
    else unpairedList.push(unpaired(l, value.wrong))
    return undefined
  }

  for (const u of inputs.unresolved ?? []) {
    if (u.target.startsWith("claim:")) counts.claim++
  }

  for (const l of inputs.labels) {
    const t = l.label.target
    switch (t.kind) {
      case "claim": {
        counts.claim++
        const value = usable(l, scaleValue(l.label, VERDICTS, "verdict"))
        if (value === undefined) break
        const c = inputs.claims.get(l.label.caseId)
        if (c === undefined) {
          unpairedList.push(unpaired(l, "the run has no claim judgments of this case"))
          break
        }
        const extraction = c.extraction.get(t.side)
        if (extraction === undefined) {
          unpairedList.push(unpaired(l, `the run did not extract the ${t.side}'s claims of this case`))
          break
        }
        if (extraction.status === "failed") {
          unpairedList.push(
            unpaired(l, `the judge's extraction of the ${t.side}'s claims failed (journal line ${extraction.line})`)
          )
          break
        }
        let index = t.index
        if (t.text !== undefined) {
          const folded = foldClaim(t.text)
          const atIndex = extraction.claims[t.index - 1]
          if (atIndex === undefined || foldClaim(atIndex) !== folded) {
            const found = extraction.claims.findIndex((claim) => foldClaim(claim) === folded)
            if (found === -1) {
              unpairedList.push(
                unpaired(
                  l,
                  `the judge's ${t.side} claim ${t.index} ${
                    atIndex === undefined ? "does not exist" : `reads differently ("${clip(atIndex)}")`
                  } and no other reads "${clip(t.text)}"`
                )
              )
              break
            }
            index = found + 1
          }
        } else if (!thisRun(l.label)) {
          unpairedList.push(
            unpaired(l, `made on run ${l.label.runId}'s claims, without the claim's text to find it in this run`)
          )
          break
        } else if (index > extraction.claims.length) {
          unpairedList.push(
            unpaired(l, `the judge extracted ${extraction.claims.length} ${t.side} claim(s), not ${index}`)
          )
          break
        }
        const text = againstText(t.against)
        const judged: Scored | undefined = text === undefined
          ? contextsVerdict(c, t.side, index)
          : c.checks.get(`${text}/${t.side}:${index}`)
        if (judged === undefined) {
          unpairedList.push(
            unpaired(
              l,
              `the run did not check this claim against ${
                text === undefined
                  ? "any context"
                  : text.startsWith("context:")
                  ? text.replace(":", " ")
                  : `the ${text}`
              }`
            )
          )
          break
        }
        if (judged.score === null || VERDICTS[judged.score] === undefined) {
          unpairedList.push(unpaired(l, `the judge's check failed: no verdict (journal line ${judged.line})`))
          break
        }
        claimPairs.push({ human: value, judge: judged.score, part: partOf(t.side, t.against) })
        break
      }
      case "nugget": {
        counts.nugget++
        const value = usable(l, scaleValue(l.label, SUPPORTS, "support"))
        if (value === undefined) break
        if (!thisRun(l.label)) {
          unpairedList.push(unpaired(l, `made on run ${l.label.runId}, not this one`))
          break
        }
        const judged = inputs.claims.get(l.label.caseId)?.nuggets.get(t.index)
        if (judged === undefined) {
          unpairedList.push(unpaired(l, `the run did not grade nugget ${t.index} of this case`))
          break
        }
        if (judged.score === null || SUPPORTS[judged.score] === undefined) {
          unpairedList.push(unpaired(l, `the judge's grading failed (journal line ${judged.line})`))
          break
        }
        nuggetPairs.push({ human: value, judge: judged.score, part: "nuggets" })
        break
      }
      case "metric": {
        counts.metric++
        const value = usable(l, numericValue(l.label, "value"))
        if (value === undefined) break
        if (!thisRun(l.label)) {
          unpairedList.push(unpaired(l, `made on run ${l.label.runId}, not this one`))
          break
        }
        const run = inputs.metrics
        const metric = run?.metrics.find((m) => foldMetric(m.name) === foldMetric(t.metric))
        if (run === undefined || metric === undefined) {
          unpairedList.push(
            unpaired(
              l,
              `the run has no per-case metric "${t.metric}"${
                run === undefined ? "" : ` (it has ${run.metrics.map((m) => m.name).join(", ")})`
              }`
            )
          )
          break
        }
        const row = run.cases.get(l.label.caseId)
        if (row === undefined) {
          unpairedList.push(unpaired(l, "the run has no such case"))
          break
        }
        const judged = row[metric.name]
        if (judged === null || judged === undefined) {
          unpairedList.push(unpaired(l, `the run's ${metric.name} of this case is null (the case cannot have it)`))
          break
        }
        let byCase = metricPairs.get(metric.name)
        if (byCase === undefined) metricPairs.set(metric.name, byCase = new Map())
        let list = byCase.get(l.label.caseId)
        if (list === undefined) byCase.set(l.label.caseId, list = [])
        list.push([judged, value])
        break
      }
      case "preference": {
        counts.preference++
        const value = usable(l, numericValue(l.label, "preference"))
        if (value === undefined) break
        preferenceLabels.push({ l, value })
        break
      }
      default:
        unpairedList.push(unpaired(l, `a ${t.kind} label is calibrated with the grades, not here`))
    }
  }

  const metrics = [...metricPairs].map(([metric, byCase]): MetricAgreement => {
    const units = [...byCase.values()]
    const flat = units.flat()
    const est = correlationEstimates(units, options, halfWidth)
    return {
      metric,
      pairs: flat.length,
      pearson: est.pearson,
      kendallTauB: est.kendallTauB,
      meanJudge: meanOf(flat.map((p) => p[0])),
      meanHuman: meanOf(flat.map((p) => p[1]))
    }
  })

  const preferences = preferenceLabels.length === 0
    ? null
    : preferenceCalibration(inputs, preferenceLabels, unpairedList, options)

  return {
    labels: counts,
    claims: claimPairs.length === 0 && counts.claim === 0
      ? null
      : verdictCalibration(VERDICTS, claimPairs, CLAIM_PARTS, "every claim check", options),
    nuggets: nuggetPairs.length === 0 && counts.nugget === 0
      ? null
      : verdictCalibration(SUPPORTS, nuggetPairs, [], "every nugget", options),
    metrics,
    preferences,
    agreeOnly: agreeOnly.length === 0 ? null : agreeOnlyOf(agreeOnly, options),
    unpaired: { count: unpairedList.length, items: unpairedList.sort((a, b) => a.line - b.line) }
  }
}

const clip = (text: string, max = 60) => {
  const one = text.replace(/\s+/g, " ").trim()
  return one.length > max ? `${one.slice(0, max - 1)}…` : one
}

/**
 * Pearson's r and Kendall's τ-b of units of (judge, human) pairs, each with a bootstrap CI over the
 * units; the point values from the data itself (`pearson`, `kendallTauB`), the resamples through
 * `unitCorrelations` (the same statistics, without expanding each resample).
 */
const correlationEstimates = (
  units: ReadonlyArray<ReadonlyArray<readonly [number, number]>>,
  options: AnswerOptions,
  halfWidth: number
): { readonly pearson: Headline; readonly kendallTauB: Headline } => {
  const fast = unitCorrelations(units)
  const boot = bootstrapUnits(units.length, [fast.pearson, fast.kendallTauB], {
    seed: options.seed,
    resamples: options.resamples
  })
  const x = units.flatMap((u) => u.map((p) => p[0]))
  const y = units.flatMap((u) => u.map((p) => p[1]))
  const values = [pearson(x, y), kendallTauB(x, y)]
  const est = (i: number) =>
    headlineOf(
      estimateOf(values[i]!, boot.intervals[i] ?? null, boot.undefinedResamples[i] ?? 0),
      units.length,
      halfWidth
    )
  return { pearson: est(0), kendallTauB: est(1) }
}

const agreeOnlyOf = (agreed: ReadonlyArray<boolean>, options: AnswerOptions): typeof RunFiles.AgreeOnly.Type => {
  const n = agreed.length
  const yes = agreed.filter((a) => a).length
  const share = (multiplicity: Int32Array): Value => {
    let k = 0
    for (let i = 0; i < n; i++) if (agreed[i]!) k += multiplicity[i]!
    return { value: k / n }
  }
  const boot = bootstrapUnits(n, [share], { seed: options.seed, resamples: options.resamples })
  return {
    labels: n,
    agreed: yes,
    share: estimateOf({ value: yes / n }, boot.intervals[0] ?? null, boot.undefinedResamples[0] ?? 0)
  }
}

// ---------------------------------------------------------------------------------------------
// Preferences

const preferenceCalibration = (
  inputs: AnswerInputs,
  labels: ReadonlyArray<{ readonly l: LabelLine; readonly value: number }>,
  unpairedList: Array<UnpairedLabel>,
  options: AnswerOptions
): typeof RunFiles.PreferenceCalibration.Type | null => {
  const halfWidth = options.halfWidth ?? 0.1
  const runs = new Map<string, RunMetrics>()
  if (inputs.metrics !== undefined) runs.set(inputs.metrics.runId, inputs.metrics)
  for (const o of inputs.others ?? []) runs.set(o.runId, o)
  const self = inputs.metrics
  if (self === undefined) {
    for (const { l } of labels) unpairedList.push(unpaired(l, "the run declares no per-case metrics to compare"))
    return null
  }
  // Units: pairs of answers, each side `runId\0caseId`, kept in one orientation (A < B).
  interface Unit {
    readonly a: readonly [string, string]
    readonly b: readonly [string, string]
    /** aspect (or "") → preferences, oriented A → B. */
    readonly byAspect: Map<string, Array<number>>
  }
  const units = new Map<string, Unit>()
  for (const { l, value } of labels) {
    const t = l.label.target
    if (t.kind !== "preference") continue
    const aRun = l.label.runId ?? inputs.runId
    const bRun = t.other.runId
    const aCase = l.label.caseId
    const bCase = t.other.caseId ?? l.label.caseId
    const missing = [aRun, bRun].find((r) => !runs.has(r))
    if (missing !== undefined) {
      unpairedList.push(unpaired(l, `compares with run ${missing}: give its directory with --runs DIR`))
      continue
    }
    const absent = [[aRun, aCase], [bRun, bCase]].find(([r, c]) => !runs.get(r!)!.cases.has(c!))
    if (absent !== undefined) {
      unpairedList.push(unpaired(l, `run ${absent[0]} has no case "${absent[1]}"`))
      continue
    }
    const ka = `${aRun}\u0000${aCase}`
    const kb = `${bRun}\u0000${bCase}`
    const flip = ka > kb
    const key = flip ? `${kb}\u0001${ka}` : `${ka}\u0001${kb}`
    let unit = units.get(key)
    if (unit === undefined) {
      unit = {
        a: flip ? [bRun, bCase] : [aRun, aCase],
        b: flip ? [aRun, aCase] : [bRun, bCase],
        byAspect: new Map()
      }
      units.set(key, unit)
    }
    const aspect = t.aspect ?? ""
    let list = unit.byAspect.get(aspect)
    if (list === undefined) unit.byAspect.set(aspect, list = [])
    list.push(flip ? -value : value)
  }
  const unitList = [...units.values()]
  if (unitList.length === 0) return null
  const aspects = [...new Set(unitList.flatMap((u) => [...u.byAspect.keys()]))]
  // Metrics every run involved declares, with a direction.
  const involved = [...new Set(unitList.flatMap((u) => [u.a[0], u.b[0]]))].map((r) => runs.get(r)!)
  const metrics = self.metrics.filter((m) =>
    m.direction !== "none" && involved.every((run) => run.metrics.some((x) => x.name === m.name))
  )
  const rows: Array<PreferenceAgreement> = []
  for (const aspect of aspects) {
    const these = unitList.filter((u) => u.byAspect.has(aspect))
    for (const metric of metrics) {
      const sign = metric.direction === "lower" ? -1 : 1
      const deltas = these.map((u) => {
        const va = runs.get(u.a[0])!.cases.get(u.a[1])![metric.name]
        const vb = runs.get(u.b[0])!.cases.get(u.b[1])![metric.name]
        return va === null || va === undefined || vb === null || vb === undefined ? null : sign * (vb - va)
      })
      const known = deltas.filter((d): d is number => d !== null)
      if (known.length === 0) continue
      const fill = median(known)
      const pairs = these.map((u, i) => (u.byAspect.get(aspect) ?? []).map((p) => [deltas[i] ?? fill, p] as const))
      const est = correlationEstimates(pairs, options, halfWidth)
      rows.push({
        aspect: aspect === "" ? null : aspect,
        metric: metric.name,
        direction: metric.direction,
        pairs: pairs.length,
        labels: pairs.reduce((s, p) => s + p.length, 0),
        filled: deltas.length - known.length,
        pearson: est.pearson,
        kendallTauB: est.kendallTauB
      })
    }
  }
  return {
    runs: [...runs.values()].filter((r) => involved.includes(r)).map((r) => ({ dir: r.dir, runId: r.runId })),
    rows
  }
}
