/**
 * The one place where flags choose the judge: the heuristic judge, or an LLM judge over an
 * OpenAI-compatible provider behind the shared rate gate.
 */
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import { UsageError } from "../domain/Errors.js"
import * as HeuristicJudge from "../judges/HeuristicJudge.js"
import type { Judge } from "../judges/Judge.js"
import * as LlmJudge from "../judges/LlmJudge.js"
import * as OpenAiProvider from "../providers/OpenAiProvider.js"
import * as RateGate from "../providers/RateGate.js"

import type { ProviderName } from "../providers/Names.js"

export { type ProviderName, PROVIDERS } from "../providers/Names.js"

/** Default model per provider; `openai-compatible` has none (the server decides what it serves). */
export const defaultModels: Readonly<Record<ProviderName, string | undefined>> = {
  heuristic: HeuristicJudge.model,
  openai: "gpt-4o-mini",
  mistral: "mistral-small-latest",
  ollama: "llama3.1:8b",
  "openai-compatible": undefined
}

export interface JudgeFlags {
  readonly provider: ProviderName
  readonly model?: string | undefined
  readonly baseUrl?: string | undefined
  readonly apiKey?: Redacted.Redacted | undefined
  readonly concurrency: number
  readonly rpm?: number | undefined
  readonly tpm?: number | undefined
  /** Requests that may start at once under --rpm (default 1: starts evenly spread). */
  readonly burst?: number | undefined
  /** AIMD concurrency and learning the server's limit (default true). */
  readonly adaptive?: boolean | undefined
  /** How long one judgment may wait out 429s (default 10 min). */
  readonly maxWaitMs?: number | undefined
  /** One minimal request before judging (default true). */
  readonly preflight?: boolean | undefined
  /** A missing key is an error (default); `--dry-run` calls nothing and needs none. */
  readonly requireKey?: boolean | undefined
  /** Completes on the first Ctrl+C: calls still waiting end at once. */
  readonly stop?: Effect.Effect<void> | undefined
  readonly timeoutMs: number
  readonly maxRetries: number
  readonly seed?: number | undefined
  readonly temperature?: number | undefined
}

export const judgeLayer = (flags: JudgeFlags): Layer.Layer<Judge, UsageError> => {
  if (flags.provider === "heuristic") return HeuristicJudge.layer
  if (flags.provider === "openai-compatible" && flags.model === undefined) {
    return Layer.fail(
      new UsageError({ problem: "--provider openai-compatible needs --model (the name the server serves)" })
    )
  }
  const provider = OpenAiProvider.fromFlags({
    provider: flags.provider,
    model: flags.model ?? defaultModels[flags.provider] ?? "default",
    baseUrl: flags.baseUrl,
    apiKey: flags.apiKey,
    timeoutMs: flags.timeoutMs,
    params: { temperature: flags.temperature, seed: flags.seed },
    requireKey: flags.requireKey
  })
  const maxWaitMs = flags.maxWaitMs ?? 10 * 60_000
  const gate = RateGate.layer({
    concurrency: flags.concurrency,
    rpm: flags.rpm,
    tpm: flags.tpm,
    burst: flags.burst,
    adaptive: flags.adaptive,
    maxPauseMs: maxWaitMs,
    stop: flags.stop
  })
  return LlmJudge.layer({ maxRetries: flags.maxRetries, maxWaitMs, preflight: flags.preflight, stop: flags.stop }).pipe(
    Layer.provide(Layer.merge(provider, gate))
  )
}
