/**
 * Field readers shared by the retrieval pipelines' loaders: a query given as text or as
 * `{ inputs: { text } }` (the search API's shape), an optional case id, and the system's per-query
 * latency and token usage when the input carries them.
 *
 * Latency (`latencyMs`): a number (the end-to-end time, ms) or an object of numbers — `total` and
 * any sub-spans (`retrieve`, `rerank`, `generate`…). Usage (`usage`): `{ inputTokens, outputTokens }`
 * or OpenAI's `{ prompt_tokens, completion_tokens }`.
 */
import * as Either from "effect/Either"
import type { RetrievalInfo } from "../../domain/Case.js"
import { InputError } from "../../domain/Errors.js"
import { describeJson } from "../../load/Json.js"
import type { Row } from "../../load/Rows.js"

type Fail = (field: string, problem: string) => InputError

export const failer = (file: string, row: Row): Fail => (field, problem) => new InputError({ file, line: row.line, field, problem })

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

const found = (u: unknown) => (u === undefined ? "nothing" : describeJson(u))

/** The query text: a string, or `{ inputs: { text } }`. */
export const readQuery = (value: unknown, field: string, fail: Fail): Either.Either<string, InputError> => {
  const text = typeof value === "string" ? value : isObject(value) && isObject(value.inputs) ? value.inputs.text : undefined
  if (typeof text !== "string") {
    return Either.left(fail(field, `expected the query as text or { "inputs": { "text": … } }, found ${found(value)}`))
  }
  if (text.trim() === "") return Either.left(fail(field, "the query is empty"))
  return Either.right(text.trim())
}

/** A non-empty text field. */
export const readText = (value: unknown, field: string, fail: Fail): Either.Either<string, InputError> => {
  if (typeof value !== "string") return Either.left(fail(field, `expected text, found ${found(value)}`))
  if (value.trim() === "") return Either.left(fail(field, `the ${field} is empty`))
  return Either.right(value.trim())
}

/** An optional id: text or a number; undefined when absent or blank. */
export const readId = (value: unknown, field: string, fail: Fail): Either.Either<string | undefined, InputError> => {
  if (value === undefined || value === null) return Either.right(undefined)
  if (typeof value === "string") return Either.right(value.trim() === "" ? undefined : value.trim())
  if (typeof value === "number" && Number.isFinite(value)) return Either.right(String(value))
  return Either.left(fail(field, `expected text or a number, found ${describeJson(value)}`))
}

/** The first of `names` present in the row (aliases of one field). */
export const firstField = (values: Readonly<Record<string, unknown>>, names: ReadonlyArray<string>): string | undefined =>
  names.find((n) => Object.hasOwn(values, n) && values[n] !== undefined)

const nonNegative = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0

/** The system's latency and usage for this query, as a `RetrievalInfo` of the precomputed retriever. */
export const readMeasurements = (values: Readonly<Record<string, unknown>>, fail: Fail): Either.Either<RetrievalInfo | undefined, InputError> => {
  const latency = values.latencyMs
  const usage = values.usage
  let latencyMs: number | undefined
  let spans: Record<string, number> | undefined
  if (latency !== undefined && latency !== null) {
    if (nonNegative(latency)) {
      latencyMs = latency
    } else if (isObject(latency)) {
      for (const [span, ms] of Object.entries(latency)) {
        if (!nonNegative(ms)) return Either.left(fail("latencyMs", `span "${span}" must be a number of milliseconds ≥ 0, found ${describeJson(ms)}`))
        if (span === "total") latencyMs = ms
        else (spans ??= {})[span] = ms
      }
    } else {
      return Either.left(fail("latencyMs", `expected milliseconds (a number) or an object of spans, found ${describeJson(latency)}`))
    }
  }
  let tokens: { inputTokens: number; outputTokens: number } | undefined
  if (usage !== undefined && usage !== null) {
    if (!isObject(usage)) return Either.left(fail("usage", `expected { inputTokens, outputTokens }, found ${describeJson(usage)}`))
    const input = usage.inputTokens ?? usage.prompt_tokens ?? usage.input_tokens ?? 0
    const output = usage.outputTokens ?? usage.completion_tokens ?? usage.output_tokens ?? 0
    if (!nonNegative(input) || !nonNegative(output)) return Either.left(fail("usage", "token counts must be numbers ≥ 0"))
    tokens = { inputTokens: input, outputTokens: output }
  }
  if (latencyMs === undefined && spans === undefined && tokens === undefined) return Either.right(undefined)
  return Either.right({
    retriever: "precomputed",
    status: "ok",
    ...(latencyMs === undefined ? {} : { latencyMs }),
    ...(spans === undefined ? {} : { spans }),
    ...(tokens === undefined ? {} : { usage: tokens })
  })
}

/** An optional retriever score on a hit. */
export const readScore = (value: unknown, field: string, fail: Fail): Either.Either<number | undefined, InputError> => {
  if (value === undefined || value === null) return Either.right(undefined)
  if (typeof value === "number" && Number.isFinite(value)) return Either.right(value)
  return Either.left(fail(field, `the retriever score must be a number, found ${describeJson(value)}`))
}
