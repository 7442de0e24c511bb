/**
 * A fake RAG service: real HTTP on 127.0.0.1 (ephemeral port), for the `--target` client and the
 * end-to-end runs that ask a live system for answers.
 *
 * Endpoints (every other path is a 404, as a wrong `--target` path meets):
 * - `POST /ask` — the generic shape: reads the question from the JSON body (`question`, else
 *   `query`), answers `{"answer": …, "sources": [{"id", "text"}]}`; or, with `stream: "generic"`, an
 *   SSE stream of `{"delta": piece}` events and then one `{"answer": …, "sources": […]}` event and
 *   `data: [DONE]`.
 * - `POST /v1/chat/completions` — OpenAI-compatible: the question is the last user message; a chat
 *   completion, or with `"stream": true` in the body, `chat.completion.chunk` events carrying
 *   `choices[0].delta.content` pieces, a `finish_reason` chunk and `data: [DONE]`.
 * - `POST /moved` — a 301 to `/ask`.
 *
 * Replies are chosen per call: from `script` (in order), then from `replyFor(question, nth)` when
 * given, otherwise "ok". Faults: 429 with `Retry-After`, 500, a 200 with malformed JSON, a 200
 * without the answer (`answer_text` instead), an HTML 200, 400, 401, 404, a connection reset before
 * or during the answer, a stream that sends an error event, or no answer at all (`hang`).
 *
 * `token`: requests without `Authorization: Bearer <token>` get a 401 that echoes the Authorization
 * header it got (as careless services do), so tests can check the client never repeats it.
 * `hold`: "ok" answers wait until `release()` (for TestClock tests: the test moves the clock while the
 * answer is held); `received(n)` resolves once `n` requests have arrived.
 *
 * Every request is recorded (path, headers, body text); `asked` counts requests per question, so a
 * test can assert that no question was asked twice.
 *
 * `echo` (as careless services do, on purpose): every answer, passage and error body (4xx/5xx)
 * repeats the secrets the request carried — its Authorization header and every `x-*` header, each
 * value's credentials after the scheme word, and the base64 of each — plus the `echo` texts given
 * (and their base64): so a test can check that none of them reaches a file or a log.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import * as Http from "node:http"
import type { AddressInfo, Socket } from "node:net"

export type FakeRagReply =
  | "ok"
  /** 429 with `Retry-After: <retryAfterSeconds>`. */
  | "rate_limit"
  /** 500 with a JSON error body. */
  | "server_error"
  /** 200, `application/json`, with an unfinished JSON object. */
  | "malformed"
  /** 200 whose JSON has `answer_text` and `sources` but no `answer`. */
  | "missing_answer"
  /** 200 with an HTML page (a proxy's). */
  | "html"
  /** 400 with a JSON error body. */
  | "bad_request"
  /** 401 (whatever the token). */
  | "unauthorized"
  /** 404. */
  | "not_found"
  /** The socket is destroyed before any response. */
  | "reset"
  /** Headers and part of the body, then the socket is destroyed. */
  | "reset_mid_body"
  /** A stream that sends an error event (streamed requests; a 500 otherwise). */
  | "stream_error"
  /** Never answer; the socket stays open until the client gives up or the server closes. */
  | "hang"

export interface FakeRagAnswer {
  readonly answer: string
  readonly sources: ReadonlyArray<string>
}

export interface FakeRagBehaviour {
  /** Delay before every reply (ms, real time). Default 0. */
  readonly latencyMs: number
  /** Replies for the next calls, in order; then `replyFor`, then "ok". */
  readonly script: ReadonlyArray<FakeRagReply>
  /** The reply for the `nth` (1-based) request with this question, after the script. */
  readonly replyFor?: ((question: string, nth: number) => FakeRagReply) | undefined
  /** `Retry-After` (seconds) on 429s. Default 1. */
  readonly retryAfterSeconds: number
  /** The bearer token required; any request passes when undefined. */
  readonly token?: string | undefined
  /** How `/ask` answers "ok": JSON (default), or an SSE stream. */
  readonly stream: "none" | "generic"
  /** Delay between streamed events (ms, real time). Default 0. */
  readonly streamGapMs: number
  /** The answer and passages for a question. */
  readonly answer: (question: string) => FakeRagAnswer
  /** Hold every "ok" answer (headers included) until `release()`. */
  readonly hold: boolean
  /** Repeat the request's secrets and these texts (and the base64 of each) in every answer and error body (see the module comment). */
  readonly echo?: ReadonlyArray<string> | undefined
}

export interface RecordedRagRequest {
  readonly path: string
  /** Lower-cased header names, as node:http gives them. */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: string
  /** The question read from the body ("" when none was found). */
  readonly question: string
}

export interface FakeRag {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  /** `<origin>/ask` */
  readonly url: string
  /** `<origin>/v1/chat/completions` */
  readonly chatUrl: string
  /** Requests received (every path and reply). */
  readonly calls: number
  readonly requests: ReadonlyArray<RecordedRagRequest>
  /** Requests per question. */
  readonly asked: ReadonlyMap<string, number>
  /** Replies sent, by kind. */
  readonly replies: Readonly<Partial<Record<FakeRagReply, number>>>
  readonly setBehaviour: (behaviour: Partial<FakeRagBehaviour>) => void
  /** Let every held answer go (and stop holding when `hold` is turned off). */
  readonly release: () => void
  /** Resolves once `n` requests in all have arrived. */
  readonly received: (n: number) => Promise<void>
  readonly reset: () => void
  readonly close: () => Promise<void>
}

/** The default answer: built from the question, so a reply given to the wrong case shows. */
export const defaultAnswer = (question: string): FakeRagAnswer => ({
  answer: `The answer to "${question}" is in the handbook.`,
  sources: [`Handbook, chapter 1: about ${question}`, "Handbook, chapter 2: general notes."]
})

const defaults: FakeRagBehaviour = {
  latencyMs: 0,
  script: [],
  retryAfterSeconds: 1,
  stream: "none",
  streamGapMs: 0,
  answer: defaultAnswer,
  hold: false
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The question of a request body: `question`, `query`, or the last user message of `messages`. */
export const questionOf = (body: string): string => {
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    return ""
  }
  if (!isRecord(json)) return ""
  if (typeof json.question === "string") return json.question
  if (typeof json.query === "string") return json.query
  if (Array.isArray(json.messages)) {
    const users = json.messages.filter((m): m is { role: string; content: unknown } => isRecord(m) && m.role === "user")
    const last = users[users.length - 1]?.content
    if (typeof last === "string") return last
  }
  return ""
}

/** Whether a chat-completions body asks for a stream (a body that is not JSON gets the JSON reply). */
const wantsStream = (body: string): boolean => {
  try {
    const json: unknown = JSON.parse(body)
    return isRecord(json) && json.stream === true
  } catch {
    return false
  }
}

/** Splits an answer into a few pieces, as a model streams tokens. */
const pieces = (text: string): Array<string> => text.match(/\S+\s*/g) ?? [text]

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** What an echoing service repeats of a request: its credentials' every value, and the base64 of each (see `echo`). */
export const echoOf = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  extra: ReadonlyArray<string>
): string => {
  const values: Array<string> = []
  for (const [name, value] of Object.entries(headers)) {
    if (name !== "authorization" && !name.startsWith("x-")) continue
    for (const v of Array.isArray(value) ? value : [value]) {
      if (typeof v !== "string" || v === "") continue
      values.push(v)
      const space = v.indexOf(" ")
      if (space !== -1) values.push(v.slice(space + 1))
    }
  }
  values.push(...extra)
  return values.flatMap((v) => [v, Buffer.from(v, "utf8").toString("base64")]).join(" | ")
}

export const start = (options: Partial<FakeRagBehaviour> = {}): Promise<FakeRag> =>
  new Promise((resolve) => {
    let behaviour: FakeRagBehaviour = { ...defaults, ...options }
    let script = [...behaviour.script]
    let calls = 0
    let requests: Array<RecordedRagRequest> = []
    let asked = new Map<string, number>()
    let replies: Partial<Record<FakeRagReply, number>> = {}
    let held: Array<() => void> = []
    let waiters: Array<{ n: number; done: () => void }> = []
    const sockets = new Set<Socket>()

    const notify = () => {
      waiters = waiters.filter((w) => {
        if (calls < w.n) return true
        w.done()
        return false
      })
    }

    const json = (res: Http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
      const text = JSON.stringify(body)
      res.writeHead(status, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(text),
        ...headers
      })
      res.end(text)
    }

    const sse = async (res: Http.ServerResponse, events: ReadonlyArray<string>) => {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" })
      for (const data of events) {
        if (res.destroyed) return
        res.write(`data: ${data}\n\n`)
        if (behaviour.streamGapMs > 0) await sleep(behaviour.streamGapMs)
      }
      res.end()
    }

    const chatCompletion = (text: string) => ({
      id: "chatcmpl-fake",
      object: "chat.completion",
      model: "fake-rag",
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }]
    })
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      JSON.stringify({
        id: "chatcmpl-fake",
        object: "chat.completion.chunk",
        model: "fake-rag",
        choices: [{ index: 0, delta, finish_reason: finish }]
      })

    const answerOk = async (
      res: Http.ServerResponse,
      path: string,
      body: string,
      question: string,
      echo: string
    ) => {
      const given = behaviour.answer(question)
      const answer = echo === "" ? given.answer : `${given.answer} (echo: ${echo})`
      const sources = echo === "" ? given.sources : [...given.sources, `echoed: ${echo}`]
      const sourceObjects = sources.map((text, i) => ({ id: `doc-${i + 1}`, text }))
      if (path === "/v1/chat/completions") {
        if (!wantsStream(body)) return json(res, 200, chatCompletion(answer))
        return sse(res, [
          chunk({ role: "assistant" }),
          ...pieces(answer).map((p) => chunk({ content: p })),
          chunk({}, "stop"),
          "[DONE]"
        ])
      }
      if (behaviour.stream === "generic") {
        return sse(res, [
          ...pieces(answer).map((p) => JSON.stringify({ delta: p })),
          JSON.stringify({ answer, sources: sourceObjects }),
          "[DONE]"
        ])
      }
      return json(res, 200, { answer, sources: sourceObjects })
    }

    const reply = async (
      kind: FakeRagReply,
      req: Http.IncomingMessage,
      res: Http.ServerResponse,
      path: string,
      body: string,
      question: string
    ) => {
      replies[kind] = (replies[kind] ?? 0) + 1
      const streamedRequest = path === "/v1/chat/completions" ? wantsStream(body) : behaviour.stream === "generic"
      const echo = behaviour.echo === undefined ? "" : echoOf(req.headers, behaviour.echo)
      const said = (text: string) => echo === "" ? text : `${text} (echo: ${echo})`
      switch (kind) {
        case "ok":
          if (behaviour.hold) await new Promise<void>((r) => held.push(r))
          return answerOk(res, path, body, question, echo)
        case "rate_limit":
          return json(res, 429, { error: said("too many requests") }, {
            "retry-after": String(behaviour.retryAfterSeconds)
          })
        case "server_error":
          return json(res, 500, { error: said("internal error: the vector store timed out") })
        case "malformed": {
          const text = "{\"answer\": \"unfinished"
          res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
          return res.end(text)
        }
        case "missing_answer": {
          const { answer, sources } = behaviour.answer(question)
          return json(res, 200, { answer_text: answer, sources: sources.map((text) => ({ text })) })
        }
        case "html": {
          const text = "<html><body><h1>502 Bad Gateway</h1></body></html>"
          res.writeHead(200, { "content-type": "text/html", "content-length": Buffer.byteLength(text) })
          return res.end(text)
        }
        case "bad_request":
          return json(res, 400, { error: said("question too long") })
        case "unauthorized":
          return json(res, 401, { error: said("invalid token"), got: req.headers.authorization ?? null })
        case "not_found":
          return json(res, 404, { error: said("not found") })
        case "reset":
          return req.socket.destroy()
        case "reset_mid_body":
          res.writeHead(200, { "content-type": "application/json", "content-length": "1000" })
          res.write("{\"answer\": \"half")
          await sleep(10)
          return req.socket.destroy()
        case "stream_error":
          if (!streamedRequest) return json(res, 500, { error: "model overloaded" })
          return sse(res, [
            JSON.stringify({ delta: "Partial " }),
            JSON.stringify({ error: { message: "model overloaded" } })
          ])
        case "hang":
          return
      }
    }

    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        void (async () => {
          const path = (req.url ?? "/").split("?")[0]!
          const body = Buffer.concat(chunks).toString("utf8")
          const question = questionOf(body)
          calls++
          requests.push({ path, headers: { ...req.headers }, body, question })
          const nth = (asked.get(question) ?? 0) + 1
          asked.set(question, nth)
          notify()
          if (behaviour.latencyMs > 0) await sleep(behaviour.latencyMs)
          if (req.method !== "POST" || (path !== "/ask" && path !== "/v1/chat/completions" && path !== "/moved")) {
            return json(res, 404, { error: `no route ${req.method} ${path}` })
          }
          if (path === "/moved") {
            res.writeHead(301, { location: "/ask", "content-length": "0" })
            return res.end()
          }
          if (behaviour.token !== undefined && req.headers.authorization !== `Bearer ${behaviour.token}`) {
            return reply("unauthorized", req, res, path, body, question)
          }
          const kind = script.shift() ?? behaviour.replyFor?.(question, nth) ?? "ok"
          return reply(kind, req, res, path, body, question)
        })()
      })
    })
    server.keepAliveTimeout = 60_000
    server.on("connection", (socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
    })

    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      const origin = `http://127.0.0.1:${port}`
      resolve({
        origin,
        url: `${origin}/ask`,
        chatUrl: `${origin}/v1/chat/completions`,
        get calls() {
          return calls
        },
        get requests() {
          return requests
        },
        get asked() {
          return asked
        },
        get replies() {
          return replies
        },
        setBehaviour: (next) => {
          behaviour = { ...behaviour, ...next }
          if (next.script !== undefined) script = [...next.script]
        },
        release: () => {
          const go = held
          held = []
          for (const r of go) r()
        },
        received: (n) =>
          new Promise<void>((done) => {
            waiters.push({ n, done })
            notify()
          }),
        reset: () => {
          calls = 0
          requests = []
          asked = new Map()
          replies = {}
        },
        close: () =>
          new Promise<void>((done) => {
            // Held answers are dropped with their sockets, never written to a closed one.
            held = []
            server.close(() => done())
            for (const s of sockets) s.destroy()
          })
      })
    })
  })

/** A fake RAG service for the life of the enclosing Scope. */
export const make = (options: Partial<FakeRagBehaviour> = {}): Effect.Effect<FakeRag, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => start(options)),
    (fake) => Effect.promise(() => fake.close())
  )
