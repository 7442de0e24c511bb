/**
 * Stages of the course-retrieval pipeline (SPEC §2.3): graded relevance (0–3) of every retrieved
 * course for the skill in the question's context, and PROXY ranking metrics over those grades.
 *
 * Input: a test set `{ version, name, description, cases: [{ id, question, skill, retrievedCourses:
 * [{ subjectCode, subjectName, cleanedLearningOutcomes[] }] }] }` (JSON, or JSONL of cases). A course
 * may carry the retriever's `score` (for the score threshold); a case may carry `latencyMs`.
 *
 * Per case (grades g_1..g_n in rank order, 0–3):
 *   totalCourses       = n
 *   averageRelevance   = Σ g_i / n
 *   highlyRelevantRate = |{ g_i = 3 }| / n      (a fraction, 0–1; reports print it as a percentage)
 *   irrelevantRate     = |{ g_i = 0 }| / n      (a fraction; lower is better)
 *   NDCG@k             = DCG@k / IDCG@k, linear gain: DCG@k = Σ_{i≤k} g_i / log2(i + 1), IDCG from the
 *                        judge's own grades sorted descending (proxy: no ground truth); IDCG = 0 → 0, flagged
 *   Precision@k        = |{ i ≤ k : g_i ≥ 2 }| / k    (k in the denominator, even for shorter lists)
 * With no courses: the three averages are unknown (null), NDCG 0 (flagged) and Precision 0. With a
 * failed judgment: the averages are over the judged courses and NDCG / Precision are unknown.
 * Averages over cases skip unknowns. These are proxy metrics: relevance is the judge's, and recall
 * cannot be measured without knowing every relevant course in the catalogue.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { EvalCase, Passage } from "../../domain/Case.js"
import { oneLine } from "../../domain/Markdown.js"
import * as Metric from "../../domain/Metric.js"
import type { MetricSpec } from "../../domain/Metric.js"
import type { AggregateStage, JudgeStage, LoadContext, LoadStage, ScoreStage } from "../../engine/Pipeline.js"
import { checkColumns } from "../../load/CaseMapping.js"
import type { InputDoc } from "../../load/InputFields.js"
import {
  decodeFields,
  expecting,
  idText,
  issueDecoder,
  nonBlank,
  OptionalId,
  optionalOrNull,
  requiredText
} from "../../load/RowSchema.js"
import { declare, measure, type RankingMetric } from "../../metrics/registry.js"
import { judgedRelevantAt } from "../../metrics/relevance.js"
import {
  type GradedRecord,
  gradedScore,
  type GradedSummary,
  gradedSummary,
  judgeHits,
  type QueryMetrics
} from "../graded-hits/GradedHits.js"
import {
  type HitList,
  type HitListDecoder,
  loadHitLists,
  measurementFieldDocs,
  measurementFields,
  measurementNames,
  retrievalInfo,
  Score
} from "../graded-hits/RetrievalInput.js"

export const defaultRubric = "course-retrieval/relevance"

/** Field names; `--columns` may rename `id`, `question` and `fragments` (the course list). */
export const courseFields = { id: "id", question: "question", skill: "skill", courses: "retrievedCourses" } as const

/** course-retrieval's input, for help (see `InputFields.ts`). */
export const courseInput: InputDoc = {
  format:
    "JSON { version, name, description, cases: [...] }, a JSON array or JSONL, one case each; --columns renames id, question and fragments (= retrievedCourses)",
  fields: [
    { name: "id", required: false, holds: "the case's id (without it, cases are numbered)" },
    { name: "question", required: true, holds: "the learner's question" },
    { name: "skill", required: true, holds: "the skill the courses are graded for" },
    {
      name: "retrievedCourses",
      required: true,
      holds:
        "the courses in rank order, { subjectCode, subjectName (one of the two), cleanedLearningOutcomes: [texts], score? } (not read with --retriever http|bm25)"
    },
    ...measurementFieldDocs("the retrieval")
  ],
  exampleExtension: ".jsonl",
  example: [
    `{"id":"c1","question":"Learn SQL?","skill":"SQL","retrievedCourses":[]}`,
    `{"question":"SQL?","skill":"SQL","retrievedCourses":[{"subjectCode":"DB1"}]}`
  ],
  minimal: `{"question":"SQL?","skill":"SQL","retrievedCourses":[{"subjectName":"Databases"}]}\n`
}

export interface CourseFields {
  readonly id: string
  readonly question: string
  readonly skill: string
  readonly courses: string
}

export const fieldsFor = (ctx: LoadContext | undefined): CourseFields => ({
  id: ctx?.columns?.id ?? courseFields.id,
  question: ctx?.columns?.question ?? courseFields.question,
  skill: ctx?.columns?.skill ?? courseFields.skill,
  courses: ctx?.columns?.fragments ?? courseFields.courses
})

const scalar = (u: unknown): string | undefined =>
  typeof u === "string" ? nonBlank(u) : typeof u === "number" && Number.isFinite(u) ? String(u) : undefined

/** A validated course (a type alias, so it is also a plain record of fields). */
export type Course = {
  readonly subjectCode?: string | undefined
  readonly subjectName?: string | undefined
  readonly cleanedLearningOutcomes: ReadonlyArray<string>
  readonly score?: number | undefined
}

/** `Name (CODE)`, or whichever of the two the course has. */
export const courseTitle = (course: Pick<Course, "subjectCode" | "subjectName">): string =>
  course.subjectName !== undefined && course.subjectCode !== undefined
    ? `${course.subjectName} (${course.subjectCode})`
    : course.subjectName ?? course.subjectCode ?? "(untitled course)"

/** A course as the judge sees it: name and code, then the cleaned learning outcomes one per line. */
export const renderCourse = (course: Course): string =>
  [
    courseTitle(course),
    course.cleanedLearningOutcomes.length === 0 ? "Learning outcomes: (none listed)" : "Learning outcomes:",
    ...course.cleanedLearningOutcomes.map((o) => `- ${o}`)
  ].join("\n")

/**
 * A retrieved course in the test set: a code and/or a name (text or a number), its cleaned learning
 * outcomes (texts; blank ones are dropped) and the retriever's score.
 */
export const CourseInput = Schema.Struct({
  subjectCode: OptionalId,
  subjectName: OptionalId,
  cleanedLearningOutcomes: optionalOrNull(Schema.Array(Schema.String).annotations(expecting("a list of texts"))),
  score: Score
}).pipe(
  Schema.filter((c) =>
    idText(c.subjectCode) !== undefined || idText(c.subjectName) !== undefined ||
    "the course has neither a subjectName nor a subjectCode"
  )
).annotations(expecting("a course (an object)"))

const CourseList = Schema.Array(CourseInput).annotations(expecting("a list of retrieved courses"))

/** A test-set case under the schema's names (`fieldsFor` maps them to the row's). */
const courseRow = (coursesRequired: boolean) =>
  Schema.Struct({
    id: OptionalId,
    question: requiredText("question"),
    skill: requiredText("skill"),
    courses: coursesRequired ? CourseList : optionalOrNull(CourseList),
    ...measurementFields
  })

/** The row schemas, with and without the course list required (a live retriever supplies it). */
export const CourseRow = { required: courseRow(true), optional: courseRow(false) } as const

const decodeRow = { required: issueDecoder(CourseRow.required), optional: issueDecoder(CourseRow.optional) } as const

/** The course as cases keep it: fields in a fixed order, outcomes trimmed, the score only when given. */
const toCourse = (c: typeof CourseInput.Type): Course => ({
  subjectCode: idText(c.subjectCode),
  subjectName: idText(c.subjectName),
  cleanedLearningOutcomes: (c.cleanedLearningOutcomes ?? []).map((o) => o.trim()).filter((o) => o !== ""),
  ...(c.score === undefined || c.score === null ? {} : { score: c.score })
})

export interface CourseLoadOptions {
  /** The course list must be present (false when a live retriever supplies the hits). Default true. */
  readonly coursesRequired?: boolean | undefined
}

/** Decodes a test-set row into its hit list: one hit per course, its id the subject code (else name). */
export const courseDecoder = (fields: CourseFields, options: CourseLoadOptions = {}): HitListDecoder => {
  const decode = (options.coursesRequired ?? true) ? decodeRow.required : decodeRow.optional
  const names = {
    id: fields.id,
    question: fields.question,
    skill: fields.skill,
    courses: fields.courses,
    ...measurementNames
  }
  return (values) =>
    Either.map(decodeFields(decode, names, values), (row): HitList => ({
      id: idText(row.id),
      query: row.question,
      hits: (row.courses ?? []).map((input) => {
        const course = toCourse(input)
        return {
          id: course.subjectCode ?? course.subjectName,
          text: renderCourse(course),
          score: course.score,
          fields: course
        }
      }),
      retrieval: retrievalInfo(row.latencyMs, row.usage)
    }))
}

/** Load stage: a course-retrieval test set (JSON with `cases`, a JSON array, or JSONL). */
export const loadTestSet = (options: CourseLoadOptions = {}): LoadStage =>
  loadHitLists({
    describe: `course-retrieval test set { version, name, description, cases: [{ ${
      Object.values(courseFields).join(", ")
    } }] }`,
    fields: fieldsFor,
    checkColumns: (ctx, columns, f) =>
      checkColumns(
        ctx.file,
        columns,
        (options.coursesRequired ?? true)
          ? { question: f.question, answer: f.skill, fragments: f.courses }
          : { question: f.question, answer: f.skill }
      ),
    decoder: (f) => courseDecoder(f, options)
  })

// ---------------------------------------------------------------------------------------------
// Judge

/** The skill of a case (validated by the loader); the question when the field is absent. */
export const skillOf = (c: EvalCase, field: string = courseFields.skill): string => {
  const skill = c.source[field]
  return typeof skill === "string" && skill.trim() !== "" ? skill.trim() : c.question
}

/** The query a live retriever is sent for a case: its skill. */
export const skillQuery = (c: EvalCase): string => skillOf(c)

/** Variables of the relevance rubric: `question`, `skill`, and `course` per hit. */
/** The listwise version of the course judge (`--listwise`). */
export const listwiseRubric = "course-retrieval/relevance-listwise"

/** One judgment per course; with `listwise` (a listwise rubric id) a case's courses in one call. */
export const judgeCourses = (
  rubric: string = defaultRubric,
  options: { readonly listwise?: string | undefined } = {}
): JudgeStage =>
  judgeHits({
    rubric,
    hitVar: "course",
    caseVars: (c) => ({ question: c.question, skill: skillOf(c) }),
    listwise: options.listwise === undefined ? undefined : { rubric: options.listwise }
  })

/** One-line label of a course hit: `Name (CODE)`, else the start of its text. */
export const courseLabel = (p: Passage): string => {
  const f = p.fields ?? {}
  const code = scalar(f.subjectCode)
  const name = scalar(f.subjectName)
  if (code !== undefined || name !== undefined) return courseTitle({ subjectCode: code, subjectName: name })
  return oneLine(p.text, 80)
}

// ---------------------------------------------------------------------------------------------
// Score and aggregate

/**
 * The ranking metrics of the SPEC §2.3 per-case metrics: the registry computes them
 * (`metrics/registry.ts`, linear gain, relevant ⇔ grade ≥ `judgedRelevantAt`) and gives their range
 * and direction. The course pipeline's files have always called precision `precision@k` (the
 * registry's canonical name is `p@k`).
 */
export const courseRanking = {
  ndcg5: { name: "ndcg@5", kind: "ndcg", k: 5, gain: "linear" },
  ndcg10: { name: "ndcg@10", kind: "ndcg", k: 10, gain: "linear" },
  precision5: { name: "precision@5", kind: "precision", k: 5 },
  precision10: { name: "precision@10", kind: "precision", k: 10 }
} as const satisfies Readonly<Record<string, RankingMetric>>

/** The SPEC §2.3 per-case metrics, in report order. */
export const courseMetricSpecs: ReadonlyArray<MetricSpec> = [
  Metric.count("totalCourses", "courses retrieved", "none"),
  Metric.score("averageRelevance", "mean grade of the courses (0–3)", 0, 3),
  Metric.fraction("highlyRelevantRate", "share of courses graded 3 (highly relevant)"),
  Metric.fraction("irrelevantRate", "share of courses graded 0 (irrelevant)", "lower"),
  declare(courseRanking.ndcg5, "NDCG@5, linear gain, ideal = the judge's grades sorted (proxy)"),
  declare(courseRanking.ndcg10, "NDCG@10, linear gain, ideal = the judge's grades sorted (proxy)"),
  declare(courseRanking.precision5, "courses graded ≥ 2 in the top 5, / 5"),
  declare(courseRanking.precision10, "courses graded ≥ 2 in the top 10, / 10")
]

/** The SPEC §2.3 per-case metrics (see the module comment). */
export const courseMetrics: QueryMetrics = (grades) => {
  const known = grades.filter((g): g is number => g !== null)
  const n = known.length
  const share = (pred: (g: number) => boolean) => (n === 0 ? null : known.filter(pred).length / n)
  const complete = known.length === grades.length
  const flagged: Array<string> = []
  const value = (metric: RankingMetric) => {
    if (!complete) return null
    const result = measure(metric, { grades: known }, { threshold: judgedRelevantAt })
    if (result.flagged) flagged.push(metric.name)
    return result.value
  }
  return {
    values: {
      totalCourses: grades.length,
      averageRelevance: n === 0 ? null : known.reduce((s, g) => s + g, 0) / n,
      highlyRelevantRate: share((g) => g === 3),
      irrelevantRate: share((g) => g === 0),
      [courseRanking.ndcg5.name]: value(courseRanking.ndcg5),
      [courseRanking.ndcg10.name]: value(courseRanking.ndcg10),
      [courseRanking.precision5.name]: value(courseRanking.precision5),
      [courseRanking.precision10.name]: value(courseRanking.precision10)
    },
    flagged
  }
}

export const courseScore = (): ScoreStage<GradedRecord> =>
  gradedScore({
    metrics: courseMetrics,
    declared: courseMetricSpecs,
    rankBy: "ndcg@10",
    label: courseLabel,
    query: (c) => c.question,
    context: (c) => ({ skill: skillOf(c) })
  })

export const courseSummary = (): AggregateStage<GradedRecord, GradedSummary> =>
  gradedSummary({ metrics: courseMetricSpecs })

// ---------------------------------------------------------------------------------------------
// Interpretation bands

export type Level = "Excellent" | "Good" | "Fair" | "Poor"

export interface Band {
  readonly level: Level
  /** The one-line verdict shown with the value. */
  readonly verdict: string
}

/** NDCG@10: ≥ 0.9 Excellent, ≥ 0.7 Good, ≥ 0.5 Fair, else Poor. */
export const ndcgBand = (x: number): Band =>
  x >= 0.9
    ? { level: "Excellent", verdict: "Near-perfect ranking" }
    : x >= 0.7
    ? { level: "Good", verdict: "Strong ranking quality" }
    : x >= 0.5
    ? { level: "Fair", verdict: "Acceptable, room for improvement" }
    : { level: "Poor", verdict: "Needs significant work" }

/** Precision@10: ≥ 0.8 Excellent, ≥ 0.6 Good, ≥ 0.4 Fair, else Poor. */
export const precisionBand = (x: number): Band =>
  x >= 0.8
    ? { level: "Excellent", verdict: "80% of top 10 are relevant" }
    : x >= 0.6
    ? { level: "Good", verdict: "Most top results are relevant" }
    : x >= 0.4
    ? { level: "Fair", verdict: "Mixed relevance in top results" }
    : { level: "Poor", verdict: "Few top results are relevant" }
