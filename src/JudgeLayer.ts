/**
 * The one place where flags choose the judge: the heuristic judge, or an LLM judge over an
 * OpenAI-compatible provider behind the shared rate gate.
 */
import type * as Redacted from "effect/Redacted"
import * as Layer from "effect/Layer"
import { UsageError } from "./domain/Errors.js"
import * as HeuristicJudge from "./judges/HeuristicJudge.js"
import type { Judge } from "./judges/Judge.js"
import * as LlmJudge from "./judges/LlmJudge.js"
import * as OpenAiProvider from "./providers/OpenAiProvider.js"
import * as RateGate from "./providers/RateGate.js"

import type { ProviderName } from "./providers/Names.js"

export { PROVIDERS, type ProviderName } from "./providers/Names.js"

/** Default model per provider; `openai-compatible` has none (the server decides what it serves). */
export const defaultModels: Readonly<Record<ProviderName, string | undefined>> = {
  heuristic: "lexical-v1",
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
  readonly timeoutMs: number
  readonly maxRetries: number
  readonly seed?: number | undefined
  readonly temperature?: number | undefined
}

export const judgeLayer = (flags: JudgeFlags): Layer.Layer<Judge, UsageError> => {
  if (flags.provider === "heuristic") return HeuristicJudge.layer
  if (flags.provider === "openai-compatible" && flags.model === undefined) {
    return Layer.fail(new UsageError({ problem: "--provider openai-compatible needs --model (the name the server serves)" }))
  }
  const provider = OpenAiProvider.fromFlags({
    provider: flags.provider,
    model: flags.model ?? defaultModels[flags.provider] ?? "default",
    baseUrl: flags.baseUrl,
    apiKey: flags.apiKey,
    timeoutMs: flags.timeoutMs,
    params: { temperature: flags.temperature, seed: flags.seed }
  })
  const gate = RateGate.layer({ concurrency: flags.concurrency, rpm: flags.rpm, tpm: flags.tpm })
  return LlmJudge.layer({ maxRetries: flags.maxRetries }).pipe(Layer.provide(Layer.merge(provider, gate)))
}
