/**
 * From rows to `EvalCase`s: which column holds the question, the answer, the history, the
 * fragments and the id. Defaults follow the `rag-answers` CSV export (SPEC §2.1); users remap
 * with a `role=Column` list (`parseColumnMapping`).
 */
import * as Effect from "effect/Effect"
import { isRecord } from "effect/Predicate"
import type { EvalCase, Passage } from "../domain/Case.js"
import { InputError, UsageError } from "../domain/Errors.js"
import { splitFragments, unescapeNewlines } from "./Fragments.js"
import type { InputDoc } from "./InputFields.js"
import { describeJson } from "./Json.js"
import type { Row } from "./Rows.js"

export interface ColumnMapping {
  readonly question: string
  readonly answer?: string | undefined
  readonly history?: string | undefined
  readonly fragments?: string | undefined
  readonly id?: string | undefined
  /**
   * Columns that may be absent from the input: a role whose column is missing then has no value in
   * any row. Only a default's columns are listed, so a column named with `--columns` must exist.
   */
  readonly optional?: ReadonlyArray<string> | undefined
  /** The gold answer (answer-correctness; rag-answers adds claim precision, recall and F1 with it). */
  readonly reference?: string | undefined
  /** Nuggets the answer should hold (answer-correctness). */
  readonly nuggets?: string | undefined
}

/** The roles' columns alone (what `--columns` gives). */
export type RoleColumns = Omit<ColumnMapping, "optional">

export const ragAnswersColumns: ColumnMapping = {
  question: "Current User Question",
  history: "Conversation History",
  fragments: "Fragment Texts",
  answer: "Assistant Answer",
  // A first-turn conversation has no history: exports often leave the column out.
  optional: ["Conversation History"]
}

/** rag-answers' input, for help (see `InputFields.ts`). */
export const ragAnswersInput: InputDoc = {
  format: "CSV, or JSON / JSONL rows with the same keys; --columns renames them (e.g. question=Query)",
  fields: [
    { name: "Current User Question", required: true, holds: "the question the assistant answered" },
    { name: "Conversation History", required: false, holds: "the conversation before it (empty or absent: none)" },
    {
      name: "Fragment Texts",
      required: true,
      holds: "the retrieved fragments, numbered \"1. …\", \"2. …\", separated by newlines or \\n"
    },
    { name: "Assistant Answer", required: true, holds: "the answer to judge" }
  ],
  exampleExtension: ".csv",
  example: [
    "Current User Question,Conversation History,Fragment Texts,Assistant Answer",
    "What is a heat pump?,,\"1. It moves heat.\\n2. It uses power.\",It moves heat."
  ],
  minimal:
    "Current User Question,Fragment Texts,Assistant Answer\nWhat is a heat pump?,1. It moves heat.,It moves heat.\n"
}

const roles = ["question", "answer", "history", "fragments", "id", "reference", "nuggets"] as const
/** Other names of roles in `--columns`: the retrieved passages are `contexts` in answer-correctness. */
const aliases: Readonly<Record<string, Role>> = { contexts: "fragments" }
type Role = typeof roles[number]

const isRole = (key: string): key is Role => (roles as ReadonlyArray<string>).includes(key)

/** The mapped column names, in role order. */
const mappedColumns = (mapping: ColumnMapping): Array<string> =>
  roles.flatMap((role) => {
    const column = mapping[role]
    return column === undefined ? [] : [column]
  })

/** Fails when a mapped column is not in the input, listing the missing and the available ones. */
export const checkColumns = (
  file: string,
  columns: ReadonlyArray<string>,
  mapping: ColumnMapping
): Effect.Effect<void, InputError> => {
  const available = new Set(columns)
  const missing = mappedColumns(mapping).filter((column) =>
    !available.has(column) && mapping.optional?.includes(column) !== true
  )
  if (missing.length === 0) return Effect.void
  const list = (names: ReadonlyArray<string>) => names.map((name) => JSON.stringify(name)).join(", ")
  return Effect.fail(
    new InputError({
      file,
      problem: `missing column${missing.length === 1 ? "" : "s"} ${list(missing)}; ` +
        `available: ${columns.length === 0 ? "none" : list(columns)}`
    })
  )
}

/** Overrides from `parseColumnMapping` applied to a pipeline's defaults (undefined unmaps a role). */
export const applyColumnMapping = (base: ColumnMapping, overrides: Partial<RoleColumns>): ColumnMapping => {
  const merged: { -readonly [K in Role]?: string | undefined } = { ...base }
  for (const role of roles) {
    if (Object.hasOwn(overrides, role)) merged[role] = overrides[role]
  }
  return { ...merged, question: merged.question ?? base.question }
}

/** Builds the case for a row: `ordinal` is its 0-based position among the rows. */
export const toCase = (
  row: Row,
  ordinal: number,
  mapping: ColumnMapping,
  file: string
): Effect.Effect<EvalCase, InputError> =>
  Effect.suspend(() => {
    const c = caseOf(row, ordinal, mapping, file)
    return c instanceof InputError ? Effect.fail(c) : Effect.succeed(c)
  })

/** `toCase` without an Effect: the case, or the problem with the row (streams map rows a chunk at a time). */
export const caseOf = (row: Row, ordinal: number, mapping: ColumnMapping, file: string): EvalCase | InputError => {
  const fail = (field: string, problem: string) => new InputError({ file, line: row.line, field, problem })
  const text = (column: string | undefined): string | undefined | InputError => {
    if (column === undefined) return undefined
    const value = row.values[column]
    if (value === undefined || value === null) return undefined
    if (typeof value === "string") return value
    if (typeof value === "number" || typeof value === "boolean") return String(value)
    return new InputError({
      file,
      line: row.line,
      field: column,
      problem: `expected text, found ${describeJson(value)}`
    })
  }

  const question = text(mapping.question)
  if (question instanceof InputError) return question
  if (question === undefined || question.trim() === "") return fail(mapping.question, "the question is empty")
  const answer = text(mapping.answer)
  if (answer instanceof InputError) return answer
  const history = text(mapping.history)
  if (history instanceof InputError) return history
  const id = text(mapping.id)
  if (id instanceof InputError) return id
  const reference = text(mapping.reference)
  if (reference instanceof InputError) return reference

  let passages: ReadonlyArray<Passage> = []
  if (mapping.fragments !== undefined) {
    const value = row.values[mapping.fragments]
    const built = toPassages(value)
    if (built === undefined) {
      return fail(mapping.fragments, `expected text or a list of passages, found ${describeJson(value)}`)
    }
    passages = built
  }

  const historyText = history === undefined ? "" : unescapeNewlines(history).trim()
  return {
    id: id !== undefined && id.trim() !== "" ? id.trim() : String(ordinal + 1),
    ordinal,
    line: row.line,
    question: question.trim(),
    answer,
    history: historyText === "" ? undefined : historyText,
    ...(reference === undefined || reference.trim() === "" ? {} : { reference: unescapeNewlines(reference).trim() }),
    passages,
    source: row.values
  }
}

/**
 * Passages from a fragments value: a text (split by `splitFragments`), or, from JSON, a list of
 * texts or of objects (text from `text` / `content`, the object kept as `fields`).
 */
const toPassages = (value: unknown): ReadonlyArray<Passage> | undefined => {
  if (value === undefined || value === null) return []
  const passage = (text: string, index: number, fields?: Readonly<Record<string, unknown>>): Passage => ({
    id: String(index + 1),
    rank: index + 1,
    text,
    ...(fields === undefined ? {} : { fields })
  })
  if (typeof value === "string") return splitFragments(value).map((text, index) => passage(text, index))
  if (!Array.isArray(value)) return undefined
  const passages: Array<Passage> = []
  for (const item of value) {
    if (typeof item === "string") {
      if (item.trim() !== "") passages.push(passage(item.trim(), passages.length))
    } else if (isRecord(item)) {
      const fields: Readonly<Record<string, unknown>> = item
      const body = typeof fields.text === "string"
        ? fields.text
        : typeof fields.content === "string"
        ? fields.content
        : JSON.stringify(fields)
      passages.push(passage(body, passages.length, fields))
    } else {
      return undefined
    }
  }
  return passages
}

/**
 * Parses `role=Column` pairs separated by commas, e.g. `question=Q,answer=A`; a column name with a
 * comma can be double-quoted (`fragments="Texts, retrieved"`). An empty column unmaps an optional
 * role (`history=`). Roles: question, answer, history, fragments (also `contexts`), id, reference, nuggets.
 */
export const parseColumnMapping = (spec: string): Effect.Effect<Partial<RoleColumns>, UsageError> =>
  Effect.suspend(() => {
    const fail = (problem: string) => Effect.fail(new UsageError({ problem: `column mapping: ${problem}` }))
    const entries = splitEntries(spec)
    if (entries === undefined) return fail(`unbalanced quote in ${JSON.stringify(spec)}`)
    const result: { -readonly [K in Role]?: string | undefined } = {}
    for (const entry of entries) {
      if (entry.trim() === "") continue
      const eq = entry.indexOf("=")
      if (eq === -1) return fail(`expected role=Column, found ${JSON.stringify(entry.trim())}`)
      const given = entry.slice(0, eq).trim()
      const key = aliases[given] ?? given
      if (!isRole(key)) {
        return fail(`unknown role ${JSON.stringify(given)}; expected one of ${roles.join(", ")} (contexts = fragments)`)
      }
      if (Object.hasOwn(result, key)) return fail(`${key} is given twice`)
      const raw = entry.slice(eq + 1).trim()
      const column = raw.length >= 2 && raw.startsWith("\"") && raw.endsWith("\"")
        ? raw.slice(1, -1).replace(/""/g, "\"")
        : raw
      if (column === "" && key === "question") return fail("the question column cannot be empty")
      result[key] = column === "" ? undefined : column
    }
    return Effect.succeed(result as Partial<RoleColumns>)
  })

/** Splits at commas outside double quotes; undefined when a quote is left open. */
const splitEntries = (spec: string): Array<string> | undefined => {
  const entries: Array<string> = []
  let start = 0
  let quoted = false
  for (let k = 0; k < spec.length; k++) {
    const c = spec[k]
    if (c === "\"") quoted = !quoted
    else if (c === "," && !quoted) {
      entries.push(spec.slice(start, k))
      start = k + 1
    }
  }
  if (quoted) return undefined
  entries.push(spec.slice(start))
  return entries
}
