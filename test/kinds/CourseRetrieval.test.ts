/**
 * The course-retrieval stages on hand-made data: loading and validating the test set, the judge's
 * tasks, the per-case metrics (hand-computed), unknowns, the interpretation bands, and the summary.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import type { EvalCase } from "../../src/domain/Case.js"
import type { Judgment } from "../../src/domain/Judgment.js"
import { summarize } from "../../src/engine/CaseFold.js"
import { headlineValues } from "../../src/engine/Headline.js"
import type { TaskSpec } from "../../src/engine/Pipeline.js"
import {
  courseMetrics,
  courseScore,
  courseSummary,
  judgeCourses,
  loadTestSet,
  ndcgBand,
  precisionBand,
  renderCourse
} from "../../src/kinds/course/CourseRetrieval.js"
import type { GradedRecord } from "../../src/kinds/graded-hits/GradedHits.js"
import type { GradedRunSummary } from "../../src/kinds/graded-hits/RetrievalReport.js"
import { tokenSummary } from "../../src/kinds/graded-hits/RetrievalStats.js"
import { judgment, loadPrompt, runInfo, writeInput } from "../support/Retrieval.js"

const rubric = loadPrompt("course-retrieval/relevance")

const course = (code: string, name: string, ...outcomes: Array<string>) => ({
  subjectCode: code,
  subjectName: name,
  cleanedLearningOutcomes: outcomes
})

const testSet = (cases: ReadonlyArray<unknown>) => JSON.stringify({ version: 1, name: "t", description: "d", cases })

const load = (file: string, options?: Parameters<typeof loadTestSet>[0]) =>
  Stream.runCollect(loadTestSet(options).cases({ file })).pipe(Effect.map(Chunk.toReadonlyArray))

describe("course-retrieval test set", () => {
  it.effect("each course becomes a passage: name (code) and its cleaned learning outcomes; ids are subject codes", () =>
    Effect.gen(function*() {
      const file = writeInput(
        "json",
        testSet([
          {
            id: "v1-001",
            question: "How do I learn SQL?",
            skill: "SQL",
            retrievedCourses: [course("CS220", "Database Systems", "Write SQL queries", " "), {
              subjectName: "Data Basics",
              score: 0.4
            }, course("CS220", "Database Systems (copy)")]
          }
        ])
      )
      const [c] = yield* load(file)
      expect(c!.id).toBe("v1-001")
      expect(c!.passages.map((p) => [p.id, p.rank])).toEqual([["CS220", 1], ["Data Basics", 2], ["CS220~2", 3]])
      expect(c!.passages[0]!.text).toBe("Database Systems (CS220)\nLearning outcomes:\n- Write SQL queries")
      expect(c!.passages[1]!.text).toBe("Data Basics\nLearning outcomes: (none listed)")
      expect(c!.passages[1]!.score).toBe(0.4)
    }))

  it.effect("bad input names the line and the field", () =>
    Effect.gen(function*() {
      const noSkill = writeInput("jsonl", JSON.stringify({ question: "q?", retrievedCourses: [] }))
      expect(yield* Effect.flip(load(noSkill))).toMatchObject({ _tag: "InputError", line: 1, field: "skill" })
      const notList = writeInput("jsonl", JSON.stringify({ question: "q?", skill: "s", retrievedCourses: "CS101" }))
      expect(yield* Effect.flip(load(notList))).toMatchObject({
        field: "retrievedCourses",
        problem: "expected a list of retrieved courses, found a string"
      })
      const nameless = writeInput(
        "jsonl",
        JSON.stringify({ question: "q?", skill: "s", retrievedCourses: [{ cleanedLearningOutcomes: ["x"] }] })
      )
      expect(yield* Effect.flip(load(nameless))).toMatchObject({
        field: "retrievedCourses[0]",
        problem: "the course has neither a subjectName nor a subjectCode"
      })
      const badOutcome = writeInput(
        "jsonl",
        JSON.stringify({
          question: "q?",
          skill: "s",
          retrievedCourses: [{ subjectCode: "A", cleanedLearningOutcomes: [3] }]
        })
      )
      expect(yield* Effect.flip(load(badOutcome))).toMatchObject({
        field: "retrievedCourses[0].cleanedLearningOutcomes[0]",
        problem: "expected text, found a number"
      })
    }))

  it.effect("with a live retriever the course list may be absent", () =>
    Effect.gen(function*() {
      const file = writeInput("jsonl", JSON.stringify({ id: 7, question: "q?", skill: "s" }))
      const [c] = yield* load(file, { coursesRequired: false })
      expect(c).toMatchObject({ id: "7", passages: [] })
    }))

  it("renders a course without outcomes", () => {
    expect(renderCourse({ subjectCode: "X1", cleanedLearningOutcomes: [] })).toBe(
      "X1\nLearning outcomes: (none listed)"
    )
  })
})

const aCase = (grades: ReadonlyArray<unknown>): EvalCase => ({
  id: "c1",
  ordinal: 0,
  line: 3,
  question: "How do I learn SQL for data analysis?",
  passages: grades.map((_, i) => ({
    id: `K${i + 1}`,
    rank: i + 1,
    text: `Course ${i + 1}\nLearning outcomes:\n- x`,
    fields: { subjectCode: `K${i + 1}`, subjectName: `Course ${i + 1}` }
  })),
  source: { skill: "SQL" }
})

describe("judge stage", () => {
  it("one task per course, target hit:<code>, with question, skill and the course text", () => {
    const tasks = judgeCourses().tasks(aCase([0, 0]))
    // The case's course texts, one array shared by its tasks: the heuristic judge's pool (not a variable).
    const pool = ["Course 1\nLearning outcomes:\n- x", "Course 2\nLearning outcomes:\n- x"]
    expect(tasks).toEqual([
      {
        rubric: "course-retrieval/relevance",
        target: "hit:K1",
        vars: {
          question: "How do I learn SQL for data analysis?",
          skill: "SQL",
          course: "Course 1\nLearning outcomes:\n- x"
        },
        pool
      },
      {
        rubric: "course-retrieval/relevance",
        target: "hit:K2",
        vars: {
          question: "How do I learn SQL for data analysis?",
          skill: "SQL",
          course: "Course 2\nLearning outcomes:\n- x"
        },
        pool
      }
    ])
    expect((tasks[0] as TaskSpec).pool).toBe((tasks[1] as TaskSpec).pool)
  })
})

describe("per-case metrics (hand-computed)", () => {
  it("grades [3, 0, 2, 1]", () => {
    const { values, flagged } = courseMetrics([3, 0, 2, 1])
    // DCG = 3/log2 2 + 0 + 2/log2 4 + 1/log2 5 = 4.4306766; IDCG ([3,2,1,0]) = 3 + 2/log2 3 + 1/2 = 4.7618595
    const ndcg = (3 + 2 / 2 + 1 / Math.log2(5)) / (3 + 2 / Math.log2(3) + 1 / 2)
    expect(ndcg).toBeCloseTo(0.93045092, 8)
    expect(values.totalCourses).toBe(4)
    expect(values.averageRelevance).toBe(1.5)
    expect(values.highlyRelevantRate).toBe(0.25)
    expect(values.irrelevantRate).toBe(0.25)
    expect(values["ndcg@5"]).toBeCloseTo(ndcg, 12)
    expect(values["ndcg@10"]).toBeCloseTo(ndcg, 12)
    expect(values["precision@5"]).toBe(2 / 5) // k in the denominator, not the 4 courses
    expect(values["precision@10"]).toBe(2 / 10)
    expect(flagged).toEqual([])
  })

  it("cut-offs: NDCG@5 only sees the top 5; ideal from all grades", () => {
    const grades = [0, 0, 0, 0, 0, 3, 3]
    const { values } = courseMetrics(grades)
    expect(values["ndcg@5"]).toBe(0)
    // @10: DCG = 3/log2 7 + 3/log2 8; IDCG = 3 + 3/log2 3
    expect(values["ndcg@10"]).toBeCloseTo((3 / Math.log2(7) + 3 / 3) / (3 + 3 / Math.log2(3)), 12)
    expect(values["precision@10"]).toBe(0.2)
  })

  it("every course graded 0: NDCG 0, flagged", () => {
    const { values, flagged } = courseMetrics([0, 0])
    expect(values["ndcg@10"]).toBe(0)
    expect(flagged).toEqual(["ndcg@5", "ndcg@10"])
    expect(values.irrelevantRate).toBe(1)
  })

  it("no courses: averages unknown, NDCG 0 (flagged), precision 0", () => {
    const { values, flagged } = courseMetrics([])
    expect(values).toEqual({
      totalCourses: 0,
      averageRelevance: null,
      highlyRelevantRate: null,
      irrelevantRate: null,
      "ndcg@5": 0,
      "ndcg@10": 0,
      "precision@5": 0,
      "precision@10": 0
    })
    expect(flagged).toEqual(["ndcg@5", "ndcg@10"])
  })

  it("a failed judgment: averages over the judged courses, ranking metrics unknown", () => {
    const { values } = courseMetrics([3, null, 1])
    expect(values).toMatchObject({
      totalCourses: 3,
      averageRelevance: 2,
      highlyRelevantRate: 0.5,
      irrelevantRate: 0,
      "ndcg@10": null,
      "precision@10": null
    })
  })
})

describe("interpretation bands", () => {
  it("NDCG@10 at each boundary", () => {
    expect(ndcgBand(0.9)).toEqual({ level: "Excellent", verdict: "Near-perfect ranking" })
    expect(ndcgBand(0.8999)).toEqual({ level: "Good", verdict: "Strong ranking quality" })
    expect(ndcgBand(0.7)).toEqual({ level: "Good", verdict: "Strong ranking quality" })
    expect(ndcgBand(0.5)).toEqual({ level: "Fair", verdict: "Acceptable, room for improvement" })
    expect(ndcgBand(0.4999)).toEqual({ level: "Poor", verdict: "Needs significant work" })
    expect(ndcgBand(0)).toMatchObject({ level: "Poor" })
  })

  it("Precision@10 at each boundary", () => {
    expect(precisionBand(1)).toEqual({ level: "Excellent", verdict: "80% of top 10 are relevant" })
    expect(precisionBand(0.8)).toMatchObject({ level: "Excellent" })
    expect(precisionBand(0.7999)).toEqual({ level: "Good", verdict: "Most top results are relevant" })
    expect(precisionBand(0.6)).toMatchObject({ level: "Good" })
    expect(precisionBand(0.4)).toEqual({ level: "Fair", verdict: "Mixed relevance in top results" })
    expect(precisionBand(0.3999)).toEqual({ level: "Poor", verdict: "Few top results are relevant" })
  })
})

describe("score and summary", () => {
  const score = courseScore()
  const summary = courseSummary()
  const info = runInfo([rubric])
  const pipeline = { score, aggregate: summary }
  /** The records folded as a run folds them, with the judgments each was scored from. */
  const fold = (
    records: ReadonlyArray<GradedRecord>,
    judgments: ReadonlyMap<string, ReadonlyArray<Judgment>> = new Map()
  ): GradedRunSummary => summarize(pipeline, info, records, { judgments: (r) => judgments.get(r.caseId) ?? [] })

  it("a record holds each course's grade and reason in rank order, tokens and the judge's time", () => {
    const c = aCase([3, 0])
    const r = score.score(c, [judgment("c1", "K2", 0), judgment("c1", "K1", 3)], 1, new Map())
    expect(r.hits.map((h) => [h.rank, h.id, h.label, h.grade, h.reason])).toEqual([[
      1,
      "K1",
      "Course 1 (K1)",
      3,
      "grade 3"
    ], [2, "K2", "Course 2 (K2)", 0, "grade 0"]])
    expect(r.context).toEqual({ skill: "SQL" })
    expect(r.tokens).toEqual({ input: 200, output: 40 })
    expect(r.latency).toEqual({ judge: 20 })
    expect(r.metrics).toMatchObject({ "ndcg@10": 1, "precision@5": 0.2 })
    expect(score.grades!(r)).toEqual({ caseId: "c1", grades: { "grade@1": 3, "grade@2": 0 } })
  })

  it("a failed retrieval: no metrics at all (unknown), left out of the means and listed", () => {
    const failed: EvalCase = {
      ...aCase([]),
      id: "c2",
      retrieval: {
        retriever: "http",
        status: "failed",
        error: { kind: "timeout", message: "no answer within 100 ms" },
        latencyMs: 100
      }
    }
    const ok = score.score(aCase([3, 0]), [judgment("c1", "K1", 3), judgment("c1", "K2", 0)], 1, new Map())
    const bad = score.score(failed, [], 1, new Map())
    expect(bad.metrics).toBeNull()
    const s = fold([ok, bad])
    expect(s.cases).toBe(2)
    expect(s.extra).toMatchObject({
      measured: 1,
      retrievalFailures: { count: 1, cases: [{ caseId: "c2", message: "no answer within 100 ms" }] }
    })
    expect(s.metrics["ndcg@10"]).toMatchObject({ n: 1, mean: 1 })
    expect(s.failed.map((r) => r.caseId)).toEqual(["c2"])
    expect(s.extra.latency.total).toMatchObject({ n: 1, mean: 100 })
  })

  it("summary: means over cases, grade distribution, flags, failures, worst cases, tokens per hit and per request", () => {
    const judged = new Map([
      ["c1", [judgment("c1", "K1", 3), judgment("c1", "K2", 0), judgment("c1", "K3", 2), judgment("c1", "K4", 1)]],
      ["c2", [judgment("c2", "K1", 0), judgment("c2", "K2", 0)]],
      ["c3", [judgment("c3", "K1", 2), judgment("c3", "K2", null)]]
    ])
    const c1 = score.score(aCase([3, 0, 2, 1]), judged.get("c1")!, 1, new Map())
    const c2 = score.score({ ...aCase([0, 0]), id: "c2" }, judged.get("c2")!, 1, new Map())
    const c3 = score.score({ ...aCase([2, 2]), id: "c3" }, judged.get("c3")!, 1, new Map())
    const s = fold([c1, c2, c3], judged)
    expect(s.cases).toBe(3)
    expect(s.extra.grades).toEqual({ "0": 3, "1": 1, "2": 2, "3": 1 })
    // averageRelevance: c1 1.5, c2 0, c3 2 (its judged course) → 3.5 / 3
    expect(s.metrics.averageRelevance!.mean).toBeCloseTo(3.5 / 3, 12)
    // NDCG@10 known for c1 (0.930…) and c2 (0, flagged); c3 unknown (failed judgment)
    expect(s.metrics["ndcg@10"]!.mean).toBeCloseTo(0.93045092 / 2, 7)
    expect(s.metrics["ndcg@10"]!.n).toBe(2)
    expect(s.extra.flagged["ndcg@10"]).toBe(1)
    expect(s.extra.casesWithFailedJudgments).toBe(1)
    expect(s.failures).toEqual([expect.objectContaining({ caseId: "c3", target: "hit:K2", raw: "not json" })])
    expect(s.failed.map((r) => r.caseId)).toEqual(["c3"])
    expect(s.lowest.map((l) => l.caseId)).toEqual(["c2", "c1"])
    expect(tokenSummary({ input: 800, output: 160 }, s.extra.judged)).toEqual({
      input: 800,
      output: 160,
      perJudgedHit: { input: 100, output: 20 },
      perRequest: { input: 800 / 3, output: 160 / 3 }
    })
    expect(headlineValues(pipeline, info, s)).toMatchObject({
      "ndcg@10": s.metrics["ndcg@10"]!.mean,
      failedJudgments: 0,
      retrievalFailures: 0
    })
  })
})
