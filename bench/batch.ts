/**
 * Bench [10] — `--batch` and the prompt cache: for about 10,000 rag-answers judgments at a stated
 * list price, the estimated cost synchronous, with `--batch`, and with `--batch` at the prompt-cache
 * hit rate the fake server observed; then the wall time of a real `--batch` run against the fake
 * (in this process: Files + Batches endpoints, the batch completing at its second status check),
 * split into submission (until the batch exists) and the rest (polls, collection, journaling,
 * records and reports). Run alone with `npx tsx bench/batch.ts`.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import * as Judgments from "../src/engine/Judgments.js"
import { precomputed, Retriever } from "../src/engine/Retriever.js"
import { estimate } from "../src/engine/Runner.js"
import type { BatchOptions } from "../src/engine/RunTypes.js"
import { defaultPromptsDir, parseRubric, render } from "../src/judges/Prompt.js"
import { cost, formatUsd, type Price } from "../src/pricing/Prices.js"
import * as BatchApi from "../src/providers/BatchApi.js"
import * as JudgmentCache from "../src/store/JudgmentCache.js"
import * as FakeOpenAi from "../test/support/FakeOpenAi.js"
import { runWith } from "../test/support/RunPipeline.js"
import { benchTempDir, writeCsv } from "./gen.js"
import { llmJudgeLayer, loadRagAnswers } from "./harness.js"

/** gpt-4o-mini's list prices (USD per 1M tokens, 2025): the Batch API at half, cached input at half. */
export const BENCH_PRICE: Price = { input: 0.15, output: 0.6, batchInput: 0.075, batchOutput: 0.3, cachedInput: 0.075 }
const MISTRAL_SMALL: Price = { input: 0.1, output: 0.3, batchInput: 0.05, batchOutput: 0.15, cachedInput: 0.01 }
const DIMENSIONS = 6

/**
 * The static prefix of each rag-answers rubric, in tokens (≈ 4 characters a token): the system text
 * (with the scale and the answer instructions) and the user message up to its first data block.
 */
export const staticPrefixTokens = (): ReadonlyArray<number> => {
  const dir = Path.join(defaultPromptsDir, "rag-answers")
  return fs.readdirSync(dir).filter((f) => f.endsWith(".json")).map((f) => {
    const rubric = Effect.runSync(parseRubric(fs.readFileSync(Path.join(dir, f), "utf8"), f))
    const { system, user } = render(rubric, {})
    return Math.round((system.length + user.indexOf("<data name=")) / 4)
  })
}

export interface BatchFigures {
  readonly judgments: number
  readonly syncUsd: number
  readonly batchUsd: number
  readonly batchCachedUsd: number
  readonly cacheHitRate: number
  /** The hit rate under OpenAI's rule (a prefix of ≥ 1024 tokens, in 128-token blocks). */
  readonly openAiHitRate: number
  /** The hit rate under Mistral's rule (64-token blocks). */
  readonly mistralHitRate: number
  readonly measuredUsd: number
  readonly measuredListUsd: number
  readonly wallMs: number
  readonly submitMs: number
  readonly batches: number
  readonly failed: number
  /** Bytes of the request files uploaded. */
  readonly uploadBytes: number
  /** The dry-run estimate's tokens. */
  readonly estInput: number
  readonly estOutput: number
  /** The report's cost row. */
  readonly costRow: string
}

export const batchFigures = async (dir: string, judgments = 10_000): Promise<BatchFigures> => {
  const rows = Math.ceil(judgments / DIMENSIONS)
  const csv = Path.join(dir, "batch.csv")
  writeCsv(csv, rows, 8)
  const pipeline = await loadRagAnswers()
  const server = await FakeOpenAi.start({ record: false, promptCache: true, batch: { steps: 1 } })
  try {
    const judge = llmJudgeLayer(server.url, 32)
    const options = {
      input: csv,
      outRoot: Path.join(dir, "out"),
      iterations: 1,
      concurrency: 32,
      maxFailures: 0,
      command: "bench",
      fresh: false,
      retryFailed: false,
      price: BENCH_PRICE
    }
    // The dry run's estimate (≈ 4 characters a token, 150 output tokens a judgment).
    const e = await Effect.runPromise(
      estimate(pipeline, options).pipe(Effect.provide(
        Layer.mergeAll(
          Judgments.layerEstimate.pipe(Layer.provide(judge)),
          Layer.succeed(Retriever, pipeline.retrieve ?? precomputed),
          NodeContext.layer
        ).pipe(Layer.provideMerge(JudgmentCache.layerNone))
      ))
    )
    const tokens = { input: e.inputTokens, output: e.outputTokens }
    const batch: BatchOptions = {
      api: BatchApi.make({
        flavour: "openai",
        baseURL: server.url,
        apiKey: Redacted.make("bench"),
        model: "fake-judge"
      }),
      repair: "batch",
      detach: false,
      pollMs: 10,
      maxPollMs: 100,
      maxRequests: 50_000,
      maxBytes: 200 * 1024 * 1024
    }
    let submitMs = 0
    const started = performance.now()
    const watch = setInterval(() => {
      if (submitMs === 0 && server.batches.length > 0) submitMs = performance.now() - started
    }, 1)
    const outcome = await Effect.runPromise(Effect.scoped(runWith(pipeline, judge, { ...options, batch })))
    clearInterval(watch)
    const wallMs = performance.now() - started
    const hit = server.promptTokens === 0 ? 0 : server.cachedTokens / server.promptTokens
    // The same prompts under OpenAI's and Mistral's caching rules, synchronously (300 cases each).
    const hitRateUnder = async (rule: { minTokens: number; block: number }, name: string) => {
      const strict = await FakeOpenAi.start({ record: false, promptCache: rule })
      try {
        await Effect.runPromise(
          Effect.scoped(
            runWith(pipeline, llmJudgeLayer(strict.url, 32), {
              ...options,
              outRoot: Path.join(dir, `out-${name}`),
              limit: 300
            })
          )
        )
        return strict.promptTokens === 0 ? 0 : strict.cachedTokens / strict.promptTokens
      } finally {
        await strict.close()
      }
    }
    const openAiHitRate = await hitRateUnder({ minTokens: 1024, block: 128 }, "openai")
    const mistralHitRate = await hitRateUnder({ minTokens: 64, block: 64 }, "mistral")
    return {
      judgments: e.judgments,
      syncUsd: cost(tokens, BENCH_PRICE).usd!,
      batchUsd: cost({ ...tokens, batchInput: tokens.input, batchOutput: tokens.output }, BENCH_PRICE).usd!,
      batchCachedUsd: cost({
        ...tokens,
        batchInput: tokens.input,
        batchOutput: tokens.output,
        cachedInput: Math.round(tokens.input * hit),
        batchCachedInput: Math.round(tokens.input * hit)
      }, BENCH_PRICE).usd!,
      cacheHitRate: hit,
      openAiHitRate,
      mistralHitRate,
      measuredUsd: outcome.cost.usd!,
      measuredListUsd: outcome.cost.listUsd ?? outcome.cost.usd!,
      wallMs,
      submitMs,
      batches: server.batches.length,
      failed: outcome.judgments.failed,
      estInput: tokens.input,
      estOutput: tokens.output,
      uploadBytes: fs.readFileSync(Path.join(outcome.info.runDir, "batches.jsonl"), "utf8").trim().split("\n")
        .map((l) => JSON.parse(l) as { kind: string; bytes?: number }).reduce(
          (n, l) => n + (l.kind === "upload" ? l.bytes ?? 0 : 0),
          0
        ),
      costRow: fs.readFileSync(Path.join(outcome.info.runDir, "report.md"), "utf8").split("\n").find((l) =>
        l.startsWith("| Cost |")
      ) ?? ""
    }
  } finally {
    await server.close()
  }
}

export const printBatchFigures = (f: BatchFigures, line: (text: string) => void) => {
  const p = BENCH_PRICE
  line(
    `    list price: $${p.input} in / $${p.output} out per 1M tokens; Batch API $${p.batchInput} / $${p.batchOutput}; cached input $${p.cachedInput} (gpt-4o-mini, 2025)`
  )
  line(
    `    estimated cost of ${
      f.judgments.toLocaleString("en-US")
    } judgments (dry-run estimate: ≈ 4 characters a token, 150 output tokens a judgment):`
  )
  line(`      synchronous:                     ${formatUsd(f.syncUsd)}`)
  line(
    `      --batch:                         ${formatUsd(f.batchUsd)} (${(100 * f.batchUsd / f.syncUsd).toFixed(0)}%)`
  )
  line(
    `      --batch, ${(100 * f.cacheHitRate).toFixed(1)}% of input cached: ${formatUsd(f.batchCachedUsd)} (${
      (100 * f.batchCachedUsd / f.syncUsd).toFixed(0)
    }%) — the hit rate the fake observed for this run's prompts`
  )
  line(
    `    the same prompts (first 300 cases) under OpenAI's rule (only prefixes of ≥ 1,024 tokens, in 128-token blocks): ${
      (100 * f.openAiHitRate).toFixed(1)
    }% cached — the rag-answers rubrics' static prefix (system text with the scale and instructions, then the user message's opening) is ${
      Math.min(...staticPrefixTokens())
    }–${Math.max(...staticPrefixTokens())} tokens`
  )
  line(
    `    under Mistral's rule (64-token blocks): ${
      (100 * f.mistralHitRate).toFixed(1)
    }% cached; at Mistral's 10% cached price (mistral-small $0.10 in / $0.30 out, batch half) the estimate with --batch becomes ${
      formatUsd(
        cost({
          input: f.estInput,
          output: f.estOutput,
          batchInput: f.estInput,
          batchOutput: f.estOutput,
          cachedInput: Math.round(f.estInput * f.mistralHitRate),
          batchCachedInput: Math.round(f.estInput * f.mistralHitRate)
        }, MISTRAL_SMALL).usd
      )
    } against ${formatUsd(cost({ input: f.estInput, output: f.estOutput }, MISTRAL_SMALL).usd)} synchronous`
  )
  line(
    `    measured (the fake's token counts): ${formatUsd(f.measuredUsd)}, against ${
      formatUsd(f.measuredListUsd)
    } at the list price, synchronous and uncached`
  )
  line(`    report: ${f.costRow}`)
  line(
    `    wall time of the --batch run against the fake: ${(f.wallMs / 1000).toFixed(2)} s (${f.batches} batch, ${
      (f.uploadBytes / 2 ** 20).toFixed(1)
    } MB uploaded; submitted after ${
      (f.submitMs / 1000).toFixed(2)
    } s: planning, rendering, upload, create; the rest: polls, download, journaling, records and reports; ${f.failed} failed)`
  )
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = benchTempDir()
  try {
    console.log("[10] --batch and the prompt cache: 10,000 rag-answers judgments")
    printBatchFigures(await batchFigures(dir), console.log)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
