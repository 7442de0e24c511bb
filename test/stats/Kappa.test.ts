import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { addUnit, emptyAgreement, finishAgreement } from "../../src/stats/Agreement.js"
import {
  bias,
  binaryKappa,
  binaryTable,
  cohenKappa,
  type ContingencyTable,
  emptyTable,
  exactAgreement,
  krippendorffAlphaOrdinal,
  means,
  noPairs,
  noVariation,
  precisionOf,
  quadraticWeightedKappa,
  recallOf,
  singleGrade,
  tableOf
} from "../../src/stats/Kappa.js"
import { repoRoot } from "../support/RunPipeline.js"

interface KappaCase {
  readonly name: string
  readonly human: ReadonlyArray<number>
  readonly judge: ReadonlyArray<number>
  readonly grades: ReadonlyArray<number>
  readonly threshold: number
  readonly cohenKappa: number | null
  readonly quadraticKappa: number | null
  readonly binaryKappa: number | null
  readonly krippendorffAlpha: number | null
  readonly confusion: ReadonlyArray<ReadonlyArray<number>>
  readonly precision: ReadonlyArray<number | null>
  readonly recall: ReadonlyArray<number | null>
  readonly bias: number
}

const reference = JSON.parse(
  fs.readFileSync(Path.join(repoRoot, "test/fixtures/calibrate/reference.json"), "utf8")
) as {
  readonly kappa: ReadonlyArray<KappaCase>
}

/** A table from rows (humans) of counts over the judge's grades. */
const table = (grades: ReadonlyArray<number>, rows: ReadonlyArray<ReadonlyArray<number>>): ContingencyTable => {
  const t = emptyTable(grades)
  rows.forEach((row, h) => row.forEach((count, j) => (t.counts[h * grades.length + j] = count)))
  return t
}

describe("Cohen's κ, weighted κ, binary κ — hand-computed", () => {
  it("the textbook 2 × 2: p_o = 0.7, p_e = 0.5, κ = 0.4", () => {
    // rows 25/25, columns 30/20: p_e = (25·30 + 25·20)/50² = 0.5; κ = (0.7 − 0.5)/(1 − 0.5).
    const t = table([0, 1], [[20, 5], [10, 15]])
    expect(cohenKappa(t).value).toBeCloseTo(0.4, 12)
    expect(exactAgreement(t).value).toBeCloseTo(0.7, 12)
  })

  it("four grades: human [0,1,2,3], judge [1,2,2,3] → κ = 1/3, binary (≥ 2) κ = 0.5, bias +0.5", () => {
    // p_o = 2/4; r = (1,1,1,1), c = (0,1,2,1): p_e = 4/16; κ = (0.5 − 0.25)/0.75.
    const t = tableOf([0, 1, 2, 3], [1, 2, 2, 3])
    expect(t.grades).toEqual([0, 1, 2, 3])
    expect(cohenKappa(t).value).toBeCloseTo(1 / 3, 12)
    // Binary: human (0,0,1,1), judge (0,1,1,1): p_o = 3/4, p_e = (2·1 + 2·3)/16 = 0.5 → κ = 0.5.
    expect(Array.from(binaryTable(t, 2).counts)).toEqual([1, 1, 0, 2])
    expect(binaryKappa(t, 2).value).toBeCloseTo(0.5, 12)
    expect(bias(t).value).toBeCloseTo(0.5, 12)
    expect(means(t)).toEqual({ human: 1.5, judge: 2 })
  })

  it("quadratic-weighted κ: human [0,1,2], judge [0,2,2] → 1 − 1/5 = 0.8", () => {
    // Σ w·O = (1−2)² = 1; Σ w·r·c/N = (4·1·2 + 1·1·1 + 1·1·2 + 4·1·1)/3 = 15/3 = 5.
    expect(quadraticWeightedKappa(tableOf([0, 1, 2], [0, 2, 2])).value).toBeCloseTo(0.8, 12)
  })

  it("weights are on the grade values: an unused grade in the table changes nothing", () => {
    const human = [0, 3, 3, 0, 2]
    const judge = [0, 2, 3, 2, 3]
    const dense = tableOf(human, judge, [0, 1, 2, 3])
    const sparse = tableOf(human, judge)
    expect(sparse.grades).toEqual([0, 2, 3])
    expect(quadraticWeightedKappa(dense).value).toBeCloseTo(quadraticWeightedKappa(sparse).value!, 12)
    expect(cohenKappa(dense).value).toBeCloseTo(cohenKappa(sparse).value!, 12)
    expect(krippendorffAlphaOrdinal(dense).value).toBeCloseTo(krippendorffAlphaOrdinal(sparse).value!, 12)
  })

  it("precision and recall per grade, humans as the reference", () => {
    const t = tableOf([0, 1, 2, 3], [1, 2, 2, 3])
    // Judge said 2 twice, humans agreed once: precision 0.5; humans said 2 once, judge agreed: recall 1.
    expect(precisionOf(t, 2).value).toBe(0.5)
    expect(recallOf(t, 2).value).toBe(1)
    expect(recallOf(t, 0).value).toBe(0)
    expect(precisionOf(t, 0)).toEqual({ value: null, reason: "the judge never gave grade 0" })
  })
})

describe("degenerate cases: null with a reason, never a fake 1 or 0", () => {
  it("no pairs: every statistic is null", () => {
    const t = tableOf([], [], [0, 1, 2, 3])
    for (
      const v of [
        cohenKappa(t),
        quadraticWeightedKappa(t),
        binaryKappa(t, 2),
        krippendorffAlphaOrdinal(t),
        bias(t),
        exactAgreement(t)
      ]
    ) {
      expect(v).toEqual({ value: null, reason: noPairs })
    }
    expect(means(t)).toEqual({ human: null, judge: null })
  })

  it("both sides one and the same grade: κ, weighted κ and α are undefined (scikit-learn gives NaN)", () => {
    const t = tableOf([2, 2, 2], [2, 2, 2], [0, 1, 2, 3])
    expect(cohenKappa(t)).toEqual({ value: null, reason: singleGrade })
    expect(quadraticWeightedKappa(t)).toEqual({ value: null, reason: singleGrade })
    expect(krippendorffAlphaOrdinal(t)).toEqual({ value: null, reason: noVariation })
    expect(exactAgreement(t).value).toBe(1)
    expect(bias(t).value).toBe(0)
  })

  it("different grades but one class each on the binary split: binary κ undefined, exact κ defined", () => {
    // Grades 2 and 3 are both "relevant" at ≥ 2: the binary table has one cell.
    const t = tableOf([2, 3, 3], [3, 2, 3])
    expect(binaryKappa(t, 2)).toEqual({ value: null, reason: singleGrade })
    expect(cohenKappa(t).value).not.toBeNull()
  })

  it("only the judge constant: κ = 0 exactly (chance explains the agreement), not undefined", () => {
    expect(cohenKappa(tableOf([0, 1, 2, 3], [2, 2, 2, 2])).value).toBe(0)
  })
})

describe("Krippendorff's α (ordinal) of two coders equals Agreement.ts's many-coder α", () => {
  it("on random tables", () => {
    let seed = 7
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    for (let trial = 0; trial < 20; trial++) {
      const n = 2 + Math.floor(next() * 60)
      const human = Array.from({ length: n }, () => Math.floor(next() * 4))
      const judge = human.map((h) => (next() < 0.6 ? h : Math.floor(next() * 4)))
      const fromTable = krippendorffAlphaOrdinal(tableOf(human, judge)).value
      const fromUnits =
        finishAgreement(human.map((h, i) => [h, judge[i]!]).reduce(addUnit, emptyAgreement())).krippendorffAlpha
      if (fromUnits === null) expect(fromTable).toBeNull()
      else expect(fromTable).toBeCloseTo(fromUnits, 12)
    }
  })
})

describe("against scikit-learn and the krippendorff algorithm (test/fixtures/calibrate/reference.json)", () => {
  it("has the cases", () => expect(reference.kappa.length).toBeGreaterThanOrEqual(10))
  for (const c of reference.kappa) {
    it(c.name, () => {
      const t = tableOf(c.human, c.judge, c.grades)
      const close = (actual: number | null, expected: number | null) =>
        expected === null ? expect(actual).toBeNull() : expect(actual).toBeCloseTo(expected, 12)
      close(cohenKappa(t).value, c.cohenKappa)
      close(quadraticWeightedKappa(t).value, c.quadraticKappa)
      close(binaryKappa(t, c.threshold).value, c.binaryKappa)
      close(krippendorffAlphaOrdinal(t).value, c.krippendorffAlpha)
      if (c.human.length === 0) return
      const k = c.grades.length
      expect(c.confusion.flat()).toEqual(Array.from(t.counts))
      expect(c.grades.map((_, g) => precisionOf(t, g).value)).toEqual(
        c.precision.map((p) => (p === null ? null : expect.closeTo(p, 12)))
      )
      expect(c.grades.map((_, g) => recallOf(t, g).value)).toEqual(
        c.recall.map((r) => (r === null ? null : expect.closeTo(r, 12)))
      )
      close(bias(t).value, c.bias)
      expect(k).toBe(t.grades.length)
    })
  }
})

describe("balanced accuracy (scikit-learn's balanced_accuracy_score)", () => {
  it("hand-computed: the mean recall over the grades the humans gave", async () => {
    const { balancedAccuracy, binaryTable } = await import("../../src/stats/Kappa.js")
    // humans contradicted (0): judge 0, 1 · neutral (1): judge 1, 1, 2, 2 · entailed (2): judge 1, 2, 2, 2
    const t = tableOf([0, 0, 1, 1, 1, 1, 2, 2, 2, 2], [0, 1, 1, 1, 2, 2, 1, 2, 2, 2], [0, 1, 2])
    expect(balancedAccuracy(t).value).toBeCloseTo((1 / 2 + 2 / 4 + 3 / 4) / 3, 14)
    // entailed or not: TPR 3/4, TNR 4/6
    expect(balancedAccuracy(binaryTable(t, 2)).value).toBeCloseTo((3 / 4 + 4 / 6) / 2, 14)
    // A grade the humans never gave is left out, not counted as recall 0.
    expect(balancedAccuracy(tableOf([1, 1, 2], [1, 0, 2], [0, 1, 2])).value).toBeCloseTo((1 / 2 + 1) / 2, 14)
    expect(balancedAccuracy(tableOf([], [], [0, 1])).value).toBeNull()
  })
})
