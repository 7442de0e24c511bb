import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import {
  calibrate,
  type Calibration,
  defaultRelevantAt,
  type JudgeGrades,
  kappaGateFailures,
  type SystemRun
} from "../../src/calibrate/Calibration.js"
import type { CriterionGrades, Graded } from "../../src/calibrate/Grades.js"
import type { GradeFile } from "../../src/calibrate/Labels.js"
import { parseMetric } from "../../src/metrics/registry.js"
import { parseRun } from "../../src/metrics/trec.js"

/** criterion → "group/item" → grade (null = failed), lines numbered in order. */
const grades = (spec: Record<string, ReadonlyArray<readonly [string, string, number | null]>>): CriterionGrades => {
  const out: CriterionGrades = new Map()
  let line = 0
  for (const [criterion, entries] of Object.entries(spec)) {
    const groups = new Map<string, Map<string, Graded>>()
    for (const [group, item, grade] of entries) {
      if (!groups.has(group)) groups.set(group, new Map())
      groups.get(group)!.set(item, { grade, line: ++line })
    }
    out.set(criterion, groups)
  }
  return out
}

const qrelsJudge = (g: CriterionGrades): JudgeGrades => ({
  source: { kind: "qrels", file: "judge.qrels", negative: 0 },
  kind: "retrieval",
  grades: g,
  rubrics: new Map(),
  rubricNames: new Map()
})

const labelsOf = (g: CriterionGrades, kind: GradeFile["kind"] = "retrieval"): GradeFile => ({
  file: kind === "retrieval" ? "human.qrels" : "human.csv",
  format: kind === "retrieval" ? "qrels" : "csv",
  kind,
  grades: g,
  count: [...g.values()].reduce((s, groups) => s + [...groups.values()].reduce((t, items) => t + items.size, 0), 0),
  negative: 0
})

const run = (judge: JudgeGrades, labels: GradeFile, runs?: ReadonlyArray<SystemRun>) =>
  Effect.runPromise(Effect.either(calibrate(judge, labels, { relevantAt: 2, seed: 42, resamples: 500, runs })))

const okRun = async (judge: JudgeGrades, labels: GradeFile, runs?: ReadonlyArray<SystemRun>): Promise<Calibration> => {
  const result = await run(judge, labels, runs)
  if (Either.isLeft(result)) throw new Error(result.left.message)
  return result.right
}

describe("pairing: nothing is dropped silently", () => {
  const judge = qrelsJudge(grades({ relevance: [["q1", "a", 3], ["q1", "b", null], ["q1", "c", 1], ["q2", "x", 2]] }))
  const labels = labelsOf(
    grades({ relevance: [["q1", "a", 2], ["q1", "b", 1], ["q1", "d", 0], ["q2", "x", 2], ["q3", "y", 1]] })
  )

  it("counts and lists pairs, labels without a judgment, judgments without a label, and failed judgments", async () => {
    const c = (await okRun(judge, labels)).criteria[0]!
    expect(c.criterion).toBe("relevance")
    expect(c.pairs).toBe(2)
    expect(c.labelsWithoutJudgment).toEqual({
      count: 2,
      items: [{ id: "q1", item: "d", grade: 0, line: 3 }, { id: "q3", item: "y", grade: 1, line: 5 }]
    })
    expect(c.judgmentsWithoutLabel).toEqual({ count: 1, items: [{ id: "q1", item: "c", grade: 1, line: 3 }] })
    expect(c.judgeFailed).toEqual({
      count: 1,
      withLabel: 1,
      items: [{ id: "q1", item: "b", grade: null, label: 1, line: 2 }]
    })
    // Pairs (human, judge): (2, 3), (2, 2) → grades 2…3.
    expect(c.grades).toEqual([2, 3])
    expect(c.confusion).toEqual([[1, 1], [0, 0]])
    expect(c.bias.value).toBeCloseTo(0.5, 12)
    expect(c.meanJudge).toBe(2.5)
    expect(c.meanHuman).toBe(2)
    // The humans gave one grade only: κ = 0 (defined), α defined.
    expect(c.cohenKappa.value).toBe(0)
  })

  it("per-query NDCG@10 on the judge's order, hand-computed", async () => {
    const q = (await okRun(judge, labels)).queryRanking!
    expect(q.metric).toBe("ndcg@10")
    expect(q.order).toMatch(/judge's qrels file/)
    // q1 ranking a, b, c. Humans: grades (2, 1, unlabelled), ideal from labels (2, 1, 0) → NDCG 1.
    // Judge: grades (3, failed, 1), ideal (3, 1): DCG = 3 + 1/log2(4) = 3.5, IDCG = 3 + 1/log2(3).
    expect(q.queries[0]).toEqual({
      id: "q1",
      items: 3,
      human: expect.closeTo(1, 12),
      judge: expect.closeTo(3.5 / (3 + 1 / Math.log2(3)), 12)
    })
    expect(q.queries[1]).toEqual({ id: "q2", items: 1, human: 1, judge: 1 })
    expect(q.labelOnlyQueries).toBe(1)
    expect(q.judgeOnlyQueries).toBe(0)
    expect(q.correlation.n).toBe(2)
  })

  it("the NDCG@10 spec is the registry's ndcg@10 (trec_eval ndcg_cut_10, linear gain)", () => {
    expect(Either.getOrThrow(parseMetric("ndcg@10"))).toEqual({ name: "ndcg@10", kind: "ndcg", k: 10, gain: "linear" })
    expect(Either.getOrThrow(parseMetric("map"))).toEqual({ name: "map", kind: "averagePrecision" })
  })

  it("degenerate: one grade for everything gives null κ with the reason and no CI", async () => {
    const same = qrelsJudge(grades({ relevance: [["q1", "a", 1], ["q1", "b", 1]] }))
    const c = (await okRun(same, labelsOf(grades({ relevance: [["q1", "a", 1], ["q1", "b", 1]] })))).criteria[0]!
    expect(c.cohenKappa).toMatchObject({
      value: null,
      ci: null,
      reason: expect.stringContaining("one and the same grade")
    })
    expect(c.krippendorffAlpha).toMatchObject({ value: null, ci: null })
    expect(c.exactAgreement.value).toBe(1)
  })

  it("no pairs at all: every statistic null, and --min-kappa fails on it", async () => {
    const result = await okRun(
      qrelsJudge(grades({ relevance: [["q1", "a", 1]] })),
      labelsOf(grades({ relevance: [["q9", "z", 1]] }))
    )
    const c = result.criteria[0]!
    expect(c.pairs).toBe(0)
    expect(c.cohenKappa).toMatchObject({ value: null, reason: "no matched pairs" })
    expect(kappaGateFailures(result, 0.1)).toEqual([
      "relevance: Cohen's κ is undefined (no matched pairs), so it cannot reach --min-kappa 0.1"
    ])
  })
})

describe("rubric criteria", () => {
  const judge: JudgeGrades = {
    source: {
      kind: "run",
      run: {
        dir: "out/rag-answers/x",
        runId: "x",
        pipeline: "rag-answers",
        judge: "j",
        status: "complete",
        iteration: 1,
        iterations: 1
      },
      order: "records",
      tornLastLine: false,
      otherLines: 0
    },
    kind: "rubric",
    grades: grades({
      "rag-answers/answer-relevance": [["1", "", 3], ["2", "", 1], ["3", "", 0]],
      "rag-answers/groundedness": [["1", "", 2], ["2", "", 0]],
      "rag-answers/clarity": [["1", "", 4]]
    }),
    rubrics: new Map([["rag-answers/answer-relevance", ["rag-answers/answer-relevance"]], ["rag-answers/groundedness", [
      "rag-answers/groundedness"
    ]], ["rag-answers/clarity", ["rag-answers/clarity"]]]),
    rubricNames: new Map([["rag-answers/answer-relevance", "Answer relevance"]])
  }

  it("labels may name a criterion by rubric id, last segment or display name; spellings merge", async () => {
    const labels = labelsOf(
      grades({
        "Answer relevance": [["1", "", 3], ["2", "", 2], ["3", "", 0]],
        groundedness: [["1", "", 2]],
        "rag-answers/groundedness": [["2", "", 1]]
      }),
      "rubric"
    )
    const result = await okRun(judge, labels)
    // Merging spellings leaves the labels read from the file as they were.
    expect([...labels.grades.get("groundedness")!.get("1")!.keys()]).toEqual([""])
    expect(labels.grades.get("groundedness")!.has("2")).toBe(false)
    expect(result.criteria.map((c) => [c.criterion, c.pairs, c.labelNames])).toEqual([
      ["rag-answers/answer-relevance", 3, ["Answer relevance"]],
      ["rag-answers/groundedness", 2, ["groundedness", "rag-answers/groundedness"]]
    ])
    expect(result.unlabelledCriteria).toEqual([{ criterion: "rag-answers/clarity", judgments: 1 }])
    expect(result.queryRanking).toBeNull()
    // answer-relevance: human (3, 2, 0), judge (3, 1, 0): p_o = 2/3; p_e = Σ r_g c_g / 9 over grades 0…3 = (1 + 0 + 0 + 1)/9 → κ = (4/9)/(7/9).
    expect(result.criteria[0]!.cohenKappa.value).toBeCloseTo(4 / 7, 12)
  })

  it("a label criterion that matches nothing is reported, not dropped", async () => {
    const result = await okRun(judge, labelsOf(grades({ tone: [["1", "", 2]] }), "rubric"))
    const tone = result.criteria.find((c) => c.criterion === "tone")!
    expect(tone.pairs).toBe(0)
    expect(tone.labelsWithoutJudgment.count).toBe(1)
    expect(tone.note).toMatch(/no judged criterion is named "tone"/)
  })

  it("the same label under two spellings is an InputError naming the line", async () => {
    const result = await run(
      judge,
      labelsOf(grades({ groundedness: [["1", "", 2]], Groundedness: [["1", "", 1]] }), "rubric")
    )
    expect(Either.isLeft(result) && result.left._tag).toBe("InputError")
    expect(Either.isLeft(result) && result.left.message).toMatch(
      /human\.csv:2: duplicate label for id "1", criterion "rag-answers\/groundedness"/
    )
  })

  it("an ambiguous label name is a UsageError", async () => {
    const twoClarities: JudgeGrades = {
      ...judge,
      grades: grades({ "a/clarity": [["1", "", 1]], "b/clarity": [["1", "", 1]] }),
      rubrics: new Map()
    }
    const result = await run(twoClarities, labelsOf(grades({ clarity: [["1", "", 1]] }), "rubric"))
    expect(Either.isLeft(result) && result.left.message).toMatch(
      /matches several judged criteria: a\/clarity, b\/clarity/
    )
  })

  it("labels of the wrong kind are a UsageError saying what to give", async () => {
    const wrong = await run(judge, labelsOf(grades({ relevance: [["q1", "a", 1]] })))
    expect(Either.isLeft(wrong) && wrong.left._tag).toBe("UsageError")
    expect(Either.isLeft(wrong) && wrong.left.message).toMatch(/CSV \/ JSONL of id, criterion, grade/)
    const wrong2 = await run(
      qrelsJudge(grades({ relevance: [["q1", "a", 1]] })),
      labelsOf(grades({ clarity: [["1", "", 1]] }), "rubric")
    )
    expect(Either.isLeft(wrong2) && wrong2.left.message).toMatch(/must be TREC qrels/)
  })

  it("default binary threshold: 4 for answer-synthesis (its pass rule), 2 otherwise", () => {
    expect(defaultRelevantAt("answer-synthesis")).toBe(4)
    expect(defaultRelevantAt("rag-answers")).toBe(2)
    expect(defaultRelevantAt(undefined)).toBe(2)
  })
})

describe("system rankings with --runs", () => {
  const systems = async () => {
    const text = (docs: ReadonlyArray<string>, tag: string) =>
      docs.map((d, i) => `q1 Q0 ${d} ${i + 1} ${10 - i} ${tag}\n`).join("") + `q9 Q0 z 1 1 ${tag}\n`
    const parse = (docs: ReadonlyArray<string>, tag: string): Promise<SystemRun> =>
      Effect.runPromise(parseRun(text(docs, tag), `${tag}.run`)).then((r) => ({ file: `${tag}.run`, run: r }))
    return Promise.all([
      parse(["d1", "d3", "d2"], "S1"),
      parse(["d2", "d3", "d1"], "S2"),
      parse(["d3", "d1", "d2"], "S3")
    ])
  }

  it("τ-b between the systems' NDCG@10 under human and judge grades, hand-computed", async () => {
    // Humans: d1 3, d2 0, d3 1 (IDCG = 3 + 1/log2 3). Judge: d1 3, d2 1, d3 0 (same IDCG), and q9 only judged.
    // Humans:  S1 (3,1,0) → 1;  S2 (0,1,3) → (1/log2 3 + 3/2)/IDCG ≈ 0.587;  S3 (1,3,0) → (1 + 3/log2 3)/IDCG ≈ 0.797.
    // Judge:   S1 (3,0,1) → 3.5/IDCG ≈ 0.964;  S2 (1,0,3) → 2.5/IDCG ≈ 0.689;  S3 (0,3,1) → (3/log2 3 + 1/2)/IDCG ≈ 0.659.
    // Orders S1 > S3 > S2 and S1 > S2 > S3: two concordant pairs, one discordant → τ = 1/3.
    const judge = qrelsJudge(grades({ relevance: [["q1", "d1", 3], ["q1", "d2", 1], ["q1", "d3", 0], ["q9", "z", 3]] }))
    const labels = labelsOf(grades({ relevance: [["q1", "d1", 3], ["q1", "d2", 0], ["q1", "d3", 1]] }))
    const s = (await okRun(judge, labels, await systems())).systemRanking!
    const idcg = 3 + 1 / Math.log2(3)
    expect(s.queries).toBe(1)
    expect(s.systems.map((x) => x.name)).toEqual(["S1", "S2", "S3"])
    expect(s.systems.map((x) => x.human["ndcg@10"])).toEqual(
      [1, (1 / Math.log2(3) + 1.5) / idcg, (1 + 3 / Math.log2(3)) / idcg].map((v) => expect.closeTo(v, 12))
    )
    expect(s.systems.map((x) => x.judge["ndcg@10"])).toEqual(
      [3.5 / idcg, 2.5 / idcg, (3 / Math.log2(3) + 0.5) / idcg].map((v) => expect.closeTo(v, 12))
    )
    // q9 has no label: both qrels are restricted to q1, so the judge side averages one query too.
    expect(s.systems.every((x) => x.queriesHuman === 1 && x.queriesJudge === 1)).toBe(true)
    expect(s.correlation["ndcg@10"]!.kendallTauB.value).toBeCloseTo(1 / 3, 12)
    expect(s.correlation["ndcg@10"]!.n).toBe(3)
  })

  it("are refused for rubric judgments", async () => {
    const rubricJudge: JudgeGrades = { ...qrelsJudge(grades({ clarity: [["1", "", 1]] })), kind: "rubric" }
    const result = await run(rubricJudge, labelsOf(grades({ clarity: [["1", "", 1]] }), "rubric"), await systems())
    expect(Either.isLeft(result) && result.left.message).toMatch(/--runs .* needs retrieval judgments/)
  })
})
