/**
 * The client for the user's live RAG service: one call = one HTTP attempt (POST the case's body,
 * read the answer to the end of the response), measured and classified. Retries, the rate gate and
 * the journal live above it (`Retry.ts`, the engine), as for judge calls (`LlmProvider`).
 *
 * - Transport: @effect/platform's `HttpClient` over node:http (`@effect/platform-node`
 *   NodeHttpClient, keep-alive agent). The project's own `providers/NodeFetch.ts` buffers a whole
 *   response before resolving — right for chat completions, but a streamed answer must be read as
 *   it arrives to time its first byte. Tracing spans and trace propagation are off for these
 *   requests: a span records the full URL and header values, and the user's service has no use for
 *   our trace ids.
 * - Headers: `accept: application/json, text/event-stream`, `content-type: application/json`, the
 *   user's `--target-header`s, and `Authorization: Basic …` for credentials in the URL
 *   (`http://user:key@host/…`, which node refuses to send as they are) unless a header sets
 *   Authorization.
 * - The response: `text/event-stream` is read as SSE, anything else as JSON (see `Answer.ts`); a body
 *   over 32 MiB is refused.
 * - Measured on Effect's `Clock` (so `TestClock` drives it in tests): `latencyMs` from just before
 *   the request is sent to the end of the body; `ttfbMs` to the first byte of the body (for a
 *   stream: its first event arriving; for an empty body: the headers). A streamed answer's TTFB is
 *   what its user waits before seeing anything.
 * - `timeoutMs` bounds the whole call, the stream included; on timeout the request is aborted (the
 *   platform's response aborts its request when interrupted, and when its body stream ends).
 * - Failures are `TargetError`s (see there); nothing in them holds a header value or a URL secret:
 *   every text from the server or the socket goes through the configuration's scrubber. Nor does an
 *   answer: the answer and the passages pass through the run's redactor with the configuration's
 *   secrets added (`domain/Redaction.ts`), so a service that echoes a token in its answer has it
 *   redacted before it is journaled, judged or reported.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import { formatBytes, Limits, overBytes } from "../domain/Limits.js"
import { Redaction } from "../domain/Redaction.js"
import { maskUrl } from "../domain/Secrets.js"
import { runWhile } from "../io/Streams.js"
import { causeCode, causeMessage, unreachable } from "../providers/ConnectionError.js"
import { splitCredentials } from "../providers/Endpoint.js"
import { parseRetryAfter } from "../providers/OpenAiProvider.js"
import { type AnswerPaths, compilePaths, type Reading, readJson, StreamReading, type Unreadable } from "./Answer.js"
import { requestBody, type TargetInput } from "./Request.js"
import { SseParser } from "./Sse.js"
import { identity as identityOf, scrubber, secretsOf, type TargetConfig } from "./TargetConfig.js"
import { TargetError, type TargetErrorKind } from "./TargetError.js"

/** One answer of the target, as the journal keeps it. */
export const TargetResponse = Schema.Struct({
  answer: Schema.String,
  /** The retrieved passages, when `--target-contexts` is set. */
  contexts: Schema.optional(Schema.Array(Schema.String)),
  /** Why there are no passages although `--target-contexts` is set (the path found nothing). */
  contextsNote: Schema.optional(Schema.String),
  /** From sending the request to the end of the body, ms. */
  latencyMs: Schema.Number,
  /** From sending the request to the first byte of the body, ms. */
  ttfbMs: Schema.Number,
  /** Whether the answer came as an event stream (SSE). */
  streamed: Schema.Boolean,
  /** Events read from the stream. */
  events: Schema.optional(Schema.Number),
  status: Schema.Number
})
export type TargetResponse = typeof TargetResponse.Type

export class TargetClient extends Context.Tag("rag-eval/TargetClient")<TargetClient, {
  readonly config: TargetConfig
  /** `TargetConfig.identity(config)`: what a response is keyed by. */
  readonly identity: string
  /** One HTTP attempt for one case. */
  readonly call: (input: TargetInput) => Effect.Effect<TargetResponse, TargetError>
}>() {}

/** Bodies larger than this are refused (a response is an answer and a few passages): `Limits.responseBytes`. */
export const maxBodyBytes = Limits.responseBytes
/** How much of an error body is read for its message. */
const errorBodyBytes = 8 * 1024
const excerptLength = 300

const statusText = (status: number): string => {
  switch (status) {
    case 401:
      return "the service wants credentials"
    case 403:
      return "the service refused these credentials"
    case 404:
      return "nothing answers at this URL"
    case 405:
      return "this URL does not take POST"
    case 410:
      return "this URL is gone"
    default:
      return `HTTP ${status}`
  }
}

/** The kind of failure an HTTP status is (2xx excluded). */
export const statusKind = (status: number): TargetErrorKind => {
  if (status === 429) return "rate_limited"
  if (status === 401 || status === 403) return "unauthorized"
  if (status === 404 || status === 405 || status === 410) return "not_found"
  if (status === 408) return "timeout"
  if (status >= 300 && status < 400) return "moved"
  if (status >= 400 && status < 500) return "rejected"
  return "server"
}

/** The bytes of a body, up to `limit` (then `over`, and the rest is not read), with the Clock time of the first. */
export const readBytes = <E>(body: Stream.Stream<Uint8Array, E>, limit: number) =>
  Effect.gen(function*() {
    const acc = { chunks: [] as Array<Uint8Array>, size: 0, firstByteAt: undefined as bigint | undefined, over: false }
    yield* runWhile(body, (chunk) =>
      Effect.map(acc.firstByteAt === undefined ? Clock.currentTimeNanos : Effect.succeed(acc.firstByteAt), (at) => {
        acc.firstByteAt = at
        if (acc.size + chunk.length > limit) {
          acc.over = true
          return false
        }
        acc.chunks.push(chunk)
        acc.size += chunk.length
        return true
      }))
    return acc
  })

/** A 2xx body read to its end (or to the first failure): what it said, and when its first byte and its end came (Clock). */
export interface BodyRead {
  readonly reading: Either.Either<Reading, Unreadable>
  readonly streamed: boolean
  readonly firstByteAt: bigint | undefined
  readonly endedAt: bigint
}

const MiB = (bytes: number) => `${bytes / 1024 / 1024} MiB`

/**
 * An answer, or a passage, larger than a test case's field may be (`Limits.fieldBytes`): the case's
 * failure, in words (it would be judged, recorded and reported like any field); undefined when within.
 */
const oversizedAnswer = (reading: Reading, limit = Limits.fieldBytes): string | undefined => {
  if (overBytes(reading.answer, limit)) {
    return `the answer is larger than ${formatBytes(limit)}, the most one field of a case may hold`
  }
  const at = reading.contexts?.findIndex((text) => overBytes(text, limit)) ?? -1
  return at === -1
    ? undefined
    : `passage ${at + 1} is larger than ${formatBytes(limit)}, the most one field of a case may hold`
}

/**
 * Reads a 2xx body: an event stream (`text/event-stream`) event by event as it arrives, anything
 * else as one JSON document (see `Answer.ts`). Stops at `limit` bytes, or at the first event that
 * settles the outcome (an error event, a passage that is not text).
 */
export const readBody = <E>(
  paths: AnswerPaths,
  contentType: string,
  body: Stream.Stream<Uint8Array, E>,
  limit = maxBodyBytes
): Effect.Effect<BodyRead, E> =>
  Effect.gen(function*() {
    const streamed = /^\s*text\/event-stream\b/i.test(contentType)
    if (!streamed) {
      const bytes = yield* readBytes(body, limit)
      const reading: Either.Either<Reading, Unreadable> = bytes.over
        ? Either.left({ kind: "malformed", detail: `the response is larger than ${MiB(limit)}` })
        : readJson(paths, Buffer.concat(bytes.chunks).toString("utf8"))
      return { reading, streamed, firstByteAt: bytes.firstByteAt, endedAt: yield* Clock.currentTimeNanos }
    }
    const parser = new SseParser()
    const decoder = new TextDecoder("utf-8")
    const fold = new StreamReading(paths)
    let size = 0
    let firstByteAt: bigint | undefined
    let stop: Unreadable | undefined
    yield* runWhile(body, (chunk) =>
      Effect.map(firstByteAt === undefined ? Clock.currentTimeNanos : Effect.succeed(firstByteAt), (at) => {
        firstByteAt = at
        size += chunk.length
        if (size > limit) {
          stop = { kind: "malformed", detail: `the event stream is larger than ${MiB(limit)}` }
          return false
        }
        for (const event of parser.feed(decoder.decode(chunk, { stream: true }))) {
          stop = fold.add(event)
          if (stop !== undefined) {
            return false
          }
        }
        return true
      }))
    if (stop === undefined) {
      for (const event of [...parser.feed(decoder.decode()), ...parser.end()]) {
        stop ??= fold.add(event)
      }
    }
    return {
      reading: stop === undefined ? fold.finish() : Either.left(stop),
      streamed,
      firstByteAt,
      endedAt: yield* Clock.currentTimeNanos
    }
  })

export const make = (config: TargetConfig): Effect.Effect<TargetClient["Type"], never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = (yield* HttpClient.HttpClient).pipe(
      HttpClient.withTracerPropagation(false),
      HttpClient.withTracerDisabledWhen(() => true)
    )
    const target = config.endpoint
    const run = yield* Redaction
    const redactor = run.with(secretsOf(config))
    const scrub = scrubber(config, run)
    const paths: AnswerPaths = compilePaths(config)
    const sent = splitCredentials(Redacted.value(config.url))
    const hasAuthorization = config.headers.some((h) => h.name.toLowerCase() === "authorization")
    const headerNames = config.headers.map((h) => h.name)

    const fail = (
      kind: TargetErrorKind,
      detail: string,
      extra: { readonly status?: number; readonly retryAfterMs?: number | undefined } = {}
    ) => new TargetError({ kind, target, detail: scrub(detail), ...extra })

    const clip = (text: string) => {
      const clean = scrub(text).replace(/\s+/g, " ").trim()
      return clean.length > excerptLength ? `${clean.slice(0, excerptLength)}…` : clean
    }

    const transportError = (e: HttpClientError.HttpClientError): TargetError => {
      if (e._tag === "RequestError" && e.reason === "InvalidUrl") return fail("unreachable", "invalid URL")
      const why = unreachable(e.cause)
      if (why !== undefined) return fail("unreachable", why)
      const code = causeCode(e.cause)
      const message = causeMessage(e.cause)
      return fail(
        "network",
        `the connection broke${e._tag === "ResponseError" ? " while reading the response" : ""}${
          code === undefined ? "" : ` (${code})`
        }${message === "" ? "" : `: ${message}`}`
      )
    }

    /** An error status: a short excerpt of its body for the message. */
    const statusError = (response: HttpClientResponse.HttpClientResponse): Effect.Effect<never, TargetError> =>
      Effect.gen(function*() {
        const status = response.status
        const kind = statusKind(status)
        const body = yield* readBytes(response.stream, errorBodyBytes).pipe(
          Effect.map((r) => Buffer.concat(r.chunks).toString("utf8")),
          Effect.orElseSucceed(() => "")
        )
        const said = clip(body)
        const tail = said === "" ? "" : `: ${said}`
        switch (kind) {
          case "rate_limited": {
            const headers = response.headers
            const retryAfterMs = parseRetryAfter(
              { get: (name) => headers[name.toLowerCase()] ?? null },
              yield* Clock.currentTimeMillis
            )
            return yield* fail(
              kind,
              `too many requests${
                retryAfterMs === undefined ? "" : ` (Retry-After ${Math.round(retryAfterMs)} ms)`
              }${tail}`,
              { status, retryAfterMs }
            )
          }
          case "unauthorized":
            return yield* fail(
              kind,
              `${statusText(status)}${
                headerNames.length === 0
                  ? " (no --target-header was given)"
                  : ` (headers sent: ${headerNames.join(", ")})`
              }${tail}`,
              { status }
            )
          case "moved": {
            const location = response.headers["location"]
            return yield* fail(
              kind,
              `HTTP ${status}: the service redirects${location === undefined ? "" : ` to ${maskUrl(location)}`}`,
              { status }
            )
          }
          default:
            return yield* fail(kind, `${statusText(status)}${tail}`, { status })
        }
      })

    const unreadable = (u: Unreadable, status: number) => fail(u.kind, u.detail, { status })

    const readResponse = (
      response: HttpClientResponse.HttpClientResponse,
      started: bigint
    ): Effect.Effect<TargetResponse, TargetError> =>
      Effect.gen(function*() {
        const headersAt = yield* Clock.currentTimeNanos
        const body = yield* readBody(paths, response.headers["content-type"] ?? "", response.stream).pipe(
          Effect.mapError(transportError)
        )
        if (Either.isLeft(body.reading)) return yield* unreadable(body.reading.left, response.status)
        const oversized = oversizedAnswer(body.reading.right)
        if (oversized !== undefined) return yield* fail("shape", oversized, { status: response.status })
        const ms = (t: bigint) => Math.round(Number(t - started) / 1000) / 1000
        return {
          ...redactor.value(body.reading.right),
          latencyMs: ms(body.endedAt),
          ttfbMs: ms(body.firstByteAt ?? headersAt),
          streamed: body.streamed,
          status: response.status
        }
      })

    const call = (input: TargetInput): Effect.Effect<TargetResponse, TargetError> =>
      Effect.gen(function*() {
        const request = HttpClientRequest.post(sent.url).pipe(
          HttpClientRequest.setHeaders({
            accept: "application/json, text/event-stream",
            ...(sent.authorization === undefined || hasAuthorization ? {} : { authorization: sent.authorization }),
            ...Object.fromEntries(config.headers.map((h) => [h.name.toLowerCase(), Redacted.value(h.value)]))
          }),
          HttpClientRequest.bodyText(requestBody(config, input), "application/json")
        )
        const started = yield* Clock.currentTimeNanos
        const response = yield* client.execute(request).pipe(Effect.mapError(transportError))
        if (response.status < 200 || response.status > 299) return yield* statusError(response)
        return yield* readResponse(response, started)
      }).pipe(
        Effect.timeoutFail({
          duration: Duration.millis(config.timeoutMs),
          onTimeout: () =>
            fail(
              "timeout",
              `no complete answer within ${Duration.format(Duration.millis(config.timeoutMs))} (--target-timeout)`
            )
        })
      )

    return TargetClient.of({ config, identity: identityOf(config), call })
  })

/** The node:http client the target is called with: keep-alive sockets, closed with the layer. */
export const httpLayer: Layer.Layer<HttpClient.HttpClient> = NodeHttpClient.layerWithoutAgent.pipe(
  Layer.provide(NodeHttpClient.makeAgentLayer({ keepAlive: true }))
)

export const layer = (config: TargetConfig): Layer.Layer<TargetClient> =>
  Layer.effect(TargetClient, make(config)).pipe(Layer.provide(httpLayer))
