/**
 * A fake OpenAI-compatible chat-completions server: real HTTP on 127.0.0.1 (ephemeral port), so
 * provider code is tested through the real `openai` SDK and its fetch stack. Used by the tests and
 * by `bench/` (it must stay cheap per request and handle many keep-alive connections).
 *
 * - `POST …/chat/completions` (any base path, e.g. `/v1`); everything else is a 404.
 * - Replies are chosen per call: first from `script` (in order), then at random from `faults`
 *   (fractions, seeded PRNG so runs are reproducible), otherwise `"ok"`.
 * - `"ok"` answers with `answer(request)`; the default finds the response_format JSON schema's
 *   `score` enum and answers its maximum (plus `confidence: 5` when required), so end-to-end runs
 *   decode cleanly.
 * - Every request (path, headers, parsed body) is recorded unless `record: false`.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

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

/** Fractions of calls (0..1, summed ≤ 1) that get each fault; the rest get `"ok"`. */
export interface FaultMix {
  readonly rate_limit?: number
  readonly server_error?: number
  readonly bad_request?: number
  readonly malformed?: number
  readonly hang?: number
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
  /** Text used for `"malformed"` replies. */
  readonly malformedText: string
  /** Error message in `"bad_request"` bodies. */
  readonly badRequestMessage: string
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
  /** Chat-completion calls received so far (including faulted and hanging ones). */
  readonly calls: number
  /** Hanging calls the client gave up on (closed the connection). */
  readonly abandoned: number
  /** Replies sent so far, by kind. */
  readonly replies: Readonly<Record<FakeReply, number>>
  readonly requests: ReadonlyArray<RecordedRequest>
  /** Change behaviour at runtime; a new `script` replaces the remaining one, a new `seed` restarts the PRNG. */
  readonly setBehaviour: (behaviour: Partial<FakeBehaviour>) => void
  /** Forget recorded requests and counters (the behaviour stays). */
  readonly reset: () => void
  /** Stop listening and drop every open connection (hanging ones too). */
  readonly close: () => Promise<void>
}

/** mulberry32: tiny, fast, good enough to draw fault fractions reproducibly. */
const prng = (seed: number) => {
  let a = seed >>> 0
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Default answer: the maximum of the schema's `score` enum (0 when there is none), with
 * `confidence: 5` when the schema requires it. A listwise schema (`grades`: an array of entries with
 * a `hit` enum) gets one such entry for every hit number.
 */
export const defaultAnswer = (request: RecordedRequest): string => {
  const schema = request.body.response_format?.json_schema?.schema
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {}
  const grades = properties.grades
  if (isRecord(grades) && isRecord(grades.items)) {
    const item = grades.items
    const itemProperties = isRecord(item.properties) ? item.properties : {}
    const hitProperty = itemProperties.hit
    const hits = isRecord(hitProperty) && Array.isArray(hitProperty.enum) ? hitProperty.enum : []
    return JSON.stringify({ grades: hits.map((hit) => ({ hit, ...JSON.parse(entryAnswer(item)) as object })) })
  }
  return entryAnswer(schema)
}

const entryAnswer = (schema: unknown): string => {
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {}
  const scoreProperty = properties.score
  const values = isRecord(scoreProperty) && Array.isArray(scoreProperty.enum)
    ? scoreProperty.enum.filter((v): v is number => typeof v === "number")
    : []
  const score = values.length === 0 ? 0 : Math.max(...values)
  const required = isRecord(schema) && Array.isArray(schema.required) ? schema.required : []
  return required.includes("confidence")
    ? JSON.stringify({ reasoning: "fake judge: the answer is fully supported.", score, confidence: 5 })
    : JSON.stringify({ reasoning: "fake judge: the answer is fully supported.", score })
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
  badRequestMessage: "Invalid request: model does not support this."
}

const FAULT_ORDER: ReadonlyArray<Exclude<FakeReply, "ok">> = [
  "rate_limit",
  "server_error",
  "bad_request",
  "malformed",
  "hang"
]

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
  hang: 0
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

  const choose = (): FakeReply => {
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

  const send = (res: Http.ServerResponse, status: number, payload: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(payload),
      ...headers
    })
    res.end(payload)
  }

  const errorBody = (message: string, type: string) => JSON.stringify({ error: { message, type, param: null, code: null } })

  const completion = (request: RecordedRequest, content: string): string =>
    JSON.stringify({
      id: `chatcmpl-fake-${++completionId}`,
      object: "chat.completion",
      created: 1_700_000_000,
      model: request.body.model ?? "fake",
      choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, finish_reason: "stop", logprobs: null }],
      usage: {
        prompt_tokens: Math.ceil(messageChars(request.body) / 4),
        completion_tokens: Math.ceil(content.length / 4),
        total_tokens: Math.ceil(messageChars(request.body) / 4) + Math.ceil(content.length / 4)
      }
    })

  const reply = (res: Http.ServerResponse, request: RecordedRequest, kind: FakeReply) => {
    replies[kind]++
    switch (kind) {
      case "ok":
        return send(res, 200, completion(request, behaviour.answer(request)))
      case "malformed":
        return send(res, 200, completion(request, behaviour.malformedText))
      case "rate_limit": {
        const headers: Record<string, string> = { "retry-after": String(behaviour.retryAfterSeconds) }
        if (behaviour.retryAfterMs !== undefined) headers["retry-after-ms"] = String(behaviour.retryAfterMs)
        return send(res, 429, errorBody("Rate limit reached for requests", "requests"), headers)
      }
      case "server_error":
        return send(res, 500, errorBody("The server had an error while processing your request.", "server_error"))
      case "bad_request":
        return send(res, 400, errorBody(behaviour.badRequestMessage, "invalid_request_error"))
      case "hang":
        // The socket stays open until the client gives up (counted) or close() destroys it.
        res.once("close", () => {
          if (!closing) abandoned++
        })
        return
    }
  }

  const server = Http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/"
    if (req.method !== "POST" || !path.endsWith("/chat/completions")) {
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
      if (record) requests.push(request)
      const kind = choose()
      if (behaviour.latencyMs > 0 && kind !== "hang") {
        setTimeout(() => {
          if (!res.destroyed) reply(res, request, kind)
        }, behaviour.latencyMs)
      } else {
        reply(res, request, kind)
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
        get abandoned() {
          return abandoned
        },
        get replies() {
          return replies
        },
        get requests() {
          return requests
        },
        setBehaviour: (next) => {
          behaviour = { ...behaviour, ...next }
          if (next.script !== undefined) script = [...next.script]
          if (next.seed !== undefined) random = prng(next.seed)
        },
        reset: () => {
          calls = 0
          abandoned = 0
          replies = emptyReplies()
          requests = []
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
