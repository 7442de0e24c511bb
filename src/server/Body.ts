/**
 * Request bodies of the evaluation endpoints, read under a size limit: a `Content-Length` over the
 * limit is refused before any byte is read, and a body without one (chunked) is refused as soon as
 * the bytes counted so far pass the limit (413). The rest of a refused body is drained, not
 * buffered, so the client still reads the 413. Malformed JSON and schema violations are 400s that
 * list every problem with its path (`hits[0].id`).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Http from "node:http"
import { MAX_JSON_DEPTH } from "../load/Json.js"
import { apiError, type BadRequest, type PayloadTooLarge, type Problem } from "./Domain.js"

const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3
}

/** `1mb`, `512kb`, `2MiB`, `1048576` → bytes (binary units, as body-parser's `limit`). */
export const parseSize = (text: string): Either.Either<number, string> => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text)
  const unit = match === null ? undefined : UNITS[match[2]!.toLowerCase()]
  if (match === null || unit === undefined) return Either.left(`"${text}" is not a size (e.g. 1mb, 512kb, 1048576)`)
  const bytes = Math.floor(Number(match[1]) * unit)
  return bytes >= 1 ? Either.right(bytes) : Either.left(`"${text}" must be at least 1 byte`)
}

/** A byte count for messages: 1 MiB, 512 KiB, 300 bytes. */
export const formatSize = (bytes: number): string => {
  if (bytes >= 1024 ** 2 && bytes % 1024 ** 2 === 0) return `${bytes / 1024 ** 2} MiB`
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`
  return `${bytes} bytes`
}

const tooLarge = (limit: number, detail: string): PayloadTooLarge =>
  apiError(
    413,
    "payload_too_large",
    `the body is over the limit of ${formatSize(limit)} (${detail}); raise it with --max-body`
  )

/** Read the whole body, at most `limit` bytes. */
export const readBody = (
  source: Http.IncomingMessage,
  limit: number
): Effect.Effect<Buffer, PayloadTooLarge | BadRequest> =>
  Effect.suspend(() => {
    const declared = source.headers["content-length"]
    if (declared !== undefined && Number(declared) > limit) {
      // Node drains the unread body after the response, so the connection stays usable.
      return Effect.fail(tooLarge(limit, `Content-Length ${declared}`))
    }
    return Effect.async<Buffer, PayloadTooLarge | BadRequest>((resume) => {
      const chunks: Array<Buffer> = []
      let size = 0
      let settled = false
      const cleanup = () => {
        source.off("data", onData)
        source.off("end", onEnd)
        source.off("error", onError)
      }
      const settle = (result: Effect.Effect<Buffer, PayloadTooLarge | BadRequest>) => {
        if (settled) return
        settled = true
        cleanup()
        resume(result)
      }
      const onData = (chunk: Buffer) => {
        size += chunk.length
        if (size > limit) {
          chunks.length = 0
          // Keep the stream flowing with no listener: the rest is discarded, and the 413 goes out.
          source.resume()
          settle(Effect.fail(tooLarge(limit, `more than ${size} bytes received`)))
        } else {
          chunks.push(chunk)
        }
      }
      const onEnd = () => settle(Effect.succeed(Buffer.concat(chunks, size)))
      const onError = (error: Error) =>
        settle(Effect.fail(apiError(400, "unreadable_body", `the body could not be read: ${error.message}`)))
      source.on("data", onData)
      source.once("end", onEnd)
      source.once("error", onError)
      return Effect.sync(cleanup)
    })
  })

/**
 * Parse JSON text; malformed → 400 `invalid_json` with the parser's message. A body nested deeper
 * than `MAX_JSON_DEPTH` levels → 400 `invalid_request` naming the field: the response echoes hits
 * back, and writing a value thousands of levels deep would overflow the stack (a 500).
 */
export const parseJson = (body: Buffer): Either.Either<unknown, BadRequest> => {
  const text = body.toString("utf8")
  if (text.trim() === "") {
    return Either.left(
      apiError(400, "invalid_json", "the body is empty; send a JSON object", [{ path: "", message: "empty body" }])
    )
  }
  let value: unknown
  try {
    value = JSON.parse(text) as unknown
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e)
    return Either.left(apiError(400, "invalid_json", `the body is not valid JSON: ${message}`, [{ path: "", message }]))
  }
  const deep = tooDeepAt(value, MAX_JSON_DEPTH)
  if (deep !== undefined) {
    const path = formatPath(fieldOf(deep))
    const message = `nested deeper than ${MAX_JSON_DEPTH} levels of objects and arrays`
    return Either.left(
      apiError(400, "invalid_request", `invalid request (1 problem): ${path === "" ? "body" : path}: ${message}`, [{
        path,
        message
      }])
    )
  }
  return Either.right(value)
}

/** The path of the first object or array deeper than `limit` levels (the body is level 1); iterative. */
export const tooDeepAt = (value: unknown, limit: number): ReadonlyArray<PropertyKey> | undefined => {
  const stack: Array<{ readonly value: unknown; readonly depth: number; readonly path: ReadonlyArray<PropertyKey> }> = [
    { value, depth: 1, path: [] }
  ]
  while (stack.length > 0) {
    const { value: v, depth, path } = stack.pop()!
    if (typeof v !== "object" || v === null) continue
    if (depth > limit) return path
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], depth: depth + 1, path: [...path, i] })
    } else {
      const keys = Object.keys(v)
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push({ value: (v as Record<string, unknown>)[keys[i]!], depth: depth + 1, path: [...path, keys[i]!] })
      }
    }
  }
  return undefined
}

/**
 * A path cut to the field of the request shape that holds it: `hits[3].extra.a.a…` → `hits[3].extra`,
 * `requests[1].query.x.…` → `requests[1].query.x`.
 */
const fieldOf = (path: ReadonlyArray<PropertyKey>): ReadonlyArray<PropertyKey> => {
  let i = path[0] === "requests" && typeof path[1] === "number" ? 2 : 0
  if (path[i] === "hits" && typeof path[i + 1] === "number") i += 3
  else if (path[i] === "query" || path[i] === "eval") i += 2
  else i += 1
  return path.slice(0, i)
}

/** `["hits", 0, "id"]` → `hits[0].id`. */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((acc, key) => {
    if (typeof key === "number") return `${acc}[${key}]`
    const name = String(key)
    return acc === "" ? name : `${acc}.${name}`
  }, "")

const EXPECTED = /^Expected (.+), actual (.+)$/s

/**
 * A type as Effect's parser writes it, in words for a client: `string` → `a string`,
 * `{ readonly … }` → `an object`, `ReadonlyArray<Hit>` → `an array` (messages the schemas already
 * word themselves, such as `a positive number`, pass as they are).
 */
export const typeInWords = (type: string): string => {
  const t = type.trim()
  if (t === "string") return "a string"
  if (t === "number") return "a number"
  if (t === "boolean") return "true or false"
  if (t === "null") return "null"
  if (t.startsWith("{")) return "an object"
  if (/^(?:Readonly)?Array<|^readonly \[|^\[/.test(t) || /^NonEmptyReadonlyArray/.test(t)) return "an array"
  if (/^[A-Z][A-Za-z]*$/.test(t)) return "an object"
  return t
}

/** One parser message in words: `Expected string, actual 5` → `expected a string, got 5`; `is missing` → `is required`. */
const inWords = (message: string): string => {
  if (message === "is missing") return "is required"
  const m = EXPECTED.exec(message)
  return m === null ? message : `expected ${typeInWords(m[1]!)}, got ${m[2]}`
}

/**
 * Every problem of a schema violation, with its path; the members of a union failing at one path
 * are one problem (`Expected "exponential" or "linear", actual "cubic"`).
 */
export const problemsOf = (error: ParseResult.ParseError): ReadonlyArray<Problem> => {
  const byPath = new Map<string, Array<string>>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const path = formatPath(issue.path)
    const message = issue._tag === "Unexpected" ? "is not allowed here (unknown field)" : issue.message
    const messages = byPath.get(path) ?? []
    if (!messages.includes(message)) messages.push(message)
    byPath.set(path, messages)
  }
  return [...byPath].map(([path, messages]) => {
    const parsed = messages.map((m) => EXPECTED.exec(m))
    const actual = parsed[0]?.[2]
    const merged = messages.length > 1 && parsed.every((m) => m !== null && m[2] === actual)
      ? `expected ${parsed.map((m) => typeInWords(m![1]!)).join(" or ")}, got ${actual}`
      : messages.map(inWords).join("; ")
    return { path, message: merged }
  })
}

/** Decode with every problem listed (400 `invalid_request`). */
export const decode = <A, I>(schema: Schema.Schema<A, I>, input: unknown): Either.Either<A, BadRequest> =>
  Either.mapLeft(Schema.decodeUnknownEither(schema, { errors: "all" })(input), (error) => {
    const problems = problemsOf(error)
    const first = problems[0]
    const summary = first === undefined
      ? "the request does not match the schema"
      : `${first.path === "" ? "body" : first.path}: ${first.message}`
    return apiError(
      400,
      "invalid_request",
      `invalid request (${problems.length} problem${problems.length === 1 ? "" : "s"}): ${summary}`,
      problems
    )
  })
