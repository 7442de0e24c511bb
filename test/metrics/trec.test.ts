/**
 * TREC interop. The small qrels/run below are evaluated by hand following trec_eval 9's sources
 * (no trec_eval binary was available to run them):
 *
 * q1: judged d1=2, d2=1, d3=0, d4=1 → R = 3 at level 1 (R = 1 at level 2)
 *     run scores d3 .9, d1 .8, d5 .8, d2 .1 → ties by docid descending: d3, d5, d1, d2
 *     grades [0, unjudged, 2, 1]
 *     P_5 = 2/5 · map = (1/3 + 2/4)/3 = 5/18 · recip_rank = 1/3 · Rprec = 1/3 · recall_5 = 2/3
 *     ndcg_cut_5 = (2/log2 4 + 1/log2 5) / (2 + 1/log2 3 + 1/log2 4) ≈ 0.456949
 * q2: judged e1=0, e2=0 → no relevant doc: every measure 0, still averaged
 * q3: in qrels, not in the run (counts only with `complete`)
 * q4: in the run, not in qrels → ignored
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { parseMetric, type RankingMetric } from "../../src/metrics/registry.js"
import {
  compareCodePoints,
  evaluateTrec,
  formatFixed4,
  formatTrec,
  parseQrels,
  parseRun,
  rankEntries,
  type RunEntry,
  trecToJson,
  writeQrels
} from "../../src/metrics/trec.js"

const qrelsText = `q1 0 d1 2
q1 0 d2 1
q1 0 d3 0
q1 0 d4 1

q2 0 e1 0
q2 0 e2 0
q3 0 f1 1
`
const runText = `# a comment line
q1 Q0 d3 1 0.9 runA
q1 Q0 d1 2 0.8 runA
q1 Q0 d5 3 0.8 runA
q1 Q0 d2 4 0.1 runA
q2 Q0 e1 1 1.0 runA
q4 Q0 x 1 1 runA
`

const specs = (...names: Array<string>): Array<RankingMetric> =>
  names.map((name) => Either.getOrThrow(parseMetric(name)))
const all = specs("p@5", "map", "mrr", "rprec", "recall@5", "ndcg@5", "hit@1", "hit@5")
const ndcgQ1 = (2 / Math.log2(4) + 1 / Math.log2(5)) / (2 + 1 / Math.log2(3) + 1 / Math.log2(4))

const entry = (docid: string, score: number): RunEntry => ({ qid: "q", docid, rank: 0, score, tag: "t", line: 1 })

describe("parseQrels", () => {
  it.effect("reads qid, docid and grade; blank lines are fine", () =>
    Effect.gen(function*() {
      const qrels = yield* parseQrels(qrelsText, "q.txt")
      expect([...qrels.keys()]).toEqual(["q1", "q2", "q3"])
      expect(qrels.get("q1")).toEqual(new Map([["d1", 2], ["d2", 1], ["d3", 0], ["d4", 1]]))
      const crlf = yield* parseQrels("a 0 x 1\r\n\r\nb\t0\tz  -1\r\n", "q.txt")
      expect(crlf.get("b")?.get("z")).toBe(-1)
    }))

  it.effect("wrong column count names file and line", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(parseQrels("q1 0 d1 1\n\nq1 0 d2\n", "qrels.txt"))
      expect(error._tag).toBe("InputError")
      expect(error.file).toBe("qrels.txt")
      expect(error.line).toBe(3)
      expect(error.problem).toBe("expected 4 columns \"qid iter docid grade\", found 3")
      expect(error.message).toBe("qrels.txt:3: expected 4 columns \"qid iter docid grade\", found 3")
    }))

  it.effect("non-numeric or non-integer grade", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(parseQrels("q1 0 d1 1\nq1 0 d2 high\n", "qrels.txt"))
      expect(error.line).toBe(2)
      expect(error.field).toBe("grade")
      expect(error.problem).toBe("grade \"high\" is not an integer")
      const decimal = yield* Effect.flip(parseQrels("q1 0 d2 1.5\n", "qrels.txt"))
      expect(decimal.problem).toBe("grade \"1.5\" is not an integer")
    }))

  it.effect("duplicate judgments are an error, as in trec_eval", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(parseQrels("q1 0 d1 1\nq1 0 d1 2\n", "qrels.txt"))
      expect(error.line).toBe(2)
      expect(error.problem).toBe("duplicate judgment for query \"q1\", doc \"d1\" (first on line 1)")
    }))
})

describe("parseRun", () => {
  it.effect("reads the six columns, skipping comments and blank lines; extra columns are ignored", () =>
    Effect.gen(function*() {
      const run = yield* parseRun(runText + "\nq5 Q0 y 1 -2.5e-1 runB extra stuff\n", "run.txt")
      expect(run.get("q1")?.map((e) => [e.docid, e.rank, e.score, e.line])).toEqual([
        ["d3", 1, 0.9, 2],
        ["d1", 2, 0.8, 3],
        ["d5", 3, 0.8, 4],
        ["d2", 4, 0.1, 5]
      ])
      expect(run.get("q5")?.[0]).toEqual({ qid: "q5", docid: "y", rank: 1, score: -0.25, tag: "runB", line: 9 })
    }))

  it.effect("wrong column count", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(parseRun("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 0.4\n", "run.txt"))
      expect(error.file).toBe("run.txt")
      expect(error.line).toBe(2)
      expect(error.problem).toBe("expected 6 columns \"qid Q0 docid rank score tag\", found 5")
    }))

  it.effect("non-numeric score and rank", () =>
    Effect.gen(function*() {
      const score = yield* Effect.flip(parseRun("\n\nq1 Q0 d1 1 abc tag\n", "run.txt"))
      expect(score.line).toBe(3)
      expect(score.field).toBe("score")
      expect(score.problem).toBe("score \"abc\" is not a number")
      const nan = yield* Effect.flip(parseRun("q1 Q0 d1 1 NaN tag\n", "run.txt"))
      expect(nan.problem).toBe("score \"NaN\" is not a number")
      const rank = yield* Effect.flip(parseRun("q1 Q0 d1 first 0.5 tag\n", "run.txt"))
      expect(rank.field).toBe("rank")
    }))

  it.effect("a doc retrieved twice for a query is an error", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(parseRun("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", "run.txt"))
      expect(error.line).toBe(2)
      expect(error.problem).toContain("duplicate doc \"d1\" for query \"q1\"")
    }))
})

describe("rankEntries: trec_eval tie-breaking", () => {
  it("sorts by score descending, ignoring the rank column", () => {
    expect(rankEntries([entry("a", 0.1), entry("b", 0.9), entry("c", 0.5)]).map((e) => e.docid)).toEqual([
      "b",
      "c",
      "a"
    ])
  })

  it("breaks ties by docid in descending strcmp order", () => {
    expect(rankEntries([entry("d1", 0.8), entry("d5", 0.8), entry("d3", 0.8)]).map((e) => e.docid)).toEqual([
      "d5",
      "d3",
      "d1"
    ])
    // strcmp: "d9" > "d10" > "d1"
    expect(rankEntries([entry("d1", 1), entry("d10", 1), entry("d9", 1)]).map((e) => e.docid)).toEqual([
      "d9",
      "d10",
      "d1"
    ])
  })

  it("compares scores as C floats: 0.3 and 0.30000001 tie", () => {
    expect(rankEntries([entry("a", 0.30000001), entry("b", 0.3)]).map((e) => e.docid)).toEqual(["b", "a"])
    expect(rankEntries([entry("a", 0.31), entry("b", 0.3)]).map((e) => e.docid)).toEqual(["a", "b"])
  })

  it("compares ids by code point (UTF-8 byte order), not UTF-16 units", () => {
    // U+FF21 is one UTF-16 unit above the surrogates of U+1F600, but below it as a code point
    expect(compareCodePoints("\uFF21", "\u{1F600}")).toBeLessThan(0)
    expect("\uFF21" < "\u{1F600}").toBe(false)
    expect(compareCodePoints("ab", "abc")).toBeLessThan(0)
    expect(compareCodePoints("b", "b")).toBe(0)
  })
})

describe("evaluateTrec", () => {
  const load = Effect.all([parseQrels(qrelsText, "q.txt"), parseRun(runText, "r.txt")])

  it.effect("averages over queries in both qrels and run", () =>
    Effect.gen(function*() {
      const [qrels, run] = yield* load
      const result = evaluateTrec({ qrels, run, metrics: all })
      expect(result.queries).toBe(2)
      expect([...result.perQuery.keys()]).toEqual(["q1", "q2"])
      expect(result.perQuery.get("q1")).toEqual({
        "p@5": 2 / 5,
        map: (1 / 3 + 2 / 4) / 3,
        mrr: 1 / 3,
        rprec: 1 / 3,
        "recall@5": 2 / 3,
        "ndcg@5": ndcgQ1,
        "hit@1": 0,
        "hit@5": 1
      })
      expect(result.perQuery.get("q1")?.["ndcg@5"]).toBeCloseTo(0.456949, 6)
      expect(Object.values(result.perQuery.get("q2") ?? {})).toEqual([0, 0, 0, 0, 0, 0, 0, 0])
      expect(result.mean.map).toBeCloseTo(5 / 18 / 2, 15)
      expect(result.mean["ndcg@5"]).toBe(ndcgQ1 / 2)
      expect(result.unjudgedQueries).toEqual(["q4"])
      expect(result.missingQueries).toEqual(["q3"])
      expect(result.queriesWithoutRelevant).toEqual(["q2"])
      expect(result.runTag).toBe("runA")
    }))

  it.effect("complete (-c): every qrels query counts, missing ones score 0", () =>
    Effect.gen(function*() {
      const [qrels, run] = yield* load
      const result = evaluateTrec({ qrels, run, metrics: specs("map", "p@5"), complete: true })
      expect(result.queries).toBe(3)
      expect(result.perQuery.get("q3")).toEqual({ map: 0, "p@5": 0 })
      expect(result.mean.map).toBeCloseTo(5 / 18 / 3, 15)
      expect(result.mean["p@5"]).toBe(0.4 / 3)
    }))

  it.effect("relevance level 2 changes R and binary measures, not NDCG gains", () =>
    Effect.gen(function*() {
      const [qrels, run] = yield* load
      const result = evaluateTrec({ qrels, run, metrics: specs("map", "p@5", "ndcg@5"), relevanceLevel: 2 })
      // only d1 (rank 3) is relevant, R = 1
      expect(result.perQuery.get("q1")).toEqual({ map: 1 / 3, "p@5": 1 / 5, "ndcg@5": ndcgQ1 })
    }))

  it("no common query → zero means over zero queries", () => {
    const result = evaluateTrec({ qrels: new Map(), run: new Map(), metrics: specs("map") })
    expect(result.queries).toBe(0)
    expect(result.mean).toEqual({ map: 0 })
  })
})

describe("output", () => {
  it("formatFixed4 rounds like C's %.4f (exact ties to even)", () => {
    expect(formatFixed4(1 / 3)).toBe("0.3333")
    expect(formatFixed4(2 / 3)).toBe("0.6667")
    expect(formatFixed4(0.5)).toBe("0.5000")
    expect(formatFixed4(0)).toBe("0.0000")
    expect(formatFixed4(1)).toBe("1.0000")
    expect(formatFixed4(0.03125)).toBe("0.0312")
    expect(formatFixed4(0.15625)).toBe("0.1562")
    expect(formatFixed4(0.46875)).toBe("0.4688")
    expect(formatFixed4(0.00005)).toBe("0.0001")
  })

  it.effect("formatTrec prints trec_eval's relational lines", () =>
    Effect.gen(function*() {
      const [qrels, run] = yield* Effect.all([parseQrels(qrelsText, "q.txt"), parseRun(runText, "r.txt")])
      const result = evaluateTrec({ qrels, run, metrics: specs("map", "p@5", "ndcg@5"), complete: true })
      expect(formatTrec(result, { perQuery: true })).toBe(
        [
          "map                   \tq1\t0.2778",
          "P_5                   \tq1\t0.4000",
          "ndcg_cut_5            \tq1\t0.4569",
          "map                   \tq2\t0.0000",
          "P_5                   \tq2\t0.0000",
          "ndcg_cut_5            \tq2\t0.0000",
          "runid                 \tall\trunA",
          "num_q                 \tall\t3",
          "map                   \tall\t0.0926",
          "P_5                   \tall\t0.1333",
          "ndcg_cut_5            \tall\t0.1523",
          ""
        ].join("\n")
      )
      expect(formatTrec(result, { names: "spec" }).split("\n")[2]).toBe("map                   \tall\t0.0926")
      const json = trecToJson(result)
      expect(json.queries).toBe(3)
      expect(json.perQuery.q3).toEqual({ map: 0, "p@5": 0, "ndcg@5": 0 })
      expect(json.metrics).toEqual([
        { name: "map", trecName: "map" },
        { name: "p@5", trecName: "P_5" },
        { name: "ndcg@5", trecName: "ndcg_cut_5" }
      ])
      const roundTrip: unknown = JSON.parse(JSON.stringify(json))
      expect(roundTrip).toEqual(json)
    }))
})

describe("writeQrels", () => {
  it.effect("writes qid 0 docid grade lines that parse back", () =>
    Effect.gen(function*() {
      const text = yield* writeQrels([
        { qid: "q1", docid: "d1", grade: 3 },
        { qid: "q1", docid: "d2", grade: 0 },
        { qid: "q2", docid: "d1", grade: 2 }
      ])
      expect(text).toBe("q1 0 d1 3\nq1 0 d2 0\nq2 0 d1 2\n")
      const back = yield* parseQrels(text, "out.qrels")
      expect(back.get("q1")?.get("d1")).toBe(3)
      expect(yield* writeQrels([])).toBe("")
    }))

  it.effect("refuses ids with whitespace and non-integer grades", () =>
    Effect.gen(function*() {
      const space = yield* Effect.flip(
        writeQrels([{ qid: "q1", docid: "d1", grade: 1 }, { qid: "q 2", docid: "d", grade: 1 }])
      )
      expect(space.line).toBe(2)
      expect(space.field).toBe("qid")
      const grade = yield* Effect.flip(writeQrels([{ qid: "q1", docid: "d1", grade: 1.5 }]))
      expect(grade.problem).toBe("grade 1.5 is not an integer")
    }))
})
