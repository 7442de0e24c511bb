/**
 * Reading grade files for `rag-eval calibrate`: the human labels (`--labels`) and a judge's grades
 * given as qrels (`--judge`).
 *
 * - TREC qrels (any extension but the ones below): `qid iter docid grade` per line, whitespace-
 *   separated, blank lines and `#` comments skipped — the rules of `parseQrels` in
 *   `src/metrics/trec.ts` (4 columns, integer grade, a repeated (qid, docid) is an error naming the
 *   first line). It is re-read here line by line as a stream instead of reusing `parseQrels`, which
 *   takes the whole file as one string and splits it into an array of lines: a million-label file
 *   would be held three times over. Negative grades mean "in the pool, unjudged" in trec_eval; they
 *   are not labels here and are counted (`negative`).
 * - Rubric labels, `.csv`, `.json`, `.jsonl` / `.ndjson` (read by `src/load/Rows.ts`): one record
 *   per label with `id` (or `caseId`), `criterion` and `grade` (an integer; a CSV's text "2" is 2).
 *   The criterion may be a rubric id (`rag-answers/groundedness`), its last segment
 *   (`groundedness`) or the rubric's display name (`Groundedness`); it is matched to the run's
 *   criteria later (`Calibration.ts`). Items are the whole case (`""`).
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError } from "../domain/Errors.js"
import { fileReadProblem, readLines } from "../io/Files.js"
import { readRows } from "../load/Rows.js"
import { type CriterionGrades, type GradeKind, putGrade, relevanceCriterion } from "./Grades.js"

export type GradeFileFormat = "qrels" | "csv" | "json" | "jsonl"

export interface GradeFile {
  readonly file: string
  readonly format: GradeFileFormat
  readonly kind: GradeKind
  readonly grades: CriterionGrades
  /** Grades read (negative qrels grades excluded). */
  readonly count: number
  /** Qrels lines with a negative grade (trec_eval's "unjudged"), left out. */
  readonly negative: number
}

/** The format of a grade file, by extension: .csv, .json, .jsonl/.ndjson, anything else qrels. */
export const gradeFileFormat = (file: string): GradeFileFormat => {
  switch (Path.extname(file).toLowerCase()) {
    case ".csv":
      return "csv"
    case ".json":
      return "json"
    case ".jsonl":
    case ".ndjson":
      return "jsonl"
    default:
      return "qrels"
  }
}

/** Fails as `readTextFile` does (src/commands/Trec.ts) when the path is not a readable file. */
const checkReadable = (file: string): Effect.Effect<void, InputError> =>
  Effect.try({
    try: () => {
      const stat = fs.statSync(file)
      if (stat.isDirectory()) throw Object.assign(new Error("is a directory"), { code: "EISDIR" })
      fs.accessSync(file, fs.constants.R_OK)
    },
    catch: (error) => new InputError({ file, problem: fileReadProblem(error) })
  })

const integerPattern = /^[+-]?\d+$/

/** Reads TREC qrels as a stream of lines into criterion "relevance" (see the module comment). */
export const readQrelsFile = (file: string): Effect.Effect<GradeFile, InputError> =>
  Effect.gen(function*() {
    yield* checkReadable(file)
    const grades: CriterionGrades = new Map()
    let line = 0
    let count = 0
    const negativeLines = new Map<string, number>()
    yield* readLines(file).pipe(
      Stream.mapError((e) => new InputError({ file, problem: e.problem })),
      Stream.runForEachChunk((chunk) => {
        for (const raw of Chunk.toReadonlyArray(chunk)) {
          line++
          const trimmed = raw.trim()
          if (trimmed === "" || trimmed.startsWith("#")) continue
          const fields = trimmed.split(/\s+/)
          if (fields.length !== 4) {
            return Effect.fail(
              new InputError({
                file,
                line,
                problem: `expected 4 columns "qid iter docid grade", found ${fields.length}`
              })
            )
          }
          const [qid = "", , docid = "", gradeText = ""] = fields
          if (!integerPattern.test(gradeText)) {
            return Effect.fail(
              new InputError({ file, line, field: "grade", problem: `grade "${gradeText}" is not an integer` })
            )
          }
          const grade = Number(gradeText)
          // Negative grades are not labels, but a repeat of their (qid, docid) is still an error.
          const key = `${qid}\u0000${docid}`
          const previous = grades.get(relevanceCriterion)?.get(qid)?.get(docid)?.line ?? negativeLines.get(key)
          if (previous !== undefined) {
            return Effect.fail(
              new InputError({
                file,
                line,
                field: "docid",
                problem: `duplicate judgment for query "${qid}", doc "${docid}" (first on line ${previous})`
              })
            )
          }
          if (grade < 0) {
            negativeLines.set(key, line)
          } else {
            putGrade(grades, relevanceCriterion, qid, docid, { grade, line })
            count++
          }
        }
        return Effect.void
      })
    )
    const negative = negativeLines.size
    return { file, format: "qrels", kind: "retrieval", grades, count, negative } satisfies GradeFile
  })

const field = (
  values: Readonly<Record<string, unknown>>,
  names: ReadonlyArray<string>
): { readonly name: string; readonly value: unknown } | undefined => {
  for (const key of Object.keys(values)) {
    const lower = key.trim().toLowerCase()
    if (names.includes(lower)) return { name: key, value: values[key] }
  }
  return undefined
}

const text = (value: unknown): string | undefined =>
  typeof value === "string"
    ? (value.trim() === "" ? undefined : value.trim())
    : typeof value === "number" && Number.isFinite(value)
    ? String(value)
    : undefined

/** Reads rubric labels (`id, criterion, grade` records from CSV / JSON / JSONL); see the module comment. */
export const readRubricLabels = (
  file: string,
  format: Exclude<GradeFileFormat, "qrels">
): Effect.Effect<GradeFile, InputError> =>
  Effect.gen(function*() {
    yield* checkReadable(file)
    const grades: CriterionGrades = new Map()
    let count = 0
    yield* readRows(file).pipe(
      Stream.runForEach((row) =>
        Effect.gen(function*() {
          const fail = (problem: string, name?: string) =>
            new InputError({ file, line: row.line, problem, ...(name === undefined ? {} : { field: name }) })
          const id = field(row.values, ["id", "caseid"])
          const criterion = field(row.values, ["criterion"])
          const grade = field(row.values, ["grade"])
          if (id === undefined || criterion === undefined || grade === undefined) {
            const missing = [
              id === undefined ? "id" : "",
              criterion === undefined ? "criterion" : "",
              grade === undefined ? "grade" : ""
            ].filter((m) => m !== "")
            return yield* fail(
              `missing ${
                missing.join(", ")
              }: rubric labels need id, criterion and grade (for retrieval labels give TREC qrels "qid 0 docid grade")`
            )
          }
          const idText = text(id.value)
          if (idText === undefined) return yield* fail("id is empty or not a string / number", id.name)
          const criterionText = text(criterion.value)
          if (criterionText === undefined) return yield* fail("criterion is empty or not a string", criterion.name)
          const gradeText = typeof grade.value === "number"
            ? String(grade.value)
            : typeof grade.value === "string"
            ? grade.value.trim()
            : ""
          if (!integerPattern.test(gradeText)) {
            return yield* fail(`grade ${JSON.stringify(grade.value ?? null)} is not an integer`, grade.name)
          }
          const previous = putGrade(grades, criterionText, idText, "", { grade: Number(gradeText), line: row.line })
          if (previous !== undefined) {
            return yield* fail(
              `duplicate label for id "${idText}", criterion "${criterionText}" (first on line ${previous.line})`,
              id.name
            )
          }
          count++
        })
      )
    )
    return { file, format, kind: "rubric", grades, count, negative: 0 } satisfies GradeFile
  })

/** Reads a grade file of any supported format (by extension). */
export const readGradeFile = (file: string): Effect.Effect<GradeFile, InputError> => {
  const format = gradeFileFormat(file)
  return format === "qrels" ? readQrelsFile(file) : readRubricLabels(file, format)
}
