/**
 * The review queue: which cases to label next so that a few minutes of labelling say the most about
 * the judge. Unlabelled cases only, in three parts:
 *
 * 1. **Iterations disagree** (runs with `--iterations` > 1): the cases whose headline metric varies
 *    most between iterations — where the judge is least sure of itself.
 * 2. **Judges disagree**: another run over the same input (same pipeline and input hash) by another
 *    judge (provider or model) — the cases whose headline metric differs most between the two.
 * 3. **A stratified sample by score**: the rest of the queue drawn evenly from five strata of the
 *    headline metric (quintiles of the unlabelled cases' values; cases with no value are a stratum
 *    of their own), so agreement is measured across the whole range, not only on the many easy
 *    cases. Seeded: the same labels and seed give the same queue.
 *
 * Disagreements take at most a third of the queue each.
 */
import { makePrng } from "../stats/Paired.js"
import { type CaseIndex, sameCase } from "./CaseIndex.js"
import { metricColumn, valueOf } from "./CaseQuery.js"

export interface QueuePick {
  readonly case: number
  readonly kind: "stratum" | "iterations" | "judges"
  readonly reason: string
  readonly value: number | null
}

const fmt = (x: number | null) => (x === null ? "—" : Number.isInteger(x) ? String(x) : x.toFixed(3))

/** The cases with the largest differences of `metric` between `index` and each of `others`. */
const disagreements = (
  index: CaseIndex,
  metric: string,
  others: ReadonlyArray<{ readonly index: CaseIndex; readonly name: string }>,
  labelled: ReadonlySet<number>,
  take: number,
  kind: "iterations" | "judges"
): Array<QueuePick> => {
  const column = metricColumn(index, metric)
  if (column < 0 || others.length === 0 || take <= 0) return []
  const spread: Array<{ readonly i: number; readonly gap: number; readonly detail: string }> = []
  for (let i = 0; i < index.cases; i++) {
    if (labelled.has(i)) continue
    const v = valueOf(index, column, i)
    if (v === null) continue
    let gap = 0
    let detail = ""
    for (const other of others) {
      const oc = metricColumn(other.index, metric)
      const j = oc < 0 ? -1 : sameCase(index, i, other.index)
      const w = j < 0 ? null : valueOf(other.index, oc, j)
      if (w === null) continue
      if (Math.abs(w - v) > gap) {
        gap = Math.abs(w - v)
        detail = `${metric} ${fmt(v)} here, ${fmt(w)} ${other.name}`
      }
    }
    if (gap > 0) spread.push({ i, gap, detail })
  }
  spread.sort((x, y) => y.gap - x.gap || x.i - y.i)
  return spread.slice(0, take).map((s) => ({
    case: s.i,
    kind,
    reason: kind === "iterations" ? `iterations disagree: ${s.detail}` : `judges disagree: ${s.detail}`,
    value: valueOf(index, column, s.i)
  }))
}

export interface QueueInput {
  readonly index: CaseIndex
  /** The metric the strata and disagreements are on (the run's headline); none: a plain random sample. */
  readonly metric: string | undefined
  readonly labelled: ReadonlySet<number>
  readonly size: number
  readonly seed: number
  readonly iterations: ReadonlyArray<{ readonly index: CaseIndex; readonly name: string }>
  readonly judges: ReadonlyArray<{ readonly index: CaseIndex; readonly name: string }>
}

export const STRATA = 5

export const reviewQueue = (input: QueueInput): Array<QueuePick> => {
  const { index, metric, labelled, size } = input
  const picks: Array<QueuePick> = []
  const taken = new Set<number>()
  const push = (p: QueuePick) => {
    if (picks.length >= size || taken.has(p.case)) return
    taken.add(p.case)
    picks.push(p)
  }
  const third = Math.max(1, Math.floor(size / 3))
  if (metric !== undefined) {
    for (const p of disagreements(index, metric, input.iterations, labelled, third, "iterations")) push(p)
    for (const p of disagreements(index, metric, input.judges, labelled, third, "judges")) push(p)
  }
  // Strata of the unlabelled cases by the metric's value.
  const column = metric === undefined ? -1 : metricColumn(index, metric)
  const valued: Array<number> = []
  const unvalued: Array<number> = []
  for (let i = 0; i < index.cases; i++) {
    if (labelled.has(i) || taken.has(i)) continue
    if (column >= 0 && valueOf(index, column, i) !== null) valued.push(i)
    else unvalued.push(i)
  }
  const strata: Array<{ readonly cases: Array<number>; readonly reason: string }> = []
  if (column >= 0 && valued.length > 0) {
    valued.sort((x, y) => valueOf(index, column, x)! - valueOf(index, column, y)! || x - y)
    const k = Math.min(STRATA, valued.length)
    for (let s = 0; s < k; s++) {
      const from = Math.floor((s * valued.length) / k)
      const to = Math.floor(((s + 1) * valued.length) / k)
      const cases = valued.slice(from, to)
      const lo = valueOf(index, column, cases[0]!)
      const hi = valueOf(index, column, cases.at(-1)!)
      strata.push({ cases, reason: `stratum ${s + 1} of ${k} by ${metric} (${fmt(lo)}–${fmt(hi)})` })
    }
  }
  if (unvalued.length > 0) {
    strata.push({
      cases: unvalued,
      reason: column >= 0 ? `no ${metric} (a failed judgment, or not applicable)` : "random sample"
    })
  }
  // Round-robin over the strata, a seeded random case from each in turn.
  const prng = makePrng(input.seed)
  let left = strata.reduce((sum, s) => sum + s.cases.length, 0)
  while (picks.length < size && left > 0) {
    for (const stratum of strata) {
      if (picks.length >= size) break
      if (stratum.cases.length === 0) continue
      const at = prng.nextInt(stratum.cases.length)
      const i = stratum.cases[at]!
      stratum.cases[at] = stratum.cases[stratum.cases.length - 1]!
      stratum.cases.pop()
      left--
      push({ case: i, kind: "stratum", reason: stratum.reason, value: column >= 0 ? valueOf(index, column, i) : null })
    }
  }
  return picks
}
