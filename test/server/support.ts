/**
 * The server in-process on an ephemeral port, for the life of the test's scope, with the judge of
 * the test's choice (heuristic, or an LLM judge over the fake OpenAI server) and a judgment cache
 * in a temp dir. Requests go over real HTTP (fetch).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer } from "effect"
import type { Scope } from "effect"
import { expect } from "vitest"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import type { Judge } from "../../src/judges/Judge.js"
import { judgeLayer } from "../../src/judges/JudgeSettings.js"
import { defaults, type RunningServer, type ServerOptions, start } from "../../src/server/Http.js"
import * as SharedCache from "../../src/server/SharedCache.js"
import * as JudgmentCache from "../../src/store/JudgmentCache.js"
import type { FakeOpenAi } from "../support/FakeOpenAi.js"
import { tempDir } from "../support/RunPipeline.js"

export interface TestServerOptions extends Partial<ServerOptions> {
  readonly judge?: Layer.Layer<Judge, unknown> | undefined
  /** Judgment cache directory (default: a fresh temp dir); `false`: no cache. */
  readonly cacheDir?: string | false | undefined
}

export const serve = (options: TestServerOptions = {}): Effect.Effect<RunningServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const cacheDir = options.cacheDir ?? tempDir("rag-eval-serve-cache-")
    const services = Layer.mergeAll(
      options.judge ?? HeuristicJudge.layer,
      cacheDir === false ? JudgmentCache.layerNone : SharedCache.layerFile(cacheDir),
      NodeContext.layer
    )
    const context = yield* Layer.build(services)
    return yield* start({
      host: "127.0.0.1",
      port: 0,
      maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
      concurrency: options.concurrency ?? defaults.concurrency,
      queue: options.queue ?? 0,
      maxBatch: options.maxBatch ?? defaults.maxBatch,
      maxHits: options.maxHits,
      shutdownGraceMs: options.shutdownGraceMs,
      requestTimeoutMs: options.requestTimeoutMs,
      token: options.token,
      listwise: options.listwise,
      fields: options.fields
    }).pipe(Effect.provide(context))
  }).pipe(Effect.orDie)

/** An LLM judge over the fake server (no retries, so failures show at once). */
export const fakeJudge = (
  fake: FakeOpenAi,
  options: { readonly concurrency?: number; readonly maxRetries?: number; readonly timeoutMs?: number } = {}
) =>
  judgeLayer({
    provider: "openai-compatible",
    model: "fake-judge",
    baseUrl: fake.url,
    concurrency: options.concurrency ?? 8,
    timeoutMs: options.timeoutMs ?? 5000,
    maxRetries: options.maxRetries ?? 0
  })

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: unknown
  readonly text: string
}

export const request = (url: string, init: RequestInit = {}): Effect.Effect<Reply> =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    let body: unknown = undefined
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: response.status, headers: response.headers, body, text }
  })

export const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  request(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

/** The one error shape: `{ error: { status, code, message, problems } }` and nothing else. */
export const expectError = (reply: Reply, status: number, code: string) => {
  expect(reply.status).toBe(status)
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/)
  const body = reply.body as { error: Record<string, unknown> }
  expect(Object.keys(body)).toEqual(["error"])
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "problems", "status"])
  expect(body.error.status).toBe(status)
  expect(body.error.code).toBe(code)
  expect(typeof body.error.message).toBe("string")
  expect(Array.isArray(body.error.problems)).toBe(true)
  return body.error as {
    status: number
    code: string
    message: string
    problems: Array<{ path: string; message: string }>
  }
}

/** The request of SPEC §8. */
export const specExample = {
  query: { inputs: { text: "what is the capital of france?" } },
  eval: { fields: ["text"], debug: false },
  hits: [
    { id: "a", text: "Paris is the capital and largest city of France." },
    { id: "b", text: "France is a country in Western Europe; its capital is Paris, on the Seine." },
    { id: "c", text: "Lyon is the third-largest city of France." },
    { id: "d", text: "Bananas are rich in potassium." }
  ]
}

export interface SearchReply {
  readonly metrics: { readonly ndcg: number; readonly map: number; readonly mrr: number }
  readonly hits: ReadonlyArray<{
    readonly index: number
    readonly fields: Record<string, unknown>
    readonly score: number
    readonly relevant: boolean
    readonly justification?: string
    readonly confidence?: number
  }>
  readonly usage: { readonly evaluation_input_tokens: number; readonly evaluation_output_tokens: number }
}
