/**
 * The chat-completion boundary: one request in, the model's text and token usage out.
 * Implementations: `OpenAiProvider` (openai, mistral, ollama, openai-compatible — all through the
 * `openai` SDK). Retries, rate limits and the shared 429 pause live above this, in `LlmJudge`
 * and `RateGate`, so a provider makes exactly one HTTP attempt per call.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Usage } from "../domain/Judgment.js"
import type { RateLimitInfo } from "./RateLimitHeaders.js"

/**
 * How the judge's answer is constrained: `json_schema` (response_format with the answer's schema —
 * the default), `json_object` (any JSON object; the schema goes in the prompt), or `prompt` (no
 * response_format at all: the schema goes in the prompt) for servers that support neither.
 */
export type StructuredOutput = "json_schema" | "json_object" | "prompt"

export interface ChatRequest {
  readonly system: string
  readonly user: string
  /** JSON schema the reply must match; sent as response_format json_schema. */
  readonly schema: { readonly name: string; readonly schema: Readonly<Record<string, unknown>> }
  /** A previous reply that failed to decode and why: sent back so the model can correct itself. */
  readonly repair?: { readonly previous: string; readonly error: string } | undefined
  /** How the answer is constrained (default `json_schema`). */
  readonly format?: StructuredOutput | undefined
  /** An upper bound on the reply's tokens (the preflight's tiny request). */
  readonly maxTokens?: number | undefined
  /**
   * Requests sharing a prompt prefix (a rubric's): sent as `prompt_cache_key` to OpenAI and Mistral,
   * which route requests with the same key to the same prompt cache. Not part of any judgment key.
   */
  readonly cacheKey?: string | undefined
}

export interface ChatResponse {
  readonly text: string
  readonly usage: Usage
  /** The server's rate-limit headers, when it sends them. */
  readonly rateLimit?: RateLimitInfo | undefined
}

/**
 * What went wrong with one HTTP attempt:
 * - `rate_limited` (429): wait and ask again — never a failure by itself;
 * - `server` (5xx, or a 200 that is not a chat completion), `timeout`, `network` (a connection reset
 *   mid-call): transient, retried with backoff up to `--max-retries`;
 * - `rejected`: this request is refused (a 4xx about its content, e.g. too long) — final for it;
 * - fatal for the whole run, since every later call would fail the same way: `unauthorized`
 *   (401/403: the key), `not_found` (404: the model or the URL), `unsupported` (a 400 saying a
 *   feature of the request itself is not supported, e.g. `response_format`), `quota` (a 429 that is
 *   an exhausted quota or billing problem, not a rate), `unreachable` (connection refused, DNS
 *   failure, invalid URL).
 */
export const ProviderErrorKind = Schema.Literal(
  "rate_limited",
  "server",
  "timeout",
  "network",
  "rejected",
  "unauthorized",
  "not_found",
  "unsupported",
  "quota",
  "unreachable"
)
export type ProviderErrorKind = typeof ProviderErrorKind.Type

const FATAL: ReadonlySet<ProviderErrorKind> = new Set([
  "unauthorized",
  "not_found",
  "unsupported",
  "quota",
  "unreachable"
])

/** One failed HTTP attempt; `kind` drives what happens next (see `ProviderErrorKind`). */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  kind: ProviderErrorKind,
  status: Schema.optional(Schema.Number),
  /** From a 429's Retry-After (or retry-after-ms) header. */
  retryAfterMs: Schema.optional(Schema.Number),
  detail: Schema.String,
  /** The server's rate-limit headers on this error, when it sent them. */
  rateLimit: Schema.optional(Schema.Unknown)
}) {
  get message(): string {
    return `${this.kind}${this.status === undefined ? "" : ` (HTTP ${this.status})`}: ${this.detail}`
  }
  /** Transient: worth another attempt (429s wait, the others back off). */
  get retryable(): boolean {
    return this.kind === "rate_limited" || this.kind === "server" || this.kind === "timeout" || this.kind === "network"
  }
  /** Every later call would fail the same way: the run stops. */
  get fatal(): boolean {
    return FATAL.has(this.kind)
  }
  get limits(): RateLimitInfo | undefined {
    return this.rateLimit as RateLimitInfo | undefined
  }
}

/** Sampling parameters that reach the API and are part of every judgment key. */
export interface SamplingParams {
  readonly temperature?: number | undefined
  readonly seed?: number | undefined
  readonly maxTokens?: number | undefined
}

export class LlmProvider extends Context.Tag("rag-eval/LlmProvider")<LlmProvider, {
  /** `openai`, `mistral`, `ollama`, `openai-compatible`. */
  readonly provider: string
  readonly model: string
  readonly params: SamplingParams
  /** The server's `host[:port]`, for messages (never credentials). */
  readonly host: string
  /**
   * The base URL when it is not the provider's public default (credentials removed): part of every
   * judgment key and the run id, since the same model name on another server is another judge.
   */
  readonly endpoint?: string | undefined
  /** Where the key comes from, for messages: "--api-key or OPENAI_API_KEY". */
  readonly keySource: string
  readonly complete: (request: ChatRequest) => Effect.Effect<ChatResponse, ProviderError>
  /**
   * Providers with a Batch API: the chat-completion body of a request, as a batch's request line
   * carries it, and a reply from a batch's output file read as `complete` reads one.
   */
  readonly batchable?: {
    readonly body: (request: ChatRequest) => Readonly<Record<string, unknown>>
    readonly reply: (body: unknown) => { readonly text: string; readonly usage: ChatResponse["usage"] }
  } | undefined
}>() {}
