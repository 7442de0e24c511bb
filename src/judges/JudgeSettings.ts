/**
 * The one place where settings choose and build the judge: the heuristic judge, or an LLM judge over
 * an OpenAI-compatible provider behind a rate gate. The CLI builds it from its flags with the
 * process's own gate; a cluster runner builds it from the run's options with a gate that also asks
 * the cluster's shared limit (`cluster/RunnerHost.ts`).
 */
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import { UsageError } from "../domain/Errors.js"
import type { ProviderName } from "../providers/Names.js"
import * as OpenAiProvider from "../providers/OpenAiProvider.js"
import * as RateGate from "../providers/RateGate.js"
import * as HeuristicJudge from "./HeuristicJudge.js"
import type { Judge } from "./Judge.js"
import * as LlmJudge from "./LlmJudge.js"

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

/** What an LLM judge is built from, whoever builds it: the provider, the model and how it is asked. */
export interface LlmJudgeSettings {
  readonly provider: Exclude<ProviderName, "heuristic">
  readonly model: string
  readonly baseUrl?: string | undefined
  readonly apiKey?: Redacted.Redacted | undefined
  readonly requireKey?: boolean | undefined
  readonly timeoutMs: number
  readonly maxRetries: number
  readonly maxWaitMs: number
  readonly seed?: number | undefined
  readonly temperature?: number | undefined
  readonly preflight?: boolean | undefined
  readonly stop?: Effect.Effect<void> | undefined
}

/** An LLM judge over its provider, behind the rate gate given (the process's own, or a cluster runner's). */
export const llmJudgeLayer = <E>(
  settings: LlmJudgeSettings,
  gate: Layer.Layer<RateGate.RateGate, E>
): Layer.Layer<Judge, UsageError | E> => {
  const provider = OpenAiProvider.fromFlags({
    provider: settings.provider,
    model: settings.model,
    baseUrl: settings.baseUrl,
    apiKey: settings.apiKey,
    timeoutMs: settings.timeoutMs,
    params: { temperature: settings.temperature, seed: settings.seed },
    requireKey: settings.requireKey
  })
  return LlmJudge.layer({
    maxRetries: settings.maxRetries,
    maxWaitMs: settings.maxWaitMs,
    preflight: settings.preflight,
    stop: settings.stop
  }).pipe(Layer.provide(Layer.merge(provider, gate)))
}

export const judgeLayer = (flags: JudgeFlags): Layer.Layer<Judge, UsageError> => {
  if (flags.provider === "heuristic") return HeuristicJudge.layer
  if (flags.provider === "openai-compatible" && flags.model === undefined) {
    return Layer.fail(
      new UsageError({ problem: "--provider openai-compatible needs --model (the name the server serves)" })
    )
  }
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
  return llmJudgeLayer({
    ...flags,
    provider: flags.provider,
    model: flags.model ?? defaultModels[flags.provider] ?? "default",
    maxWaitMs
  }, gate)
}
