/**
 * Test-set rows decoded with `effect/Schema`, and a schema's failure told the way a user reads it:
 * the field's path under the row's own names (`retrievedCourses[2].subjectCode`) and the problem in
 * words ("expected text, found a number") — never a type in TypeScript's or Schema's notation.
 *
 * The words come from the schemas. `expecting("a list of hits")` says what a value should be;
 * `expecting(words, "the question is missing")` also what to say when it is null or absent; a
 * filter's message says what is wrong with a value of the right type. A schema without words is
 * worded by its kind: a string is "text", an array "a list", a struct "an object".
 *
 * A kind declares one schema per input shape under fixed names and decodes a row through
 * `decodeFields`, which reads each name from the row's field of that role (after `--columns` renames
 * and aliases) and names that field in a problem's path.
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { InputError } from "../domain/Errors.js"
import { describeJson } from "./Json.js"
import { formatPath } from "./Row.js"
import type { Row } from "./Rows.js"

/** Annotation: what a value should be, completing "expected …" ("a list of hits"). */
export const ExpectedId: unique symbol = Symbol.for("rag-eval/load/RowSchema/Expected")

/** Annotation: the whole problem when the value is null or absent ("the question is missing"). */
export const AbsentId: unique symbol = Symbol.for("rag-eval/load/RowSchema/Absent")

/** The annotations `expecting` makes. */
export type Wording = {
  readonly [ExpectedId]: string
  readonly [AbsentId]?: string
}

/** Annotations wording a schema's failures: what it expects, and what to say when nothing is given. */
export const expecting = (words: string, absent?: string): Wording =>
  absent === undefined ? { [ExpectedId]: words } : { [ExpectedId]: words, [AbsentId]: absent }

/** What is wrong with a row: where (keys and indices from the row down) and what, in words. */
export interface RowProblem {
  readonly path: ReadonlyArray<PropertyKey>
  readonly problem: string
}

const annotation = (ast: AST.AST, id: symbol): string | undefined => {
  const value = ast.annotations[id]
  return typeof value === "string" ? value : undefined
}

const isNothing = (ast: AST.AST): boolean =>
  ast._tag === "UndefinedKeyword" || ast._tag === "VoidKeyword" || (ast._tag === "Literal" && ast.literal === null)

/** A schema's expectation in words, from its annotation or its kind. */
export const wordsOf = (ast: AST.AST): string => {
  const words = annotation(ast, ExpectedId)
  if (words !== undefined) return words
  switch (ast._tag) {
    case "StringKeyword":
      return "text"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "true or false"
    case "Literal":
      return ast.literal === null ? "null" : JSON.stringify(ast.literal)
    case "TupleType":
      return "a list"
    case "TypeLiteral":
      return "an object"
    case "Union":
      return [...new Set(ast.types.filter((t) => !isNothing(t)).map(wordsOf))].join(" or ")
    case "Refinement":
    case "Transformation":
      return wordsOf(ast.from)
    case "Suspend":
      return wordsOf(ast.f())
    default:
      return "a valid value"
  }
}

/**
 * "nothing" for an absent value, else its JSON kind: "a string", "an array", "null"… A number too
 * large for a double (JSON's `1e999`) reads as Infinity, which is no number a field takes.
 */
export const found = (actual: unknown): string =>
  actual === undefined
    ? "nothing"
    : typeof actual === "number" && !Number.isFinite(actual)
    ? String(actual)
    : describeJson(actual)

const pathOf = (
  path: ParseResult.Path
): ReadonlyArray<PropertyKey> => (Array.isArray(path) ? path : [path as PropertyKey])

const firstIssue = (issues: ParseResult.Composite["issues"]): ParseResult.ParseIssue =>
  Array.isArray(issues) ? issues[0]! : issues as ParseResult.ParseIssue

/**
 * A failure at the top of the value itself: its type is wrong, or it is an object without the
 * member's first field (`{ "text": "x" }` for `{ inputs: { text } }` is not that shape at all).
 */
const isShallow = (issue: ParseResult.ParseIssue): boolean => {
  switch (issue._tag) {
    case "Type":
      return issue.message === undefined
    case "Refinement":
      return issue.kind === "From" && isShallow(issue.issue)
    case "Transformation":
      return issue.kind === "Encoded" && isShallow(issue.issue)
    case "Composite": {
      if (issue.ast._tag === "Union") {
        return (Array.isArray(issue.issues) ? issue.issues : [issue.issues]).every(isShallow)
      }
      const first = firstIssue(issue.issues)
      return issue.ast._tag === "TypeLiteral" && first._tag === "Pointer" && first.issue.actual === undefined
    }
    default:
      return false
  }
}

/** The message of a failed filter: its `message` annotation, else the text the predicate returned. */
const messageOf = (issue: ParseResult.Refinement): string | undefined => {
  const annotated = Option.getOrUndefined(AST.getMessageAnnotation(issue.ast))?.(issue)
  const message = typeof annotated === "object" && annotated !== null && "message" in annotated
    ? annotated.message
    : annotated
  if (typeof message === "string") return message
  return issue.issue._tag === "Type" ? issue.issue.message : undefined
}

/**
 * The first problem of a schema failure, with its path and words. A union whose value failed inside
 * one member (an object member given an object) is reported from inside that member; a union whose
 * value matched none at its top is reported with the union's words. Words are the outermost ones
 * annotated on the failing value (`expecting` on an array of courses wins over the array's "a list").
 */
export const problemOf = (issue: ParseResult.ParseIssue): RowProblem => {
  const path: Array<PropertyKey> = []
  let words: string | undefined
  let absent: string | undefined
  const note = (ast: AST.AST) => {
    words ??= annotation(ast, ExpectedId)
    absent ??= annotation(ast, AbsentId)
  }
  const leaf = (ast: AST.AST, actual: unknown, message: string | undefined): RowProblem => ({
    path,
    problem: message ??
      (absent !== undefined && (actual === undefined || actual === null)
        ? absent
        : `expected ${words ?? wordsOf(ast)}, found ${found(actual)}`)
  })
  let current = issue
  for (;;) {
    switch (current._tag) {
      case "Pointer":
        path.push(...pathOf(current.path))
        words = undefined
        absent = undefined
        current = current.issue
        continue
      case "Type":
        note(current.ast)
        return leaf(current.ast, current.actual, current.message)
      case "Missing":
        note(current.ast.type)
        return leaf(current.ast.type, undefined, current.message)
      case "Refinement":
        note(current.ast)
        if (current.kind === "Predicate" && current.issue._tag === "Pointer") {
          current = current.issue
          continue
        }
        if (current.kind === "Predicate") return leaf(current.ast, current.actual, messageOf(current))
        current = current.issue
        continue
      case "Transformation":
        note(current.ast)
        current = current.issue
        continue
      case "Composite": {
        note(current.ast)
        if (current.ast._tag === "Union") {
          const members = Array.isArray(current.issues) ? current.issues : [current.issues as ParseResult.ParseIssue]
          const inside = members.find((m) => !isShallow(m))
          if (inside === undefined) return leaf(current.ast, current.actual, undefined)
          current = inside
          continue
        }
        current = firstIssue(current.issues)
        continue
      }
      case "Unexpected":
        return { path, problem: "is not allowed here" }
      case "Forbidden":
        return { path, problem: current.message ?? "cannot be checked here" }
    }
  }
}

export { formatPath } from "./Row.js"

/** The row's problem as the input error: the file, the row's line and the field's path. */
export const rowError = (file: string, row: Row, problem: RowProblem): InputError =>
  new InputError({
    file,
    line: row.line,
    ...(problem.path.length === 0 ? {} : { field: formatPath(problem.path) }),
    problem: problem.problem
  })

/** A decoder returning the first problem as a `ParseIssue` (compiled once per schema). */
export const issueDecoder = <A, I>(
  schema: Schema.Schema<A, I>
): (u: unknown) => Either.Either<A, ParseResult.ParseIssue> => ParseResult.decodeUnknownEither(schema)

/**
 * Decodes a row's fields under the schema's own names. `names` maps each schema name to the row's
 * field that plays it (its `--columns` rename or the alias present); a problem's path starts with
 * the row's field name.
 */
export const decodeFields = <A>(
  decode: (u: unknown) => Either.Either<A, ParseResult.ParseIssue>,
  names: Readonly<Record<string, string>>,
  values: Readonly<Record<string, unknown>>
): Either.Either<A, RowProblem> => {
  const projected: Record<string, unknown> = {}
  for (const name in names) {
    const value = values[names[name]!]
    if (value !== undefined) projected[name] = value
  }
  return Either.mapLeft(decode(projected), (issue) => {
    const problem = problemOf(issue)
    const [head, ...rest] = problem.path
    return typeof head === "string" && Object.hasOwn(names, head)
      ? { path: [names[head]!, ...rest], problem: problem.problem }
      : problem
  })
}

// ---------------------------------------------------------------------------------------------
// Fields every kind's rows share
//
// Schemas here check shapes; the few normalisations (a number id as text, null as absent) are done
// where the case is built. Effect's parser interprets the schema for every value, and a test set has
// a few fields per hit and tens of thousands of hits: measured per field, a transformation or an
// `optionalWith(…, { nullable: true })` costs 1.2–1.9 µs, `optionalOrNull` about 0.1–0.3 µs, and an
// absent optional field nothing (the parser skips it; `decodeFields` leaves absent fields out).

/**
 * A field that may be absent or null (both mean "not given"). Exact: rows come from JSON, where a
 * field is never `undefined` (`decodeFields` leaves absent ones out), and the parser then has no
 * `undefined` member to try — half the cost of `Schema.optional`.
 */
export const optionalOrNull = <S extends Schema.Schema.All>(schema: S) =>
  Schema.optionalWith(Schema.NullOr(schema), { exact: true })

/**
 * The type side of a transformation whose decode function builds a fresh value of type `A` itself:
 * the function's type already says what it returns, so the parser does not check it again.
 */
export const built = <A>(): Schema.Schema<A> => Schema.declare((_: unknown): _ is A => true)

/**
 * An object whose `fields` are decoded, built into an `A` by `build` from the decoded fields and the
 * object itself — as it was given, not a copy: a case keeps a hit's own fields in their order.
 * `build` may still refuse the object (a rule across fields) with a problem at a path inside it.
 * Decoding only: these schemas read test sets, nothing encodes a case back.
 */
export const objectWith = <F extends Schema.Struct.Fields, A>(
  fields: Schema.Struct<F>,
  build: (
    decoded: Schema.Schema.Type<Schema.Struct<F>>,
    object: Readonly<Record<string, unknown>>
  ) => Either.Either<A, ParseResult.ParseIssue>
) =>
  Schema.transformOrFail(fields, built<A>(), {
    strict: true,
    decode: (decoded, _options, _ast, object) => build(decoded, object),
    encode: (value, _options, ast) =>
      ParseResult.fail(new ParseResult.Forbidden(ast, value, "test-set rows are decoded only"))
  })

/** Text, trimmed. */
const trimmed = Schema.transform(Schema.String, built<string>(), {
  strict: true,
  decode: (s) => s.trim(),
  encode: (s) => s
})

/** Non-empty text, trimmed; "the ⟨role⟩ is empty" when blank. */
export const requiredText = (role: string, annotations?: Wording) =>
  trimmed.pipe(Schema.filter((s) => s !== "" || `the ${role} is empty`)).annotations(annotations ?? {})

/**
 * An optional id or name (a case's id, a hit's id, a course's code): text or a number; null or
 * absent is none. `idText` makes it the id.
 */
export const OptionalId = optionalOrNull(
  Schema.Union(Schema.String, Schema.Finite).annotations(expecting("text or a number"))
)

/** Text that is not blank, trimmed; undefined for blank, null or absent. */
export const nonBlank = (text: string | null | undefined): string | undefined =>
  text === undefined || text === null || text.trim() === "" ? undefined : text.trim()

/** The id an `OptionalId` gives: text trimmed (blank is none), a number as text. */
export const idText = (value: string | number | null | undefined): string | undefined =>
  typeof value === "number" ? String(value) : nonBlank(value)
