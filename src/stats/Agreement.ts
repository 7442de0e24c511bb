/**
 * Agreement between repeated judgments of the same units (a case × criterion judged in several
 * iterations). Online: units are added one at a time, memory is bounded by the number of score values.
 *
 * - Exact agreement = units whose pairable values are all equal / units with ≥ 2 values.
 * - Krippendorff's alpha (ordinal) = 1 − D_o / D_e over the coincidence matrix o_ck, where each
 *   unit u with m_u ≥ 2 values adds 1/(m_u − 1) for every ordered pair of its values, n_c = Σ_k o_ck,
 *   n = Σ_c n_c, and the ordinal distance δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)².
 *   D_o = Σ_{c,k} o_ck δ²(c,k) / n;  D_e = Σ_{c,k} n_c n_k δ²(c,k) / (n (n − 1)).
 *   α is undefined — null, with `krippendorffAlphaNote` saying why, never a made-up 1 — when D_e = 0
 *   (no grade varies: every pairable value is the same, so there is no disagreement to expect and
 *   α = 1 − 0/0), and when there are fewer than 2 pairable values.
 */

export interface AgreementAccumulator {
  units: number
  agreeing: number
  /** o[c][k] keyed by "c|k". */
  readonly coincidences: Map<string, number>
  readonly values: Set<number>
}

export const emptyAgreement = (): AgreementAccumulator => ({
  units: 0,
  agreeing: 0,
  coincidences: new Map(),
  values: new Set()
})

/** Add one unit's values (nulls — failed judgments — are not pairable and are left out). */
export const addUnit = (acc: AgreementAccumulator, raw: ReadonlyArray<number | null>): AgreementAccumulator => {
  const values = raw.filter((v): v is number => v !== null)
  const m = values.length
  if (m < 2) return acc
  acc.units++
  if (values.every((v) => v === values[0])) acc.agreeing++
  for (let i = 0; i < m; i++) {
    acc.values.add(values[i]!)
    for (let j = 0; j < m; j++) {
      if (i === j) continue
      const key = `${values[i]}|${values[j]}`
      acc.coincidences.set(key, (acc.coincidences.get(key) ?? 0) + 1 / (m - 1))
    }
  }
  return acc
}

export interface Agreement {
  /** Units with at least two pairable values. */
  readonly units: number
  readonly exactAgreement: number | null
  readonly krippendorffAlpha: number | null
  /** Why `krippendorffAlpha` is null (absent when it is a number). */
  readonly krippendorffAlphaNote?: string
}

export const alphaNoVariation = "undefined: no grade varies, every grade is the same value"
export const alphaTooFewValues = "undefined: no unit has two pairable grades"

export const finishAgreement = (acc: AgreementAccumulator): Agreement => {
  const exactAgreement = acc.units === 0 ? null : acc.agreeing / acc.units
  const values = [...acc.values].sort((a, b) => a - b)
  const o = (c: number, k: number) => acc.coincidences.get(`${c}|${k}`) ?? 0
  const nc = new Map(values.map((c) => [c, values.reduce((s, k) => s + o(c, k), 0)]))
  const n = [...nc.values()].reduce((s, x) => s + x, 0)
  if (n < 2) {
    return { units: acc.units, exactAgreement, krippendorffAlpha: null, krippendorffAlphaNote: alphaTooFewValues }
  }
  const index = new Map(values.map((v, i) => [v, i]))
  const delta2 = (c: number, k: number) => {
    const [lo, hi] = index.get(c)! <= index.get(k)! ? [c, k] : [k, c]
    let sum = 0
    for (let g = index.get(lo)!; g <= index.get(hi)!; g++) sum += nc.get(values[g]!)!
    const d = sum - (nc.get(c)! + nc.get(k)!) / 2
    return d * d
  }
  let observed = 0
  let expected = 0
  for (const c of values) {
    for (const k of values) {
      const d = delta2(c, k)
      observed += o(c, k) * d
      expected += nc.get(c)! * nc.get(k)! * d
    }
  }
  const Do = observed / n
  const De = expected / (n * (n - 1))
  // D_e = 0 only when a single value occurs (then D_o = 0 too): α = 1 − 0/0 is undefined.
  if (De === 0) {
    return { units: acc.units, exactAgreement, krippendorffAlpha: null, krippendorffAlphaNote: alphaNoVariation }
  }
  return { units: acc.units, exactAgreement, krippendorffAlpha: 1 - Do / De }
}

/** Mean and sample standard deviation of the values that are not null. */
export const meanStd = (xs: ReadonlyArray<number | null>): { mean: number | null; std: number | null; n: number } => {
  const v = xs.filter((x): x is number => x !== null && Number.isFinite(x))
  if (v.length === 0) return { mean: null, std: null, n: 0 }
  const mean = v.reduce((s, x) => s + x, 0) / v.length
  const std = v.length < 2 ? 0 : Math.sqrt(v.reduce((s, x) => s + (x - mean) ** 2, 0) / (v.length - 1))
  return { mean, std, n: v.length }
}
