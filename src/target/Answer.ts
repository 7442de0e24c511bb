/**
 * Reading the answer (and the retrieved passages) out of a target's response, by the configured JSON
 * paths. A JSON response is read at once; a streamed one (`text/event-stream`) event by event, to
 * its end:
 *
 * - **With a delta path** (`--target-delta`; the openai-chat preset's `$.choices[0].delta.content`):
 *   the answer is the concatenation, in order, of the text at that path in every event. A stream
 *   without a single delta may still carry a whole answer at the answer path (some servers send the
 *   full message last): then the last event carrying it is the answer.
 * - **Without one** (generic): the answer is the one at the answer path in the *last* event that
 *   carries it (servers that stream progress and then a final `{"answer": …, "sources": […]}`).
 * - Passages: from the last event with something at the contexts path (other events carry none;
 *   when no event has any, there are none, with a note).
 * - `data: [DONE]` and events whose data is not JSON are skipped (counted); an event with an `error`
 *   field and no answer is the server failing mid-stream (retryable, like a 5xx).
 *
 * Passages (`--target-contexts`): every text the path selects (`$.sources[*].text`); a path that
 * selects one list of texts (`$.contexts`) gives its items. A path that finds nothing (the key is
 * absent, the list empty) gives no passages, with the reason in `contextsNote`; a passage that is not
 * text is a `shape` failure, like an answer that is missing or not text.
 */
import * as Either from "effect/Either"
import { isRecord } from "effect/Predicate"
import * as JsonPath from "./JsonPath.js"
import type { SseEvent } from "./Sse.js"

export interface AnswerPaths {
  readonly answer: JsonPath.JsonPath
  readonly contexts?: JsonPath.JsonPath | undefined
  readonly delta?: JsonPath.JsonPath | undefined
}

export const compilePaths = (
  config: { readonly answer: string; readonly contexts?: string | undefined; readonly delta?: string | undefined }
): AnswerPaths => {
  const compile = (text: string) =>
    Either.getOrThrowWith(JsonPath.parse(text), (e) => new Error(`unchecked JSON path: ${e}`))
  return {
    answer: compile(config.answer),
    contexts: config.contexts === undefined ? undefined : compile(config.contexts),
    delta: config.delta === undefined ? undefined : compile(config.delta)
  }
}

/** What a 2xx response said. */
export interface Reading {
  readonly answer: string
  /** Undefined when no contexts path is configured. */
  readonly contexts?: ReadonlyArray<string> | undefined
  /** Why there are no passages although a contexts path is configured (the path found nothing). */
  readonly contextsNote?: string | undefined
  /** Events read, for a streamed response. */
  readonly events?: number | undefined
}

/** Why a 2xx response gives no answer: not JSON / not SSE (`malformed`), not the expected shape (`shape`), or an error event (`server`). */
export interface Unreadable {
  readonly kind: "malformed" | "shape" | "server"
  readonly detail: string
}

const excerpt = (text: string, n = 120) => {
  const clean = text.replace(/\s+/g, " ").trim()
  return JSON.stringify(clean.length > n ? `${clean.slice(0, n)}…` : clean)
}

const shape = (detail: string): Either.Either<never, Unreadable> => Either.left({ kind: "shape", detail })

/** The answer text at the answer path, or why it is not there. */
const answerIn = (
  paths: AnswerPaths,
  json: unknown,
  what: string
): Either.Either<string, Unreadable & { readonly absent: boolean }> => {
  const found = JsonPath.readOne(paths.answer, json, what)
  if (Either.isLeft(found)) return Either.left({ kind: "shape", detail: found.left.reason, absent: found.left.absent })
  const value = found.right
  if (typeof value === "string") return Either.right(value)
  return Either.left({
    kind: "shape",
    absent: value === null,
    detail: `the answer at ${paths.answer.text} in ${what} is ${JsonPath.describeValue(value)}, not text`
  })
}

type ContextsFound = { readonly contexts: ReadonlyArray<string> } | { readonly note: string }

/** The passages at the contexts path: texts, nothing found (a note), or a `shape` failure. */
const contextsIn = (path: JsonPath.JsonPath, json: unknown, what: string): Either.Either<ContextsFound, Unreadable> => {
  const { matches, misses } = JsonPath.select(path, json, what)
  const typeMiss = misses.find((m) => !m.absent)
  if (typeMiss !== undefined) return shape(typeMiss.reason)
  const items = !path.many && matches.length === 1 && Array.isArray(matches[0]!.value)
    ? (matches[0]!.value as ReadonlyArray<unknown>).map((value, i) => ({ value, at: `${matches[0]!.at}[${i}]` }))
    : matches
  const texts: Array<string> = []
  for (const m of items) {
    if (typeof m.value === "string") texts.push(m.value)
    else if (typeof m.value === "number" && Number.isFinite(m.value)) texts.push(String(m.value))
    else {return shape(
        `the passage at ${m.at} in ${what} is ${
          JsonPath.describeValue(m.value)
        }, not text (point --target-contexts at its text, e.g. ${path.text}.text)`
      )}
  }
  if (texts.length === 0) return Either.right({ note: misses[0]?.reason ?? `${what} has no passages at ${path.text}` })
  return Either.right({ contexts: texts })
}

const withContexts = (answer: string, found: ContextsFound | undefined, events?: number): Reading => ({
  answer,
  ...(found === undefined
    ? {}
    : "contexts" in found
    ? { contexts: found.contexts }
    : { contexts: [], contextsNote: found.note }),
  ...(events === undefined ? {} : { events })
})

/** A JSON response body. */
export const readJson = (paths: AnswerPaths, text: string): Either.Either<Reading, Unreadable> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    return Either.left({
      kind: "malformed",
      detail: text.trim() === ""
        ? "the response body is empty"
        : `the response is not JSON (${(e as Error).message}); it starts with ${excerpt(text)}`
    })
  }
  const answer = answerIn(paths, json, "the response")
  if (Either.isLeft(answer)) return Either.left({ kind: answer.left.kind, detail: answer.left.detail })
  if (paths.contexts === undefined) return Either.right(withContexts(answer.right, undefined))
  return Either.map(contextsIn(paths.contexts, json, "the response"), (found) => withContexts(answer.right, found))
}

/** The message of an `error` field in a stream's event (OpenAI: `{"error": {"message": …}}`). */
const errorMessage = (json: unknown): string | undefined => {
  if (!isRecord(json) || !("error" in json) || json.error === null || json.error === undefined) return undefined
  const e = json.error
  if (typeof e === "string") return e
  if (isRecord(e) && typeof e.message === "string") return e.message
  return JSON.stringify(e)
}

/** Folds a stream's events into its answer (see the module comment); `finish` once the stream has ended. */
export class StreamReading {
  #events = 0
  #jsonEvents = 0
  #deltas: Array<string> = []
  #deltaCount = 0
  #whole: string | undefined = undefined
  #contexts: ContextsFound | undefined = undefined
  #failure: Unreadable | undefined = undefined
  #lastMiss: string | undefined = undefined
  #firstNonJson: string | undefined = undefined

  constructor(readonly paths: AnswerPaths) {}

  /** Takes one event; a failure (an error event, a passage that is not text) stops the reading. */
  add(event: SseEvent): Unreadable | undefined {
    if (this.#failure !== undefined) return this.#failure
    this.#events++
    const data = event.data.trim()
    if (data === "[DONE]" || data === "") return undefined
    let json: unknown
    try {
      json = JSON.parse(data)
    } catch {
      this.#firstNonJson ??= data
      return undefined
    }
    this.#jsonEvents++
    const what = `event ${this.#events}`
    if (this.paths.delta !== undefined) {
      for (const m of JsonPath.select(this.paths.delta, json, what).matches) {
        if (typeof m.value === "string") {
          this.#deltas.push(m.value)
          this.#deltaCount++
        }
      }
    }
    const whole = answerIn(this.paths, json, what)
    if (Either.isRight(whole)) this.#whole = whole.right
    else this.#lastMiss = whole.left.detail
    if (this.paths.contexts !== undefined) {
      // Only an event that has something at the contexts path is held to it: the others (deltas,
      // progress) simply carry no passages.
      if (JsonPath.select(this.paths.contexts, json, what).matches.length > 0) {
        const found = contextsIn(this.paths.contexts, json, what)
        if (Either.isLeft(found)) return this.#failure = found.left
        this.#contexts = found.right
      } else {
        this.#contexts ??= { note: `no event of the stream has passages at ${this.paths.contexts.text}` }
      }
    }
    const error = errorMessage(json)
    if (error !== undefined && Either.isLeft(whole)) {
      return this.#failure = { kind: "server", detail: `the stream sent an error at ${what}: ${excerpt(error, 300)}` }
    }
    return undefined
  }

  finish(): Either.Either<Reading, Unreadable> {
    if (this.#failure !== undefined) return Either.left(this.#failure)
    if (this.#deltaCount > 0) return Either.right(withContexts(this.#deltas.join(""), this.#contexts, this.#events))
    if (this.#whole !== undefined) return Either.right(withContexts(this.#whole, this.#contexts, this.#events))
    if (this.#events === 0) return Either.left({ kind: "malformed", detail: "the event stream ended without an event" })
    if (this.#jsonEvents === 0) {
      return Either.left({
        kind: "malformed",
        detail: `none of the stream's ${this.#events} event(s) holds JSON; the first is ${
          excerpt(this.#firstNonJson ?? "")
        }`
      })
    }
    const looked = this.paths.delta === undefined
      ? this.paths.answer.text
      : `${this.paths.delta.text} or ${this.paths.answer.text}`
    return Either.left({
      kind: "shape",
      detail: `the stream ended after ${this.#events} event(s) without ${looked}${
        this.#lastMiss === undefined ? "" : ` (${this.#lastMiss})`
      }`
    })
  }
}
