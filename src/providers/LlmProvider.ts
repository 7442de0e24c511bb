/**
 * The chat-completion boundary: one request in, the model's text and token usage out.
 * Implementations: `OpenAiProvider` (openai, mistral, ollama, openai-compatible — all through the
 * `openai` SDK). Retries, rate limits and the shared 429 pause live above this, in `LlmJudge`
 * and `RateGate`, so a provider makes exactly one HTTP attempt per call.
 */
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import type * as Effect from "effect/Effect"
import type { Usage } from "../domain/Judgment.js"

export interface ChatRequest {
  readonly system: string
  readonly user: string
  /** JSON schema the reply must match; sent as response_format json_schema. */
  readonly schema: { readonly name: string; readonly schema: Readonly<Record<string, unknown>> }
  /** A previous reply that failed to decode and why: sent back so the model can correct itself. */
  readonly repair?: { readonly previous: string; readonly error: string } | undefined
}

export interface ChatResponse {
  readonly text: string
  readonly usage: Usage
}

export type ProviderErrorKind = "rate_limited" | "server" | "timeout" | "network" | "rejected"

/**
 * One failed HTTP attempt. `rejected` (4xx other than 408/429) is final; every other kind is retried.
 */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  kind: Schema.Literal("rate_limited", "server", "timeout", "network", "rejected"),
  status: Schema.optional(Schema.Number),
  /** From a 429's Retry-After (or retry-after-ms) header. */
  retryAfterMs: Schema.optional(Schema.Number),
  detail: Schema.String
}) {
  get message(): string {
    return `${this.kind}${this.status === undefined ? "" : ` (HTTP ${this.status})`}: ${this.detail}`
  }
  get retryable(): boolean {
    return this.kind !== "rejected"
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
  readonly complete: (request: ChatRequest) => Effect.Effect<ChatResponse, ProviderError>
}>() {}
