/**
 * Load and judge stages of the answer-synthesis pipeline (SPEC §2.2).
 *
 * A test set holds `{ queryLogId, question, answer, context }` cases — a JSON array, a JSON object
 * `{ version, name, …, cases: [...] }` or JSONL — where `context` is the list of items the system
 * retrieved (typically courses `{ name, code, matchedLearningOutcomes: [...] }`, but also plain
 * strings or arbitrary objects). Each item is rendered as readable text and becomes one passage of
 * the case, so the judge sees exactly what the answering model saw. The case id is `queryLogId`.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { isRecord } from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { EvalCase, Passage } from "../../domain/Case.js"
import type { InputError } from "../../domain/Errors.js"
import { oneLine } from "../../domain/Markdown.js"
import type { JudgeStage, LoadContext, LoadStage, TaskSpec } from "../../engine/Pipeline.js"
import { checkColumns, type ColumnMapping } from "../../load/CaseMapping.js"
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

/**
 * Default field names. `--columns` renames them with the usual roles: `id` (queryLogId),
 * `question`, `answer`, `fragments` (the context list).
 */
export const testSetFields = {
  id: "queryLogId",
  question: "question",
  answer: "answer",
  fragments: "context"
} as const satisfies ColumnMapping

/** answer-synthesis's input, for help (see `InputFields.ts`). */
export const synthesisInput: InputDoc = {
  format:
    "JSON array, JSON { cases: [...] } or JSONL, one case each; --columns renames them (id, question, answer, fragments = context)",
  fields: [
    { name: "queryLogId", required: false, holds: "the case's id (without it, cases are numbered)" },
    { name: "question", required: true, holds: "the user's question" },
    { name: "answer", required: true, holds: "the answer to judge" },
    {
      name: "context",
      required: true,
      holds:
        "the items retrieved for it: courses { name, code, matchedLearningOutcomes: [...] }, texts or other objects"
    }
  ],
  exampleExtension: ".jsonl",
  example: [
    `{"queryLogId":"q1","question":"SQL?","answer":"DB1.","context":["DB1: SQL"]}`,
    `{"question":"Budgets?","answer":"FIN1.","context":[{"code":"FIN1"}]}`
  ],
  minimal: `{"question":"SQL?","answer":"DB1.","context":[]}\n`
}

/** The field names in use for a run (defaults with `--columns` renames applied). */
export interface TestSetFields {
  readonly id: string | undefined
  readonly question: string
  readonly answer: string
  readonly context: string
  /** The reference (gold) answer's field, when `--columns reference=…` names one: claim precision, recall and F1. */
  readonly reference?: string | undefined
}

export const fieldsFor = (ctx: LoadContext | undefined): TestSetFields => {
  const m: Readonly<Record<string, string | undefined>> = { ...testSetFields, ...ctx?.columns }
  return {
    id: m["id"],
    question: m["question"] ?? testSetFields.question,
    answer: m["answer"] ?? testSetFields.answer,
    context: m["fragments"] ?? testSetFields.fragments,
    ...(m["reference"] === undefined ? {} : { reference: m["reference"] })
  }
}

// ---------------------------------------------------------------------------------------------
// Context items as text
// ---------------------------------------------------------------------------------------------

type JsonObject = Readonly<Record<string, unknown>>

/** Field names recognised on a context item, first match wins (course exports vary). */
const NAME_KEYS = ["name", "subjectName", "courseName", "title"] as const
const CODE_KEYS = ["code", "subjectCode", "courseCode"] as const
const OUTCOME_KEYS = ["matchedLearningOutcomes", "learningOutcomes", "cleanedLearningOutcomes", "outcomes"] as const
const TEXT_KEYS = ["text", "content", "description"] as const
/** Text of one learning outcome given as an object. */
const OUTCOME_TEXT_KEYS = [
  "text",
  "outcome",
  "learningOutcome",
  "cleanedLearningOutcome",
  "description",
  "name"
] as const

const firstKey = (item: JsonObject, keys: ReadonlyArray<string>): string | undefined =>
  keys.find((k) => Object.hasOwn(item, k))

const scalarText = (value: unknown): string | undefined =>
  typeof value === "string"
    ? value.trim()
    : typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : undefined

const outcomeText = (value: unknown): string => {
  const scalar = scalarText(value)
  if (scalar !== undefined) return scalar
  if (isRecord(value)) {
    const key = firstKey(value, OUTCOME_TEXT_KEYS.filter((k) => typeof value[k] === "string"))
    if (key !== undefined) return String(value[key]).trim()
  }
  return JSON.stringify(value)
}

const valueText = (value: unknown): string => {
  const scalar = scalarText(value)
  if (scalar !== undefined) return scalar
  if (Array.isArray(value) && value.every((v) => scalarText(v) !== undefined)) {
    return value.map((v) => scalarText(v)).join("; ")
  }
  return JSON.stringify(value)
}

/** The recognised parts of a course-like item; undefined when the item has none of them. */
const courseParts = (item: JsonObject) => {
  const pick = (keys: ReadonlyArray<string>) => {
    const key = firstKey(item, keys.filter((k) => scalarText(item[k]) !== undefined && scalarText(item[k]) !== ""))
    return key === undefined ? undefined : { key, text: scalarText(item[key])! }
  }
  const name = pick(NAME_KEYS)
  const code = pick(CODE_KEYS)
  const body = pick(TEXT_KEYS)
  const outcomesKey = firstKey(item, OUTCOME_KEYS.filter((k) => Array.isArray(item[k])))
  if (name === undefined && code === undefined && body === undefined && outcomesKey === undefined) return undefined
  const outcomes = outcomesKey === undefined
    ? []
    : (item[outcomesKey] as ReadonlyArray<unknown>).map(outcomeText).filter((t) => t !== "")
  const used = new Set([name?.key, code?.key, body?.key, outcomesKey].filter((k) => k !== undefined))
  const others = Object.entries(item).filter(([k, v]) => !used.has(k) && v !== null && v !== undefined && v !== "")
  const title = name !== undefined && code !== undefined ? `${name.text} (${code.text})` : name?.text ?? code?.text
  return { title, body: body?.text, outcomes, others }
}

/**
 * One context item as text for the judge: a course as its name and code, its description and its
 * matched learning outcomes (one per line), then any other fields as `key: value`; a string as
 * itself; anything else as JSON.
 */
export const renderContextItem = (item: unknown): string => {
  const scalar = scalarText(item)
  if (scalar !== undefined) return scalar
  if (!isRecord(item)) return JSON.stringify(item)
  const parts = courseParts(item)
  if (parts === undefined) return JSON.stringify(item)
  const lines: Array<string> = []
  if (parts.title !== undefined) lines.push(parts.title)
  if (parts.body !== undefined) lines.push(parts.body)
  if (parts.outcomes.length > 0) lines.push("Matched learning outcomes:", ...parts.outcomes.map((o) => `- ${o}`))
  for (const [k, v] of parts.others) lines.push(`${k}: ${valueText(v)}`)
  return lines.join("\n")
}

/** A one-line label for an item (reports): the course's name and code, else the start of its text. */
export const contextLabel = (item: unknown): string => {
  const title = isRecord(item) ? courseParts(item)?.title : undefined
  return oneLine(title ?? renderContextItem(item), 80)
}

/** The context as the judge sees it: `[1] item`, items separated by a blank line. */
export const contextText = (passages: ReadonlyArray<Passage>): string =>
  passages.length === 0
    ? "(no context items were retrieved)"
    : passages.map((p, i) => `[${i + 1}] ${p.text}`).join("\n\n")

// ---------------------------------------------------------------------------------------------
// Rows → cases
// ---------------------------------------------------------------------------------------------

/**
 * A test-set row under the schema's names (`fieldsFor` maps them to the row's): the question is
 * non-empty text, the answer is present text (it may be empty: an empty answer is a system failure
 * to score, not bad input), the context is a list without nulls, and the id (when present) is text
 * or a number.
 */
export const SynthesisInput = Schema.Struct({
  queryLogId: OptionalId,
  question: requiredText("question", expecting("text", "the question is missing")),
  answer: Schema.String.annotations(expecting("text", "the answer is missing")),
  context: Schema.Array(Schema.Unknown.pipe(Schema.filter((item) => item !== null || "the context item is null")))
    .annotations(expecting("a list of context items")),
  reference: optionalOrNull(Schema.String.annotations(expecting("text (the reference answer)")))
})

/**
 * The same row when a target gives the answers (`--target`): the answer and the context may be
 * absent (the target fills them); when present they are held to the same rules.
 */
export const SynthesisInputGenerated = Schema.Struct({
  ...SynthesisInput.fields,
  answer: Schema.optional(SynthesisInput.fields.answer),
  context: Schema.optional(SynthesisInput.fields.context)
})

/** A decoded test-set row (before it becomes a case). */
export interface SynthesisRow {
  readonly queryLogId: string | undefined
  readonly question: string
  /** Empty when a target gives the answers and the row has none. */
  readonly answer: string
  readonly context: ReadonlyArray<unknown>
  /** Blank or absent: none. */
  readonly reference: string | undefined
}

const decodeInput = issueDecoder(SynthesisInput)
const decodeGenerated = issueDecoder(SynthesisInputGenerated)

/** Decodes one row; the error names the file, the line and the field. */
export const validateRow = (
  row: Row,
  file: string,
  fields: TestSetFields = fieldsFor(undefined),
  generated = false
): Effect.Effect<SynthesisRow, InputError> =>
  Effect.suspend(() => {
    const names = {
      ...(fields.id === undefined ? {} : { queryLogId: fields.id }),
      question: fields.question,
      answer: fields.answer,
      context: fields.context,
      ...(fields.reference === undefined ? {} : { reference: fields.reference })
    }
    const decoded = generated
      ? decodeFields(decodeGenerated, names, row.values)
      : decodeFields(decodeInput, names, row.values)
    return Either.match(decoded, {
      onLeft: (problem) => Effect.fail(rowError(file, row, problem)),
      onRight: (r) =>
        Effect.succeed({
          queryLogId: idText(r.queryLogId),
          question: r.question,
          answer: r.answer ?? "",
          context: r.context ?? [],
          reference: nonBlank(r.reference)
        })
    })
  })

/** The case for a row; `ordinal` is its 0-based position (the id when the row has no queryLogId). */
export const toSynthesisCase = (
  row: Row,
  ordinal: number,
  file: string,
  fields: TestSetFields = fieldsFor(undefined),
  generated = false
): Effect.Effect<EvalCase, InputError> =>
  validateRow(row, file, fields, generated).pipe(Effect.map((r): EvalCase => ({
    id: r.queryLogId ?? String(ordinal + 1),
    ordinal,
    line: row.line,
    question: r.question,
    answer: r.answer,
    ...(r.reference === undefined ? {} : { reference: r.reference }),
    passages: r.context.map((item, i): Passage => ({
      id: String(i + 1),
      rank: i + 1,
      text: renderContextItem(item),
      ...(isRecord(item) ? { fields: item } : {})
    })),
    source: row.values
  })))

/** Load stage: a JSON / JSONL answer-synthesis test set. */
export const loadTestSet = (): LoadStage => ({
  describe: `answer-synthesis test set (JSON array, {cases: [...]} or JSONL) with fields ${
    Object.values(testSetFields).map((f) => `"${f}"`).join(", ")
  }`,
  checkColumns: (ctx, columns) => {
    const f = fieldsFor(ctx)
    // queryLogId is optional (cases are then numbered); the others must exist, unless a target fills them.
    return checkColumns(
      ctx.file,
      columns,
      ctx.generated === true
        ? { question: f.question, reference: f.reference }
        : { question: f.question, answer: f.answer, fragments: f.context, reference: f.reference }
    )
  },
  cases: (ctx) => {
    const f = fieldsFor(ctx)
    return readRows(ctx.file).pipe(
      Stream.zipWithIndex,
      Stream.mapEffect(([row, i]) => toSynthesisCase(row, i, ctx.file, f, ctx.generated === true))
    )
  }
})

// ---------------------------------------------------------------------------------------------
// Judge stage
// ---------------------------------------------------------------------------------------------

/** The variables the answer-synthesis rubrics use: `question`, `answer`, `context`. */
export const synthesisVars = (c: EvalCase): Readonly<Record<string, string>> => ({
  question: c.question,
  answer: c.answer ?? "",
  context: contextText(c.passages)
})

/** One judgment per rubric (faithfulness, completeness), each on the whole answer. */
export const judgeSynthesis = (rubrics: ReadonlyArray<string>): JudgeStage => ({
  rubrics,
  tasks: (c) => {
    const vars = synthesisVars(c)
    return rubrics.map((rubric): TaskSpec => ({ rubric, target: "answer", vars }))
  }
})
