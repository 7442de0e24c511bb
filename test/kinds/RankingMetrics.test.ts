/**
 * The retrieval kinds name their ranking metrics once, as the metric registry's (`metrics/registry.ts`):
 * the registry computes them and gives their range and direction, and `serve` computes the same
 * figures as the search-relevance pipeline.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { courseMetrics, courseMetricSpecs, courseRanking } from "../../src/kinds/course/CourseRetrieval.js"
import { searchMetrics, searchMetricSpecs, searchRanking } from "../../src/kinds/search/SearchRelevance.js"
import { parseMetric } from "../../src/metrics/registry.js"
import { searchMetrics as serveMetrics } from "../../src/server/Evaluate.js"

const parsed = (name: string, gain: "linear" | "exponential") => Either.getOrThrow(parseMetric(name, { gain }))

describe("ranking metrics through the registry", () => {
  it("each kind's ranking metric is the one the registry parses from its name", () => {
    for (const m of Object.values(searchRanking)) expect(parsed(m.name, "exponential")).toEqual(m)
    expect(parsed(courseRanking.ndcg5.name, "linear")).toEqual(courseRanking.ndcg5)
    expect(parsed(courseRanking.ndcg10.name, "linear")).toEqual(courseRanking.ndcg10)
    // The course files' historical name for precision; the registry's canonical name is p@k.
    expect(parsed(courseRanking.precision5.name, "linear")).toEqual({ ...courseRanking.precision5, name: "p@5" })
    expect(parsed(courseRanking.precision10.name, "linear")).toEqual({ ...courseRanking.precision10, name: "p@10" })
  })

  it("their declarations carry the registry's range and direction, under the name the values are keyed by", () => {
    for (
      const [ranking, specs] of [[searchRanking, searchMetricSpecs], [courseRanking, courseMetricSpecs]] as const
    ) {
      const names = Object.values(ranking).map((m) => m.name)
      const declared = specs.filter((s) => names.includes(s.name))
      expect(declared.map((s) => s.name)).toEqual(names)
      for (const s of declared) expect([s.min, s.max, s.direction, s.unit]).toEqual([0, 1, "higher", "fraction"])
    }
    expect(Object.keys(searchMetrics([3, 0, 2]).values)).toEqual(searchMetricSpecs.map((s) => s.name))
    expect(Object.keys(courseMetrics([3, 0, 2]).values)).toEqual(courseMetricSpecs.map((s) => s.name))
  })

  it("relevant ⇔ grade ≥ 2: a ranking of grade-1 hits has no relevant hit, grade 2 is one", () => {
    expect(searchMetrics([1, 1, 1]).values).toMatchObject({ map: 0, mrr: 0 })
    expect(searchMetrics([1, 2, 1]).values).toMatchObject({ map: 0.5, mrr: 0.5 })
    expect(courseMetrics([2, 1, 1, 1, 1]).values["precision@5"]).toBeCloseTo(0.2, 12)
  })

  it("serve computes the search pipeline's figures", () => {
    for (const grades of [[3, 0, 2, 1], [0, 0], [], [1, 2, 3, 0, 0, 2, 1, 3, 2, 0, 1, 2]]) {
      const kind = searchMetrics(grades).values
      expect(serveMetrics(grades, { gain: "exponential" })).toEqual({ ndcg: kind.ndcg, map: kind.map, mrr: kind.mrr })
      expect(serveMetrics(grades, { gain: "exponential", k: 10 }).ndcg).toBe(kind["ndcg@10"])
    }
  })
})
