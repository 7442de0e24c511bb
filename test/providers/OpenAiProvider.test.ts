import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Fiber, Redacted } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Zlib from "node:zlib"
import type { ChatRequest } from "../../src/providers/LlmProvider.js"
import * as OpenAiProvider from "../../src/providers/OpenAiProvider.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { freePort } from "../support/Ports.js"

const request: ChatRequest = {
  system: "You are a judge.",
  user: "Is the answer grounded?",
  schema: {
    name: "groundedness",
    schema: {
      type: "object",
      properties: {
        reasoning: { type: "string" },
        score: { type: "integer", enum: [0, 1, 2, 3] }
      },
      required: ["reasoning", "score"],
      additionalProperties: false
    }
  }
}

const key = Redacted.make("sk-test-secret-123")

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isFailure(exit)) {
    const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    if (error !== undefined) return error
  }
  return expect.fail(`expected a failure, got ${String(exit)}`)
}

describe("OpenAiProvider over HTTP", () => {
  it.scopedLive("openai-compatible: seed, temperature, max_tokens, model, key and schema reach the API", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const provider = yield* OpenAiProvider.make({
        provider: "openai-compatible",
        model: "judge-model",
        baseURL: fake.url,
        apiKey: key,
        timeoutMs: 5_000,
        params: { temperature: 0, seed: 7, maxTokens: 256 }
      })
      const response = yield* provider.complete(request)

      expect(JSON.parse(response.text)).toEqual({ reasoning: expect.any(String), score: 3 })
      expect(response.usage.inputTokens).toBeGreaterThan(0)
      expect(response.usage.outputTokens).toBeGreaterThan(0)
      expect(fake.calls).toBe(1)
      const sent = fake.requests[0]!
      expect(sent.path).toBe("/v1/chat/completions")
      expect(sent.headers.authorization).toBe("Bearer sk-test-secret-123")
      expect(sent.body.model).toBe("judge-model")
      expect(sent.body.seed).toBe(7)
      expect(sent.body.random_seed).toBeUndefined()
      expect(sent.body.temperature).toBe(0)
      expect(sent.body.max_tokens).toBe(256)
      expect(sent.body.response_format).toEqual({
        type: "json_schema",
        json_schema: { name: "groundedness", schema: request.schema.schema, strict: true }
      })
      expect(sent.body.messages).toEqual([
        { role: "system", content: "You are a judge." },
        { role: "user", content: "Is the answer grounded?" }
      ])
    }))

  it.scopedLive("mistral sends the seed as random_seed", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const provider = yield* OpenAiProvider.make({
        provider: "mistral",
        model: "mistral-small-latest",
        baseURL: fake.url,
        apiKey: key,
        params: { temperature: 0.2, seed: 11, maxTokens: 100 }
      })
      yield* provider.complete(request)
      const body = fake.requests[0]!.body
      expect(body.random_seed).toBe(11)
      expect(body).not.toHaveProperty("seed")
      expect(body.temperature).toBe(0.2)
      expect(body.max_tokens).toBe(100)
      expect(body.model).toBe("mistral-small-latest")
    }))

  it.scopedLive("openai sends seed and max_completion_tokens", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const provider = yield* OpenAiProvider.make({
        provider: "openai",
        model: "gpt-4o-mini",
        baseURL: fake.url,
        apiKey: key,
        params: { seed: 3, maxTokens: 50 }
      })
      yield* provider.complete(request)
      const body = fake.requests[0]!.body
      expect(body.seed).toBe(3)
      expect(body.max_completion_tokens).toBe(50)
      expect(body).not.toHaveProperty("temperature")
    }))

  it.scopedLive("the organisation and project ids go to OpenAI only (the SDK's OPENAI_ORG_ID, OPENAI_PROJECT_ID)", () =>
    Effect.gen(function*() {
      const before = { org: process.env.OPENAI_ORG_ID, project: process.env.OPENAI_PROJECT_ID }
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          for (const [name, value] of [["OPENAI_ORG_ID", before.org], ["OPENAI_PROJECT_ID", before.project]] as const) {
            if (value === undefined) delete process.env[name]
            else process.env[name] = value
          }
        })
      )
      process.env.OPENAI_ORG_ID = "org-test-1"
      process.env.OPENAI_PROJECT_ID = "proj-test-2"
      const fake = yield* FakeOpenAi.make()
      for (const provider of ["openai", "openai-compatible"] as const) {
        const p = yield* OpenAiProvider.make({ provider, model: "gpt-4o-mini", baseURL: fake.url, apiKey: key })
        yield* p.complete(request)
      }
      const [openai, compatible] = fake.requests
      expect(openai!.headers["openai-organization"]).toBe("org-test-1")
      expect(openai!.headers["openai-project"]).toBe("proj-test-2")
      expect(compatible!.headers["openai-organization"]).toBeUndefined()
      expect(compatible!.headers["openai-project"]).toBeUndefined()
      expect(compatible!.headers.authorization).toBe("Bearer sk-test-secret-123")
    }))

  it.scopedLive("ollama finds the server at OLLAMA_HOST (no scheme) and sends a placeholder key", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const provider = yield* OpenAiProvider.make({ provider: "ollama", model: "llama3.1" }).pipe(
        withEnv({ OLLAMA_HOST: fake.origin.replace("http://", "") })
      )
      yield* provider.complete(request)
      expect(fake.calls).toBe(1)
      expect(fake.requests[0]!.headers.authorization).toBe("Bearer not-needed")
    }))

  it.scopedLive("a repair request carries the previous reply and the error", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const provider = yield* OpenAiProvider.make({ provider: "openai-compatible", model: "m", baseURL: fake.url })
      yield* provider.complete({ ...request, repair: { previous: "{\"score\": ", error: "no JSON object" } })
      expect(fake.requests[0]!.body.messages?.slice(2)).toEqual([
        { role: "assistant", content: "{\"score\": " },
        {
          role: "user",
          content:
            "Your previous reply could not be used: no JSON object. Reply again with only a JSON object matching the schema."
        }
      ])
    }))

  it.scopedLive("maps HTTP failures to ProviderError kinds", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ retryAfterSeconds: 7 })
      const provider = yield* OpenAiProvider.make({
        provider: "openai-compatible",
        model: "m",
        baseURL: fake.url,
        apiKey: key,
        timeoutMs: 150
      })
      const attempt = (reply: FakeOpenAi.FakeReply) =>
        Effect.sync(() => fake.setBehaviour({ script: [reply] })).pipe(
          Effect.zipRight(Effect.exit(provider.complete(request))),
          Effect.map(failure)
        )

      const limited = yield* attempt("rate_limit")
      expect(limited).toMatchObject({ _tag: "ProviderError", kind: "rate_limited", status: 429, retryAfterMs: 7_000 })

      fake.setBehaviour({ retryAfterMs: 1_500 })
      expect(yield* attempt("rate_limit")).toMatchObject({ kind: "rate_limited", retryAfterMs: 1_500 })

      const server = yield* attempt("server_error")
      expect(server).toMatchObject({ kind: "server", status: 500 })
      expect(server.retryable).toBe(true)

      const rejected = yield* attempt("bad_request")
      expect(rejected).toMatchObject({ kind: "rejected", status: 400 })
      expect(rejected.detail).toContain("maximum context length is 8192 tokens")
      expect(rejected.retryable).toBe(false)

      const timeout = yield* attempt("hang")
      expect(timeout).toMatchObject({ kind: "timeout" })
      expect(timeout.message).toContain("150 ms")
    }))

  it.scopedLive("never puts the key in an error", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({
        script: ["bad_request"],
        badRequestMessage: "Incorrect API key provided: sk-test-secret-123"
      })
      const provider = yield* OpenAiProvider.make({
        provider: "openai-compatible",
        model: "m",
        baseURL: fake.url,
        apiKey: key
      })
      const error = failure(yield* Effect.exit(provider.complete(request)))
      expect(error.message).not.toContain("sk-test-secret-123")
      expect(error.message).toContain("<redacted>")
    }))

  it.live("a refused connection or a host that does not resolve is `unreachable` (fatal), not a transient network error", () =>
    Effect.gen(function*() {
      // A port nothing listens on (not a closed server's: another test's server may be given that one).
      const port = yield* Effect.promise(freePort)
      const provider = yield* OpenAiProvider.make({
        provider: "openai-compatible",
        model: "m",
        baseURL: `http://127.0.0.1:${port}/v1`
      })
      const refused = failure(yield* Effect.exit(provider.complete(request)))
      expect(refused).toMatchObject({ kind: "unreachable", detail: "connection refused" })
      expect(refused.fatal).toBe(true)
      // .invalid never resolves (RFC 2606).
      const nowhere = yield* OpenAiProvider.make({
        provider: "openai-compatible",
        model: "m",
        baseURL: "http://no-such-host.invalid/v1",
        timeoutMs: 5_000
      })
      expect(failure(yield* Effect.exit(nowhere.complete(request)))).toMatchObject({
        kind: "unreachable",
        detail: "DNS lookup failed: the host name does not resolve"
      })
    }))

  it.scopedLive("401, 404 (model or URL), an unsupported request and an exhausted quota are fatal kinds; other 4xx are `rejected`", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ apiKey: "right-key", models: ["m"] })
      const make = (model: string, apiKey: string, baseURL = fake.url) =>
        OpenAiProvider.make({ provider: "openai-compatible", model, baseURL, apiKey: Redacted.make(apiKey) })
      const wrongKey = failure(yield* Effect.exit((yield* make("m", "wrong-key")).complete(request)))
      expect(wrongKey).toMatchObject({ kind: "unauthorized", status: 401 })
      expect(wrongKey.fatal).toBe(true)
      const noModel = failure(yield* Effect.exit((yield* make("gpt-9", "right-key")).complete(request)))
      expect(noModel).toMatchObject({ kind: "not_found", status: 404 })
      expect(noModel.detail).toContain("gpt-9")
      const noRoute = failure(
        yield* Effect.exit((yield* make("m", "right-key", `${fake.origin}/wrong`)).complete(request))
      )
      expect(noRoute).toMatchObject({ kind: "not_found", status: 404 })
      fake.setBehaviour({ structuredOutput: "json_object" })
      const unsupported = failure(yield* Effect.exit((yield* make("m", "right-key")).complete(request)))
      expect(unsupported).toMatchObject({ kind: "unsupported", status: 400 })
      expect(unsupported.detail).toContain("response_format")
      fake.setBehaviour({ structuredOutput: "json_schema", script: ["bad_request"] })
      const tooLong = failure(yield* Effect.exit((yield* make("m", "right-key")).complete(request)))
      expect(tooLong).toMatchObject({ kind: "rejected", status: 400 })
      expect(tooLong.fatal).toBe(false)
    }))

  it.scopedLive("a 429 for an exhausted quota is `quota` (fatal), not a rate limit to wait out", () =>
    Effect.gen(function*() {
      const server = Http.createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          res.writeHead(429, { "content-type": "application/json" })
          res.end(
            JSON.stringify({
              error: {
                message: "You exceeded your current quota, please check your plan and billing details.",
                type: "insufficient_quota",
                code: "insufficient_quota"
              }
            })
          )
        })
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
        () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const provider = yield* OpenAiProvider.make({
        provider: "openai",
        model: "m",
        baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        apiKey: key
      })
      const error = failure(yield* Effect.exit(provider.complete(request)))
      expect(error).toMatchObject({ kind: "quota", status: 429 })
      expect(error.fatal).toBe(true)
    }))

  it.scopedLive("a 200 whose body is an HTML page (a proxy's error) is a server error, retried — not an internal error", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ script: ["html"] })
      const provider = yield* OpenAiProvider.make({ provider: "openai-compatible", model: "m", baseURL: fake.url })
      const error = failure(yield* Effect.exit(provider.complete(request)))
      expect(error).toMatchObject({ kind: "server", status: 200 })
      expect(error.retryable).toBe(true)
      expect(error.detail).toContain("text/html that is not a chat completion")
      expect(error.detail).toContain("502 Bad Gateway")
    }))

  it.scopedLive("hands the server's x-ratelimit-* headers to the caller, on successes and on 429s", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ limit: { rpm: 600, burst: 2, headers: true, retryAfter: "ms" } })
      const provider = yield* OpenAiProvider.make({ provider: "openai-compatible", model: "m", baseURL: fake.url })
      const first = yield* provider.complete(request)
      expect(first.rateLimit?.requests).toMatchObject({ limit: 2, remaining: 1 })
      expect(first.rateLimit?.requests?.resetMs).toBeGreaterThan(0)
      yield* provider.complete(request)
      const limited = failure(yield* Effect.exit(provider.complete(request)))
      expect(limited).toMatchObject({ kind: "rate_limited", status: 429 })
      expect(limited.retryAfterMs).toBeGreaterThan(0)
      expect(limited.retryAfterMs).toBeLessThanOrEqual(100)
      expect(limited.limits?.requests?.remaining).toBe(0)
    }))

  it.scopedLive("answer formats: json_schema sends the schema; json_object and prompt put it in the system message", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const provider = yield* OpenAiProvider.make({ provider: "openai-compatible", model: "m", baseURL: fake.url })
      yield* provider.complete({ ...request, format: "json_object" })
      yield* provider.complete({ ...request, format: "prompt" })
      const [asObject, inPrompt] = fake.requests
      expect(asObject!.body.response_format).toEqual({ type: "json_object" })
      expect(inPrompt!.body.response_format).toBeUndefined()
      for (const r of [asObject!, inPrompt!]) {
        const system = String(r.body.messages![0]!.content)
        expect(system).toContain(OpenAiProvider.SCHEMA_MARKER)
        expect(system).toContain(JSON.stringify(request.schema.schema))
      }
    }))

  it.scopedLive("a body that stalls after the headers times out; a gzip body the server sends unasked is read", () =>
    Effect.gen(function*() {
      const completion = JSON.stringify({
        id: "c",
        object: "chat.completion",
        created: 0,
        model: "m",
        choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "{\"score\": 1}" } }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }
      })
      let mode: "stall" | "gzip" = "stall"
      const server = Http.createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          if (mode === "stall") {
            res.writeHead(200, { "content-type": "application/json" })
            res.write(completion.slice(0, 20)) // …and never the rest
          } else {
            res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" })
            res.end(Zlib.gzipSync(completion))
          }
        })
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
        () =>
          Effect.promise(() =>
            new Promise<void>((resolve) => {
              server.closeAllConnections()
              server.close(() => resolve())
            })
          )
      )
      const baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
      const provider = yield* OpenAiProvider.make({
        provider: "openai-compatible",
        model: "m",
        baseURL,
        timeoutMs: 200
      })
      // (That it ends is the test: a read that never timed out would run into the test's timeout.)
      expect(failure(yield* Effect.exit(provider.complete(request)))).toMatchObject({ kind: "timeout" })
      mode = "gzip"
      const ok = yield* provider.complete(request)
      expect(ok.text).toBe("{\"score\": 1}")
      expect(ok.usage).toEqual({ inputTokens: 3, outputTokens: 2 })
    }))

  it.scopedLive("interrupting the call aborts the HTTP request", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ script: ["hang"] })
      const provider = yield* OpenAiProvider.make({
        provider: "openai-compatible",
        model: "m",
        baseURL: fake.url,
        timeoutMs: 30_000
      })
      const fiber = yield* Effect.fork(provider.complete(request))
      while (fake.calls === 0) yield* Effect.sleep("5 millis")
      yield* Fiber.interrupt(fiber)
      while (fake.abandoned === 0) yield* Effect.sleep("5 millis")
      expect(fake.abandoned).toBe(1)
    }))
})

describe("OpenAiProvider.parseRetryAfter", () => {
  const headers = (h: Record<string, string>) => ({ get: (name: string) => h[name] ?? null })
  it("reads retry-after-ms, seconds and HTTP dates", () => {
    expect(OpenAiProvider.parseRetryAfter(headers({ "retry-after-ms": "250", "retry-after": "9" }), 0)).toBe(250)
    expect(OpenAiProvider.parseRetryAfter(headers({ "retry-after": "2" }), 0)).toBe(2_000)
    expect(OpenAiProvider.parseRetryAfter(headers({ "retry-after": "1.5" }), 0)).toBe(1_500)
    const now = Date.parse("2025-01-01T00:00:00Z")
    expect(OpenAiProvider.parseRetryAfter(headers({ "retry-after": "Wed, 01 Jan 2025 00:00:30 GMT" }), now)).toBe(
      30_000
    )
    expect(OpenAiProvider.parseRetryAfter(headers({ "retry-after": "soon" }), 0)).toBeUndefined()
    expect(OpenAiProvider.parseRetryAfter(headers({}), 0)).toBeUndefined()
  })
})

describe("OpenAiProvider.optionsFromFlags", () => {
  const flags = { model: "m", timeoutMs: 1_000, params: {} }

  it.effect("openai without a key names OPENAI_API_KEY", () =>
    Effect.gen(function*() {
      const error = failure(
        yield* Effect.exit(OpenAiProvider.optionsFromFlags({ ...flags, provider: "openai" }).pipe(withEnv({})))
      )
      expect(error._tag).toBe("UsageError")
      expect(error.message).toContain("OPENAI_API_KEY")
    }))

  it.effect("mistral names MISTRAL_API_KEY, and falls back to API_KEY", () =>
    Effect.gen(function*() {
      const error = failure(
        yield* Effect.exit(OpenAiProvider.optionsFromFlags({ ...flags, provider: "mistral" }).pipe(withEnv({})))
      )
      expect(error.message).toContain("MISTRAL_API_KEY")
      const options = yield* OpenAiProvider.optionsFromFlags({ ...flags, provider: "mistral" }).pipe(
        withEnv({ API_KEY: "mk-1" })
      )
      expect(options.apiKey && Redacted.value(options.apiKey)).toBe("mk-1")
      const preferred = yield* OpenAiProvider.optionsFromFlags({ ...flags, provider: "mistral" }).pipe(
        withEnv({ API_KEY: "mk-1", MISTRAL_API_KEY: "mk-2" })
      )
      expect(preferred.apiKey && Redacted.value(preferred.apiKey)).toBe("mk-2")
    }))

  it.effect("--api-key wins over the environment; ollama needs none", () =>
    Effect.gen(function*() {
      const options = yield* OpenAiProvider.optionsFromFlags({ ...flags, provider: "openai", apiKey: key }).pipe(
        withEnv({ OPENAI_API_KEY: "sk-env" })
      )
      expect(options.apiKey && Redacted.value(options.apiKey)).toBe("sk-test-secret-123")
      const ollama = yield* OpenAiProvider.optionsFromFlags({ ...flags, provider: "ollama" }).pipe(withEnv({}))
      expect(ollama.apiKey).toBeUndefined()
    }))

  it.effect("rejects unknown providers and openai-compatible without a base URL", () =>
    Effect.gen(function*() {
      const unknown = failure(yield* Effect.exit(OpenAiProvider.optionsFromFlags({ ...flags, provider: "anthropic" })))
      expect(unknown.message).toContain("unknown provider")
      const noUrl = failure(
        yield* Effect.exit(OpenAiProvider.make({ provider: "openai-compatible", model: "m" }))
      )
      expect(noUrl.message).toContain("--base-url")
    }))
})
