/**
 * `LlmProvider` for every OpenAI-compatible chat-completions API, through the `openai` SDK:
 * `openai`, `mistral` (api.mistral.ai/v1), `ollama` (`$OLLAMA_HOST/v1`) and `openai-compatible`
 * (vLLM, llama.cpp server, LM Studio… at `--base-url`).
 *
 * One call = one HTTP attempt: the SDK's own retries are off (`maxRetries: 0`) because retries, the
 * shared 429 pause and rate limits live in `LlmJudge` / `RateGate`. Interrupting the fiber aborts
 * the HTTP request. Failures become a `ProviderError` whose `kind` drives what happens next (wait,
 * back off, fail the judgment, or stop the run); a 200 that is not a chat completion (a proxy's HTML
 * page) is a server error, retried. Every response's rate-limit headers are handed to the gate. The
 * API key is only handed to the SDK: it is never logged, and every text the server sends back — a
 * reply, an error body, a batch's output line — passes through the run's redactor with the key and
 * the base URL's credentials added (`domain/Redaction.ts`) before anything else reads it.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type OpenAI from "openai"
import type { APIError } from "openai"
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam
} from "openai/resources/chat/completions"
import { UsageError } from "../domain/Errors.js"
import { formatBytes, Limits } from "../domain/Limits.js"
import { headerSecrets, Redaction, urlSecrets } from "../domain/Redaction.js"
import { unreachable } from "./ConnectionError.js"
import { baseUrlProblem as checkBaseUrl, hostOf, withoutCredentials } from "./Endpoint.js"
import { type ChatRequest, type ChatResponse, LlmProvider, ProviderError, type SamplingParams } from "./LlmProvider.js"
import * as NodeFetch from "./NodeFetch.js"
import { parseRateLimitHeaders } from "./RateLimitHeaders.js"

export const providers = ["openai", "mistral", "ollama", "openai-compatible"] as const
export type OpenAiCompatibleProvider = (typeof providers)[number]

export const isOpenAiCompatible = (provider: string): provider is OpenAiCompatibleProvider =>
  (providers as ReadonlyArray<string>).includes(provider)

export interface OpenAiProviderOptions {
  readonly provider: OpenAiCompatibleProvider
  readonly model: string
  /** Defaults per provider; required for `openai-compatible`. */
  readonly baseURL?: string | undefined
  /** Ollama and most local servers need none: a placeholder is sent then. */
  readonly apiKey?: Redacted.Redacted | undefined
  /** Per-request timeout. Default 60 s. */
  readonly timeoutMs?: number | undefined
  readonly params?: SamplingParams | undefined
}

export const defaultTimeoutMs = 60_000
const placeholderKey = "not-needed"
const excerptLength = 300

/** `OLLAMA_HOST` may be `host:port` without a scheme (that is how Ollama itself reads it). */
const ollamaBaseURL = (host: string): string => {
  const trimmed = host.trim().replace(/\/+$/, "")
  return `${/^https?:\/\//i.test(trimmed) ? trimmed : `http://${trimmed}`}/v1`
}

/** The public endpoints: judgments made there need no endpoint in their key (see `endpointOf`). */
const PUBLIC_ENDPOINTS: Readonly<Record<string, string>> = {
  openai: "https://api.openai.com/v1",
  mistral: "https://api.mistral.ai/v1"
}

/**
 * The endpoint that is part of a judge's identity: the base URL without credentials, except the
 * provider's public API (so judgments made there keep the keys they always had). The same model
 * name served by another server is another judge: its judgments are never reused for this one.
 */
export const endpointOf = (provider: string, baseURL: string): string | undefined => {
  const clean = withoutCredentials(baseURL)
  return PUBLIC_ENDPOINTS[provider] === clean ? undefined : clean
}

/** Where a provider's key comes from, for messages. */
export const keySource = (provider: string): string =>
  provider === "mistral"
    ? "--api-key or MISTRAL_API_KEY (or API_KEY)"
    : provider === "ollama"
    ? "--api-key"
    : "--api-key or OPENAI_API_KEY"

export const defaultBaseURL = (provider: OpenAiCompatibleProvider): Effect.Effect<string | undefined> => {
  switch (provider) {
    case "openai":
    case "mistral":
      return Effect.succeed(PUBLIC_ENDPOINTS[provider])
    case "ollama":
      return Config.string("OLLAMA_HOST").pipe(
        Config.withDefault("http://127.0.0.1:11434"),
        Effect.orElseSucceed(() => "http://127.0.0.1:11434"),
        Effect.map(ollamaBaseURL)
      )
    case "openai-compatible":
      return Effect.succeed(undefined)
  }
}

/**
 * Milliseconds to wait from a 429's headers: `retry-after-ms`, else `retry-after` as seconds or an
 * HTTP date. Undefined when absent or unparsable.
 */
export const parseRetryAfter = (
  headers: { readonly get: (name: string) => string | null } | undefined,
  nowMs: number
): number | undefined => {
  if (headers === undefined) return undefined
  const ms = headers.get("retry-after-ms")
  if (ms !== null && ms.trim() !== "") {
    const n = Number(ms)
    if (Number.isFinite(n) && n >= 0) return n
  }
  const value = headers.get("retry-after")
  if (value === null || value.trim() === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs)
}

const describeBody = (error: APIError): string => {
  const body: unknown = error.error
  if (typeof body === "object" && body !== null && "message" in body && typeof body.message === "string") {
    return body.message
  }
  return body === undefined ? error.message : JSON.stringify(body)
}

type Sdk = typeof OpenAI

/** A 4xx whose message says a feature of the request itself is not supported (every call would fail). */
const UNSUPPORTED =
  /response_format|json_schema|json_object|structured output|not supported|unsupported|does not support|unrecognized request argument|unknown (?:parameter|field|argument)|extra inputs are not permitted|extra_forbidden/i
/** A 429 that is an exhausted quota or a billing problem, not a rate: waiting does not help. */
const QUOTA = /insufficient_quota|exceeded your current quota|quota exceeded|billing|payment required|credit balance/i

/** Map anything the SDK threw to a `ProviderError`; `scrub` redacts the secrets from any text (`Redactor.text`). */
const toProviderError = (
  OpenAI: Sdk,
  error: unknown,
  timeoutMs: number,
  scrub: (text: string) => string
): ProviderError => {
  const excerpt = (text: string) => {
    const clean = scrub(text).replace(/\s+/g, " ").trim()
    return clean.length > excerptLength ? `${clean.slice(0, excerptLength)}…` : clean
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return new ProviderError({ kind: "timeout", detail: `no response within ${timeoutMs} ms` })
  }
  if (error instanceof OpenAI.APIUserAbortError) {
    return new ProviderError({ kind: "timeout", detail: "request aborted" })
  }
  if (error instanceof OpenAI.APIConnectionError) {
    // A reply beyond the bound (domain/Limits.ts) is final for this judgment: asking again gets it again.
    if (NodeFetch.isResponseTooLarge(error)) {
      return new ProviderError({
        kind: "rejected",
        detail: `the server's reply is larger than ${formatBytes(Limits.responseBytes)}, the most a reply may hold`
      })
    }
    const why = unreachable(error)
    if (why !== undefined) return new ProviderError({ kind: "unreachable", detail: why })
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ""
    const inner = error.cause instanceof Error && error.cause.cause instanceof Error
      ? ` (${error.cause.cause.message})`
      : ""
    return new ProviderError({ kind: "network", detail: excerpt(`${error.message}${cause}${inner}`) })
  }
  if (error instanceof OpenAI.APIError && typeof error.status === "number") {
    const status = error.status
    const detail = excerpt(describeBody(error))
    const rateLimit = parseRateLimitHeaders(error.headers ?? undefined)
    if (status === 429) {
      if (QUOTA.test(detail) || QUOTA.test(String((error as { code?: unknown }).code ?? ""))) {
        return new ProviderError({ kind: "quota", status, detail, rateLimit })
      }
      return new ProviderError({
        kind: "rate_limited",
        status,
        retryAfterMs: parseRetryAfter(error.headers, Date.now()),
        detail,
        rateLimit
      })
    }
    if (status === 401 || status === 403) return new ProviderError({ kind: "unauthorized", status, detail })
    if (status === 404) return new ProviderError({ kind: "not_found", status, detail })
    if (status === 402) return new ProviderError({ kind: "quota", status, detail })
    if (status === 408) return new ProviderError({ kind: "timeout", status, detail, rateLimit })
    if (status >= 500) return new ProviderError({ kind: "server", status, detail, rateLimit })
    if ((status === 400 || status === 422) && UNSUPPORTED.test(detail)) {
      return new ProviderError({ kind: "unsupported", status, detail })
    }
    return new ProviderError({ kind: "rejected", status, detail, rateLimit })
  }
  // Anything else unexpected: worth another try.
  const message = error instanceof Error ? error.message : String(error)
  return new ProviderError({ kind: "server", detail: excerpt(`unexpected response: ${message}`) })
}

/**
 * A 200 whose body is not a chat completion (an HTML error page from a proxy, a JSON error object):
 * a server error, retried like a 5xx. Undefined when the body is a completion.
 */
const notACompletion = (
  body: unknown,
  contentType: string | null,
  scrub: (text: string) => string
): ProviderError | undefined => {
  if (typeof body === "object" && body !== null && Array.isArray((body as { choices?: unknown }).choices)) {
    return undefined
  }
  const text = typeof body === "string" ? body : JSON.stringify(body) ?? String(body)
  const clean = scrub(text).replace(/\s+/g, " ").trim()
  return new ProviderError({
    kind: "server",
    status: 200,
    detail: `the server answered 200 with ${
      contentType === null ? "a body" : contentType.split(";")[0]
    } that is not a chat completion: ${clean.length > excerptLength ? `${clean.slice(0, excerptLength)}…` : clean}`
  })
}

/** Messages for a request, with the failed reply and a correction request appended when repairing. */
const messages = (request: ChatRequest): Array<ChatCompletionMessageParam> => {
  const format = request.format ?? "json_schema"
  const system = format === "json_schema"
    ? request.system
    : `${request.system}\n\n${schemaInstruction(request.schema.schema)}`
  const base: Array<ChatCompletionMessageParam> = [
    { role: "system", content: system },
    { role: "user", content: request.user }
  ]
  if (request.repair === undefined) return base
  return [
    ...base,
    { role: "assistant", content: request.repair.previous },
    {
      role: "user",
      content:
        `Your previous reply could not be used: ${request.repair.error}. Reply again with only a JSON object matching the schema.`
    }
  ]
}

/**
 * Where the server cannot constrain the answer to a schema (`json_object`, `prompt` modes), the
 * schema goes at the end of the system message. Exported for the fake server in tests.
 */
export const SCHEMA_MARKER = "Reply with only a JSON object that matches this JSON schema:"
const schemaInstruction = (schema: Readonly<Record<string, unknown>>) => `${SCHEMA_MARKER}\n${JSON.stringify(schema)}`

/** The request body; extra fields (Mistral's `random_seed`) are sent as-is by the SDK. */
type Body = ChatCompletionCreateParamsNonStreaming & { random_seed?: number; prompt_cache_key?: string }

export const body = (
  provider: OpenAiCompatibleProvider,
  model: string,
  params: SamplingParams,
  request: ChatRequest
): Body => {
  const result: Body = { model, messages: messages(request) }
  const format = request.format ?? "json_schema"
  if (format === "json_schema") {
    result.response_format = {
      type: "json_schema",
      json_schema: { name: request.schema.name, schema: { ...request.schema.schema }, strict: true }
    }
  } else if (format === "json_object") {
    result.response_format = { type: "json_object" }
  }
  if (params.temperature !== undefined) result.temperature = params.temperature
  const maxTokens = request.maxTokens ?? params.maxTokens
  if (maxTokens !== undefined) {
    // OpenAI's current models reject `max_tokens`; the compatible APIs only know `max_tokens`.
    if (provider === "openai") result.max_completion_tokens = maxTokens
    else result.max_tokens = maxTokens
  }
  // Only the hosted APIs that document it: a compatible server may refuse an unknown field.
  if (request.cacheKey !== undefined && (provider === "openai" || provider === "mistral")) {
    result.prompt_cache_key = request.cacheKey
  }
  if (params.seed !== undefined) {
    if (provider === "mistral") result.random_seed = params.seed
    else result.seed = params.seed
  }
  return result
}

/**
 * The text and usage of a chat completion (a synchronous reply, or one line of a batch's output):
 * with the prompt tokens served from the provider's cache when it says (OpenAI:
 * `usage.prompt_tokens_details.cached_tokens`; Mistral: the same field, or `usage.prompt_cache_hit_tokens`).
 */
export const completionReply = (data: unknown): { readonly text: string; readonly usage: ChatResponse["usage"] } => {
  const d = data as {
    choices?: ReadonlyArray<{ message?: { content?: string | null; refusal?: string | null } }>
    usage?: {
      prompt_tokens?: number
      completion_tokens?: number
      prompt_tokens_details?: { cached_tokens?: number } | null
      prompt_cache_hit_tokens?: number
    }
  }
  const message = d.choices?.[0]?.message
  const usage = d.usage
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? usage?.prompt_cache_hit_tokens
  return {
    text: message?.content ?? message?.refusal ?? "",
    usage: {
      inputTokens: usage?.prompt_tokens ?? 0,
      outputTokens: usage?.completion_tokens ?? 0,
      ...(typeof cached === "number" && cached > 0 ? { cachedInputTokens: cached } : {})
    }
  }
}

export const make = (options: OpenAiProviderOptions): Effect.Effect<LlmProvider["Type"], UsageError> =>
  Effect.gen(function*() {
    const { model, provider } = options
    const params = options.params ?? {}
    const timeoutMs = Math.max(1, Math.round(options.timeoutMs ?? defaultTimeoutMs))
    const baseURL = options.baseURL ?? (yield* defaultBaseURL(provider))
    if (baseURL === undefined || baseURL.trim() === "") {
      return yield* new UsageError({ problem: `provider ${provider} needs a base URL (--base-url)` })
    }
    const invalid = checkBaseUrl(baseURL)
    if (invalid !== undefined) return yield* new UsageError({ problem: invalid })
    const key = options.apiKey === undefined ? undefined : Redacted.value(options.apiKey)
    // What the server sends back is redacted of the run's secrets and of the ones sent to it here.
    const redactor = (yield* Redaction).with([
      // The key, and the header it is sent in.
      ...(key === undefined ? [] : headerSecrets(`Bearer ${key}`)),
      ...urlSecrets(baseURL)
    ])
    const scrub = redactor.text
    /** A completion read, its text redacted. */
    const reply = (data: unknown) => {
      const read = completionReply(data)
      return { ...read, text: scrub(read.text) }
    }
    const transport = NodeFetch.make()
    // The SDK loads only when an LLM judge is used (it costs ~13 MB and start-up time otherwise).
    const OpenAI: Sdk = yield* Effect.promise(() => import("openai").then((m) => m.default))
    const client = yield* Effect.try({
      try: () =>
        new OpenAI({
          apiKey: key === undefined || key === "" ? placeholderKey : key,
          baseURL,
          maxRetries: 0,
          timeout: timeoutMs,
          // Don't forward OpenAI org/project ids from the environment to other hosts; never log.
          organization: provider === "openai" ? undefined : null,
          project: provider === "openai" ? undefined : null,
          logLevel: "off",
          // node:http instead of the built-in fetch: less CPU per call (see NodeFetch.ts).
          fetch: transport.fetch
        }),
      catch: (e) =>
        new UsageError({
          problem: `cannot set up the ${provider} client: ${scrub(e instanceof Error ? e.message : String(e))}`
        })
    })

    /**
     * The chat-completions call goes straight over `NodeFetch.post`, not through the SDK's request
     * pipeline: per request the SDK builds a `Headers` object, an `AbortController`, a parsed URL,
     * its debug log's request details (with logging off) and a chain of promises — CPU on the event
     * loop that the replies of the other calls in flight wait behind before their slots are refilled.
     * Measured through the CLI (bench [2b]: 1,200 calls at 100 ms, 32 in flight, five interleaved
     * rounds, real-time priority): a freed slot refilled after 1.7–1.8 ms instead of 2.1–2.2, latency
     * hiding 0.960–0.961 against 0.954–0.956 (docs/benchmarks.md). What the SDK would send and throw
     * is kept: its URL (`buildURL`), the key, organisation and project headers, and its errors
     * (`APIError.generate` with the body and headers, timeouts, aborts, connection errors), so
     * `toProviderError` reads them as before. The SDK still holds the configuration and the Batch API.
     */
    const endpoint = yield* Effect.try({
      try: () => NodeFetch.target(client.buildURL("/chat/completions", undefined)),
      catch: (e) => e
    }).pipe(
      Effect.flatMap((t) => t instanceof TypeError ? Effect.fail(t) : Effect.succeed(t)),
      Effect.mapError((e) =>
        new UsageError({
          problem: `cannot set up the ${provider} client: ${scrub(e instanceof Error ? e.message : String(e))}`
        })
      )
    )
    const headers: Readonly<Record<string, string>> = {
      accept: "application/json",
      "content-type": "application/json",
      "user-agent": "rag-eval",
      authorization: `Bearer ${client.apiKey ?? placeholderKey}`,
      ...(client.organization === null ? {} : { "openai-organization": client.organization }),
      ...(client.project === null ? {} : { "openai-project": client.project })
    }
    /** A transport failure as the SDK throws it (`makeRequest`): aborted, timed out, or a connection error. */
    const failed = (e: unknown, aborted: boolean): ProviderError =>
      toProviderError(
        OpenAI,
        aborted
          ? new OpenAI.APIUserAbortError()
          : e instanceof NodeFetch.TimeoutError
          ? new OpenAI.APIConnectionTimeoutError()
          : new OpenAI.APIConnectionError({ cause: e instanceof Error ? e : new Error(String(e)) }),
        timeoutMs,
        scrub
      )
    /**
     * A response read as the SDK reads it (`makeRequest`, `defaultParseResponse`): an error status
     * is an `APIError` with the body (JSON when it parses) and headers; a JSON media type is parsed,
     * anything else is text (which `notACompletion` then names).
     */
    const outcome = (response: NodeFetch.BufferedResponse): Effect.Effect<ChatResponse, ProviderError> => {
      const text = response.textNow()
      if (!response.ok) {
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          json = undefined
        }
        const error = OpenAI.APIError.generate(
          response.status,
          json as object | undefined,
          json ? undefined : text,
          response.headers as unknown as Headers
        )
        return Effect.fail(toProviderError(OpenAI, error, timeoutMs, scrub))
      }
      const contentType = response.headers.get("content-type")
      const mediaType = contentType?.split(";")[0]?.trim()
      let data: unknown = text
      if (response.status === 204) data = null
      else if (mediaType !== undefined && (mediaType.includes("application/json") || mediaType.endsWith("+json"))) {
        try {
          data = JSON.parse(text)
        } catch (e) {
          return Effect.fail(toProviderError(OpenAI, e, timeoutMs, scrub))
        }
      }
      const bad = notACompletion(data, contentType, scrub)
      if (bad !== undefined) return Effect.fail(bad)
      return Effect.succeed({ ...reply(data), rateLimit: parseRateLimitHeaders(response.headers) })
    }

    const complete = (request: ChatRequest): Effect.Effect<ChatResponse, ProviderError> =>
      Effect.async<ChatResponse, ProviderError>((resume) => {
        // The timeout covers the whole response: NodeFetch resolves only once the body is in, so a
        // body that stalls times out too. Interrupting the fiber aborts the call.
        let aborted = false
        const call = transport.post(endpoint, headers, JSON.stringify(body(provider, model, params, request)), {
          timeoutMs
        })
        call.response.then(
          (response) => resume(Effect.suspend(() => outcome(response))),
          (e) => resume(Effect.fail(failed(e, aborted)))
        )
        return Effect.sync(() => {
          aborted = true
          call.abort()
        })
      })

    return LlmProvider.of({
      provider,
      model,
      params,
      complete,
      batchable: {
        body: (request) => body(provider, model, params, request) as unknown as Readonly<Record<string, unknown>>,
        reply
      },
      host: hostOf(baseURL),
      endpoint: endpointOf(provider, baseURL),
      keySource: keySource(provider)
    })
  })

export const layer = (options: OpenAiProviderOptions): Layer.Layer<LlmProvider, UsageError> =>
  Layer.effect(LlmProvider, make(options))

export interface ProviderFlags {
  readonly provider: string
  readonly model: string
  readonly baseUrl?: string | undefined
  /** `--api-key`; wins over the environment. */
  readonly apiKey?: Redacted.Redacted | undefined
  readonly timeoutMs: number
  readonly params: SamplingParams
  /** A missing key for openai/mistral is an error (default); `--dry-run` calls nothing and needs none. */
  readonly requireKey?: boolean | undefined
}

/** An environment key; unset, empty or unreadable all count as absent. */
const optionalKey = (name: string): Effect.Effect<Option.Option<Redacted.Redacted>> =>
  Config.option(Config.redacted(name)).pipe(
    Effect.map(Option.filter((key) => Redacted.value(key).trim() !== "")),
    Effect.orElseSucceed(() => Option.none())
  )

/**
 * The key a provider takes from the environment when `--api-key` is not given: `OPENAI_API_KEY`
 * (openai, and openai-compatible — a compatible server that needs a key usually takes the one
 * OpenAI's SDK reads); `MISTRAL_API_KEY`, else `API_KEY` (mistral); none for ollama.
 */
export const environmentKey = (provider: string): Effect.Effect<Redacted.Redacted | undefined> =>
  Effect.gen(function*() {
    const names = provider === "openai" || provider === "openai-compatible"
      ? ["OPENAI_API_KEY"]
      : provider === "mistral"
      ? ["MISTRAL_API_KEY", "API_KEY"]
      : []
    for (const name of names) {
      const key = yield* optionalKey(name)
      if (Option.isSome(key)) return key.value
    }
    return undefined
  })

/**
 * Resolve CLI flags into provider options, reading keys from the environment (`OPENAI_API_KEY`;
 * `MISTRAL_API_KEY`, else `API_KEY`). A missing key for openai or mistral is a `UsageError` naming
 * the variable; `ollama` and `openai-compatible` take `--api-key` only and work without one.
 */
export const optionsFromFlags = (flags: ProviderFlags): Effect.Effect<OpenAiProviderOptions, UsageError> =>
  Effect.gen(function*() {
    const provider = flags.provider
    if (!isOpenAiCompatible(provider)) {
      return yield* new UsageError({
        problem: `unknown provider "${provider}" (expected one of: ${providers.join(", ")}, heuristic)`
      })
    }
    const apiKey = flags.apiKey ?? (yield* environmentKey(provider))
    const requireKey = flags.requireKey ?? true
    if (apiKey === undefined && provider === "openai" && requireKey) {
      return yield* new UsageError({ problem: "no API key for openai: set OPENAI_API_KEY or pass --api-key" })
    }
    if (apiKey === undefined && provider === "mistral" && requireKey) {
      return yield* new UsageError({
        problem: "no API key for mistral: set MISTRAL_API_KEY (or API_KEY) or pass --api-key"
      })
    }
    return {
      provider,
      model: flags.model,
      baseURL: flags.baseUrl,
      apiKey,
      timeoutMs: flags.timeoutMs,
      params: flags.params
    }
  })

/** The provider layer for CLI flags (see `optionsFromFlags`). */
export const fromFlags = (flags: ProviderFlags): Layer.Layer<LlmProvider, UsageError> =>
  Layer.effect(LlmProvider, Effect.flatMap(optionsFromFlags(flags), make))
