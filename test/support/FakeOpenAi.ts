/**
 * A fake OpenAI-compatible chat-completions server: real HTTP on 127.0.0.1 (ephemeral port), so
 * provider code is tested through the real `openai` SDK and its fetch stack. Used by the tests and
 * by `bench/` (it must stay cheap per request and handle many keep-alive connections).
 *
 * - `POST /v1/chat/completions` (the base URL is `url`); everything else is a 404, as a wrong
 *   `--base-url` meets on a real server.
 * - Replies are chosen per call: by `replyFor(request)` when it chooses, then from `script` (in
 *   order), then at random from `faults` (fractions, seeded PRNG so runs are reproducible),
 *   otherwise `"ok"`.
 * - `"ok"` answers with `answer(request)`; the default finds the response_format JSON schema's
 *   `score` enum and answers its maximum (plus `confidence: 5` when required), so end-to-end runs
 *   decode cleanly.
 * - Every request (path, headers, parsed body) is recorded unless `record: false`.
 *
 * Hostile like a real API, when asked:
 * - `limit`: a token bucket per server (continuous refill at `rpm`/60 a second, `burst` capacity,
 *   optionally a `tpm` bucket too), as OpenAI, Mistral and most gateways limit. A request that finds
 *   the bucket empty gets a 429 (`Retry-After` in whole seconds, rounded up, and/or `retry-after-ms`)
 *   and consumes nothing — or, with `chargeRejected`, one request's worth like an accepted one (the
 *   bucket goes into debt), as OpenAI counts "unsuccessful requests" against the limit. With
 *   `headers`, every answer carries OpenAI's `x-ratelimit-*` headers as the buckets were when the
 *   request was counted: `limit` = the bucket's capacity (`"minute"`: the per-minute figure, larger
 *   than the bucket it refills), `remaining` = whole tokens left, `reset` = time until full
 *   ("1s", "120ms", "6m0s").
 * - `apiKey`: requests without `Authorization: Bearer <apiKey>` get OpenAI's 401.
 * - `models`: a model not in the list gets OpenAI's 404 `model_not_found`.
 * - `structuredOutput`: what `response_format` the server accepts (`json_schema` — the default —
 *   also accepts `json_object`; `json_object` rejects json_schema with a 400; `none` rejects both).
 * Checks run in the order a real API runs them: key, model, rate limit, request format.
 *
 * Batch APIs (`--batch`), both shapes: OpenAI's `POST /v1/files` (multipart, purpose batch),
 * `POST /v1/batches`, `GET /v1/batches[/{id}]`, `GET /v1/files/{id}/content`; Mistral's
 * `POST /v1/batch/jobs`, `GET /v1/batch/jobs[/{id}]`. A batch moves on each status check:
 * validating → in_progress (for `batch.steps` checks) → completed (QUEUED → RUNNING → SUCCESS for
 * Mistral), or stays in progress while `batch.hold`, or ends `batch.outcome` ("expired" or "failed"
 * — having answered only its first `batch.answerFirst` requests). Each request line is answered as
 * a synchronous call would be (the same `script`, `faults` and `answer`): "ok" and "malformed" go to
 * the output file, "bad_request" (400) and the other faults (500) to the error file.
 *
 * `echo` (as careless servers do, on purpose): every reply — the reasoning of an answer, an extra
 * claim of an extraction, a malformed or HTML body, a batch's output and error lines — and every
 * error body (4xx/5xx) repeats the secrets the request carried (its Authorization header, the
 * credentials after its scheme word, the base64 of each) and the `echo` texts given (and their
 * base64): so a test can check that none of them reaches a file or a log.
 *
 * `promptCache`: report `usage.prompt_tokens_details.cached_tokens` for the prefix a request shares
 * with the last one that had the same system message (≈ 4 characters a token), as a provider's
 * prompt cache would; `cachedTokens` / `promptTokens` count what was reported.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { SCHEMA_MARKER } from "../../src/providers/OpenAiProvider.js"
import { mulberry32Floats } from "../../src/stats/Paired.js"

/** What one call gets back. */
export type FakeReply =
  | "ok"
  /** 429 with `Retry-After: <retryAfterSeconds>` (and `retry-after-ms` when `retryAfterMs` is set). */
  | "rate_limit"
  /** 500 with an error body. */
  | "server_error"
  /** 400 with an error body. */
  | "bad_request"
  /** 200 whose message content is not valid JSON (an unfinished object in prose). */
  | "malformed"
  /** Never respond; the socket stays open until the client aborts or the server closes. */
  | "hang"
  /** 200 with an HTML body (a proxy's error page), not JSON. */
  | "html"
  /** 401 invalid_api_key. */
  | "unauthorized"
  /** 404 with a plain "not found" body (a wrong base URL). */
  | "not_found"

/** Fractions of calls (0..1, summed ≤ 1) that get each fault; the rest get `"ok"`. */
export interface FaultMix {
  readonly rate_limit?: number
  readonly server_error?: number
  readonly bad_request?: number
  readonly malformed?: number
  readonly hang?: number
  readonly html?: number
}

/** A token-bucket rate limit, the way OpenAI, Mistral and most gateways enforce one. */
export interface FakeRateLimit {
  /** Requests per minute: the bucket refills continuously at rpm / 60 a second. */
  readonly rpm: number
  /** The bucket's capacity (requests that may arrive at once). Default: one second's worth. */
  readonly burst?: number
  /** Tokens per minute (prompt ≈ characters / 4, plus the reply's tokens); capacity one second's worth. */
  readonly tpm?: number
  /** Send `x-ratelimit-*` headers on every reply (`"minute"`: announcing rpm as the limit). Default false. */
  readonly headers?: boolean | "minute"
  /** A refused request costs a request's worth too (the bucket goes into debt). Default false. */
  readonly chargeRejected?: boolean
  /** How a 429 says when to come back. Default "seconds" (`Retry-After`, whole seconds, rounded up). */
  readonly retryAfter?: "seconds" | "ms" | "both" | "none"
}

export interface RecordedRequest {
  readonly path: string
  /** Lower-cased header names, as node:http gives them. */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  /** The parsed JSON body. */
  readonly body: ChatBody
}

/** The parts of a chat-completions body the fake looks at; everything else is kept as sent. */
export interface ChatBody {
  readonly model?: string
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content: unknown }>
  readonly response_format?: {
    readonly type?: string
    readonly json_schema?: { readonly name?: string; readonly schema?: unknown; readonly strict?: boolean }
  }
  readonly [key: string]: unknown
}

export interface FakeBehaviour {
  /** Delay before every reply (ms). Default 0. */
  readonly latencyMs: number
  /** Replies for the next calls, in order; consumed one per call, then `faults` applies. */
  readonly script: ReadonlyArray<FakeReply>
  readonly faults: FaultMix
  /** Seed of the PRNG that draws faults. */
  readonly seed: number
  /** `Retry-After` header value (seconds) on 429s. Default 1. */
  readonly retryAfterSeconds: number
  /** Also send `retry-after-ms` on 429s. */
  readonly retryAfterMs?: number | undefined
  /** Message content for an `"ok"` reply. */
  readonly answer: (request: RecordedRequest) => string
  /** The reply to a request chosen from its content (before `script` and `faults`); undefined: not chosen. */
  readonly replyFor?: ((request: RecordedRequest) => FakeReply | undefined) | undefined
  /** Text used for `"malformed"` replies. */
  readonly malformedText: string
  /** Error message in `"bad_request"` bodies. */
  readonly badRequestMessage: string
  readonly limit?: FakeRateLimit | undefined
  /** The key clients must send as `Authorization: Bearer <apiKey>`; any key when undefined. */
  readonly apiKey?: string | undefined
  /** Models served; any model when undefined. */
  readonly models?: ReadonlyArray<string> | undefined
  /** The most structured `response_format` accepted. Default "json_schema". */
  readonly structuredOutput?: "json_schema" | "json_object" | "none" | undefined
  /** How batches move (see the module comment). */
  readonly batch?: FakeBatchBehaviour | undefined
  /**
   * Report cached prompt tokens for repeated prefixes. Default false. `true`: any shared prefix
   * counts; `{ minTokens, block }`: only a prefix of at least `minTokens`, counted in whole blocks of
   * `block` tokens (OpenAI: 1024 and 128; Mistral: 64 and 64).
   */
  readonly promptCache?: boolean | { readonly minTokens: number; readonly block: number } | undefined
  /** Repeat the request's secrets and these texts (and the base64 of each) in every reply and error body (see the module comment). */
  readonly echo?: ReadonlyArray<string> | undefined
}

export interface FakeBatchBehaviour {
  /** Status checks a batch spends in progress before it ends. Default 1. */
  readonly steps?: number
  /** Keep every batch in progress (until `hold` is turned off). */
  readonly hold?: boolean
  /** How a batch ends. Default "completed". */
  readonly outcome?: "completed" | "expired" | "failed"
  /** With outcome expired/failed: how many of its requests it answered first. Default 0. */
  readonly answerFirst?: number
}

/** A batch as the fake keeps it. */
export interface FakeBatch {
  readonly id: string
  readonly flavour: "openai" | "mistral"
  readonly inputFileId: string
  readonly requests: number
  status: string
  checks: number
  outputFileId?: string | undefined
  errorFileId?: string | undefined
  completed: number
  failed: number
}

export interface FakeOpenAiOptions extends Partial<FakeBehaviour> {
  /** Record every request (default true). Turn off in benchmarks to keep memory flat. */
  readonly record?: boolean
}

export interface FakeOpenAi {
  /** Base URL to give the SDK, e.g. `http://127.0.0.1:40123/v1`. */
  readonly url: string
  /** `http://127.0.0.1:<port>` without a base path. */
  readonly origin: string
  /** Chat-completion calls received so far (including faulted and hanging ones, and preflights). */
  readonly calls: number
  /** Of those, the judge's preflight requests (one tiny request before judging). */
  readonly preflights: number
  /** `calls` less the preflights: the calls made for judgments. */
  readonly judgeCalls: number
  /** Hanging calls the client gave up on (closed the connection). */
  readonly abandoned: number
  /** Replies sent so far, by kind. */
  readonly replies: Readonly<Record<FakeReply, number>>
  /** 429s sent because the token bucket was empty (not scripted or drawn ones). */
  readonly limited: number
  /** Arrival times (performance.now()) of the calls that got an "ok" answer. */
  readonly okTimes: ReadonlyArray<number>
  /** Chat-completion calls for judgments (not preflights) answered "ok": the calls a user pays for. */
  readonly paidJudgeCalls: number
  /** The most chat-completion calls open at once (counted exactly, from arrival to the response's end). */
  readonly peakInFlight: number
  readonly requests: ReadonlyArray<RecordedRequest>
  /** `requests` less the preflights. */
  readonly judgeRequests: ReadonlyArray<RecordedRequest>
  /** Change behaviour at runtime; a new `script` replaces the remaining one, a new `seed` restarts the PRNG. */
  readonly setBehaviour: (behaviour: Partial<FakeBehaviour>) => void
  /** Forget recorded requests and counters (the behaviour stays). */
  readonly reset: () => void
  /** Stop listening and drop every open connection (hanging ones too). */
  readonly close: () => Promise<void>
  /** Request files uploaded (`POST /v1/files`). */
  readonly uploads: number
  /** Batches created, in order. */
  readonly batches: ReadonlyArray<FakeBatch>
  /** Request lines in every batch created (a call submitted twice counts twice). */
  readonly batchRequests: number
  /** Custom ids of every request line submitted, in order (duplicates kept). */
  readonly batchCustomIds: ReadonlyArray<string>
  /** Prompt tokens reported (synchronous and batch replies), and of those reported as cached. */
  readonly promptTokens: number
  readonly cachedTokens: number
}

/** Seeded uniform floats (mulberry32): fault fractions drawn reproducibly. */
const prng = mulberry32Floats

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** What an echoing server repeats of a request (see `echo`): its Authorization and the `extra` texts, each with its base64. */
const echoOf = (authorization: unknown, extra: ReadonlyArray<string>): string => {
  const values: Array<string> = []
  if (typeof authorization === "string" && authorization !== "") {
    values.push(authorization)
    const space = authorization.indexOf(" ")
    if (space !== -1) values.push(authorization.slice(space + 1))
  }
  values.push(...extra)
  return values.flatMap((v) => [v, Buffer.from(v, "utf8").toString("base64")]).join(" | ")
}

/** An answer's content with the echo in it: in each reasoning, as one more claim; appended to text that is not JSON. */
const withEcho = (content: string, echo: string): string => {
  if (echo === "") return content
  let json: unknown
  try {
    json = JSON.parse(content)
  } catch {
    return `${content} (echo: ${echo})`
  }
  if (!isRecord(json)) return `${content} (echo: ${echo})`
  const said = (r: unknown) => `${typeof r === "string" ? r : ""} (echo: ${echo})`
  const out: Record<string, unknown> = { ...json }
  if ("reasoning" in out) out.reasoning = said(out.reasoning)
  if (Array.isArray(out.claims)) out.claims = [...out.claims, `The server echoed ${echo}.`]
  if (Array.isArray(out.grades)) {
    out.grades = out.grades.map((g) => isRecord(g) ? { ...g, reasoning: said(g.reasoning) } : g)
  }
  return JSON.stringify(out)
}

/**
 * Default answer: the maximum of the schema's `score` enum (0 when there is none), with
 * `confidence: 5` when the schema requires it. A listwise schema (`grades`: an array of entries with
 * a `hit` enum) gets one such entry for every hit number.
 */
export const defaultAnswer = (request: RecordedRequest): string => {
  const schema = request.body.response_format?.json_schema?.schema ?? schemaInPrompt(request)
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {}
  const grades = properties.grades
  if (isRecord(grades) && isRecord(grades.items)) {
    const item = grades.items
    const itemProperties = isRecord(item.properties) ? item.properties : {}
    // The item's number: `hit`, or the rubric's own item key (`claim`, `nugget`…).
    const key = Object.keys(itemProperties).find((k) =>
      k !== "score" && k !== "confidence" && isRecord(itemProperties[k]) &&
      Array.isArray((itemProperties[k] as { enum?: unknown }).enum)
    ) ?? "hit"
    const numberProperty = itemProperties[key]
    const numbers = isRecord(numberProperty) && Array.isArray(numberProperty.enum) ? numberProperty.enum : []
    return JSON.stringify({ grades: numbers.map((n) => ({ [key]: n, ...JSON.parse(entryAnswer(item)) as object })) })
  }
  if (isRecord(properties.claims)) return JSON.stringify({ claims: dataSentences(request, "text") })
  return entryAnswer(schema)
}

/** The sentences of the prompt's `<data name="…">` block: a claim extraction's stand-in. */
export const dataSentences = (request: RecordedRequest, name: string): Array<string> => {
  const user = String(request.body.messages?.find((m) => m.role === "user")?.content ?? "")
  const match = new RegExp(`<data name="${name}">\\n([\\s\\S]*?)\\n</data>`).exec(user)
  return match === null ? [] : match[1]!.split(/(?<=[.!?])\\s+/).map((s) => s.trim()).filter((s) => s !== "")
}

/** Without `json_schema` (json_object or prompt modes) the client puts the schema in the system message. */
const schemaInPrompt = (request: RecordedRequest): unknown => {
  const system = request.body.messages?.find((m) => m.role === "system")?.content
  if (typeof system !== "string") return undefined
  const at = system.indexOf(SCHEMA_MARKER)
  if (at === -1) return undefined
  try {
    return JSON.parse(system.slice(at + SCHEMA_MARKER.length).trim())
  } catch {
    return undefined
  }
}

const entryAnswer = (schema: unknown): string => {
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {}
  const scoreProperty = properties.score
  const values = isRecord(scoreProperty) && Array.isArray(scoreProperty.enum)
    ? scoreProperty.enum.filter((v): v is number => typeof v === "number")
    : []
  const score = values.length === 0 ? 0 : Math.max(...values)
  const required = isRecord(schema) && Array.isArray(schema.required) ? schema.required : []
  return JSON.stringify({
    reasoning: "fake judge: the answer is fully supported.",
    score,
    ...(required.includes("confidence") ? { confidence: 5 } : {}),
    ...(required.includes("evidence") ? { evidence: "" } : {})
  })
}

const defaults: FakeBehaviour = {
  latencyMs: 0,
  script: [],
  faults: {},
  seed: 42,
  retryAfterSeconds: 1,
  retryAfterMs: undefined,
  answer: defaultAnswer,
  malformedText: "Sure! Here is my verdict: {\"reasoning\": \"the answer looks fine\", \"score\": ",
  badRequestMessage:
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. Please reduce the length of the messages."
}

const FAULT_ORDER: ReadonlyArray<keyof FaultMix> = [
  "rate_limit",
  "server_error",
  "bad_request",
  "malformed",
  "hang",
  "html"
]

/** A duration as OpenAI writes it in `x-ratelimit-reset-*`: "120ms", "1.5s", "6m0s". */
export const openAiDuration = (ms: number): string => {
  if (ms < 1000) return `${Math.ceil(ms)}ms`
  const minutes = Math.floor(ms / 60_000)
  const seconds = (ms - minutes * 60_000) / 1000
  const s = Number.isInteger(seconds) ? String(seconds) : seconds.toFixed(3).replace(/0+$/, "")
  return minutes > 0 ? `${minutes}m${s}s` : `${s}s`
}

/** A continuously refilled bucket: `rate` units a millisecond, `capacity` at most. */
class Bucket {
  private level: number
  private at: number
  constructor(readonly rate: number, readonly capacity: number, now: number) {
    this.level = capacity
    this.at = now
  }
  private refill(now: number) {
    this.level = Math.min(this.capacity, this.level + (now - this.at) * this.rate)
    this.at = now
  }
  /**
   * Take `cost` units if they are there; else the milliseconds until they will be (`charge`: the
   * units are taken anyway, into debt, and counted in that wait).
   */
  take(now: number, cost: number, charge = false): number {
    this.refill(now)
    const need = Math.min(cost, this.capacity)
    if (this.level >= need) {
      this.level -= cost
      return 0
    }
    if (charge) this.level -= cost
    return (need - this.level + (charge ? cost : 0)) / this.rate
  }
  /** Add back (the reply used fewer tokens than charged) or charge more. */
  adjust(now: number, delta: number) {
    this.refill(now)
    this.level = Math.min(this.capacity, this.level - delta)
  }
  remaining(now: number): number {
    this.refill(now)
    return Math.max(0, Math.floor(this.level))
  }
  /** Milliseconds until the bucket is full again. */
  resetMs(now: number): number {
    this.refill(now)
    return (this.capacity - this.level) / this.rate
  }
}

/** The judge's preflight: the tiny request it makes before judging (see LlmJudge.ts). */
export const isPreflight = (body: ChatBody): boolean => {
  const system = body.messages?.find((m) => m.role === "system")?.content
  return typeof system === "string" && system.startsWith("You are checking that an evaluation judge is reachable.")
}

const messageChars = (body: ChatBody): number => {
  let n = 0
  for (const m of body.messages ?? []) n += typeof m.content === "string" ? m.content.length : 0
  return n
}

const emptyReplies = (): Record<FakeReply, number> => ({
  ok: 0,
  rate_limit: 0,
  server_error: 0,
  bad_request: 0,
  malformed: 0,
  hang: 0,
  html: 0,
  unauthorized: 0,
  not_found: 0
})

/** Start a fake server; `close()` it when done (or use `make` for a scoped one). */
export const start = (options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> => {
  const record = options.record ?? true
  let behaviour: FakeBehaviour = { ...defaults, ...options }
  let script: Array<FakeReply> = [...behaviour.script]
  let random = prng(behaviour.seed)
  let calls = 0
  let replies = emptyReplies()
  let requests: Array<RecordedRequest> = []
  let completionId = 0
  let abandoned = 0
  let closing = false
  let limited = 0
  let preflights = 0
  let okTimes: Array<number> = []
  let paidJudgeCalls = 0
  let inFlight = 0
  let peakInFlight = 0
  let promptTokens = 0
  let cachedTokens = 0
  const files = new Map<string, string>()
  /** The Authorization of the last Batch API request (what a batch's lines echo). */
  let batchAuthorization: unknown = undefined
  let batches: Array<FakeBatch> = []
  let batchCustomIds: Array<string> = []
  let uploads = 0
  let nextId = 0
  let requestBucket: Bucket | undefined
  let tokenBucket: Bucket | undefined
  const makeBuckets = () => {
    const limit = behaviour.limit
    const now = performance.now()
    requestBucket = limit === undefined
      ? undefined
      : new Bucket(limit.rpm / 60_000, limit.burst ?? Math.max(1, limit.rpm / 60), now)
    tokenBucket = limit?.tpm === undefined
      ? undefined
      : new Bucket(limit.tpm / 60_000, Math.max(1, limit.tpm / 60), now)
  }
  makeBuckets()

  const choose = (request: RecordedRequest): FakeReply => {
    const chosen = behaviour.replyFor?.(request)
    if (chosen !== undefined) return chosen
    const scripted = script.shift()
    if (scripted !== undefined) return scripted
    const faults = behaviour.faults
    let r = random()
    for (const kind of FAULT_ORDER) {
      const p = faults[kind] ?? 0
      if (r < p) return kind
      r -= p
    }
    return "ok"
  }

  /** OpenAI's `x-ratelimit-*` headers for the buckets' state now, when `limit.headers` is on. */
  const limitHeaders = (): Record<string, string> => {
    const mode = behaviour.limit?.headers
    if (mode === undefined || mode === false) return {}
    const now = performance.now()
    const out: Record<string, string> = {}
    if (requestBucket !== undefined) {
      out["x-ratelimit-limit-requests"] = String(
        mode === "minute" ? behaviour.limit!.rpm : Math.floor(requestBucket.capacity)
      )
      out["x-ratelimit-remaining-requests"] = String(requestBucket.remaining(now))
      out["x-ratelimit-reset-requests"] = openAiDuration(requestBucket.resetMs(now))
    }
    if (tokenBucket !== undefined) {
      out["x-ratelimit-limit-tokens"] = String(Math.floor(tokenBucket.capacity))
      out["x-ratelimit-remaining-tokens"] = String(tokenBucket.remaining(now))
      out["x-ratelimit-reset-tokens"] = openAiDuration(tokenBucket.resetMs(now))
    }
    return out
  }

  const send = (
    res: Http.ServerResponse,
    status: number,
    payload: string,
    headers: Record<string, string> = {},
    contentType = "application/json",
    limits = limitHeaders()
  ) => {
    res.writeHead(status, {
      "content-type": contentType,
      "content-length": Buffer.byteLength(payload),
      ...limits,
      ...headers
    })
    res.end(payload)
  }

  /** A 429 saying when to come back, as `limit.retryAfter` asks. */
  const tooMany = (res: Http.ServerResponse, waitMs: number, message: string) => {
    const mode = behaviour.limit?.retryAfter ?? "seconds"
    const headers: Record<string, string> = {}
    if (mode === "seconds" || mode === "both") headers["retry-after"] = String(Math.max(1, Math.ceil(waitMs / 1000)))
    if (mode === "ms" || mode === "both") headers["retry-after-ms"] = String(Math.max(1, Math.ceil(waitMs)))
    send(res, 429, errorBody(message, "requests"), headers)
  }

  const errorBody = (message: string, type: string, echo = "") =>
    JSON.stringify({
      error: { message: echo === "" ? message : `${message} (echo: ${echo})`, type, param: null, code: null }
    })
  /** The echo of a request's secrets (empty unless `echo` is set). */
  const echoFor = (headers: Http.IncomingHttpHeaders | RecordedRequest["headers"]): string =>
    behaviour.echo === undefined ? "" : echoOf(headers.authorization, behaviour.echo)

  /** The prompt tokens a provider's cache would serve: the prefix shared with the last request with the same system message. */
  const lastBySystem = new Map<string, string>()
  const cachedFor = (body: ChatBody): number => {
    const rule = behaviour.promptCache
    if (rule === undefined || rule === false) return 0
    const messages = body.messages ?? []
    const text = messages.map((m) => `${m.role}\n${typeof m.content === "string" ? m.content : ""}`).join("\n")
    const system = messages.find((m) => m.role === "system")?.content
    const key = typeof system === "string" ? system : ""
    const previous = lastBySystem.get(key)
    lastBySystem.set(key, text)
    if (previous === undefined) return 0
    let i = 0
    const n = Math.min(previous.length, text.length)
    while (i < n && previous.charCodeAt(i) === text.charCodeAt(i)) i++
    const tokens = Math.floor(i / 4)
    if (rule === true) return tokens
    return tokens < rule.minTokens ? 0 : Math.floor(tokens / rule.block) * rule.block
  }

  const completionObject = (body: ChatBody, content: string) => {
    const prompt = Math.ceil(messageChars(body) / 4)
    const cached = Math.min(prompt, cachedFor(body))
    promptTokens += prompt
    cachedTokens += cached
    return {
      id: `chatcmpl-fake-${++completionId}`,
      object: "chat.completion",
      created: 1_700_000_000,
      model: body.model ?? "fake",
      choices: [{
        index: 0,
        message: { role: "assistant", content, refusal: null },
        finish_reason: "stop",
        logprobs: null
      }],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: Math.ceil(content.length / 4),
        total_tokens: prompt + Math.ceil(content.length / 4),
        ...(behaviour.promptCache === undefined || behaviour.promptCache === false
          ? {}
          : { prompt_tokens_details: { cached_tokens: cached } })
      }
    }
  }

  const completion = (request: RecordedRequest, content: string): string =>
    JSON.stringify(completionObject(request.body, content))

  /** `limits`: the rate-limit headers as the request was counted (when it arrived). */
  const reply = (
    res: Http.ServerResponse,
    request: RecordedRequest,
    kind: FakeReply,
    limits?: Record<string, string>
  ) => {
    replies[kind]++
    const echo = echoFor(request.headers)
    switch (kind) {
      case "ok": {
        okTimes.push(performance.now())
        if (!isPreflight(request.body)) paidJudgeCalls++
        const content = withEcho(behaviour.answer(request), echo)
        // The token bucket was charged the prompt's estimate; the reply's tokens count too.
        tokenBucket?.adjust(performance.now(), Math.ceil(content.length / 4))
        return send(res, 200, completion(request, content), {}, "application/json", limits)
      }
      case "malformed":
        return send(res, 200, completion(request, withEcho(behaviour.malformedText, echo)))
      case "rate_limit": {
        const headers: Record<string, string> = { "retry-after": String(behaviour.retryAfterSeconds) }
        if (behaviour.retryAfterMs !== undefined) headers["retry-after-ms"] = String(behaviour.retryAfterMs)
        return send(res, 429, errorBody("Rate limit reached for requests", "requests", echo), headers)
      }
      case "server_error":
        return send(
          res,
          500,
          errorBody("The server had an error while processing your request.", "server_error", echo)
        )
      case "bad_request":
        return send(res, 400, errorBody(behaviour.badRequestMessage, "invalid_request_error", echo))
      case "html":
        return send(
          res,
          200,
          `<html><body><h1>502 Bad Gateway</h1><p>nginx${echo === "" ? "" : ` (echo: ${echo})`}</p></body></html>`,
          {},
          "text/html"
        )
      case "unauthorized":
        return send(
          res,
          401,
          JSON.stringify({
            error: {
              message:
                `Incorrect API key provided: sk-wr***ng. You can find your API key at https://platform.openai.com/account/api-keys.${
                  echo === "" ? "" : ` (echo: ${echo})`
                }`,
              type: "invalid_request_error",
              param: null,
              code: "invalid_api_key"
            }
          })
        )
      case "not_found":
        return send(res, 404, errorBody("Not found", "not_found", echo))
      case "hang":
        // The socket stays open until the client gives up (counted) or close() destroys it.
        res.once("close", () => {
          if (!closing) abandoned++
        })
        return
    }
  }

  // --- Batch APIs
  const readBody = (req: Http.IncomingMessage, done: (body: Buffer) => void) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => done(Buffer.concat(chunks)))
  }

  /** The `file` part of a multipart upload. */
  const filePart = (body: Buffer, contentType: string): string | undefined => {
    const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType)
    if (boundary === null) return undefined
    const text = body.toString("utf8")
    const delimiter = `--${boundary[1] ?? boundary[2]}`
    for (const part of text.split(delimiter)) {
      const headerEnd = part.indexOf("\r\n\r\n")
      if (headerEnd === -1 || !/name="file"/.test(part.slice(0, headerEnd))) continue
      return part.slice(headerEnd + 4).replace(/\r\n$/, "")
    }
    return undefined
  }

  const batchJson = (b: FakeBatch) =>
    b.flavour === "mistral"
      ? {
        id: b.id,
        object: "batch",
        input_files: [b.inputFileId],
        status: b.status,
        output_file: b.outputFileId ?? null,
        error_file: b.errorFileId ?? null,
        total_requests: b.requests,
        succeeded_requests: b.completed,
        failed_requests: b.failed
      }
      : {
        id: b.id,
        object: "batch",
        endpoint: "/v1/chat/completions",
        input_file_id: b.inputFileId,
        completion_window: "24h",
        status: b.status,
        output_file_id: b.outputFileId ?? null,
        error_file_id: b.errorFileId ?? null,
        request_counts: { total: b.requests, completed: b.completed, failed: b.failed }
      }

  /** Answer a batch's requests (the first `limit` of them) as synchronous calls would be answered. */
  const runBatch = (b: FakeBatch, limit: number) => {
    const echo = behaviour.echo === undefined ? "" : echoOf(batchAuthorization, behaviour.echo)
    const lines = (files.get(b.inputFileId) ?? "").split("\n").filter((l) => l.trim() !== "")
    const out: Array<string> = []
    const errors: Array<string> = []
    for (const raw of lines.slice(0, limit)) {
      const line = JSON.parse(raw) as { custom_id: string; body: ChatBody }
      const body = b.flavour === "mistral" ? { ...line.body, model: "fake" } : line.body
      const request: RecordedRequest = { path: "/v1/batch", headers: {}, body }
      const kind = choose(request)
      replies[kind]++
      const id = `batch_req_${++nextId}`
      if (kind === "ok" || kind === "malformed") {
        const content = withEcho(kind === "ok" ? behaviour.answer(request) : behaviour.malformedText, echo)
        out.push(
          JSON.stringify({
            id,
            custom_id: line.custom_id,
            response: { status_code: 200, request_id: id, body: completionObject(body, content) },
            error: null
          })
        )
        b.completed++
      } else {
        const status = kind === "bad_request" ? 400 : 500
        const message = `${
          kind === "bad_request"
            ? behaviour.badRequestMessage
            : "The server had an error while processing your request."
        }${echo === "" ? "" : ` (echo: ${echo})`}`
        errors.push(
          JSON.stringify({
            id,
            custom_id: line.custom_id,
            response: { status_code: status, request_id: id, body: { error: { message, type: "server_error" } } },
            error: null
          })
        )
        b.failed++
      }
    }
    if (out.length > 0) {
      b.outputFileId = `file-out-${++nextId}`
      files.set(b.outputFileId, out.join("\n") + "\n")
    }
    if (errors.length > 0) {
      b.errorFileId = `file-err-${++nextId}`
      files.set(b.errorFileId, errors.join("\n") + "\n")
    }
  }

  /** A status check moves a batch on (unless held). */
  const advance = (b: FakeBatch) => {
    const settings = behaviour.batch ?? {}
    const mistral = b.flavour === "mistral"
    const ended = mistral ? ["SUCCESS", "FAILED", "TIMEOUT_EXCEEDED"] : ["completed", "failed", "expired"]
    if (ended.includes(b.status)) return
    b.checks++
    if (settings.hold === true) {
      b.status = mistral ? "RUNNING" : "in_progress"
      return
    }
    if (b.checks <= (settings.steps ?? 1)) {
      b.status = mistral ? "RUNNING" : "in_progress"
      return
    }
    const outcome = settings.outcome ?? "completed"
    if (outcome === "completed") {
      runBatch(b, Infinity)
      b.status = mistral ? "SUCCESS" : "completed"
    } else {
      runBatch(b, settings.answerFirst ?? 0)
      b.status = outcome === "expired" ? (mistral ? "TIMEOUT_EXCEEDED" : "expired") : (mistral ? "FAILED" : "failed")
    }
  }

  /** Files and batches; false when the path is not one of theirs. */
  const batchRoute = (req: Http.IncomingMessage, res: Http.ServerResponse, path: string): boolean => {
    const method = req.method ?? "GET"
    if (path.startsWith("/v1/files") || path.startsWith("/v1/batch")) batchAuthorization = req.headers.authorization
    if (
      behaviour.apiKey !== undefined && (path.startsWith("/v1/files") || path.startsWith("/v1/batch")) &&
      req.headers.authorization !== `Bearer ${behaviour.apiKey}`
    ) {
      req.resume()
      send(res, 401, errorBody("Incorrect API key provided", "invalid_request_error"))
      return true
    }
    if (method === "POST" && path === "/v1/files") {
      readBody(req, (body) => {
        const content = filePart(body, String(req.headers["content-type"] ?? ""))
        if (content === undefined) return send(res, 400, errorBody("no file part", "invalid_request_error"))
        const id = `file-${++nextId}`
        files.set(id, content)
        uploads++
        send(
          res,
          200,
          JSON.stringify({
            id,
            object: "file",
            purpose: "batch",
            bytes: Buffer.byteLength(content),
            filename: "batch.jsonl"
          })
        )
      })
      return true
    }
    const content = /^\/v1\/files\/([^/]+)\/content$/.exec(path)
    if (method === "GET" && content !== null) {
      req.resume()
      const text = files.get(decodeURIComponent(content[1]!))
      if (text === undefined) send(res, 404, errorBody("No such file", "not_found"))
      else send(res, 200, text, {}, "application/octet-stream")
      return true
    }
    const collection = path === "/v1/batches" ? "openai" : path === "/v1/batch/jobs" ? "mistral" : undefined
    if (collection !== undefined && method === "POST") {
      readBody(req, (raw) => {
        let body: Record<string, unknown>
        try {
          body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>
        } catch {
          return send(res, 400, errorBody("request body is not JSON", "invalid_request_error"))
        }
        const fileId = collection === "mistral"
          ? (body.input_files as Array<string> | undefined)?.[0]
          : body.input_file_id as string | undefined
        const text = fileId === undefined ? undefined : files.get(fileId)
        if (fileId === undefined || text === undefined) {
          return send(res, 400, errorBody(`no such input file ${String(fileId)}`, "invalid_request_error"))
        }
        const lines = text.split("\n").filter((l) => l.trim() !== "")
        for (const l of lines) batchCustomIds.push((JSON.parse(l) as { custom_id: string }).custom_id)
        const b: FakeBatch = {
          id: `batch_${++nextId}`,
          flavour: collection,
          inputFileId: fileId,
          requests: lines.length,
          status: collection === "mistral" ? "QUEUED" : "validating",
          checks: 0,
          completed: 0,
          failed: 0
        }
        batches.push(b)
        send(res, 200, JSON.stringify(batchJson(b)))
      })
      return true
    }
    if (collection !== undefined && method === "GET") {
      req.resume()
      send(
        res,
        200,
        JSON.stringify({
          object: "list",
          data: batches.filter((b) => b.flavour === collection).reverse().map(batchJson),
          has_more: false
        })
      )
      return true
    }
    const one = /^\/v1\/(batches|batch\/jobs)\/([^/]+)$/.exec(path)
    if (one !== null && method === "GET") {
      req.resume()
      const b = batches.find((x) => x.id === decodeURIComponent(one[2]!))
      if (b === undefined) {
        send(res, 404, errorBody("No such batch", "not_found"))
        return true
      }
      advance(b)
      send(res, 200, JSON.stringify(batchJson(b)))
      return true
    }
    return false
  }
  // ---

  const server = Http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/"
    if (batchRoute(req, res, path)) return
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      req.resume()
      return send(res, 404, errorBody(`no route ${req.method ?? "?"} ${path}`, "not_found"))
    }
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      let body: unknown
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        return send(res, 400, errorBody("request body is not JSON", "invalid_request_error"))
      }
      if (!isRecord(body)) return send(res, 400, errorBody("request body is not an object", "invalid_request_error"))
      const request: RecordedRequest = { path, headers: req.headers, body: body as ChatBody }
      calls++
      inFlight++
      peakInFlight = Math.max(peakInFlight, inFlight)
      res.once("close", () => inFlight--)
      if (isPreflight(request.body)) preflights++
      if (record) requests.push(request)
      if (behaviour.apiKey !== undefined && req.headers.authorization !== `Bearer ${behaviour.apiKey}`) {
        return reply(res, request, "unauthorized")
      }
      const model = request.body.model
      if (behaviour.models !== undefined && !(typeof model === "string" && behaviour.models.includes(model))) {
        replies.not_found++
        return send(
          res,
          404,
          JSON.stringify({
            error: {
              message: `The model \`${String(model)}\` does not exist or you do not have access to it.`,
              type: "invalid_request_error",
              param: null,
              code: "model_not_found"
            }
          })
        )
      }
      let limits: Record<string, string> | undefined
      if (requestBucket !== undefined) {
        const now = performance.now()
        const estimate = Math.ceil(messageChars(request.body) / 4)
        const charge = behaviour.limit?.chargeRejected === true
        const waitRequests = requestBucket.take(now, 1, charge)
        const waitTokens = waitRequests > 0 || tokenBucket === undefined ? 0 : tokenBucket.take(now, estimate)
        if (waitTokens > 0 && !charge) requestBucket.adjust(now, -1)
        limits = limitHeaders()
        if (waitRequests > 0 || waitTokens > 0) {
          limited++
          replies.rate_limit++
          return tooMany(
            res,
            Math.max(waitRequests, waitTokens),
            waitRequests > 0 ? "Rate limit reached for requests" : "Rate limit reached for tokens"
          )
        }
      }
      const format = request.body.response_format?.type
      const accepted = behaviour.structuredOutput ?? "json_schema"
      if (
        (format === "json_schema" && accepted !== "json_schema") || (format === "json_object" && accepted === "none")
      ) {
        replies.bad_request++
        return send(
          res,
          400,
          JSON.stringify({
            error: {
              message: `Invalid parameter: 'response_format' of type '${format}' is not supported with this model.`,
              type: "invalid_request_error",
              param: "response_format",
              code: null
            }
          })
        )
      }
      const kind = choose(request)
      if (behaviour.latencyMs > 0 && kind !== "hang") {
        setTimeout(() => {
          if (!res.destroyed) reply(res, request, kind, limits)
        }, behaviour.latencyMs)
      } else {
        reply(res, request, kind, limits)
      }
    })
  })
  // Clients keep connections alive between calls; don't let the server drop them first.
  server.keepAliveTimeout = 30_000
  server.headersTimeout = 35_000
  server.requestTimeout = 0

  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject)
      const { port } = server.address() as AddressInfo
      const origin = `http://127.0.0.1:${port}`
      const fake: FakeOpenAi = {
        url: `${origin}/v1`,
        origin,
        get calls() {
          return calls
        },
        get preflights() {
          return preflights
        },
        get judgeCalls() {
          return calls - preflights
        },
        get abandoned() {
          return abandoned
        },
        get replies() {
          return replies
        },
        get limited() {
          return limited
        },
        get okTimes() {
          return okTimes
        },
        get paidJudgeCalls() {
          return paidJudgeCalls
        },
        get peakInFlight() {
          return peakInFlight
        },
        get requests() {
          return requests
        },
        get judgeRequests() {
          return requests.filter((r) => !isPreflight(r.body))
        },
        setBehaviour: (next) => {
          behaviour = { ...behaviour, ...next }
          if (next.script !== undefined) script = [...next.script]
          if (next.seed !== undefined) random = prng(next.seed)
          if ("limit" in next) makeBuckets()
        },
        reset: () => {
          calls = 0
          abandoned = 0
          limited = 0
          preflights = 0
          okTimes = []
          paidJudgeCalls = 0
          peakInFlight = inFlight
          promptTokens = 0
          cachedTokens = 0
          batches = []
          batchCustomIds = []
          uploads = 0
          replies = emptyReplies()
          requests = []
          makeBuckets()
        },
        get uploads() {
          return uploads
        },
        get batches() {
          return batches
        },
        get batchRequests() {
          return batches.reduce((n, b) => n + b.requests, 0)
        },
        get batchCustomIds() {
          return batchCustomIds
        },
        get promptTokens() {
          return promptTokens
        },
        get cachedTokens() {
          return cachedTokens
        },
        close: () =>
          new Promise<void>((done) => {
            closing = true
            server.close(() => done())
            server.closeAllConnections()
          })
      }
      resolve(fake)
    })
  })
}

/** A fake server for the life of the enclosing Scope. */
export const make = (options: FakeOpenAiOptions = {}): Effect.Effect<FakeOpenAi, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => start(options)),
    (fake) => Effect.promise(() => fake.close())
  )

/**
 * `defaultAnswer` with scores that depend on the prompt (the maximum, or one less), so a reply given
 * to the wrong task shows in the results.
 */
export const variedAnswer = (request: RecordedRequest) => {
  const answer = JSON.parse(defaultAnswer(request)) as { score?: number }
  if (typeof answer.score === "number") {
    const text = JSON.stringify(request.body.messages)
    let h = 0
    for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0
    answer.score = Math.max(1, answer.score - (h % 2))
  }
  return JSON.stringify(answer)
}
