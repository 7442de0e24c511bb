/**
 * The HTTP server of `rag-eval ui`: the handlers of `UiApi`, the guard every request passes, and
 * `start`.
 *
 * The guard, in order (SPEC §7b, "safe by default"):
 * 1. **Host**: on a loopback address, a request must name a loopback host (`127.0.0.1`, `localhost`,
 *    `[::1]`) in its Host header — a page of another site whose name was made to resolve to
 *    127.0.0.1 (DNS rebinding) gets 403, not the runs.
 * 2. **Token** (required by the CLI on any other address): `Authorization: Bearer <token>`, or the
 *    session cookie the page gets when opened once as `/?token=<token>` (HttpOnly, SameSite=Strict;
 *    the token itself never goes in the cookie, a random session id does). Compared in constant time.
 *    Else 401.
 * 3. **State-changing requests** (any method but GET and HEAD) need `X-Requested-By: rag-eval`, which
 *    a form or a link of another site cannot send; else 403. No CORS header is ever sent, so a
 *    script of another origin cannot read an answer or send that header.
 * 4. Every response: a Content-Security-Policy that lets the page load only its own script and style
 *    and talk only to this server, `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
 *    `X-Frame-Options: DENY`, and `Cache-Control: no-store`.
 * Run ids and case ids are looked up, never joined to paths; page assets are served from memory.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { isRecord } from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { VERSION } from "../domain/Version.js"
import { decode, parseJson, readBody } from "../server/Body.js"
import { tokensEqual } from "../server/Http.js"
import { UiApi } from "./Api.js"
import { LabelRequest, type UiError, uiError } from "./Domain.js"
import type { PageAssets } from "./PageAssets.js"
import type { Review } from "./Review.js"

export interface UiServerOptions {
  /** Address to listen on; loopback unless the CLI was given another (then `token` is set). */
  readonly host: string
  /** 0: any free port. */
  readonly port: number
  /** Required on every request when set. */
  readonly token?: Redacted.Redacted | undefined
  readonly review: Review
  readonly page: PageAssets
  /** Largest request body (a label): default 64 KiB. */
  readonly maxBodyBytes?: number | undefined
}

export const REQUESTED_BY = "x-requested-by"
export const REQUESTED_BY_VALUE = "rag-eval"
export const SESSION_COOKIE = "rag_eval_ui"

export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

/** The host name of a Host header (`127.0.0.1:7433` → `127.0.0.1`, `[::1]:80` → `[::1]`). */
const hostName = (header: string): string => {
  const h = header.trim().toLowerCase()
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1)
  const colon = h.lastIndexOf(":")
  return colon === -1 ? h : h.slice(0, colon)
}

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

const securityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy": CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "no-store"
}

const cookieValue = (header: string | undefined, name: string): string | undefined => {
  if (header === undefined) return undefined
  for (const part of header.split(";")) {
    const eq = part.indexOf("=")
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** Problems of HttpApi's own decode error (path and query parameters), in the API's error shape. */
const decodeProblems = (failure: unknown) => {
  const issues = isRecord(failure) && Array.isArray(failure["issues"]) ? failure["issues"] : []
  return issues.filter(isRecord).map((issue) => ({
    path: Array.isArray(issue["path"]) ? issue["path"].map(String).join(".") : "",
    message: typeof issue["message"] === "string" ? issue["message"] : "invalid"
  }))
}

const guard = (options: UiServerOptions, session: string) =>
  HttpApiBuilder.middleware(UiApi, (app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      yield* HttpApp.appendPreResponseHandler((_, response) =>
        Effect.sync(() => {
          let r = HttpServerResponse.setHeaders(response, securityHeaders)
          if (response.status === 401) r = HttpServerResponse.setHeader(r, "www-authenticate", "Bearer")
          return r
        })
      )
      const url = new URL(request.url, "http://localhost")
      // 1. Host.
      if (isLoopback(options.host)) {
        const host = request.headers.host
        if (host === undefined || !isLoopback(hostName(host))) {
          return yield* Effect.fail(uiError(
            403,
            "wrong_host",
            `this server answers to 127.0.0.1, localhost or [::1], not ${JSON.stringify(host ?? "")}`
          ))
        }
      }
      // 2. Token.
      if (options.token !== undefined) {
        const expected = Redacted.value(options.token)
        const header = request.headers.authorization
        const bearer = header === undefined ? undefined : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1]
        const cookie = cookieValue(request.headers.cookie, SESSION_COOKIE)
        const query = url.searchParams.get("token")
        const viaBearer = bearer !== undefined && tokensEqual(bearer, expected)
        const viaCookie = cookie !== undefined && tokensEqual(cookie, session)
        if (!viaBearer && !viaCookie) {
          if (query !== null && request.method === "GET" && tokensEqual(query, expected)) {
            // The page opened once with its token: a session cookie, and the token out of the address bar.
            url.searchParams.delete("token")
            return HttpServerResponse.empty({ status: 303 }).pipe(
              HttpServerResponse.setHeader("location", `${url.pathname}${url.search}`),
              HttpServerResponse.setHeader(
                "set-cookie",
                `${SESSION_COOKIE}=${session}; HttpOnly; SameSite=Strict; Path=/`
              )
            )
          }
          return yield* Effect.fail(uiError(
            401,
            "unauthorized",
            header === undefined && query === null
              ? "this server needs its token: open the page as /?token=<token>, or send Authorization: Bearer <token>"
              : "wrong token"
          ))
        }
      }
      // 3. State-changing requests.
      if (request.method !== "GET" && request.method !== "HEAD") {
        if (request.headers[REQUESTED_BY]?.trim().toLowerCase() !== REQUESTED_BY_VALUE) {
          return yield* Effect.fail(uiError(
            403,
            "missing_requested_by",
            `a ${request.method} request needs the header X-Requested-By: rag-eval`
          ))
        }
      }
      return yield* app.pipe(
        Effect.catchAllCause((cause): Effect.Effect<never, UiError> => {
          if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
          const failure = Option.getOrUndefined(Cause.failureOption<unknown>(cause))
          const tag = isRecord(failure) ? failure["_tag"] : undefined
          if (isRecord(failure) && "error" in failure && isRecord(failure["error"])) return Effect.failCause(cause)
          if (tag === "RouteNotFound") {
            return Effect.fail(uiError(404, "not_found", `no route ${request.method} ${url.pathname}`))
          }
          if (tag === "HttpApiDecodeError") {
            const problems = decodeProblems(failure)
            const first = problems[0]
            return Effect.fail(uiError(
              400,
              "invalid_request",
              `invalid request: ${first === undefined ? "bad parameters" : `${first.path}: ${first.message}`}`,
              problems
            ))
          }
          return Console.error(
            `rag-eval ui: internal error on ${request.method} ${url.pathname}:\n${Cause.pretty(cause)}`
          )
            .pipe(Effect.zipRight(Effect.fail(uiError(500, "internal_error", "internal error; see the server's log"))))
        })
      )
    }))

const handlers = (options: UiServerOptions) => {
  const { review, page } = options
  const maxBody = options.maxBodyBytes ?? 64 * 1024
  const runs = HttpApiBuilder.group(UiApi, "runs", (h) =>
    h
      .handle("listRuns", ({ urlParams }) => review.listRuns(urlParams))
      .handle("getRun", ({ path, urlParams }) => review.runDetail(path.id, urlParams.iteration))
      .handle("listCases", ({ path, urlParams }) => review.listCases(path.id, urlParams))
      .handle("getCase", ({ path, urlParams }) => review.getCase(path.id, path.caseId, urlParams.iteration))
      .handle("queue", ({ path, urlParams }) => review.queue(path.id, urlParams))
      .handle("agreement", ({ path }) => review.getAgreement(path.id))
      .handle("listLabels", ({ path }) => review.listLabels(path.id))
      .handleRaw("addLabel", ({ path, request }) =>
        Effect.gen(function*() {
          // The body read under a size limit (413) and decoded with every problem listed (400), as serve reads its own.
          const body = yield* readBody(NodeHttpServerRequest.toIncomingMessage(request), maxBody)
          const json = yield* Either.match(parseJson(body), { onLeft: Effect.fail, onRight: Effect.succeed })
          const label = yield* Either.match(decode(LabelRequest, json), {
            onLeft: Effect.fail,
            onRight: Effect.succeed
          })
          return yield* review.addLabel(path.id, label)
        }))
      .handle("compare", ({ urlParams }) => review.compare(urlParams)))
  const system = HttpApiBuilder.group(UiApi, "system", (h) =>
    h
      .handle("health", () =>
        Effect.map(review.catalog.scan, (s) => ({
          status: "ok" as const,
          version: VERSION,
          runs: s.runs.length,
          user: review.user,
          readOnly: false
        })))
      .handle("openapi", () => Effect.sync(() => OpenApi.fromApi(UiApi))))
  const pageGroup = HttpApiBuilder.group(UiApi, "page", (h) =>
    h
      .handleRaw("index", () =>
        Effect.succeed(HttpServerResponse.text(page.html, { contentType: "text/html; charset=utf-8" })))
      .handleRaw("asset", ({ path }) => {
        const asset = page.assets.get(path.name)
        return asset === undefined
          ? Effect.fail(uiError(404, "not_found", `no asset ${JSON.stringify(path.name)}`))
          : Effect.succeed(HttpServerResponse.text(asset.body, { contentType: asset.contentType }))
      }))
  return HttpApiBuilder.api(UiApi).pipe(Layer.provide([runs, system, pageGroup]))
}

export interface RunningUi {
  /** `http://127.0.0.1:7433` */
  readonly url: string
  readonly port: number
  /** Stop accepting, let requests in flight finish (at most 2 s), close the connections. */
  readonly stop: Effect.Effect<void>
}

/** Listens until the enclosing scope closes (which stops the server first). */
export const start = (options: UiServerOptions): Effect.Effect<RunningUi, ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const server = Http.createServer({ requestTimeout: 30_000, headersTimeout: 30_000 })
    const session = randomBytes(32).toString("base64url")
    const app = HttpApiBuilder.serve().pipe(
      Layer.provide(guard(options, session)),
      Layer.provide(handlers(options)),
      Layer.provide(NodeHttpServer.layer(() => server, { host: options.host, port: options.port }))
    )
    const closed = yield* Deferred.make<void>()
    let stopping = false
    const stop = Effect.gen(function*() {
      if (!stopping) {
        stopping = true
        server.close(() => Deferred.unsafeDone(closed, Effect.void))
        server.closeIdleConnections()
      }
      const done = yield* Deferred.await(closed).pipe(Effect.interruptible, Effect.timeout(2000), Effect.option)
      if (Option.isNone(done)) server.closeAllConnections()
      yield* options.review.close
    })
    yield* Effect.addFinalizer(() => stop)
    yield* Layer.build(app)
    const address = server.address() as AddressInfo
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address
    return { url: `http://${host}:${address.port}`, port: address.port, stop }
  })
