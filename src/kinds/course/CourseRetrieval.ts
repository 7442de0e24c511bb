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
 *   highlyRelevantRate = 100 · |{ g_i = 3 }| / n      (percent)
 *   irrelevantRate     = 100 · |{ g_i = 0 }| / n      (percent)
 *   NDCG@k             = DCG@k / IDCG@k, linear gain: DCG@k = Σ_{i≤k} g_i / log2(i + 1), IDCG from the
 *                        judge's own grades sorted descending (proxy: no ground truth); IDCG = 0 → 0, flagged
 *   Precision@k        = |{ i ≤ k : g_i ≥ 2 }| / k    (k in the denominator, even for shorter lists)
 * With no courses: the three averages are unknown (null), NDCG 0 (flagged) and Precision 0. With a
 * failed judgment: the averages are over the judged courses and NDCG / Precision are unknown.
 * Averages over cases skip unknowns. These are proxy metrics: relevance is the judge's, and recall
 * cannot be measured without knowing every relevant course in the catalogue.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import type { EvalCase, Passage } from "../../domain/Case.js"
import { InputError } from "../../domain/Errors.js"
import { checkColumns } from "../../load/CaseMapping.js"
import { describeJson } from "../../load/Json.js"
import { readRows, type Row } from "../../load/Rows.js"
import type { InputDoc } from "../../load/InputFields.js"
import { ndcg } from "../../metrics/ndcg.js"
import { precision } from "../../metrics/precision.js"
import { uniqueIds } from "../../retrieval/Params.js"
import { gradedScore, type GradedRecord, gradedSummary, type GradedSummary, judgeHits, type QueryMetrics } from "../graded-hits/GradedHits.js"
import type { AggregateStage, JudgeStage, LoadContext, LoadStage, ScoreStage } from "../../engine/Pipeline.js"
import { failer, readId, readMeasurements, readScore, readText } from "../graded-hits/RetrievalInput.js"

export const defaultRubric = "course-retrieval/relevance"

/** Field names; `--columns` may rename `id`, `question` and `fragments` (the course list). */
export const courseFields = { id: "id", question: "question", skill: "skill", courses: "retrievedCourses" } as const

/** course-retrieval's input, for help (see `InputFields.ts`). */
export const courseInput: InputDoc = {
  format: "JSON { version, name, description, cases: [...] }, a JSON array or JSONL, one case each; --columns renames id, question and fragments (= retrievedCourses)",
  fields: [
    { name: "id", required: false, holds: "the case's id (without it, cases are numbered)" },
    { name: "question", required: true, holds: "the learner's question" },
    { name: "skill", required: true, holds: "the skill the courses are graded for" },
    { name: "retrievedCourses", required: true, holds: "the courses in rank order, { subjectCode, subjectName (one of the two), cleanedLearningOutcomes: [texts], score? } (not read with --retriever http|bm25)" },
    { name: "latencyMs", required: false, holds: "the retrieval's time in ms, or { span: ms }" },
    { name: "usage", required: false, holds: "{ inputTokens, outputTokens } the retrieval spent" }
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

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

const scalar = (u: unknown): string | undefined =>
  typeof u === "string" ? (u.trim() === "" ? undefined : u.trim()) : typeof u === "number" && Number.isFinite(u) ? String(u) : undefined

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

/** Validates one retrieved course (1-based `index` for messages). */
export const readCourse = (value: unknown, index: number, field: string, fail: (field: string, problem: string) => InputError): Either.Either<Course, InputError> => {
  if (!isObject(value)) return Either.left(fail(field, `course ${index} is ${describeJson(value)}, expected an object`))
  const code = scalar(value.subjectCode)
  const name = scalar(value.subjectName)
  if (code === undefined && name === undefined) return Either.left(fail(field, `course ${index} has neither a subjectName nor a subjectCode`))
  const outcomes = value.cleanedLearningOutcomes
  if (outcomes !== undefined && outcomes !== null && !Array.isArray(outcomes)) {
    return Either.left(fail(field, `course ${index}: cleanedLearningOutcomes must be a list of texts, found ${describeJson(outcomes)}`))
  }
  const list: Array<string> = []
  for (const o of (outcomes as ReadonlyArray<unknown> | null | undefined) ?? []) {
    if (typeof o !== "string") return Either.left(fail(field, `course ${index}: a learning outcome is ${describeJson(o)}, expected text`))
    if (o.trim() !== "") list.push(o.trim())
  }
  const score = readScore(value.score, field, (f, p) => fail(f, `course ${index}: ${p}`))
  if (Either.isLeft(score)) return Either.left(score.left)
  return Either.right({ subjectCode: code, subjectName: name, cleanedLearningOutcomes: list, ...(score.right === undefined ? {} : { score: score.right }) })
}

export interface CourseLoadOptions {
  /** The course list must be present (false when a live retriever supplies the hits). Default true. */
  readonly coursesRequired?: boolean | undefined
}

/** The case for one test-set row. */
export const toCourseCase = (row: Row, ordinal: number, file: string, fields: CourseFields, options: CourseLoadOptions = {}): Effect.Effect<EvalCase, InputError> =>
  Effect.suspend(() => {
    const fail = failer(file, row)
    const v = row.values
    const id = readId(v[fields.id], fields.id, fail)
    if (Either.isLeft(id)) return Effect.fail(id.left)
    const question = readText(v[fields.question], fields.question, fail)
    if (Either.isLeft(question)) return Effect.fail(question.left)
    const skill = readText(v[fields.skill], fields.skill, fail)
    if (Either.isLeft(skill)) return Effect.fail(skill.left)
    const rawCourses = v[fields.courses]
    const required = options.coursesRequired ?? true
    if (!Array.isArray(rawCourses) && (required || (rawCourses !== undefined && rawCourses !== null))) {
      return Effect.fail(fail(fields.courses, `expected a list of retrieved courses, found ${rawCourses === undefined ? "nothing" : describeJson(rawCourses)}`))
    }
    const courses: Array<Course> = []
    for (const [i, raw] of ((rawCourses as ReadonlyArray<unknown> | undefined) ?? []).entries()) {
      const course = readCourse(raw, i + 1, fields.courses, fail)
      if (Either.isLeft(course)) return Effect.fail(course.left)
      courses.push(course.right)
    }
    const measurements = readMeasurements(v, fail)
    if (Either.isLeft(measurements)) return Effect.fail(measurements.left)
    const ids = uniqueIds(courses.map((c) => c.subjectCode ?? c.subjectName))
    return Effect.succeed<EvalCase>({
      id: id.right ?? String(ordinal + 1),
      ordinal,
      line: row.line,
      question: question.right,
      passages: courses.map((course, i): Passage => ({
        id: ids[i]!,
        rank: i + 1,
        text: renderCourse(course),
        ...(course.score === undefined ? {} : { score: course.score }),
        fields: course
      })),
      source: v,
      ...(measurements.right === undefined ? {} : { retrieval: measurements.right })
    })
  })

/** Load stage: a course-retrieval test set (JSON with `cases`, a JSON array, or JSONL). */
export const loadTestSet = (options: CourseLoadOptions = {}): LoadStage => ({
  describe: `course-retrieval test set { version, name, description, cases: [{ ${Object.values(courseFields).join(", ")} }] }`,
  checkColumns: (ctx, columns) => {
    const f = fieldsFor(ctx)
    return checkColumns(ctx.file, columns, (options.coursesRequired ?? true)
      ? { question: f.question, answer: f.skill, fragments: f.courses }
      : { question: f.question, answer: f.skill })
  },
  cases: (ctx) => {
    const f = fieldsFor(ctx)
    let ordinal = 0
    return readRows(ctx.file).pipe(Stream.mapEffect((row) => toCourseCase(row, ordinal++, ctx.file, f, options)))
  }
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
export const judgeCourses = (rubric: string = defaultRubric, options: { readonly listwise?: string | undefined } = {}): JudgeStage =>
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
  const one = p.text.replace(/\s+/g, " ").trim()
  return one.length > 80 ? `${one.slice(0, 79)}…` : one
}

// ---------------------------------------------------------------------------------------------
// Score and aggregate

export const courseMetricNames = [
  "totalCourses",
  "averageRelevance",
  "highlyRelevantRate",
  "irrelevantRate",
  "ndcg@5",
  "ndcg@10",
  "precision@5",
  "precision@10"
] as const

/** Relevant ⇔ grade ≥ 2 (fairly or highly relevant). */
export const RELEVANT_AT = 2

/** The SPEC §2.3 per-case metrics (see the module comment). */
export const courseMetrics: QueryMetrics = (grades) => {
  const known = grades.filter((g): g is number => g !== null)
  const n = known.length
  const share = (pred: (g: number) => boolean) => (n === 0 ? null : (100 * known.filter(pred).length) / n)
  const complete = known.length === grades.length
  const flagged: Array<string> = []
  const cut = (k: number) => {
    if (!complete) return { ndcg: null, precision: null }
    const result = ndcg(known, { k, gain: "linear" })
    if (result.flagged) flagged.push(`ndcg@${k}`)
    return { ndcg: result.value, precision: precision(known, { k, threshold: RELEVANT_AT }) }
  }
  const at5 = cut(5)
  const at10 = cut(10)
  return {
    values: {
      totalCourses: grades.length,
      averageRelevance: n === 0 ? null : known.reduce((s, g) => s + g, 0) / n,
      highlyRelevantRate: share((g) => g === 3),
      irrelevantRate: share((g) => g === 0),
      "ndcg@5": at5.ndcg,
      "ndcg@10": at10.ndcg,
      "precision@5": at5.precision,
      "precision@10": at10.precision
    },
    flagged
  }
}

export const courseScore = (): ScoreStage<GradedRecord> =>
  gradedScore({ metrics: courseMetrics, label: courseLabel, query: (c) => c.question, context: (c) => ({ skill: skillOf(c) }) })

export const courseSummary = (): AggregateStage<GradedRecord, GradedSummary> =>
  gradedSummary({ metrics: courseMetricNames, key: "ndcg@10" })

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
