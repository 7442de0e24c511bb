/**
 * The HTTP server of `rag-eval serve`: handlers of the `Api`, the layers they need, and `start`,
 * which listens and returns a graceful `drain`.
 *
 * Request path of an evaluation: bearer token (401) → body read under the size limit (413) →
 * JSON (400) → schema, every problem with its path (400) → a free evaluation slot (429 with
 * Retry-After) → judgments via the judge and the shared cache → metrics (502 when the LLM failed).
 *
 * Every response that is not a success — including unknown routes and bugs — is JSON of one shape
 * (`Domain.ts`). Shutdown: `drain` stops accepting connections, answers 503 to new requests on
 * open keep-alive connections, lets the requests in flight finish (their responses close the
 * connection), then closes what is left.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as FileSystem from "@effect/platform/FileSystem"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { isRecord } from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { createHash, timingSafeEqual } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { InputError } from "../domain/Errors.js"
import { VERSION } from "../domain/Version.js"
import * as Judgments from "../engine/Judgments.js"
import * as Shutdown from "../engine/Shutdown.js"
import type { Judge } from "../judges/Judge.js"
import type { JudgmentCache } from "../store/JudgmentCache.js"
import { Api, Authorization } from "./Api.js"
import { decode, parseJson, readBody } from "./Body.js"
import {
  type ApiError,
  apiError,
  type InternalError,
  type NotFound,
  type Problem,
  SearchBatchRequest,
  SearchRequest
} from "./Domain.js"
import * as Evaluate from "./Evaluate.js"
import { Evaluator } from "./Evaluate.js"
import * as FairShare from "./FairShare.js"
import * as Slots from "./Slots.js"
import { EvaluationSlots, type SlotsStats } from "./Slots.js"

export interface ServerOptions {
  readonly host: string
  /** `--listwise`: a query's hits judged in one call (see `EvaluatorOptions`). */
  readonly listwise?: boolean | undefined
  /** `--fields`: the hit fields the judge reads when a request does not say. */
  readonly fields?: ReadonlyArray<string> | undefined
  /** 0 = an ephemeral port. */
  readonly port: number
  readonly maxBodyBytes: number
  /** Evaluations judged at once. */
  readonly concurrency: number
  /** Evaluations allowed to wait for a slot (0: refuse at once when every slot is busy). */
  readonly queue: number
  /** Queries allowed in one batch request. */
  readonly maxBatch: number
  /** Hits allowed in one request, a batch's summed (default `defaults.maxHits`); more → 413. */
  readonly maxHits?: number | undefined
  /** How long a stop waits for requests in flight before closing their connections (default `defaults.shutdownGrace` s). */
  readonly shutdownGraceMs?: number | undefined
  /** Time a client has to send a whole request, headers and body (default `defaults.requestTimeout` s); slower → 408. */
  readonly requestTimeoutMs?: number | undefined
  /** Required bearer token; undefined: no authentication. */
  readonly token?: Redacted.Redacted | undefined
  readonly promptsDir?: string | undefined
}

import { defaults } from "./Defaults.js"
export { defaults } from "./Defaults.js"

export class ServerConfig extends Context.Tag("rag-eval/server/ServerConfig")<ServerConfig, {
  readonly maxBodyBytes: number
  readonly maxBatch: number
  readonly maxHits: number
}>() {}

// ---------------------------------------------------------------------------------------------
// Authentication

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest()

/** Constant-time comparison (hashing first makes both sides the same length). */
export const tokensEqual = (presented: string, expected: string): boolean =>
  timingSafeEqual(digest(presented), digest(expected))

/** The token check; with no token configured, every request passes. */
export const authorizationLayer = (token: Redacted.Redacted | undefined) =>
  Layer.succeed(Authorization, {
    bearer: () =>
      Effect.gen(function*() {
        if (token === undefined) return
        const request = yield* HttpServerRequest.HttpServerRequest
        const header = request.headers.authorization
        const presented = header === undefined ? undefined : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1]
        if (presented === undefined) {
          return yield* Effect.fail(apiError(
            401,
            "unauthorized",
            header === undefined
              ? "missing header Authorization: Bearer <token>"
              : "the Authorization header is not \"Bearer <token>\""
          ))
        }
        if (!tokensEqual(presented, Redacted.value(token))) {
          return yield* Effect.fail(apiError(401, "unauthorized", "wrong bearer token"))
        }
      })
  })

// ---------------------------------------------------------------------------------------------
// Handlers

/** The tag and message of a cause's failure, when it has a tagged one. */
const failureOf = (
  cause: Cause.Cause<unknown>
): { readonly _tag: unknown; readonly message: string | undefined } | undefined => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return undefined
  const value: unknown = failure.value
  if (typeof value !== "object" || value === null || !("_tag" in value)) return undefined
  return {
    _tag: value._tag,
    message: "message" in value && typeof value.message === "string" ? value.message : undefined
  }
}

const readRequest = <A, I>(
  request: HttpServerRequest.HttpServerRequest,
  schema: Schema.Schema<A, I>,
  config: ServerConfig["Type"]
) =>
  Effect.gen(function*() {
    const body = yield* readBody(NodeHttpServerRequest.toIncomingMessage(request), config.maxBodyBytes)
    const json = yield* Either.match(parseJson(body), { onLeft: Effect.fail, onRight: Effect.succeed })
    // Before the schema: counting is cheap, decoding thousands of hits is not.
    const hits = hitCount(json)
    if (hits > config.maxHits) {
      const message =
        `too many hits: ${hits} hits in this request, at most ${config.maxHits}; split it, or start the server with a larger --max-hits`
      return yield* Effect.fail(
        apiError(413, "too_many_hits", message, [{
          path: isRecord(json) && Array.isArray(json.requests) ? "requests" : "hits",
          message
        }])
      )
    }
    return yield* Either.match(decode(schema, json), { onLeft: Effect.fail, onRight: Effect.succeed })
  })

/** Hits in a request body as sent (before validation): `hits`, or the sum over a batch's `requests`. */
const hitCount = (json: unknown): number => {
  if (!isRecord(json)) return 0
  const one = (r: unknown) => (isRecord(r) && Array.isArray(r.hits) ? r.hits.length : 0)
  return Array.isArray(json.requests) ? json.requests.reduce((sum: number, r: unknown) => sum + one(r), 0) : one(json)
}

const prepared = (
  requests: ReadonlyArray<SearchRequest>,
  prefix: (i: number) => string,
  fields: ReadonlyArray<string>
) => {
  const problems: Array<Problem> = []
  const queries: Array<Evaluate.PreparedQuery> = []
  requests.forEach((r, i) =>
    Either.match(Evaluate.prepare(r, prefix(i), fields), {
      onLeft: (p) => problems.push(...p),
      onRight: (q) => queries.push(q)
    })
  )
  if (problems.length === 0) return Effect.succeed(queries)
  return Effect.fail(
    apiError(
      400,
      "invalid_request",
      `invalid request (${problems.length} problem${problems.length === 1 ? "" : "s"}): ${problems[0]!.path}: ${
        problems[0]!.message
      }`,
      problems
    )
  )
}

export const EvalLive = HttpApiBuilder.group(Api, "eval", (handlers) =>
  Effect.gen(function*() {
    const evaluator = yield* Evaluator
    const slots = yield* EvaluationSlots
    const config = yield* ServerConfig
    return handlers
      .handleRaw("search", ({ request }) =>
        Effect.gen(function*() {
          const body = yield* readRequest(request, SearchRequest, config)
          const [query] = yield* prepared([body], () => "", evaluator.fields)
          return yield* slots.run(evaluator.evaluate(query!))
        }))
      .handleRaw("searchBatch", ({ request }) =>
        Effect.gen(function*() {
          const body = yield* readRequest(request, SearchBatchRequest, config)
          if (body.requests.length > config.maxBatch) {
            const message =
              `at most ${config.maxBatch} requests in one batch (got ${body.requests.length}); split it, or start the server with a larger --max-batch`
            return yield* Effect.fail(apiError(400, "invalid_request", message, [{ path: "requests", message }]))
          }
          const queries = yield* prepared(body.requests, (i) => `requests[${i}]`, evaluator.fields)
          return yield* slots.run(evaluator.evaluateBatch(queries))
        }))
  }))

export const SystemLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const evaluator = yield* Evaluator
    const slots = yield* EvaluationSlots
    return handlers
      .handle("health", () =>
        Effect.sync(() => ({
          status: "ok" as const,
          version: VERSION,
          judge: { provider: evaluator.judge.provider, model: evaluator.judge.model, label: evaluator.judge.label },
          rubric: evaluator.rubric,
          evaluations: slots.stats()
        })))
      .handle("openapi", () => Effect.sync(() => OpenApi.fromApi(Api)))
  }))

// ---------------------------------------------------------------------------------------------
// Traffic: requests in flight, for the graceful stop

export interface Traffic {
  readonly active: () => number
  readonly draining: () => boolean
  readonly enter: () => void
  readonly leave: () => void
  readonly startDrain: () => void
  /** Completes once no request is in flight. */
  readonly idle: Effect.Effect<void>
}

export const makeTraffic = (): Traffic => {
  let active = 0
  let draining = false
  const waiters = new Set<() => void>()
  return {
    active: () => active,
    draining: () => draining,
    enter: () => {
      active++
    },
    leave: () => {
      active--
      if (active === 0) { for (const wake of waiters) wake() }
    },
    startDrain: () => {
      draining = true
    },
    idle: Effect.async<void>((resume) => {
      if (active === 0) return resume(Effect.void)
      const wake = () => {
        waiters.delete(wake)
        resume(Effect.void)
      }
      waiters.add(wake)
      return Effect.sync(() => waiters.delete(wake))
    })
  }
}

const describeRequest = (request: HttpServerRequest.HttpServerRequest) =>
  `${request.method} ${request.url.split("?")[0]}`

const isApiError = (u: unknown): u is ApiError =>
  typeof u === "object" && u !== null && "error" in u && typeof u.error === "object" && u.error !== null &&
  "status" in u.error

/**
 * Wraps every request inside the API (so its failures are still encoded by the API's error
 * schema): counts requests for the drain, refuses new ones while draining (503), turns failures
 * that are not API errors into the common shape — an unknown route (404), HttpApi's own decode
 * error (it can only come from encoding a response: a bug) and defects (500) — and adds the headers
 * some statuses need: Retry-After on 429, WWW-Authenticate on 401, Connection: close while draining.
 */
export const guardLayer = (traffic: Traffic, slots: EvaluationSlots["Type"]) =>
  HttpApiBuilder.middleware(Api, (app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      yield* HttpApp.appendPreResponseHandler((_, response) =>
        Effect.sync(() => {
          let decorated = response
          if (response.status === 429) {
            decorated = HttpServerResponse.setHeader(decorated, "retry-after", String(slots.retryAfterSeconds()))
          }
          if (response.status === 401) {
            decorated = HttpServerResponse.setHeader(decorated, "www-authenticate", "Bearer")
          }
          if (traffic.draining()) {
            decorated = HttpServerResponse.setHeader(decorated, "connection", "close")
          }
          return decorated
        })
      )
      if (traffic.draining()) return yield* Effect.fail(apiError(503, "shutting_down", "the server is shutting down"))
      traffic.enter()
      return yield* app.pipe(
        Effect.catchAllCause((cause): Effect.Effect<never, NotFound | InternalError> => {
          // Interruptions and the API's own errors go on to the API's error encoder as they are.
          if (
            Cause.isInterruptedOnly(cause) || isApiError(Option.getOrUndefined(Cause.failureOption<unknown>(cause)))
          ) return Effect.failCause(cause)
          const tagged = failureOf(cause)
          if (tagged?._tag === "RouteNotFound") {
            return Effect.fail(
              apiError(404, "not_found", `no route ${describeRequest(request)}; see GET /openapi.json`)
            )
          }
          return Console.error(`rag-eval serve: internal error on ${describeRequest(request)}:\n${Cause.pretty(cause)}`)
            .pipe(
              Effect.zipRight(Effect.fail(apiError(
                500,
                "internal_error",
                tagged?._tag === "HttpApiDecodeError"
                  ? `internal error: a response did not match its schema: ${tagged.message ?? ""}`
                  : "internal error; see the server's log"
              )))
            )
        }),
        Effect.ensuring(Effect.sync(traffic.leave))
      )
    }))

// ---------------------------------------------------------------------------------------------
// Layers and start

export const ApiLive = HttpApiBuilder.api(Api).pipe(Layer.provide([EvalLive, SystemLive]))

export interface RunningServer {
  /** `http://127.0.0.1:8080` */
  readonly url: string
  readonly port: number
  /** Stop accepting, let requests in flight finish, close the connections. Idempotent. */
  readonly drain: Effect.Effect<void>
  readonly traffic: Traffic
  /** Evaluations running and waiting now. */
  readonly stats: () => SlotsStats
}

/** How long the drain waits for idle keep-alive connections to close after the last request. */
const closeGraceMs = 2000

/**
 * Listen and serve until the enclosing scope closes; closing the scope drains first (so an
 * interrupted server still finishes its requests in flight). A stop waits at most the shutdown
 * grace for the requests in flight — a client trickling its body must not hold the process — then
 * closes their connections. Every request must arrive whole (headers and body) within the request
 * timeout, or it gets 408 and its connection is closed.
 */
export const start = (options: ServerOptions): Effect.Effect<
  RunningServer,
  ServeError | InputError,
  Scope.Scope | Judge | JudgmentCache | FileSystem.FileSystem
> =>
  Effect.gen(function*() {
    const requestTimeoutMs = options.requestTimeoutMs ?? defaults.requestTimeout * 1000
    const shutdownGraceMs = options.shutdownGraceMs ?? defaults.shutdownGrace * 1000
    const server = Http.createServer({
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      // How often node checks those timeouts (default 30 s: a 2 s timeout would act after 30).
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(requestTimeoutMs / 2)))
    })
    const traffic = makeTraffic()
    const slots = yield* Slots.make({ concurrency: options.concurrency, queue: options.queue })
    // The judging core over the judge and cache given: a stop reaches calls through the judge's own
    // gate (its `stop`), which fails what it has not started with the reason.
    const evaluator = yield* Evaluate.make({
      promptsDir: options.promptsDir,
      fairShare: FairShare.make(options.concurrency),
      listwise: options.listwise,
      fields: options.fields
    }).pipe(
      Effect.provide(Judgments.layer.pipe(Layer.provide(Shutdown.layerNever)))
    )
    const services = Layer.mergeAll(
      Layer.succeed(Evaluator, evaluator),
      Layer.succeed(EvaluationSlots, slots),
      Layer.succeed(ServerConfig, {
        maxBodyBytes: options.maxBodyBytes,
        maxBatch: options.maxBatch,
        maxHits: options.maxHits ?? defaults.maxHits
      }),
      authorizationLayer(options.token)
    )
    const app = HttpApiBuilder.serve().pipe(
      Layer.provide(guardLayer(traffic, slots)),
      Layer.provide(ApiLive),
      Layer.provide(services),
      Layer.provide(NodeHttpServer.layer(() => server, { host: options.host, port: options.port }))
    )
    yield* Layer.build(app)

    const closed = yield* Deferred.make<void>()
    let closing = false
    /** The grace runs from the first stop request: a drain run again (the finalizer after a second signal) does not restart it. */
    let graceEnds: number | undefined
    const drain = Effect.gen(function*() {
      traffic.startDrain()
      graceEnds ??= Date.now() + shutdownGraceMs
      if (!closing) {
        closing = true
        server.close(() => Deferred.unsafeDone(closed, Effect.void))
        server.closeIdleConnections()
      }
      // Interruptible inside: the drain also runs as a finalizer (uninterruptible), where a timeout
      // could not otherwise stop the wait — a second Ctrl+C would then hang for good.
      const idle = yield* traffic.idle.pipe(
        Effect.interruptible,
        Effect.timeout(Math.max(0, graceEnds - Date.now())),
        Effect.option
      )
      if (Option.isNone(idle)) {
        const n = traffic.active()
        yield* Console.error(
          `shutdown grace of ${shutdownGraceMs / 1000} s over: closing the connections of ${n} request${
            n === 1 ? "" : "s"
          } still in flight`
        )
        server.closeAllConnections()
      }
      server.closeIdleConnections()
      const done = yield* Deferred.await(closed).pipe(Effect.interruptible, Effect.timeout(closeGraceMs), Effect.option)
      if (Option.isNone(done)) server.closeAllConnections()
    })
    /**
     * A second stop signal interrupts the drain under way: close every connection now (the requests
     * still in flight end without an answer) instead of waiting out the rest of the grace.
     */
    const abort = Effect.gen(function*() {
      traffic.startDrain()
      if (!closing) {
        closing = true
        server.close(() => Deferred.unsafeDone(closed, Effect.void))
      }
      const n = traffic.active()
      if (n > 0) {
        yield* Console.error(
          `stopping now: closing the connections of ${n} request${n === 1 ? "" : "s"} still in flight`
        )
      }
      server.closeAllConnections()
      yield* Deferred.await(closed).pipe(Effect.interruptible, Effect.timeout(closeGraceMs), Effect.option)
    })
    // Runs before the server layer's own release (finalizers run in reverse order).
    // Interrupted while a drain was already under way (a second stop signal): abort. Interrupted
    // otherwise (a library's scope closed by its runtime's first SIGINT): drain, as a stop does.
    yield* Effect.addFinalizer((exit) => (Exit.isInterrupted(exit) && graceEnds !== undefined ? abort : drain))

    const address = server.address() as AddressInfo
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address
    return { url: `http://${host}:${address.port}`, port: address.port, drain, traffic, stats: slots.stats }
  })
