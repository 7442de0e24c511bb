/**
 * `--batch`, `--detach`, `--batch-repair`, `--batch-poll` and `--max-cost` → the runner's
 * typed options: the Batch API client for the judge's provider, with the same key and base URL.
 */
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import { UsageError } from "../domain/Errors.js"
import { Redaction } from "../domain/Redaction.js"
import type { BatchOptions } from "../engine/RunTypes.js"
import { defaultModels, type JudgeFlags } from "../judges/JudgeSettings.js"
import * as BatchApi from "../providers/BatchApi.js"
import * as OpenAiProvider from "../providers/OpenAiProvider.js"

/** OpenAI's limits for one batch's input file. */
export const MAX_BATCH_REQUESTS = 50_000
export const MAX_BATCH_BYTES = 200 * 1024 * 1024

export interface BatchFlagValues {
  readonly batch: boolean
  readonly detach: boolean
  readonly batchRepair: "batch" | "sync"
  readonly batchPoll: number
  readonly maxCost: Option.Option<number>
  readonly dryRun: boolean
}

/** The `--batch` options for the judge, or undefined without `--batch`; a provider without a Batch API is a usage error. */
export const batchOptions = (
  flags: BatchFlagValues,
  judge: JudgeFlags
): Effect.Effect<BatchOptions | undefined, UsageError> =>
  Effect.gen(function*() {
    if (!flags.batch) {
      if (flags.detach) return yield* new UsageError({ problem: "--detach needs --batch" })
      return undefined
    }
    const provider = judge.provider
    if (provider !== "openai" && provider !== "mistral" && provider !== "openai-compatible") {
      return yield* new UsageError({
        problem:
          `--batch needs --provider openai, mistral or openai-compatible (a server with /v1/batches); ${provider} has no Batch API`
      })
    }
    const resolved = yield* OpenAiProvider.optionsFromFlags({
      provider,
      model: judge.model ?? defaultModels[provider] ?? "default",
      baseUrl: judge.baseUrl,
      apiKey: judge.apiKey,
      timeoutMs: judge.timeoutMs,
      params: {},
      requireKey: !flags.dryRun
    })
    const baseURL = resolved.baseURL ?? (yield* OpenAiProvider.defaultBaseURL(provider))
    if (baseURL === undefined) {
      return yield* new UsageError({ problem: `provider ${provider} needs a base URL (--base-url)` })
    }
    return {
      api: BatchApi.make({
        flavour: provider === "mistral" ? "mistral" : "openai",
        baseURL,
        apiKey: resolved.apiKey,
        model: resolved.model,
        timeoutMs: judge.timeoutMs,
        redactor: yield* Redaction
      }),
      repair: flags.batchRepair,
      detach: flags.detach,
      pollMs: Math.round(flags.batchPoll * 1000),
      maxPollMs: Math.max(Math.round(flags.batchPoll * 1000), 5 * 60_000),
      maxRequests: MAX_BATCH_REQUESTS,
      maxBytes: MAX_BATCH_BYTES
    } satisfies BatchOptions
  })
