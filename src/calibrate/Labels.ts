/**
 * TREC qrels for `rag-eval calibrate`: human labels (`--labels`) of retrieval judgments and a judge's
 * grades given as qrels (`--judge`). Every other labels file — the labels format the browser review
 * writes, and the flat CSV / JSON / JSONL forms — is read by `LabelFile.ts` into `Label`s.
 *
 * - TREC qrels (any extension but the ones below): `qid iter docid grade` per line, whitespace-
 *   separated, blank lines and `#` comments skipped — the rules of `parseQrels` in
 *   `src/metrics/trec.ts` (4 columns, integer grade, a repeated (qid, docid) is an error naming the
 *   first line). It is re-read here line by line as a stream instead of reusing `parseQrels`, which
 *   takes the whole file as one string and splits it into an array of lines: a million-label file
 *   would be held three times over. Negative grades mean "in the pool, unjudged" in trec_eval; they
 *   are not labels here and are counted (`negative`).
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError } from "../domain/Errors.js"
import { fileReadProblem, readLines } from "../io/Files.js"
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

/** Fails as `readTextFile` does (src/cli/Trec.ts) when the path is not a readable file. */
export const checkReadable = (file: string): Effect.Effect<void, InputError> =>
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
