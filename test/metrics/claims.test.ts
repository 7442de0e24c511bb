/**
 * Hand-computed values for every claim metric (src/metrics/claims.ts), and every case where a
 * metric is null. The running example: five answer claims a1…a5, three reference claims r1…r3, two
 * contexts — c1 entails a reference claim (relevant), c2 does not (irrelevant).
 *
 *            vs reference   vs c1   vs c2          correct  faithful  from
 *   a1       entailed       E       ·              yes      yes       c1 (relevant)
 *   a2       neutral        ·       E              no       yes       c2 only (irrelevant)
 *   a3       contradicted   E       ·              no       yes       c1 (relevant)
 *   a4       entailed       ·       ·              yes      no        —
 *   a5       neutral        ·       ·              no       no        —
 *
 *            vs answer      vs c1   vs c2          recalled
 *   r1       entailed       E       ·              yes
 *   r2       neutral        ·       ·              no
 *   r3       neutral        E       ·              yes
 */
import { describe, expect, it } from "@effect/vitest"
import {
  type CaseVerdicts,
  claimF1,
  claimMetrics,
  claimPrecision,
  claimRecall,
  contextPrecision,
  contextRecall,
  contextUtilization,
  faithfulness,
  hallucination,
  noiseSensitivityIrrelevant,
  noiseSensitivityRelevant,
  nuggetRecallPartial,
  nuggetRecallStrict,
  selfKnowledge,
  ungrounded,
  vitalNuggetRecallPartial,
  vitalNuggetRecallStrict
} from "../../src/metrics/claims.js"

const E = "entailed" as const
const N = "neutral" as const
const C = "contradicted" as const

const example: CaseVerdicts = {
  answerVsReference: [E, N, C, E, N],
  referenceVsAnswer: [E, N, N],
  answerVsContexts: [
    [E, N, E, N, N],
    [N, E, N, N, N]
  ],
  referenceVsContexts: [
    [E, N, E],
    [N, N, N]
  ]
}

describe("claim metrics, hand-computed", () => {
  it("precision = 2 of 5 answer claims entailed by the reference (contradicted counts as not entailed)", () => {
    expect(claimPrecision(example)).toBe(2 / 5)
  })
  it("recall = 1 of 3 reference claims entailed by the answer", () => {
    expect(claimRecall(example)).toBe(1 / 3)
  })
  it("F1 = 2·0.4·(1/3) / (0.4 + 1/3) = 4/11", () => {
    expect(claimF1(example)).toBeCloseTo(4 / 11, 12)
  })
  it("faithfulness = a1, a2, a3 entailed by some context: 3/5", () => {
    expect(faithfulness(example)).toBe(3 / 5)
  })
  it("ungrounded = mean of 1 − each answer claim's best support in a context: 1 − faithfulness from verdicts alone, graded with the judge's support", () => {
    expect(ungrounded(example)).toBeCloseTo(2 / 5, 12)
    const graded: CaseVerdicts = {
      ...example,
      answerSupportVsContexts: [
        [0.9, 0.2, 0.5, 0.1, 0],
        [0.3, 0.8, 0.1, 0.3, 0]
      ]
    }
    // best per claim 0.9, 0.8, 0.5, 0.3, 0 → mean of 1 − each = (0.1 + 0.2 + 0.5 + 0.7 + 1) / 5
    expect(ungrounded(graded)).toBeCloseTo(2.5 / 5, 12)
    expect(ungrounded({ answerVsContexts: [[]] })).toBeNull()
    expect(ungrounded({ answerVsReference: [E] })).toBeNull()
  })
  it("context recall = r1 and r3 entailed by some context: 2/3", () => {
    expect(contextRecall(example)).toBe(2 / 3)
  })
  it("context precision = c1 entails a reference claim, c2 none: 1/2", () => {
    expect(contextPrecision(example)).toBe(1 / 2)
  })
  it("context utilization = of the recalled r1, r3 the answer entails r1: 1/2", () => {
    expect(contextUtilization(example)).toBe(1 / 2)
  })
  it("hallucination = a5 (wrong, in no context): 1/5", () => {
    expect(hallucination(example)).toBe(1 / 5)
  })
  it("self-knowledge = a4 (right, in no context): 1/5", () => {
    expect(selfKnowledge(example)).toBe(1 / 5)
  })
  it("noise sensitivity in relevant contexts = a3 (wrong, from c1): 1/5", () => {
    expect(noiseSensitivityRelevant(example)).toBe(1 / 5)
  })
  it("noise sensitivity in irrelevant contexts = a2 (wrong, from c2 only): 1/5", () => {
    expect(noiseSensitivityIrrelevant(example)).toBe(1 / 5)
  })
  it("a wrong claim entailed by a relevant and an irrelevant context counts as relevant only", () => {
    const v: CaseVerdicts = {
      answerVsReference: [N],
      referenceVsAnswer: [N],
      answerVsContexts: [[E], [E]],
      referenceVsContexts: [[E], [N]]
    }
    expect(noiseSensitivityRelevant(v)).toBe(1)
    expect(noiseSensitivityIrrelevant(v)).toBe(0)
  })
  it("faithful, hallucinated and self-known claims partition the answer", () => {
    const m = claimMetrics(example)
    expect(m.faithfulness! + m.hallucination! + m.selfKnowledge!).toBeCloseTo(1, 12)
  })
  it("claimMetrics gathers them all", () => {
    expect(claimMetrics(example)).toEqual({
      precision: 2 / 5,
      recall: 1 / 3,
      f1: claimF1(example),
      faithfulness: 3 / 5,
      ungrounded: 2 / 5,
      contextRecall: 2 / 3,
      contextPrecision: 1 / 2,
      contextUtilization: 1 / 2,
      hallucination: 1 / 5,
      // a5 only: a4 is correct, a1–a3 faithful
      unsupportedClaims: 1,
      selfKnowledge: 1 / 5,
      noiseSensitivityRelevant: 1 / 5,
      noiseSensitivityIrrelevant: 1 / 5,
      nuggetRecall: null,
      nuggetRecallPartial: null,
      vitalNuggetRecall: null,
      vitalNuggetRecallPartial: null
    })
  })
})

describe("nugget recall (AutoNuggetizer), hand-computed", () => {
  const nuggets: CaseVerdicts = {
    nuggets: [
      { importance: "vital", assignment: "support" },
      { importance: "vital", assignment: "partial_support" },
      { importance: "okay", assignment: "support" },
      { importance: "okay", assignment: "not_support" },
      { assignment: "partial_support" } // a plain-string nugget: no importance
    ]
  }
  it("strict, all: 2 supported of 5", () => expect(nuggetRecallStrict(nuggets)).toBe(2 / 5))
  it("partial, all: (2 + ½·2) / 5", () => expect(nuggetRecallPartial(nuggets)).toBe(3 / 5))
  it("strict, vital: 1 of 2", () => expect(vitalNuggetRecallStrict(nuggets)).toBe(1 / 2))
  it("partial, vital: (1 + ½) / 2", () => expect(vitalNuggetRecallPartial(nuggets)).toBe(3 / 4))
  it("the claim metrics are null: nuggets alone have no reference or contexts", () => {
    const m = claimMetrics(nuggets)
    expect([m.precision, m.recall, m.f1, m.faithfulness, m.contextRecall, m.contextPrecision]).toEqual([
      null,
      null,
      null,
      null,
      null,
      null
    ])
  })
})

describe("null, never 0, for what a case cannot have", () => {
  it("no reference: precision, recall, F1 and every reference-based context metric are null; faithfulness is not", () => {
    const v: CaseVerdicts = { answerVsContexts: [[E, N]] }
    const m = claimMetrics(v)
    expect(m.faithfulness).toBe(1 / 2)
    for (
      const k of [
        "precision",
        "recall",
        "f1",
        "contextRecall",
        "contextPrecision",
        "contextUtilization",
        "hallucination",
        "selfKnowledge",
        "noiseSensitivityRelevant",
        "noiseSensitivityIrrelevant"
      ] as const
    ) {
      expect(m[k], k).toBeNull()
    }
  })
  it("no contexts (absent or an empty list): faithfulness and every context metric are null; precision, recall, F1 are not", () => {
    for (const contexts of [undefined, []]) {
      const v: CaseVerdicts = {
        answerVsReference: [E, N],
        referenceVsAnswer: [E],
        answerVsContexts: contexts,
        referenceVsContexts: contexts
      }
      const m = claimMetrics(v)
      expect([m.precision, m.recall, m.f1]).toEqual([1 / 2, 1, 2 / 3])
      for (
        const k of [
          "faithfulness",
          "contextRecall",
          "contextPrecision",
          "contextUtilization",
          "hallucination",
          "selfKnowledge",
          "noiseSensitivityRelevant",
          "noiseSensitivityIrrelevant"
        ] as const
      ) {
        expect(m[k], k).toBeNull()
      }
    }
  })
  it("an answer without claims: precision and every share of answer claims are null; recall is 0, so F1 is 0", () => {
    const v: CaseVerdicts = {
      answerVsReference: [],
      referenceVsAnswer: [N, N],
      answerVsContexts: [[]],
      referenceVsContexts: [[E, N]]
    }
    const m = claimMetrics(v)
    expect(m.precision).toBeNull()
    expect(m.recall).toBe(0)
    expect(m.f1).toBe(0)
    for (
      const k of [
        "faithfulness",
        "hallucination",
        "selfKnowledge",
        "noiseSensitivityRelevant",
        "noiseSensitivityIrrelevant"
      ] as const
    ) expect(m[k], k).toBeNull()
    expect(m.contextRecall).toBe(1 / 2)
    expect(m.contextPrecision).toBe(1)
    expect(m.contextUtilization).toBe(0)
  })
  it("F1 is null when precision is null and recall is not 0 (no answer claims, yet a reference claim entailed)", () => {
    expect(claimF1({ answerVsReference: [], referenceVsAnswer: [E, N] })).toBeNull()
  })
  it("a reference without claims: recall, context recall, context precision and utilization are null; F1 is 0 only when precision is 0", () => {
    const v: CaseVerdicts = {
      answerVsReference: [E, N],
      referenceVsAnswer: [],
      answerVsContexts: [[E, N]],
      referenceVsContexts: [[]]
    }
    const m = claimMetrics(v)
    expect(m.precision).toBe(1 / 2)
    expect(m.recall).toBeNull()
    expect(m.f1).toBeNull()
    expect(m.contextRecall).toBeNull()
    expect(m.contextPrecision).toBeNull()
    expect(m.contextUtilization).toBeNull()
    expect(claimF1({ answerVsReference: [N], referenceVsAnswer: [] })).toBe(0)
  })
  it("both sides without claims: precision, recall and F1 are null", () => {
    const m = claimMetrics({ answerVsReference: [], referenceVsAnswer: [] })
    expect([m.precision, m.recall, m.f1]).toEqual([null, null, null])
  })
  it("precision and recall 0 make F1 0, not null", () => {
    expect(claimF1({ answerVsReference: [N, C], referenceVsAnswer: [N] })).toBe(0)
  })
  it("no reference claim recalled by a context: context utilization is null, context recall and precision 0", () => {
    const v: CaseVerdicts = {
      answerVsReference: [E],
      referenceVsAnswer: [E, E],
      answerVsContexts: [[N]],
      referenceVsContexts: [[N, N], [N, C]]
    }
    expect(contextUtilization(v)).toBeNull()
    expect(contextRecall(v)).toBe(0)
    expect(contextPrecision(v)).toBe(0)
  })
  it("no nuggets: every nugget recall is null; no vital nugget: the vital ones are null", () => {
    const none = claimMetrics({ answerVsReference: [E], referenceVsAnswer: [E] })
    expect([none.nuggetRecall, none.nuggetRecallPartial, none.vitalNuggetRecall, none.vitalNuggetRecallPartial])
      .toEqual([null, null, null, null])
    const empty = claimMetrics({ nuggets: [] })
    expect([empty.nuggetRecall, empty.vitalNuggetRecall]).toEqual([null, null])
    const okayOnly: CaseVerdicts = {
      nuggets: [{ importance: "okay", assignment: "support" }, { assignment: "not_support" }]
    }
    expect(nuggetRecallStrict(okayOnly)).toBe(1 / 2)
    expect(vitalNuggetRecallStrict(okayOnly)).toBeNull()
    expect(vitalNuggetRecallPartial(okayOnly)).toBeNull()
  })
})
