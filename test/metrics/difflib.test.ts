import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import {
  codePoints,
  covers,
  coversNormalized,
  matchingBlocks,
  normalize,
  quickRatio,
  ratio,
  realQuickRatio,
  sequenceRatio
} from "../../src/metrics/difflib.js"

/** Fixtures pinned with CPython by `fixtures/difflib_fixtures.py`. */
const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url)), "utf8"))

interface RatioCase {
  readonly a: string
  readonly b: string
  readonly ratio: number
}
interface NormalizeCase {
  readonly text: string
  readonly normalized: string
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

const casesOf = (value: unknown): Array<unknown> => isRecord(value) && Array.isArray(value.cases) ? value.cases : []

const ratioCases: Array<RatioCase> = casesOf(fixture("difflib-ratio.json")).flatMap((c) =>
  isRecord(c) && typeof c.a === "string" && typeof c.b === "string" && typeof c.ratio === "number"
    ? [{ a: c.a, b: c.b, ratio: c.ratio }]
    : []
)
const normalizeCases: Array<NormalizeCase> = casesOf(fixture("normalize.json")).flatMap((c) =>
  isRecord(c) && typeof c.text === "string" && typeof c.normalized === "string"
    ? [{ text: c.text, normalized: c.normalized }]
    : []
)

describe("ratio: parity with CPython difflib.SequenceMatcher(None, a, b).ratio()", () => {
  it("has the pinned fixtures", () => {
    expect(ratioCases.length).toBeGreaterThanOrEqual(60)
    expect(ratioCases.some((c) => codePoints(c.b).length >= 200)).toBe(true)
    expect(normalizeCases.length).toBeGreaterThanOrEqual(10)
  })

  it.each(ratioCases.map((c, index) => [index, c] as const))("case %i", (_, c) => {
    expect(ratio(c.a, c.b)).toBe(c.ratio)
    // the quick bounds are upper bounds, as in CPython
    expect(quickRatio(c.a, c.b)).toBeGreaterThanOrEqual(c.ratio)
    expect(realQuickRatio(c.a, c.b)).toBeGreaterThanOrEqual(quickRatio(c.a, c.b))
  })
})

describe("matching blocks", () => {
  it("follow CPython's get_matching_blocks, sentinel included", () => {
    // difflib docs: SequenceMatcher(None, "abxcd", "abcd").get_matching_blocks()
    expect(matchingBlocks(codePoints("abxcd"), codePoints("abcd"))).toEqual([
      { a: 0, b: 0, size: 2 },
      { a: 3, b: 2, size: 2 },
      { a: 5, b: 4, size: 0 }
    ])
    // find_longest_match(0, 5, 0, 9) of " abcd" / "abcd abcd" is (0, 4, 5): earliest in a wins
    expect(matchingBlocks(codePoints(" abcd"), codePoints("abcd abcd"))[0]).toEqual({ a: 0, b: 4, size: 5 })
  })

  it("autojunk: popular elements of a 200+ long b cannot start a match", () => {
    // b = "ab" * 150: both letters occur 150 > 300 // 100 + 1 times, so nothing matches
    expect(ratio("ab".repeat(150), "ba".repeat(150))).toBe(0)
    // …but a match at the very start is still extended over them
    expect(ratio("a".repeat(250), "a".repeat(250))).toBe(1)
    // below 200 items there is no autojunk
    expect(ratio("ab".repeat(99), "ba".repeat(99))).toBeCloseTo(197 / 198, 12)
  })

  it("works on any sequence (elements compared with ===)", () => {
    expect(sequenceRatio([1, 2, 3, 4], [2, 3, 4, 5])).toBe(0.75)
    expect(sequenceRatio([], [])).toBe(1)
  })

  it("counts code points, not UTF-16 units", () => {
    expect(codePoints("😀a")).toEqual(["😀", "a"])
    expect(ratio("\u{1F600}", "\u{1F601}")).toBe(0)
  })
})

describe("normalize", () => {
  it.each(normalizeCases.map((c) => [JSON.stringify(c.text), c] as const))("%s like Python", (_, c) => {
    expect(normalize(c.text)).toBe(c.normalized)
  })
})

describe("covers", () => {
  it("normalised substring", () => {
    expect(covers("Intro.  The   CAT sat on\nthe mat, then left.", "the cat sat on the mat")).toBe(true)
  })

  it("fuzzy: ratio(span, chunk) ≥ threshold (default 0.7)", () => {
    // CPython: SequenceMatcher(None, "the cat sat on the mat", "the cat sat on a mat").ratio() = 0.9047…
    expect(covers("The cat sat on a mat", "the cat sat on the mat")).toBe(true)
    expect(covers("The cat sat on a mat", "the cat sat on the mat", 0.95)).toBe(false)
    // 0.7931… with the default threshold, not with 0.8
    expect(covers("revenue grew by 12 percent in 2023", "Revenue grew 12% in 2023")).toBe(true)
    expect(covers("revenue grew by 12 percent in 2023", "Revenue grew 12% in 2023", 0.8)).toBe(false)
    // 0.4489…
    expect(covers("a dog barked at the mailman", "the cat sat on the mat")).toBe(false)
  })

  it("the threshold is inclusive", () => {
    // ratio("abcd", "bcde") = 0.75 exactly
    expect(coversNormalized("bcde", "abcd", 0.75)).toBe(true)
    expect(coversNormalized("bcde", "abcd", 0.7500001)).toBe(false)
  })

  it("an empty span is covered by nothing; an empty chunk covers nothing", () => {
    expect(covers("anything", "   ")).toBe(false)
    expect(covers("", "")).toBe(false)
    expect(covers("", "gold")).toBe(false)
  })
})
