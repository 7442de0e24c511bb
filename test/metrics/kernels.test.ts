/**
 * Hand-computed values for every per-query kernel (SPEC §3). The running example is the ranking
 * with grades [3, 2, 0, 1] (rank 1 … 4); gold judgments add an unretrieved 3 and a 0:
 * gold = [3, 3, 2, 1, 0]. log2(2) = 1, log2(3) ≈ 1.58496, log2(4) = 2, log2(5) ≈ 2.32193.
 */
import { describe, expect, it } from "@effect/vitest"
import { averagePrecision } from "../../src/metrics/averagePrecision.js"
import { dcg, discount, gainOf } from "../../src/metrics/dcg.js"
import { hit } from "../../src/metrics/hitRate.js"
import { idcg, ndcg } from "../../src/metrics/ndcg.js"
import { precision } from "../../src/metrics/precision.js"
import { recall } from "../../src/metrics/recall.js"
import { reciprocalRank } from "../../src/metrics/reciprocalRank.js"
import { countRelevant, mean, topK } from "../../src/metrics/relevance.js"
import { rPrecision } from "../../src/metrics/rPrecision.js"

const ranking = [3, 2, 0, 1]
const gold = [3, 3, 2, 1, 0]

describe("relevance helpers", () => {
  it("cuts, counts and averages", () => {
    expect(topK(ranking, 2)).toEqual([3, 2])
    expect(topK(ranking, 10)).toEqual(ranking)
    expect(topK(ranking)).toEqual(ranking)
    expect(topK(ranking, 0)).toEqual([])
    expect(countRelevant(ranking)).toBe(3)
    expect(countRelevant(ranking, 2)).toBe(2)
    expect(mean([1, 0, 0.5])).toBe(0.5)
    expect(mean([])).toBe(0)
  })
})

describe("dcg", () => {
  it("uses the grade as gain (linear) with log2(i + 1) discounts", () => {
    expect(discount(1)).toBe(1)
    expect(dcg(ranking, { k: 1 })).toBe(3)
    expect(dcg(ranking, { k: 2 })).toBe(3 + 2 / Math.log2(3))
    expect(dcg(ranking, { k: 2 })).toBeCloseTo(4.26186, 5)
    expect(dcg(ranking, { k: 4 })).toBe(3 + 2 / Math.log2(3) + 1 / Math.log2(5))
    expect(dcg(ranking, { k: 4 })).toBeCloseTo(4.69254, 5)
  })

  it("k larger than the list = the whole list; no k = the whole list", () => {
    expect(dcg(ranking, { k: 10 })).toBe(dcg(ranking, { k: 4 }))
    expect(dcg(ranking)).toBe(dcg(ranking, { k: 4 }))
  })

  it("exponential gain is 2^rel − 1", () => {
    expect(gainOf(3, "exponential")).toBe(7)
    expect(gainOf(0, "exponential")).toBe(0)
    expect(dcg(ranking, { k: 2, gain: "exponential" })).toBe(7 + 3 / Math.log2(3))
    expect(dcg(ranking, { k: 2, gain: "exponential" })).toBeCloseTo(8.89279, 5)
    expect(dcg(ranking, { gain: "exponential" })).toBeCloseTo(9.32347, 5)
  })

  it("grades ≤ 0 (incl. the unjudged −1) give no gain", () => {
    expect(gainOf(-1)).toBe(0)
    expect(dcg([-1, 2], { k: 2 })).toBe(2 / Math.log2(3))
  })

  it("is 0 for an empty list and for k = 0", () => {
    expect(dcg([])).toBe(0)
    expect(dcg([], { k: 5, gain: "exponential" })).toBe(0)
    expect(dcg(ranking, { k: 0 })).toBe(0)
  })
})

describe("ndcg", () => {
  it("proxy: the ideal is the ranking's own grades sorted descending", () => {
    expect(idcg(ranking)).toBe(3 + 2 / Math.log2(3) + 1 / 2)
    expect(ndcg(ranking, { k: 1 })).toEqual({ value: 1, flagged: false })
    expect(ndcg(ranking, { k: 2 })).toEqual({ value: 1, flagged: false })
    expect(ndcg(ranking, { k: 4 }).value).toBeCloseTo(0.985442, 6)
    expect(ndcg(ranking, { k: 10 }).value).toBe(ndcg(ranking, { k: 4 }).value)
  })

  it("gold: the ideal comes from every judged grade, retrieved or not", () => {
    const at2 = ndcg(ranking, { k: 2, ideal: gold })
    expect(at2.value).toBe((3 + 2 / Math.log2(3)) / (3 + 3 / Math.log2(3)))
    expect(at2.value).toBeCloseTo(0.871049, 6)
    expect(ndcg(ranking, { k: 1, ideal: gold }).value).toBe(1)
    // full list: DCG 4.69254 / IDCG(3,3,2,1,0) = 3 + 1.89279 + 1 + 0.43068 = 6.32347
    expect(ndcg(ranking, { ideal: gold }).value).toBeCloseTo(4.692536 / 6.323466, 5)
  })

  it("linear vs exponential gain", () => {
    const bad = [1, 3]
    // linear: (1 + 3/log2 3) / (3 + 1/log2 3) = 2.89279 / 3.63093
    // exponential: (1 + 7/log2 3) / (7 + 1/log2 3) = 5.41650 / 7.63093
    expect(ndcg(bad).value).toBeCloseTo((1 + 3 / Math.log2(3)) / (3 + 1 / Math.log2(3)), 12)
    expect(ndcg(bad).value).toBeCloseTo(0.7967, 4)
    expect(ndcg(bad, { gain: "exponential" }).value).toBeCloseTo((1 + 7 / Math.log2(3)) / (7 + 1 / Math.log2(3)), 12)
    expect(ndcg(bad, { gain: "exponential" }).value).toBeCloseTo(0.7098, 4)
  })

  it("all-equal grades rank perfectly", () => {
    expect(ndcg([2, 2, 2], { k: 2 })).toEqual({ value: 1, flagged: false })
  })

  it("IDCG = 0 → 0 and flagged: empty list, no positive grade, empty gold", () => {
    expect(ndcg([])).toEqual({ value: 0, flagged: true })
    expect(ndcg([], { k: 10, ideal: [] })).toEqual({ value: 0, flagged: true })
    expect(ndcg([0, 0], { k: 2 })).toEqual({ value: 0, flagged: true })
    expect(ndcg([2, 1], { ideal: [0, 0] })).toEqual({ value: 0, flagged: true })
  })
})

describe("precision", () => {
  it("divides by k even when the list is shorter", () => {
    expect(precision(ranking, { k: 1 })).toBe(1)
    expect(precision(ranking, { k: 2 })).toBe(1)
    expect(precision(ranking, { k: 3 })).toBe(2 / 3)
    expect(precision(ranking, { k: 4 })).toBe(0.75)
    expect(precision(ranking, { k: 10 })).toBe(0.3)
  })

  it("uses the relevance threshold", () => {
    expect(precision(ranking, { k: 4, threshold: 2 })).toBe(0.5)
    expect(precision(ranking, { k: 10, threshold: 2 })).toBe(0.2)
    expect(precision([2, 2, 2], { k: 3, threshold: 2 })).toBe(1)
  })

  it("without k divides by the list length", () => {
    expect(precision(ranking)).toBe(0.75)
  })

  it("is 0 for empty lists, no relevant item and k = 0", () => {
    expect(precision([], { k: 5 })).toBe(0)
    expect(precision([])).toBe(0)
    expect(precision([0, 0, 1], { k: 3, threshold: 2 })).toBe(0)
    expect(precision(ranking, { k: 0 })).toBe(0)
  })
})

describe("averagePrecision", () => {
  it("proxy R = relevant items found in the list", () => {
    // relevant at ranks 1, 2, 4: (1/1 + 2/2 + 3/4) / 3
    expect(averagePrecision(ranking)).toBe(2.75 / 3)
    expect(averagePrecision([0, 1, 0, 1])).toBe(0.5)
    expect(averagePrecision(ranking, { threshold: 2 })).toBe(1)
  })

  it("gold R = relevant items in the judgments", () => {
    expect(averagePrecision(ranking, { totalRelevant: 5 })).toBe(0.55)
  })

  it("with a cut-off (map_cut): only the top k contribute, R is not capped", () => {
    expect(averagePrecision(ranking, { k: 2 })).toBe(2 / 3)
    expect(averagePrecision(ranking, { k: 10 })).toBe(averagePrecision(ranking))
  })

  it("is 0 for empty lists and R = 0", () => {
    expect(averagePrecision([])).toBe(0)
    expect(averagePrecision([], { totalRelevant: 3 })).toBe(0)
    expect(averagePrecision([0, 0])).toBe(0)
    expect(averagePrecision([2, 1], { totalRelevant: 0 })).toBe(0)
  })
})

describe("reciprocalRank", () => {
  it("is 1 / rank of the first relevant item", () => {
    expect(reciprocalRank([0, 0, 2])).toBe(1 / 3)
    expect(reciprocalRank(ranking)).toBe(1)
    expect(reciprocalRank([0, 1, 2], { threshold: 2 })).toBe(1 / 3)
  })

  it("is 0 when nothing relevant is in the top k, and for an empty list", () => {
    expect(reciprocalRank([0, 0, 2], { k: 2 })).toBe(0)
    expect(reciprocalRank([0, 0, 2], { threshold: 3 })).toBe(0)
    expect(reciprocalRank([])).toBe(0)
  })
})

describe("hit", () => {
  it("is 1 when a relevant item is in the top k", () => {
    expect(hit([0, 0, 2], { k: 2 })).toBe(0)
    expect(hit([0, 0, 2], { k: 3 })).toBe(1)
    expect(hit([0, 0, 2], { k: 10 })).toBe(1)
    expect(hit([0, 0, 1], { k: 10, threshold: 2 })).toBe(0)
  })

  it("is 0 for an empty list", () => {
    expect(hit([], { k: 10 })).toBe(0)
    expect(hit([])).toBe(0)
  })
})

describe("recall", () => {
  it("is relevant retrieved in the top k / R (gold)", () => {
    expect(recall(ranking, { k: 2, totalRelevant: 5 })).toBe(0.4)
    expect(recall(ranking, { k: 10, totalRelevant: 5 })).toBe(0.6)
    expect(recall(ranking, { totalRelevant: 3 })).toBe(1)
    expect(recall(ranking, { k: 4, threshold: 2, totalRelevant: 3 })).toBe(2 / 3)
  })

  it("is 0 for R = 0 and for an empty list", () => {
    expect(recall(ranking, { k: 10, totalRelevant: 0 })).toBe(0)
    expect(recall([], { k: 10, totalRelevant: 4 })).toBe(0)
  })
})

describe("rPrecision", () => {
  it("is precision at rank R, dividing by R even if the list is shorter", () => {
    // gold R = 5, only 4 items, 3 relevant
    expect(rPrecision(ranking, { totalRelevant: 5 })).toBe(0.6)
    // proxy R = 3: top 3 = [3, 2, 0]
    expect(rPrecision(ranking)).toBe(2 / 3)
    expect(rPrecision([0, 1])).toBe(0)
    expect(rPrecision(ranking, { threshold: 2 })).toBe(1)
  })

  it("is 0 for R = 0 and for an empty list", () => {
    expect(rPrecision([0, 0])).toBe(0)
    expect(rPrecision([])).toBe(0)
    expect(rPrecision([], { totalRelevant: 2 })).toBe(0)
  })
})
