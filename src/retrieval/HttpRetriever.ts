/**
 * The `http` retriever: POSTs each case's query to the user's search endpoint and reads the ranked
 * hits from its JSON answer.
 *
 * - Body: a JSON template, default `{"query": "{{query}}", "top_k": {{topK}}}`. A placeholder inside
 *   a JSON string is replaced by the value escaped as string content; outside a string, by a JSON
 *   literal (a number, a quoted string, or `null` when unset). Variables: `query`, `id` (the case
 *   id), `topK`, `scoreThreshold`, `prefetchLimit`, `rerankTopN`, and any text/number field of the
 *   case's input object (e.g. `{{skill}}`).
 * - Hits: the list at `hitsPath` (dot path, e.g. `hits`, `result.hits`; empty = the whole answer).
 *   Per hit, the id, text and score are read at dot paths; defaults try `id`/`_id`,
 *   `text`/`fields.text`/`fields.chunk_text`/`chunk_text`/`content`, and `score`/`_score`. The whole
 *   hit object is kept as the passage's fields (so `eval.fields` can pick from it).
 * - Optional `timingsPath`: an object of numbers (ms) in the answer, recorded as latency sub-spans
 *   (e.g. `{ "retrieve": 12, "rerank": 30 }`); otherwise the measured time is the `retrieve` span.
 * - Timeout per request (default 30 s); network errors, 429 and 5xx are retried `retries` times
 *   (default 1) with exponential backoff. Whatever still fails becomes a `RetrievalError` recorded on
 *   the case (see `RetrievalError.ts`): the run goes on.
 * - The score threshold and top-k are applied to the answer's hits (`Params.ts`).
 * Headers (e.g. an Authorization token) are sent but never recorded. Credentials in the URL
 * (`http://user:pass@host/…`) are sent as HTTP Basic authentication (unless a header already sets
 * Authorization), since fetch refuses such URLs; the URL is recorded and shown with them masked,
 * and so are secret-looking query parameters (`Secrets.maskUrl`). What the endpoint answers (hits,
 * error bodies) passes through the run's redactor with the headers' and the URL's secrets added
 * (`domain/Redaction.ts`) before it is read: an endpoint echoing its token never gets it recorded.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { isRecord } from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import type { EvalCase, Passage } from "../domain/Case.js"
import { checkJsonTemplate, renderJsonTemplate } from "../domain/JsonTemplate.js"
import * as Redaction from "../domain/Redaction.js"
import { headerSecrets, type Redactor, urlSecrets } from "../domain/Redaction.js"
import { maskUrl, maskUrlsIn } from "../domain/Secrets.js"
import { Retriever } from "../engine/Retriever.js"
import { splitCredentials } from "../providers/Endpoint.js"
import { applyParams, paramsRecord, type RetrievalParams, uniqueIds } from "./Params.js"
import { RetrievalError } from "./RetrievalError.js"

export const defaultBody = "{\"query\": \"{{query}}\", \"top_k\": {{topK}}}"
/** Live retrievers return this many hits when no top-k is set. */
export const defaultTopK = 10
export const defaultTimeoutMs = 30_000

const defaultIdPaths = ["id", "_id"] as const
const defaultTextPaths = ["text", "fields.text", "fields.chunk_text", "chunk_text", "content"] as const
const defaultScorePaths = ["score", "_score"] as const

export interface HttpRetrieverOptions {
  readonly url: string
  /** JSON body template (see the module comment). */
  readonly body?: string | undefined
  /** Dot path of the hit list in the answer (default `hits`). */
  readonly hitsPath?: string | undefined
  readonly idField?: string | undefined
  readonly textField?: string | undefined
  readonly scoreField?: string | undefined
  /** Dot path of an object of latency sub-spans (ms) in the answer. */
  readonly timingsPath?: string | undefined
  readonly timeoutMs?: number | undefined
  /** Retries after network errors, 429 and 5xx (default 1). */
  readonly retries?: number | undefined
  /** Sent with every request, never recorded (may hold a token). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly params?: RetrievalParams | undefined
  /** The query text of a case (default: its question). */
  readonly query?: ((c: EvalCase) => string) | undefined
}

// ---------------------------------------------------------------------------------------------
// Body template

type TemplateValue = string | number | undefined

/**
 * Fills a JSON template: inside a JSON string a placeholder becomes escaped string content (unset →
 * empty), outside it a JSON literal (unset → `null`). See `domain/JsonTemplate.ts`.
 */
export const renderBody = (template: string, vars: Readonly<Record<string, TemplateValue>>): string =>
  renderJsonTemplate(template, vars)

/** Checks that a template gives valid JSON for a query full of characters that need escaping. */
export const checkBody = (template: string): Either.Either<string, string> =>
  checkJsonTemplate(template, "{\"query\": \"{{query}}\", \"top_k\": {{topK}}}", {
    query: "a \"quoted\" query\\ with\nnewline",
    id: "case-1",
    topK: 10,
    scoreThreshold: 0.5,
    prefetchLimit: 100,
    rerankTopN: 20
  })

// ---------------------------------------------------------------------------------------------
// Reading the answer

/** The value at a dot path (`result.hits`, `hits.0.id`); the root for an empty path. */
export const atPath = (value: unknown, path: string): unknown => {
  if (path === "") return value
  let current: unknown = value
  for (const key of path.split(".")) {
    if (Array.isArray(current) && /^\d+$/.test(key)) current = current[Number(key)]
    else if (isRecord(current) && Object.hasOwn(current, key)) current = current[key]
    else return undefined
  }
  return current
}

const describe = (
  u: unknown
) => (u === undefined
  ? "nothing"
  : u === null
  ? "null"
  : Array.isArray(u)
  ? "a list"
  : typeof u === "object"
  ? "an object"
  : `a ${typeof u}`)

const firstAt = (hit: unknown, paths: ReadonlyArray<string>): unknown => {
  for (const p of paths) {
    const v = atPath(hit, p)
    if (v !== undefined && v !== null) return v
  }
  return undefined
}

export interface SearchResult {
  readonly hits: ReadonlyArray<Passage>
  readonly timings?: Readonly<Record<string, number>> | undefined
}

/** The hits of a decoded answer, or what is wrong with its shape. */
export const readHits = (
  answer: unknown,
  options: Pick<HttpRetrieverOptions, "hitsPath" | "idField" | "textField" | "scoreField" | "timingsPath">
): Either.Either<SearchResult, string> => {
  const hitsPath = options.hitsPath ?? "hits"
  const list = atPath(answer, hitsPath)
  if (!Array.isArray(list)) {
    return Either.left(`expected a list of hits at "${hitsPath === "" ? "(root)" : hitsPath}", found ${describe(list)}`)
  }
  const idPaths = options.idField === undefined ? defaultIdPaths : [options.idField]
  const textPaths = options.textField === undefined ? defaultTextPaths : [options.textField]
  const scorePaths = options.scoreField === undefined ? defaultScorePaths : [options.scoreField]
  const ids: Array<string | undefined> = []
  const partial: Array<{ text: string; score: number | undefined; fields: Readonly<Record<string, unknown>> }> = []
  for (let i = 0; i < list.length; i++) {
    const hit: unknown = list[i]
    if (!isRecord(hit)) return Either.left(`hit ${i + 1} is ${describe(hit)}, expected an object`)
    const id = firstAt(hit, idPaths)
    const text = firstAt(hit, textPaths)
    if (typeof text !== "string" && typeof text !== "number") {
      return Either.left(`hit ${i + 1} has no text at ${textPaths.map((p) => `"${p}"`).join(" or ")}`)
    }
    const score = firstAt(hit, scorePaths)
    ids.push(typeof id === "string" || typeof id === "number" ? String(id) : undefined)
    partial.push({
      text: String(text),
      score: typeof score === "number" && Number.isFinite(score) ? score : undefined,
      fields: hit
    })
  }
  const unique = uniqueIds(ids)
  const hits = partial.map((h, i): Passage => ({
    id: unique[i]!,
    rank: i + 1,
    text: h.text,
    ...(h.score === undefined ? {} : { score: h.score }),
    fields: h.fields
  }))
  let timings: Record<string, number> | undefined
  if (options.timingsPath !== undefined) {
    const t = atPath(answer, options.timingsPath)
    if (isRecord(t)) {
      timings = {}
      for (const [k, v] of Object.entries(t)) if (typeof v === "number" && Number.isFinite(v)) timings[k] = v
    }
  }
  return Either.right({ hits, timings })
}

// ---------------------------------------------------------------------------------------------
// The call

export { splitCredentials }

/** The URL as recorded (normalised by the URL parser): userinfo and secret-looking parameter values masked. */
export const recordedUrl = (url: string): string => {
  try {
    return maskUrl(new URL(url).toString())
  } catch {
    return maskUrl(url)
  }
}

const textVars = (c: EvalCase): Record<string, TemplateValue> => {
  const vars: Record<string, TemplateValue> = {}
  for (const [k, v] of Object.entries(c.source)) {
    if (typeof v === "string" || (typeof v === "number" && Number.isFinite(v))) vars[k] = v
  }
  return vars
}

/** The secrets a search sends (its headers' values, its URL's credentials and secret parameters), as a redactor; one per options. */
const ownRedactors = new WeakMap<HttpRetrieverOptions, Redactor>()
const ownRedactor = (options: HttpRetrieverOptions): Redactor => {
  let found = ownRedactors.get(options)
  if (found === undefined) {
    found = Redaction.make([
      ...Object.values(options.headers ?? {}).flatMap((v) => headerSecrets(v)),
      ...urlSecrets(options.url)
    ])
    ownRedactors.set(options, found)
  }
  return found
}

const retriable = (e: RetrievalError) =>
  e.kind === "network" || (e.kind === "status" && e.status !== undefined && (e.status === 429 || e.status >= 500))

/** One search: the request, its timeout and retries, and the decoded hits. */
export const search = (
  options: HttpRetrieverOptions,
  vars: Readonly<Record<string, TemplateValue>>
): Effect.Effect<SearchResult, RetrievalError, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const run = yield* Redaction.Redaction
    const own = ownRedactor(options)
    /** What the endpoint sent, redacted of the run's secrets and of this search's own. */
    const redact = (text: string) => run.text(own.text(text))
    const timeoutMs = options.timeoutMs ?? defaultTimeoutMs
    const fail = (kind: RetrievalError["kind"], problem: string, extra: { status?: number; cause?: unknown } = {}) =>
      new RetrievalError({ retriever: "http", kind, problem, ...extra })
    const target = splitCredentials(options.url)
    const hasAuthorization = Object.keys(options.headers ?? {}).some((h) => h.toLowerCase() === "authorization")
    const request = HttpClientRequest.post(target.url).pipe(
      HttpClientRequest.setHeaders({
        accept: "application/json",
        ...(target.authorization === undefined || hasAuthorization ? {} : { authorization: target.authorization }),
        ...options.headers
      }),
      HttpClientRequest.bodyText(renderBody(options.body ?? defaultBody, vars), "application/json")
    )
    const once = Effect.gen(function*() {
      const response = yield* client.execute(request).pipe(
        Effect.mapError((e) =>
          fail("network", `cannot reach ${recordedUrl(options.url)}: ${maskUrlsIn(redact(e.message))}`)
        )
      )
      const text = redact(
        yield* response.text.pipe(
          Effect.mapError((e) => fail("network", `the answer could not be read: ${maskUrlsIn(redact(e.message))}`))
        )
      )
      if (response.status < 200 || response.status > 299) {
        const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 200)
        return yield* fail(
          "status",
          `HTTP ${response.status} from ${recordedUrl(options.url)}${excerpt === "" ? "" : `: ${excerpt}`}`,
          { status: response.status }
        )
      }
      const json = yield* Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (e) =>
          fail(
            "json",
            `the answer is not JSON (${(e as Error).message}); it starts with ${JSON.stringify(text.slice(0, 80))}`
          )
      })
      return yield* Either.match(readHits(json, options), {
        onLeft: (problem) => Effect.fail(fail("shape", problem)),
        onRight: Effect.succeed
      })
    }).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(timeoutMs),
        onTimeout: () => fail("timeout", `no answer from ${recordedUrl(options.url)} within ${timeoutMs} ms`)
      })
    )
    return yield* once.pipe(Effect.retry({
      schedule: Schedule.exponential(Duration.millis(200)).pipe(
        Schedule.intersect(Schedule.recurs(options.retries ?? 1))
      ),
      while: retriable
    }))
  })

/** What a case becomes after a live retrieval: its hits (pruned), or no hits and the failure. */
export const retrievedCase = (
  c: EvalCase,
  retriever: string,
  params: RetrievalParams,
  outcome: Either.Either<SearchResult, RetrievalError>,
  latencyMs: number
): EvalCase => {
  const latency = Math.round(latencyMs * 1000) / 1000
  if (Either.isLeft(outcome)) {
    const e = outcome.left
    return {
      ...c,
      passages: [],
      retrieval: {
        retriever,
        status: "failed",
        error: { kind: e.kind, message: e.message, status: e.status },
        latencyMs: latency
      }
    }
  }
  const applied = applyParams(outcome.right.hits, params)
  return {
    ...c,
    passages: applied.passages,
    retrieval: {
      retriever,
      status: "ok",
      latencyMs: latency,
      spans: outcome.right.timings ?? { retrieve: latency },
      candidates: applied.candidates,
      belowThreshold: applied.belowThreshold,
      beyondTopK: applied.beyondTopK
    }
  }
}

/** The http retriever over a given HttpClient layer (tests), else `make` with fetch. */
export const makeWith = (
  options: HttpRetrieverOptions,
  client: Layer.Layer<HttpClient.HttpClient>
): Retriever["Type"] => {
  const params: RetrievalParams = { ...options.params, topK: options.params?.topK ?? defaultTopK }
  const query = options.query ?? ((c: EvalCase) => c.question)
  return {
    name: "http",
    params: {
      url: recordedUrl(options.url),
      body: options.body ?? defaultBody,
      hitsPath: options.hitsPath ?? "hits",
      ...(options.idField === undefined ? {} : { idField: options.idField }),
      ...(options.textField === undefined ? {} : { textField: options.textField }),
      ...(options.scoreField === undefined ? {} : { scoreField: options.scoreField }),
      ...(options.timingsPath === undefined ? {} : { timingsPath: options.timingsPath }),
      timeoutMs: options.timeoutMs ?? defaultTimeoutMs,
      ...paramsRecord(params)
    },
    retrieve: (c) => {
      const vars: Record<string, TemplateValue> = {
        ...textVars(c),
        query: query(c),
        id: c.id,
        topK: params.topK,
        scoreThreshold: params.scoreThreshold,
        prefetchLimit: params.prefetchLimit,
        rerankTopN: params.rerankTopN
      }
      return search(options, vars).pipe(
        Effect.either,
        Effect.timed,
        Effect.map(([elapsed, outcome]) => retrievedCase(c, "http", params, outcome, Duration.toMillis(elapsed))),
        Effect.provide(client)
      )
    }
  }
}

export const make = (options: HttpRetrieverOptions): Retriever["Type"] => makeWith(options, FetchHttpClient.layer)

export const layer = (options: HttpRetrieverOptions): Layer.Layer<Retriever> => Layer.succeed(Retriever, make(options))
