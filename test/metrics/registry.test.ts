import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import {
  evaluate,
  evaluateAll,
  evaluateRanking,
  gradesFromQrels,
  measure,
  parseMetric,
  parseMetrics,
  type RankingMetric,
  trecName
} from "../../src/metrics/registry.js"

const spec = (name: string): RankingMetric => Either.getOrThrow(parseMetric(name))

describe("parseMetric", () => {
  it.each([
    ["ndcg@10", { name: "ndcg@10", kind: "ndcg", k: 10, gain: "linear" }],
    ["NDCG@10", { name: "ndcg@10", kind: "ndcg", k: 10, gain: "linear" }],
    ["ndcg", { name: "ndcg", kind: "ndcg", gain: "linear" }],
    ["ndcg_exp@5", { name: "ndcg_exp@5", kind: "ndcg", k: 5, gain: "exponential" }],
    ["ndcg_cut_10", { name: "ndcg@10", kind: "ndcg", k: 10, gain: "linear" }],
    ["ndcg_cut.10", { name: "ndcg@10", kind: "ndcg", k: 10, gain: "linear" }],
    ["p@5", { name: "p@5", kind: "precision", k: 5 }],
    ["Precision@5", { name: "p@5", kind: "precision", k: 5 }],
    ["P_5", { name: "p@5", kind: "precision", k: 5 }],
    ["p", { name: "p", kind: "precision" }],
    ["map", { name: "map", kind: "averagePrecision" }],
    ["AP", { name: "map", kind: "averagePrecision" }],
    ["map@10", { name: "map@10", kind: "averagePrecision", k: 10 }],
    ["map_cut_10", { name: "map@10", kind: "averagePrecision", k: 10 }],
    ["mrr", { name: "mrr", kind: "reciprocalRank" }],
    ["rr", { name: "mrr", kind: "reciprocalRank" }],
    ["recip_rank", { name: "mrr", kind: "reciprocalRank" }],
    ["hit@10", { name: "hit@10", kind: "hit", k: 10 }],
    ["HitRate@10", { name: "hit@10", kind: "hit", k: 10 }],
    ["success_1", { name: "hit@1", kind: "hit", k: 1 }],
    ["recall@10", { name: "recall@10", kind: "recall", k: 10 }],
    ["recall_100", { name: "recall@100", kind: "recall", k: 100 }],
    ["r-precision", { name: "rprec", kind: "rPrecision" }],
    ["Rprec", { name: "rprec", kind: "rPrecision" }],
    [" rprec ", { name: "rprec", kind: "rPrecision" }]
  ])("%s", (name, expected) => {
    expect(parseMetric(name)).toEqual(Either.right(expected))
  })

  it("a gain option makes bare ndcg exponential; ndcg_exp stays exponential", () => {
    expect(parseMetric("ndcg@10", { gain: "exponential" })).toEqual(
      Either.right({ name: "ndcg@10", kind: "ndcg", k: 10, gain: "exponential" })
    )
    expect(parseMetric("ndcg_exp", { gain: "linear" })).toEqual(
      Either.right({ name: "ndcg_exp", kind: "ndcg", gain: "exponential" })
    )
  })

  it.each([
    ["foo", "unknown metric"],
    ["ndcg@0", "cut-off \"0\" is not a positive integer"],
    ["ndcg@", "cut-off \"\" is not a positive integer"],
    ["p@x", "cut-off \"x\" is not a positive integer"],
    ["p@2.5", "cut-off \"2.5\" is not a positive integer"],
    ["p@-1", "cut-off \"-1\" is not a positive integer"],
    ["rprec@5", "this metric takes no cut-off"],
    ["set_P_5", "this metric takes no cut-off"],
    ["", "unknown metric"]
  ])("rejects %j: %s, listing the valid forms", (name, why) => {
    const result = parseMetric(name)
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left._tag).toBe("UsageError")
      expect(result.left.problem).toContain(`metric "${name}": ${why}; valid forms: ndcg, ndcg@k,`)
      expect(result.left.problem).toContain("r-precision (rprec)")
    }
  })

  it("refuses recall for proxy evaluation (no gold)", () => {
    const result = parseMetric("recall@10", { gold: false })
    expect(Either.isLeft(result) && result.left.problem).toContain("recall needs gold judgments")
    expect(Either.isRight(parseMetric("ndcg@10", { gold: false }))).toBe(true)
  })
})

describe("parseMetrics", () => {
  it.effect("parses a comma-separated list and drops duplicates", () =>
    Effect.gen(function*() {
      const specs = yield* parseMetrics("ndcg@10, p@5,precision@5,map")
      expect(specs.map((s) => s.name)).toEqual(["ndcg@10", "p@5", "map"])
    }))

  it.effect("fails on the first invalid name or on an empty list", () =>
    Effect.gen(function*() {
      const bad = yield* Effect.flip(parseMetrics(["map", "ndcg@ten"]))
      expect(bad.problem).toContain("metric \"ndcg@ten\"")
      const empty = yield* Effect.flip(parseMetrics(" , "))
      expect(empty.problem).toContain("no metric given")
    }))
})

describe("trecName", () => {
  it("maps specs to trec_eval measure names", () => {
    expect(["ndcg@10", "ndcg", "p@5", "p", "map", "map@10", "mrr", "hit@5", "recall@100", "recall", "rprec"].map(
      (name) => trecName(spec(name))
    )).toEqual([
      "ndcg_cut_10",
      "ndcg",
      "P_5",
      "set_P",
      "map",
      "map_cut_10",
      "recip_rank",
      "success_5",
      "recall_100",
      "set_recall",
      "Rprec"
    ])
    expect(trecName(spec("ndcg_exp@5"))).toBe("ndcg_exp@5")
    expect(trecName(spec("mrr@10"))).toBe("mrr@10")
  })
})

describe("evaluate", () => {
  const ranking = { grades: [3, 2, 0, 1] }
  const gold = { grades: [3, 2, 0, 1], gold: [3, 3, 2, 1, 0] }

  it("proxy grades", () => {
    expect(evaluate(spec("ndcg@2"), ranking)).toBe(1)
    expect(evaluate(spec("p@10"), ranking)).toBe(0.3)
    expect(evaluate(spec("p@4"), ranking, { threshold: 2 })).toBe(0.5)
    expect(evaluate(spec("map"), ranking)).toBe(2.75 / 3)
    expect(evaluate(spec("mrr"), { grades: [0, 0, 2] })).toBe(1 / 3)
    expect(evaluate(spec("hit@2"), { grades: [0, 0, 2] })).toBe(0)
    expect(evaluate(spec("rprec"), ranking)).toBe(2 / 3)
  })

  it("gold grades change IDCG and R (R = 4 judged grades ≥ 1)", () => {
    expect(evaluate(spec("ndcg@2"), gold)).toBeCloseTo(0.871049, 6)
    expect(evaluate(spec("map"), gold)).toBe(2.75 / 4)
    expect(evaluate(spec("map"), gold, { threshold: 2 })).toBe(2 / 3)
    expect(evaluate(spec("recall@2"), gold)).toBe(0.5)
    expect(evaluate(spec("rprec"), gold)).toBe(0.75)
  })

  it("exponential ndcg", () => {
    expect(evaluate(spec("ndcg_exp"), { grades: [1, 3] })).toBeCloseTo(0.70981, 5)
  })

  it("flags NDCG when IDCG = 0", () => {
    expect(measure(spec("ndcg@10"), { grades: [] })).toEqual({ value: 0, flagged: true })
    expect(measure(spec("p@10"), { grades: [] })).toEqual({ value: 0, flagged: false })
  })

  it("every metric has a value for empty input", () => {
    for (const name of ["ndcg", "ndcg_exp@5", "p@5", "p", "map", "mrr", "hit@10", "recall@10", "rprec"]) {
      expect(evaluate(spec(name), { grades: [] })).toBe(0)
      expect(evaluate(spec(name), { grades: [], gold: [] })).toBe(0)
    }
  })

  it("ranked doc ids against qrels: unjudged docs are non-relevant", () => {
    const qrels = new Map([["a", 2], ["b", 0], ["c", 1]])
    expect(gradesFromQrels(["x", "a", "b"], qrels)).toEqual({ grades: [-1, 2, 0], gold: [2, 0, 1] })
    // relevant a (rank 2) of R = 2 (a, c): AP = (1/2) / 2
    expect(evaluateRanking(spec("map"), ["x", "a", "b"], qrels)).toBe(0.25)
    expect(evaluateRanking(spec("recall@3"), ["x", "a", "b"], qrels)).toBe(0.5)
    expect(evaluateRanking(spec("mrr"), ["x", "a", "b"], qrels, { threshold: 2 })).toBe(0.5)
  })
})

describe("evaluateAll", () => {
  it("keeps per-query values, means over queries and counts flags", () => {
    const specs = ["ndcg@2", "p@2", "mrr"].map(spec)
    const summary = evaluateAll(specs, [
      { id: "q1", grades: [3, 2, 0, 1] },
      { id: "q2", grades: [0, 0] },
      { id: "q3", grades: [0, 2] }
    ])
    expect(summary.queries).toBe(3)
    expect(summary.perQuery.map((q) => q.id)).toEqual(["q1", "q2", "q3"])
    expect(summary.perQuery[1]).toEqual({ id: "q2", values: { "ndcg@2": 0, "p@2": 0, mrr: 0 }, flagged: ["ndcg@2"] })
    // q3: DCG@2 = 2/log2 3, IDCG@2 = 2 → 1/log2 3
    expect(summary.perQuery[2]?.values["ndcg@2"]).toBe(1 / Math.log2(3))
    expect(summary.mean["p@2"]).toBe((1 + 0 + 0.5) / 3)
    expect(summary.mean.mrr).toBe((1 + 0 + 0.5) / 3)
    expect(summary.mean["ndcg@2"]).toBe((1 + 0 + 1 / Math.log2(3)) / 3)
    expect(summary.flagged).toEqual({ "ndcg@2": 1, "p@2": 0, mrr: 0 })
  })

  it("no queries → means of 0", () => {
    const summary = evaluateAll([spec("map")], [])
    expect(summary).toEqual({ perQuery: [], mean: { map: 0 }, flagged: { map: 0 }, queries: 0 })
  })
})
