/**
 * The answer-correctness test set (SPEC §2.6): CSV, JSON or JSONL rows with `id`, `question`,
 * `answer` and at least one of `reference` (the gold answer), `contexts` (the passages the system
 * retrieved) and `nuggets` (facts a good answer states). `--columns` renames any of them
 * (`reference=gold_answer,contexts=retrieved`).
 *
 * - `contexts`: a list of texts (or of objects with `text` / `content`), or one text split like
 *   rag-answers' fragments ("1. …", "2. …" on their own lines, or one passage per line).
 * - `nuggets`: a list of texts or of `{ "text", "importance": "vital" | "okay" }`; in a CSV cell, a
 *   JSON list, or one nugget per line.
 * - A blank reference, an empty contexts list or an empty nuggets list count as not given (a CSV
 *   cell cannot be absent). A row with none of the three has nothing to check its answer against and
 *   is refused with its line, before anything is judged.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { isRecord } from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { EvalCase, Nugget, Passage } from "../../domain/Case.js"
import { InputError } from "../../domain/Errors.js"
import type { LoadContext, LoadStage } from "../../engine/Pipeline.js"
import { checkColumns } from "../../load/CaseMapping.js"
import { splitFragments, unescapeNewlines } from "../../load/Fragments.js"
import type { InputDoc } from "../../load/InputFields.js"
import { readRows, type Row } from "../../load/Rows.js"
import {
  decodeFields,
  expecting,
  idText,
  issueDecoder,
  nonBlank,
  OptionalId,
  optionalOrNull,
  requiredText,
  rowError
} from "../../load/RowSchema.js"

/** Default field names, by role; `--columns role=Name` renames (`contexts` is also `fragments`). */
export const correctnessFields = {
  id: "id",
  question: "question",
  answer: "answer",
  reference: "reference",
  contexts: "contexts",
  nuggets: "nuggets",
  /** The conversation before the question (`User: …` / `Assistant: …` lines), sent to a `--target` as `{{history}}`. */
  history: "history"
} as const

export type CorrectnessRole = keyof typeof correctnessFields

/** The field names in use for a run (defaults with `--columns` renames applied). */
export const fieldsFor = (ctx: LoadContext | undefined): Readonly<Record<CorrectnessRole, string>> => {
  const c = ctx?.columns ?? {}
  return {
    id: c["id"] ?? correctnessFields.id,
    question: c["question"] ?? correctnessFields.question,
    answer: c["answer"] ?? correctnessFields.answer,
    reference: c["reference"] ?? correctnessFields.reference,
    contexts: c["contexts"] ?? c["fragments"] ?? correctnessFields.contexts,
    nuggets: c["nuggets"] ?? correctnessFields.nuggets,
    history: c["history"] ?? correctnessFields.history
  }
}

const ContextItem = Schema.Union(
  Schema.String,
  Schema.Struct({ text: Schema.String }),
  Schema.Struct({ content: Schema.String })
).annotations(expecting("a passage: text, or an object with \"text\""))

const NuggetItem = Schema.Union(
  Schema.String,
  Schema.Struct({
    text: Schema.String,
    importance: optionalOrNull(Schema.Literal("vital", "okay").annotations(expecting("\"vital\" or \"okay\"")))
  })
).annotations(expecting("a nugget: text, or { \"text\", \"importance\": \"vital\" | \"okay\" }"))

/** A row under the schema's names (`fieldsFor` maps them to the row's). */
export const CorrectnessRow = Schema.Struct({
  id: OptionalId,
  question: requiredText("question", expecting("text", "the question is missing")),
  answer: Schema.String.annotations(expecting("text", "the answer is missing")),
  reference: optionalOrNull(Schema.String.annotations(expecting("text (the gold answer)"))),
  contexts: optionalOrNull(
    Schema.Union(Schema.String, Schema.Array(ContextItem)).annotations(expecting("a list of passages, or text"))
  ),
  nuggets: optionalOrNull(
    Schema.Union(Schema.String, Schema.Array(NuggetItem)).annotations(expecting("a list of nuggets, or text"))
  ),
  history: optionalOrNull(Schema.String.annotations(expecting("text (the conversation before the question)")))
})
type CorrectnessRow = typeof CorrectnessRow.Type

/** The same row when a target gives the answers (`--target`): the answer may be absent. */
export const CorrectnessRowGenerated = Schema.Struct({
  ...CorrectnessRow.fields,
  answer: Schema.optional(CorrectnessRow.fields.answer)
})

const decodeRow = issueDecoder(CorrectnessRow)
const decodeGenerated = issueDecoder(CorrectnessRowGenerated)

const passage = (text: string, i: number, fields?: Readonly<Record<string, unknown>>): Passage => ({
  id: String(i + 1),
  rank: i + 1,
  text,
  ...(fields === undefined ? {} : { fields })
})

const contextsOf = (value: CorrectnessRow["contexts"]): ReadonlyArray<Passage> => {
  if (value === undefined || value === null) return []
  if (typeof value === "string") return splitFragments(value).map((t, i) => passage(t, i))
  const out: Array<Passage> = []
  for (const item of value) {
    const text = (typeof item === "string" ? item : "text" in item ? item.text : item.content).trim()
    if (text !== "") out.push(passage(text, out.length, isRecord(item) ? item : undefined))
  }
  return out
}

/** A CSV cell's nuggets: a JSON list when it reads as one, else one per line. */
const nuggetText = (cell: string): ReadonlyArray<unknown> => {
  const trimmed = cell.trim()
  if (trimmed.startsWith("[")) {
    try {
      const parsed: unknown = JSON.parse(trimmed)
      if (Array.isArray(parsed)) return parsed
    } catch {
      // Not JSON: one nugget per line.
    }
  }
  return unescapeNewlines(cell).split(/\r\n|\r|\n/)
}

const decodeNuggetItem = issueDecoder(NuggetItem)

const nuggetsOf = (
  value: CorrectnessRow["nuggets"],
  field: string
): ReadonlyArray<Nugget> | { readonly path: ReadonlyArray<PropertyKey>; readonly problem: string } => {
  if (value === undefined || value === null) return []
  const items: ReadonlyArray<unknown> = typeof value === "string" ? nuggetText(value) : value
  const out: Array<Nugget> = []
  for (let i = 0; i < items.length; i++) {
    const decoded = decodeNuggetItem(items[i])
    if (Either.isLeft(decoded)) {
      return {
        path: [field, i],
        problem: "expected a nugget: text, or { \"text\", \"importance\": \"vital\" | \"okay\" }"
      }
    }
    const item = decoded.right
    const text = (typeof item === "string" ? item : item.text).trim()
    if (text === "") continue
    const importance = typeof item === "string" ? undefined : item.importance ?? undefined
    out.push(importance === undefined ? { text } : { text, importance })
  }
  return out
}

/** The case for a row; `ordinal` is its 0-based position (the id when the row has none). */
export const correctnessCase = (
  row: Row,
  ordinal: number,
  file: string,
  fields: Readonly<Record<CorrectnessRole, string>>,
  generated = false
): EvalCase | InputError => {
  const decoded = generated
    ? decodeFields(decodeGenerated, fields, row.values)
    : decodeFields(decodeRow, fields, row.values)
  if (Either.isLeft(decoded)) return rowError(file, row, decoded.left)
  const r = decoded.right
  const nuggets = nuggetsOf(r.nuggets, fields.nuggets)
  if (!Array.isArray(nuggets)) {
    return rowError(file, row, nuggets as { path: ReadonlyArray<PropertyKey>; problem: string })
  }
  const reference = nonBlank(r.reference)
  const passages = contextsOf(r.contexts)
  // With a target, its retrieved passages may be what the answer is checked against.
  if (reference === undefined && passages.length === 0 && nuggets.length === 0 && !generated) {
    return new InputError({
      file,
      line: row.line,
      field: fields.reference,
      problem:
        `nothing to check the answer against: give at least one of "${fields.reference}" (the gold answer), "${fields.contexts}" (the retrieved passages) or "${fields.nuggets}"`
    })
  }
  return {
    id: idText(r.id) ?? String(ordinal + 1),
    ordinal,
    line: row.line,
    question: r.question,
    answer: r.answer ?? "",
    ...(reference === undefined ? {} : { reference }),
    ...(nuggets.length === 0 ? {} : { nuggets: nuggets as ReadonlyArray<Nugget> }),
    ...(r.history === undefined || r.history === null || r.history.trim() === "" ? {} : { history: r.history }),
    passages,
    source: row.values
  }
}

/** Load stage: an answer-correctness test set (CSV / JSON / JSONL). */
export const loadCorrectness = (): LoadStage => ({
  describe:
    `answer-correctness test set (CSV, JSON or JSONL) with "id", "question", "answer" and at least one of "reference", "contexts", "nuggets"`,
  checkColumns: (ctx, columns) => {
    const f = fieldsFor(ctx)
    const present = new Set(columns)
    // With a target (`--target`), the answer and the passages may come from it.
    const generated = ctx.generated === true
    return checkColumns(
      ctx.file,
      columns,
      generated ? { question: f.question } : { question: f.question, answer: f.answer }
    )
      .pipe(Effect.zipRight(
        generated || [f.reference, f.contexts, f.nuggets].some((name) => present.has(name))
          ? Effect.void
          : Effect.fail(
            new InputError({
              file: ctx.file,
              problem:
                `no "${f.reference}", "${f.contexts}" or "${f.nuggets}" column: an answer is checked against a reference answer, the retrieved passages or nuggets; available: ${
                  columns.map((c) => JSON.stringify(c)).join(", ")
                }`
            })
          )
      ))
  },
  skips: true,
  cases: (ctx) => {
    const f = fieldsFor(ctx)
    const skip = ctx.skip ?? 0
    return readRows(ctx.file, { skip }).pipe(
      Stream.zipWithIndex,
      Stream.mapEffect(([row, i]) => {
        const c = correctnessCase(row, skip + i, ctx.file, f, ctx.generated === true)
        return c instanceof InputError ? Effect.fail(c) : Effect.succeed(c)
      })
    )
  }
})

/** What answer-correctness reads, for `rag-eval pipelines` and `run answer-correctness --help`. */
export const correctnessInput: InputDoc = {
  format: "JSONL, JSON or CSV rows; --columns renames the fields (e.g. reference=gold_answer)",
  fields: [
    { name: "question", required: true, holds: "the question asked" },
    { name: "answer", required: true, holds: "the answer to check" },
    {
      name: "reference",
      required: true,
      holds: "the gold answer; a row may give contexts or nuggets instead (at least one of the three)"
    },
    {
      name: "contexts",
      required: false,
      holds: "the passages the system retrieved: a list of texts, or one text numbered \"1. …\""
    },
    {
      name: "nuggets",
      required: false,
      holds: "facts a good answer states: texts, or { text, importance: vital | okay }"
    },
    { name: "id", required: false, holds: "the case id (default: its line)" }
  ],
  exampleExtension: ".jsonl",
  example: [
    "{\"question\": \"When was it built?\", \"answer\": \"1889.\", \"reference\": \"In 1889.\"}",
    "{\"question\": \"How tall?\", \"answer\": \"330 m.\", \"contexts\": [\"330 m tall.\"]}"
  ],
  minimal:
    "{\"question\": \"When was the tower completed?\", \"answer\": \"In 1889.\", \"reference\": \"It was completed in 1889.\"}\n"
}
