/**
 * The relevance model behind the heuristic `relevance-grade` (src/judges/RelevanceModel.ts): each
 * feature on a tiny pool whose numbers are worked out by hand, the threshold blend, the edge cases.
 */
import { describe, expect, it } from "@effect/vitest"
import { heuristics, measureRelevance, relevanceOf } from "../../src/judges/Heuristic.js"
import {
  answerTypeOf,
  hasAnswerType,
  poolStats,
  queryTerms,
  relevance,
  THRESHOLDS,
  THRESHOLDS_ALONE,
  thresholdsFor,
  withinWindow
} from "../../src/judges/RelevanceModel.js"
import { termsMatch } from "../../src/judges/Terms.js"

const set = (...terms: ReadonlyArray<string>): ReadonlySet<string> => new Set(terms)

describe("pool-weighted coverage and typicality (hand-computed)", () => {
  // Query terms bounty, hunter, money. The judged hit is d2; the pool is d1–d4, so M = 3 others.
  const d1 = set("bounty", "hunter", "money", "reward")
  const d2 = set("bounty", "hunter", "bail", "agent")
  const d3 = set("bounty", "hunter", "bail")
  const d4 = set("fish", "boat")
  const query = queryTerms(["bounty", "hunter", "money"], undefined, termsMatch)
  const stats = poolStats([d1, d2, d3, d4], query)

  it("counts each query term's pool document frequency", () => {
    expect(stats.size).toBe(4)
    expect(stats.queryDf).toEqual([3, 3, 1])
    // T_j (leaving j out, M = 3): d1 {reward} 0; d2 {bail 1, agent 0} 1/6; d3 {bail 1} 1/3; d4 0.
    expect(stats.meanTypicality).toBeCloseTo((0 + 1 / 6 + 1 / 3 + 0) / 4, 12)
  })

  it("weighs query terms by the other hits that contain them, leaves the hit out, and grades on the blended thresholds", () => {
    const r = relevance({
      query,
      queryText: "bounty hunter money",
      hit: d2,
      hitText: "bounty hunter bail agent",
      pool: { stats, includesHit: true }
    })
    // Others: df bounty 2, hunter 2, money 1 → w = (df + ½)/(3 + 1) = 2.5/4, 2.5/4, 1.5/4.
    // C = (2.5 + 2.5) / (2.5 + 2.5 + 1.5) = 5/6.5 (plain coverage would be 2/3).
    expect(r.coverage).toBeCloseTo(5 / 6.5, 12)
    expect(r.matched).toBe(2)
    expect(r.queryTerms).toBe(3)
    expect(r.poolOthers).toBe(3)
    // T = 1/6, mean 1/8 → R = 4/3; shrunk: R' = 1 + (1/3)·3/(3 + 2) = 1.2.
    expect(r.typicality).toBeCloseTo(1.2, 12)
    // "money" asks for an amount; the hit has no number: A = 0. s = 5/6.5 + 0.5·0.2.
    expect(r.answer).toEqual({ wants: "a number or an amount", found: false })
    expect(r.score).toBeCloseTo(5 / 6.5 + 0.1, 12)
    // λ = 3/4: thresholds 0.5875 / 0.8375 / 1.25; s = 0.869 → grade 2, 0.032 above the grade-2 line.
    expect(r.thresholds).toEqual({ grade1: 0.5875, grade2: 0.8375, grade3: 1.25 })
    expect(r.grade).toBe(2)
    // Confidence 1 + 4·0.0317/0.15 = 1.85 → 2.
    expect(r.confidence).toBe(2)
  })

  it("a number in the hit adds the answer-type bonus", () => {
    const r = relevance({
      query,
      queryText: "bounty hunter money",
      hit: d2,
      hitText: "bounty hunters get 10% of the bail",
      pool: { stats, includesHit: true }
    })
    expect(r.answer).toEqual({ wants: "a number or an amount", found: true })
    expect(r.score).toBeCloseTo(5 / 6.5 + 0.1 + 0.1, 12)
  })

  it("without a pool: plain coverage, no typicality, the hit-alone thresholds", () => {
    const r = relevance({ query, queryText: "bounty hunter money", hit: d2, hitText: "x" })
    expect(r.coverage).toBeCloseTo(2 / 3, 12)
    expect(r.typicality).toBe(1)
    expect(r.poolOthers).toBe(0)
    expect(r.thresholds).toEqual(THRESHOLDS_ALONE)
    expect(r.grade).toBe(2) // 0.667 ≥ 0.65
    expect(r.confidence).toBeLessThanOrEqual(3) // no other hits: never sure
  })
})

describe("threshold blend", () => {
  it("moves from the hit-alone thresholds to the pooled ones as λ = M/(M + 1) grows", () => {
    expect(thresholdsFor(0)).toEqual(THRESHOLDS_ALONE)
    expect(thresholdsFor(1)).toEqual({ grade1: 0.525, grade2: 0.775, grade3: 1.2 })
    expect(thresholdsFor(9).grade2).toBeCloseTo(0.9 * 0.9 + 0.1 * 0.65, 9)
    expect(thresholdsFor(1e6).grade3).toBeCloseTo(THRESHOLDS.grade3, 5)
  })
})

describe("proximity", () => {
  const query = queryTerms(["alpha", "beta", "gamma"], undefined, termsMatch)
  it("finds every query term within a window of consecutive terms", () => {
    const terms = ["alpha", "x", "beta", "y", "y", "gamma"]
    expect(withinWindow(terms, query, new Map(), 4)).toBe(false) // alpha … gamma spans 6 terms
    expect(withinWindow(terms, query, new Map(), 6)).toBe(true)
    expect(withinWindow(["gamma", "beta", "alpha"], query, new Map(), 3)).toBe(true) // any order
    expect(withinWindow(["alpha", "beta"], query, new Map(), 4)).toBe(false) // gamma missing
  })
  it("adds its bonus only when all query terms sit within |Q| + 1 terms", () => {
    const q = "alpha beta gamma"
    const near = relevanceOf({ query: q, passage: "alpha beta gamma delta epsilon" })!
    const far = relevanceOf({ query: q, passage: "alpha delta epsilon beta zeta eta gamma" })!
    expect(near.close).toBe(true)
    expect(far.close).toBe(false)
    expect(near.score - far.score).toBeCloseTo(0.2, 12)
  })
})

describe("answer types", () => {
  const cases: ReadonlyArray<[string, string | undefined, string, string]> = [
    [
      "how much does a plumber cost",
      "quantity",
      "Plumbers charge $45 to $150 per hour.",
      "Plumbers fix leaking pipes."
    ],
    [
      "how long do you blanch spinach",
      "duration",
      "Blanch spinach for 2 minutes, then cool it.",
      "Blanching keeps spinach green."
    ],
    [
      "when did blue sour patch come out",
      "date",
      "The blue flavour was launched in 2016.",
      "Sour Patch Kids are sour then sweet."
    ],
    [
      "simons university phone number",
      "phone",
      "Call the admissions office at (555) 123-4567.",
      "The university has three campuses."
    ],
    [
      "who played sherrilyn feeney",
      "person",
      "She was played by Jane Doherty in the series.",
      "the role was recast in the second season."
    ],
    [
      "what is karma koin",
      "definition",
      "Karma Koin is a prepaid card for online games.",
      "Buy it at any store near you."
    ]
  ]
  for (const [query, type, yes, no] of cases) {
    it(`${type}: "${query}"`, () => {
      const rule = answerTypeOf(query)
      expect(rule?.type).toBe(type)
      expect(hasAnswerType(rule!.type, yes)).toBe(true)
      expect(hasAnswerType(rule!.type, no)).toBe(false)
    })
  }
  it("no answer type for a topic query", () => {
    expect(answerTypeOf("corn mash")).toBeUndefined()
    expect(relevanceOf({ query: "corn mash", passage: "Corn mash is fermented." })!.answer).toBeUndefined()
  })
})

describe("titles, skills and question context", () => {
  const courses = [
    "Web Development Fundamentals (CS210)\nLearning outcomes:\n- Build static web pages with HTML and CSS\n- Deploy a website",
    "Full-Stack Web Applications (CS315)\nLearning outcomes:\n- Design a REST API for a web application\n- Develop front ends",
    "Medieval European History (HIS105)\nLearning outcomes:\n- Analyse primary sources from medieval Europe"
  ]
  const vars = (course: string) => ({
    question: "How do I learn web development to build websites?",
    skill: "web development",
    course
  })
  it("a course whose name holds the whole skill gets the title bonus; one that only uses the words does not", () => {
    const [fundamentals, fullStack, history] = courses.map((c) => relevanceOf(vars(c), { pool: courses })!)
    expect(fundamentals!.titled).toBe(true)
    expect(fullStack!.titled).toBe(false)
    expect(fundamentals!.matched).toBe(2)
    expect(fullStack!.matched).toBe(2)
    expect(history!.matched).toBe(0)
    expect(fundamentals!.grade).toBe(3)
    expect(history!.grade).toBe(0)
    expect(fundamentals!.score - fullStack!.score).toBeGreaterThan(0.15) // the title bonus (0.2), give or take typicality
  })
  it("the question's other terms can only add", () => {
    const inContext = relevanceOf(vars(courses[0]!), { pool: courses })!
    const alone = relevanceOf({ skill: "web development", course: courses[0]! }, { pool: courses })!
    expect(inContext.contextTerms).toBeGreaterThan(0)
    expect(inContext.contextCoverage).toBeGreaterThan(0)
    expect(inContext.coverage).toBe(alone.coverage)
    expect(inContext.score).toBeCloseTo(alone.score + 0.1 * inContext.contextCoverage, 12)
  })
  it("a one-line hit has no title", () => {
    expect(relevanceOf({ query: "web development", passage: "Web Development Fundamentals" })!.titled).toBe(false)
  })
})

describe("edge cases", () => {
  const grade = heuristics["relevance-grade"]!
  const scale = { min: 0, max: 3 }
  it("an empty hit is 0 with confidence 5; a query without content terms is 0 with confidence 1", () => {
    expect(grade({ query: "capital of france", passage: "   " }, scale, { pool: ["   ", "Paris"] })).toMatchObject({
      score: 0,
      confidence: 5
    })
    expect(measureRelevance({ query: "capital of france", passage: "" })).toBe("empty-hit")
    expect(grade({ query: "what is it?", passage: "Paris is the capital." }, scale)).toMatchObject({
      score: 0,
      confidence: 1
    })
    expect(measureRelevance({ query: "what is it?", passage: "Paris" })).toBe("no-query-terms")
  })

  it("a very long hit that mentions the query once among unrelated words ranks below a focused one", () => {
    const filler = Array.from({ length: 5000 }, (_, i) => `filler${i.toString(36)}word`).join(" ")
    const focused = "Tides are caused by the pull of the moon on the ocean water."
    const pool = [
      focused,
      `Tides rise and fall as the moon pulls the ocean. ${filler}`,
      "The moon pulls ocean water into tides twice a day.",
      "Ocean tides follow the moon and the sun."
    ]
    const q = "what causes ocean tides"
    const [short, long] = [pool[0]!, pool[1]!].map((passage) => relevanceOf({ query: q, passage }, { pool })!)
    expect(long!.typicality).toBeLessThan(short!.typicality)
    expect(long!.score).toBeLessThan(short!.score)
    expect(Number.isFinite(long!.score)).toBe(true)
    expect([0, 1, 2, 3]).toContain(long!.grade)
  })

  it("the pool's array identity does not matter, only its texts; a hit outside the pool is judged against all of it", () => {
    const pool = ["Paris is the capital of France.", "Lyon is a city in France.", "Bananas are yellow."]
    const a = grade({ query: "capital of france", passage: pool[0]! }, scale, { pool })
    const b = grade({ query: "capital of france", passage: pool[0]! }, scale, { pool: [...pool] })
    expect(b).toEqual(a)
    const outside = relevanceOf({ query: "capital of france", passage: "France's capital is Paris." }, { pool })!
    expect(outside.poolOthers).toBe(3)
    const inside = relevanceOf({ query: "capital of france", passage: pool[0]! }, { pool })!
    expect(inside.poolOthers).toBe(2)
  })

  it("is deterministic across calls and pools judged in between", () => {
    const pool = ["Paris is the capital of France.", "Lyon is a city in France."]
    const first = grade({ query: "capital of france", passage: pool[1]! }, scale, { pool })
    grade({ query: "bananas", passage: "Bananas are yellow." }, scale, {
      pool: ["Bananas are yellow.", "Apples are red."]
    })
    expect(grade({ query: "capital of france", passage: pool[1]! }, scale, { pool })).toEqual(first)
  })
})
