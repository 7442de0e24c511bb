import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import type { Passage } from "../../src/domain/Case.js"
import { applyParams, paramsRecord, uniqueIds, validateParams } from "../../src/retrieval/Params.js"

const hits = (scores: ReadonlyArray<number | undefined>): Array<Passage> =>
  scores.map((score, i) => ({
    id: `h${i + 1}`,
    rank: i + 1,
    text: `hit ${i + 1}`,
    ...(score === undefined ? {} : { score })
  }))

describe("applyParams", () => {
  it("nothing set: the hits as given", () => {
    const input = hits([0.9, 0.1, 0.5])
    const out = applyParams(input, {})
    expect(out.passages).toEqual(input)
    expect(out).toMatchObject({ candidates: 3, belowThreshold: 0, beyondTopK: 0, unscored: 0 })
  })

  it("threshold first, then top-k; input order kept (never re-sorted); ranks renumbered", () => {
    // scores: 0.9, 0.3, 0.6, 0.45, 0.8 — threshold 0.4 drops h2; top-2 of the rest: h1, h3.
    const out = applyParams(hits([0.9, 0.3, 0.6, 0.45, 0.8]), { scoreThreshold: 0.4, topK: 2 })
    expect(out.passages.map((p) => [p.id, p.rank])).toEqual([["h1", 1], ["h3", 2]])
    expect(out).toMatchObject({ candidates: 5, belowThreshold: 1, beyondTopK: 2 })
  })

  it("a score equal to the threshold is kept", () => {
    expect(applyParams(hits([0.4, 0.39]), { scoreThreshold: 0.4 }).passages.map((p) => p.id)).toEqual(["h1"])
  })

  it("hits without a score are kept under a threshold and counted", () => {
    const out = applyParams(hits([undefined, 0.1, 0.9]), { scoreThreshold: 0.5 })
    expect(out.passages.map((p) => [p.id, p.rank])).toEqual([["h1", 1], ["h3", 2]])
    expect(out).toMatchObject({ belowThreshold: 1, unscored: 1 })
  })

  it("top-k larger than the list, and an empty list", () => {
    expect(applyParams(hits([0.5]), { topK: 10 }).passages).toHaveLength(1)
    expect(applyParams([], { topK: 3, scoreThreshold: 0.2 })).toMatchObject({
      passages: [],
      candidates: 0,
      belowThreshold: 0,
      beyondTopK: 0
    })
  })
})

describe("validateParams / paramsRecord", () => {
  it("accepts whole counts ≥ 1 and a finite threshold (negative thresholds too: scores may be negative)", () => {
    expect(Either.isRight(validateParams({ topK: 5, scoreThreshold: -1.5, prefetchLimit: 100, rerankTopN: 20 }))).toBe(
      true
    )
  })

  it("names the bad parameter", () => {
    expect(validateParams({ topK: 0 })).toEqual(
      Either.left({ name: "topK", problem: "must be a whole number ≥ 1 (got 0)" })
    )
    expect(Either.getLeft(validateParams({ prefetchLimit: 2.5 })).pipe((o) => o._tag === "Some" && o.value.name)).toBe(
      "prefetchLimit"
    )
    expect(
      Either.getLeft(validateParams({ scoreThreshold: Number.NaN })).pipe((o) => o._tag === "Some" && o.value.name)
    ).toBe("scoreThreshold")
  })

  it("records only what is set", () => {
    expect(paramsRecord({ topK: 5, scoreThreshold: undefined, rerankTopN: 20 })).toEqual({ topK: 5, rerankTopN: 20 })
  })
})

describe("uniqueIds", () => {
  it("keeps unique ids, suffixes repeats, numbers missing ids by rank", () => {
    expect(uniqueIds(["a", "b", "a", undefined, "a", ""])).toEqual(["a", "b", "a~2", "4", "a~3", "6"])
  })

  it("never collides with an id that already looks like a suffix", () => {
    expect(uniqueIds(["a", "a~2", "a"])).toEqual(["a", "a~2", "a~3"])
  })
})
