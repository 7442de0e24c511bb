/**
 * Agreement between two raters who graded the same items on one ordinal scale — a judge and human
 * assessors (SPEC §7, `rag-eval calibrate`). Everything here is a function of the K × K contingency
 * table C, where C[h][j] counts the items the humans graded `grades[h]` and the judge `grades[j]`
 * (rows: humans, the reference; columns: the judge). N = Σ C. Pure functions, no I/O.
 *
 * Row sums r_h = Σ_j C[h][j] (the humans' marginal), column sums c_j = Σ_h C[h][j] (the judge's).
 *
 * - Cohen's κ: p_o = Σ_i C[i][i] / N, p_e = Σ_i r_i c_i / N², κ = (p_o − p_e) / (1 − p_e).
 * - Weighted κ with disagreement weights w_hj: κ_w = 1 − Σ w_hj C[h][j] / Σ w_hj r_h c_j / N.
 *   Quadratic weights are w_hj = (g_h − g_j)², on the grade VALUES: the value of κ_w does not change
 *   when an unused grade is added to or left out of the table, and it equals scikit-learn's
 *   `cohen_kappa_score(weights="quadratic")` when `labels` is the full integer range (scikit-learn
 *   weighs by the labels' positions, which equal the values, up to a constant, only then).
 * - Binary κ at a threshold t: Cohen's κ of the 2 × 2 table "grade ≥ t" for both raters.
 * - Krippendorff's α (ordinal) for two coders: every item is a unit with two values, so the
 *   coincidence matrix is o_ck = C[c][k] + C[k][c], n_c = r_c + c_c, n = 2N, and with the ordinal
 *   distance δ²(c, k) = (Σ_{g between c and k} n_g − (n_c + n_k)/2)²:
 *   α = 1 − (n − 1) · Σ o_ck δ²(c, k) / Σ n_c n_k δ²(c, k)   (Krippendorff 2011, "Computing
 *   Krippendorff's Alpha-Reliability"; the same formula as `Agreement.ts`, which takes any number of
 *   coders per unit).
 * - Per grade g (humans as reference): precision = C[g][g] / c_g, recall = C[g][g] / r_g.
 * - Balanced accuracy = the mean of the recalls C[g][g] / r_g over the grades the humans gave
 *   (r_g > 0) — scikit-learn's `balanced_accuracy_score` (classes absent from the reference are left
 *   out); on a binary table, (true-positive rate + true-negative rate) / 2.
 * - Bias = judge mean − human mean = Σ C[h][j] (g_j − g_h) / N.
 *
 * Undefined values are `null` with a reason, never a made-up 1 or 0:
 * - no pairs (N = 0): every statistic is null;
 * - κ and κ_w when p_e = 1 (Σ w r c = 0): both raters gave every item one and the same grade — chance
 *   alone explains all agreement, and κ is 0/0 (scikit-learn returns NaN);
 * - α when the expected disagreement is 0: every grade given, by either side, is the same value;
 * - precision of a grade the judge never gave, recall of a grade the humans never gave.
 */

/** A statistic's value, or null with the reason it is undefined. */
export interface Value {
  readonly value: number | null
  /** Why `value` is null (absent when it is a number). */
  readonly reason?: string
}

const defined = (value: number): Value => ({ value })
const undefinedBecause = (reason: string): Value => ({ value: null, reason })

export const noPairs = "no matched pairs"
export const singleGrade =
  "undefined: both sides gave every pair one and the same grade, so chance agreement is 1 and κ = 0/0"
export const noVariation = "undefined: no grade varies, every grade given by either side is the same value"

/** A K × K table of counts over `grades` (ascending), row = human grade index, column = judge grade index. */
export interface ContingencyTable {
  /** The grade values, ascending. */
  readonly grades: ReadonlyArray<number>
  /** Row-major K × K counts: counts[h * K + j]. */
  readonly counts: Float64Array
}

export const emptyTable = (grades: ReadonlyArray<number>): ContingencyTable => ({
  grades: [...grades],
  counts: new Float64Array(grades.length * grades.length)
})

/** The table of paired grades (`human[i]`, `judge[i]`), over the union of their values. */
export const tableOf = (
  human: ReadonlyArray<number>,
  judge: ReadonlyArray<number>,
  grades?: ReadonlyArray<number>
): ContingencyTable => {
  const values = grades ?? [...new Set([...human, ...judge])].sort((a, b) => a - b)
  const table = emptyTable(values)
  const index = new Map(values.map((g, i) => [g, i]))
  const k = values.length
  const n = Math.min(human.length, judge.length)
  for (let i = 0; i < n; i++) {
    const h = index.get(human[i]!)
    const j = index.get(judge[i]!)
    if (h === undefined || j === undefined) continue
    table.counts[h * k + j]! += 1
  }
  return table
}

const size = (t: ContingencyTable) => t.grades.length

export const total = (t: ContingencyTable): number => {
  let s = 0
  for (const x of t.counts) s += x
  return s
}

/** r_h: how many items the humans graded grades[h]. */
export const rowSums = (t: ContingencyTable): Float64Array => {
  const k = size(t)
  const out = new Float64Array(k)
  for (let h = 0; h < k; h++) for (let j = 0; j < k; j++) out[h]! += t.counts[h * k + j]!
  return out
}

/** c_j: how many items the judge graded grades[j]. */
export const columnSums = (t: ContingencyTable): Float64Array => {
  const k = size(t)
  const out = new Float64Array(k)
  for (let h = 0; h < k; h++) for (let j = 0; j < k; j++) out[j]! += t.counts[h * k + j]!
  return out
}

/** Share of items both sides graded the same: Σ C[i][i] / N. */
export const exactAgreement = (t: ContingencyTable): Value => {
  const n = total(t)
  if (n === 0) return undefinedBecause(noPairs)
  const k = size(t)
  let diagonal = 0
  for (let i = 0; i < k; i++) diagonal += t.counts[i * k + i]!
  return defined(diagonal / n)
}

/** Cohen's κ (unweighted) of the table; see the module comment. */
export const cohenKappa = (t: ContingencyTable): Value => {
  const n = total(t)
  if (n === 0) return undefinedBecause(noPairs)
  const k = size(t)
  const r = rowSums(t)
  const c = columnSums(t)
  let po = 0
  let pe = 0
  for (let i = 0; i < k; i++) {
    po += t.counts[i * k + i]!
    pe += r[i]! * c[i]!
  }
  po /= n
  pe /= n * n
  // pe = 1 only when all mass is in one shared category; compare with a tolerance for rounding.
  if (1 - pe <= 1e-12) return undefinedBecause(singleGrade)
  return defined((po - pe) / (1 - pe))
}

/** Weighted κ with disagreement weights w(g_h, g_j) ≥ 0 (0 on the diagonal). */
export const weightedKappa = (t: ContingencyTable, weight: (gh: number, gj: number) => number): Value => {
  const n = total(t)
  if (n === 0) return undefinedBecause(noPairs)
  const k = size(t)
  const r = rowSums(t)
  const c = columnSums(t)
  let observed = 0
  let expected = 0
  for (let h = 0; h < k; h++) {
    for (let j = 0; j < k; j++) {
      const w = weight(t.grades[h]!, t.grades[j]!)
      if (w === 0) continue
      observed += w * t.counts[h * k + j]!
      expected += (w * r[h]! * c[j]!) / n
    }
  }
  // Each term is ≥ 0, so the sum is exactly 0 only when every r_h c_j off the diagonal is 0.
  if (expected === 0) return undefinedBecause(singleGrade)
  return defined(1 - observed / expected)
}

/** Quadratic disagreement weight on the grade values: (g_h − g_j)². */
export const quadratic = (gh: number, gj: number): number => (gh - gj) ** 2

export const quadraticWeightedKappa = (t: ContingencyTable): Value => weightedKappa(t, quadratic)

/** The 2 × 2 table of "grade ≥ threshold" (index 0: below, 1: at or above). */
export const binaryTable = (t: ContingencyTable, threshold: number): ContingencyTable => {
  const k = size(t)
  const out = emptyTable([0, 1])
  for (let h = 0; h < k; h++) {
    const bh = t.grades[h]! >= threshold ? 1 : 0
    for (let j = 0; j < k; j++) {
      const bj = t.grades[j]! >= threshold ? 1 : 0
      out.counts[bh * 2 + bj]! += t.counts[h * k + j]!
    }
  }
  return out
}

/** Cohen's κ on the binary split at `threshold` (relevant ⇔ grade ≥ threshold). */
export const binaryKappa = (t: ContingencyTable, threshold: number): Value => cohenKappa(binaryTable(t, threshold))

/** Krippendorff's α (ordinal) of two coders over the table's items; see the module comment. */
export const krippendorffAlphaOrdinal = (t: ContingencyTable): Value => {
  const k = size(t)
  const r = rowSums(t)
  const c = columnSums(t)
  const nv = new Float64Array(k)
  let n = 0
  for (let g = 0; g < k; g++) {
    nv[g] = r[g]! + c[g]!
    n += nv[g]!
  }
  if (n === 0) return undefinedBecause(noPairs)
  // Prefix sums of n_g, so Σ_{g=a..b} n_g = prefix[b + 1] − prefix[a].
  const prefix = new Float64Array(k + 1)
  for (let g = 0; g < k; g++) prefix[g + 1] = prefix[g]! + nv[g]!
  let observed = 0
  let expected = 0
  for (let a = 0; a < k; a++) {
    for (let b = 0; b < k; b++) {
      if (a === b) continue
      const lo = Math.min(a, b)
      const hi = Math.max(a, b)
      const d = prefix[hi + 1]! - prefix[lo]! - (nv[a]! + nv[b]!) / 2
      const d2 = d * d
      observed += (t.counts[a * k + b]! + t.counts[b * k + a]!) * d2
      expected += nv[a]! * nv[b]! * d2
    }
  }
  if (expected === 0) return undefinedBecause(noVariation)
  return defined(1 - ((n - 1) * observed) / expected)
}

/** Judge mean − human mean over the paired items. */
export const bias = (t: ContingencyTable): Value => {
  const n = total(t)
  if (n === 0) return undefinedBecause(noPairs)
  const k = size(t)
  let sum = 0
  for (let h = 0; h < k; h++) for (let j = 0; j < k; j++) sum += t.counts[h * k + j]! * (t.grades[j]! - t.grades[h]!)
  return defined(sum / n)
}

/** Mean grade of the humans (rows) and of the judge (columns). */
export const means = (t: ContingencyTable): { readonly human: number | null; readonly judge: number | null } => {
  const n = total(t)
  if (n === 0) return { human: null, judge: null }
  const r = rowSums(t)
  const c = columnSums(t)
  let human = 0
  let judge = 0
  for (let g = 0; g < size(t); g++) {
    human += r[g]! * t.grades[g]!
    judge += c[g]! * t.grades[g]!
  }
  return { human: human / n, judge: judge / n }
}

/** Precision of grade index g: of the items the judge graded g, the share the humans graded g too. */
export const precisionOf = (t: ContingencyTable, g: number): Value => {
  const k = size(t)
  const c = columnSums(t)[g]!
  if (c === 0) return undefinedBecause(`the judge never gave grade ${t.grades[g]}`)
  return defined(t.counts[g * k + g]! / c)
}

/** Recall of grade index g: of the items the humans graded g, the share the judge graded g too. */
export const recallOf = (t: ContingencyTable, g: number): Value => {
  const k = size(t)
  const r = rowSums(t)[g]!
  if (r === 0) return undefinedBecause(`the humans never gave grade ${t.grades[g]}`)
  return defined(t.counts[g * k + g]! / r)
}

/**
 * Balanced accuracy: the mean recall over the grades the humans gave (module comment). A judge that
 * always says the majority grade scores 1 / (grades the humans gave), not the majority's share.
 */
export const balancedAccuracy = (t: ContingencyTable): Value => {
  const n = total(t)
  if (n === 0) return undefinedBecause(noPairs)
  const k = size(t)
  const r = rowSums(t)
  let sum = 0
  let classes = 0
  for (let g = 0; g < k; g++) {
    if (r[g]! === 0) continue
    sum += t.counts[g * k + g]! / r[g]!
    classes++
  }
  return defined(sum / classes)
}
