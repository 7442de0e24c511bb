/**
 * What `rag-eval run` does, loaded only when it runs: validate flags, load the pipeline, choose the
 * layers (judge, retriever, journal, cache, reporters, progress) and drive the runner.
 */
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import { loadStoreModule } from "../cluster/Peers.js"
import { UsageError } from "../domain/Errors.js"
import { parseAllGates } from "../domain/Gate.js"
import { thousands } from "../domain/Numbers.js"
import * as Redaction from "../domain/Redaction.js"
import { maskUrlsIn, redactArgv } from "../domain/Secrets.js"
import { VERSION } from "../domain/Version.js"
import { snapshotEvery } from "../engine/HeldRecords.js"
import * as Judgments from "../engine/Judgments.js"
import type { OptionName } from "../engine/OptionSpecs.js"
import { instantiate } from "../engine/Pipeline.js"
import type { PipelineOptions } from "../engine/PipelineOptions.js"
import * as Progress from "../engine/Progress.js"
import { precomputed, Retriever } from "../engine/Retriever.js"
import { estimate, ESTIMATED_OUTPUT_TOKENS, run, type RunOptions } from "../engine/Runner.js"
import { Shutdown } from "../engine/Shutdown.js"
import { judgeLayer } from "../judges/JudgeSettings.js"
import { parseColumnMapping } from "../load/CaseMapping.js"
import { cost, formatUsd, loadPriceFile, type Price, priceFor } from "../pricing/Prices.js"
import * as OpenAiProvider from "../providers/OpenAiProvider.js"
import { layer as reportersLayer, parseFormats } from "../report/Reporter.js"
import * as JudgmentCache from "../store/JudgmentCache.js"
import * as JudgmentJournal from "../store/JudgmentJournal.js"
import type { TargetConfig } from "../target/TargetConfig.js"
import { batchOptions } from "./BatchFlags.js"
import { displayPath } from "./Display.js"
import { loadPipeline, promptDirsFor } from "./LoadPipeline.js"
import { type FlagValue, gatherOptions } from "./PipelineSettings.js"
import { RecordedArgv } from "./Resume.js"
import {
  judgeSettings,
  parseWait,
  pipelineOptionFlags,
  providerFlagsProblem,
  recordsArgv,
  type RunFlags,
  secretFlags
} from "./RunFlags.js"
import { finishRun } from "./RunResult.js"

/** The flags of the pipeline options, by option name (see `PipelineSettings.ts`). */
const optionFlagValues = (flags: RunFlags): Partial<Record<OptionName, FlagValue>> =>
  Object.fromEntries(
    (Object.keys(pipelineOptionFlags) as Array<OptionName>).map((name) => [name, flags[name] as FlagValue])
  )

export const runAction = (flags: RunFlags) =>
  Effect.gen(function*() {
    const file = Option.orElse(flags.input, () => flags.csv)
    if (Option.isNone(file)) {
      return yield* new UsageError({ problem: "give the test cases with --input FILE (or --csv FILE)" })
    }
    if (Option.isSome(flags.input) && Option.isSome(flags.csv)) {
      return yield* new UsageError({ problem: "give either --input or --csv, not both" })
    }
    const flagProblem = providerFlagsProblem(flags)
    if (flagProblem !== undefined) return yield* new UsageError({ problem: flagProblem })
    if (flags.maxFailures < 0) return yield* new UsageError({ problem: "--max-failures must be 0 or more" })
    if (Option.isSome(flags.limit) && flags.limit.value < 1) {
      return yield* new UsageError({ problem: "--limit must be at least 1" })
    }
    const reporters = yield* parseFormats(flags.format, { csvRaw: flags.csvRaw })
    const thresholds = yield* parseAllGates(
      Option.getOrUndefined(flags.failUnder),
      Option.getOrUndefined(flags.failOver)
    )
    const columnMapping = Option.isSome(flags.columns) ? yield* parseColumnMapping(flags.columns.value) : undefined
    const definition = yield* loadPipeline(flags.pipeline)
    const gathered = yield* gatherOptions(definition, optionFlagValues(flags), { announce: !flags.quiet })
    const pipeline = instantiate(definition, gathered.options)
    // A pipeline that judges nothing (evidence-retrieval: metrics against gold spans) uses no judge at all.
    if (Option.isNone(flags.provider) && !flags.quiet && pipeline.judge.rubrics.length > 0) {
      yield* Console.error(
        "no --provider given: using the heuristic judge (offline, deterministic lexical proxies, not an LLM)"
      )
    }
    const shutdown = yield* Shutdown
    // The arguments as typed, or a resumed run's own: secrets masked, they never reach a file.
    const recordedArgv = redactArgv(yield* RecordedArgv, secretFlags)
    // --store / --cluster: the journal and cache on PostgreSQL; with --cluster the runners hold the keys and make the calls
    if (flags.cluster && Option.isNone(flags.store)) {
      return yield* new UsageError({ problem: "--cluster needs --store postgres://… (the store the runners share)" })
    }
    const stored = Option.isNone(flags.store) ?
      undefined :
      yield* Effect.flatMap(
        loadStoreModule(flags.cluster ? "--cluster" : "--store", () => import("../cluster/RunSetup.js")),
        (m) =>
          m.storeLayers({
            store: flags.store.pipe(Option.getOrThrow),
            cluster: flags.cluster,
            noCache: flags.noCache,
            judge: judgeSettings(flags, flags.concurrency),
            retryFailed: flags.retryFailed,
            stopping: shutdown.stopping
          })
      )
    const judge = judgeLayer({
      ...judgeSettings(flags, flags.concurrency),
      requireKey: !flags.dryRun && !flags.cluster,
      stop: shutdown.requested,
      ...(flags.cluster ? { preflight: false } : {})
    })
    const table = Option.isSome(flags.prices) ? yield* loadPriceFile(flags.prices.value) : undefined
    const snapshotCases = yield* snapshotEvery
    // --target: the live system's configuration (its headers' `${NAME}`s read from the environment)
    const target = yield* resolveTarget(flags)
    // Every text a server sends back is redacted of every secret of the command (domain/Redaction.ts):
    // the providers, the Batch API, the target and the retrievers read this redactor.
    const redactor = Redaction.make(yield* runSecrets(flags, gathered.options, target))
    // --batch (the provider's Batch API)
    const batch = yield* batchOptions(flags, judgeSettings(flags, flags.concurrency)).pipe(
      Effect.provideService(Redaction.Redaction, redactor)
    )
    // --target: the live system answers the cases before they are judged (target/Generate.ts)
    const generator = yield* targetLayer(flags, target, batch !== undefined)
    const storage = stored ??
      Layer.merge(
        JudgmentJournal.layerFile,
        flags.noCache ? JudgmentCache.layerNone : JudgmentCache.layerFile(JudgmentCache.cacheDir(flags.out))
      )
    // One judge (one rate gate) for the whole command: the core judges with it, or prices a dry run.
    const services = Layer.mergeAll(
      (flags.dryRun ? Judgments.layerEstimate : Judgments.layer).pipe(Layer.provide(judge)),
      Layer.succeed(Retriever, pipeline.retrieve ?? precomputed),
      reportersLayer(reporters),
      flags.quiet ? Progress.layerSilent : Progress.layerStderr,
      generator ?? Layer.empty
    ).pipe(Layer.provideMerge(storage))
    const price = (provider: string, model: string): Price | undefined =>
      priceFor(provider, model, {
        table,
        flag: { input: Option.getOrUndefined(flags.priceIn), output: Option.getOrUndefined(flags.priceOut) }
      })
    const runOptions = (judgeInfo: { provider: string; model: string }): RunOptions => ({
      input: file.value,
      outRoot: flags.out,
      limit: Option.getOrUndefined(flags.limit),
      iterations: flags.iterations,
      concurrency: flags.concurrency,
      maxFailures: flags.maxFailures,
      command: ["rag-eval", ...recordedArgv].join(" "),
      recordsCommand: ["rag-eval", ...recordsArgv(recordedArgv)].join(" "),
      pipelineFile: flags.pipeline,
      promptDirs: promptDirsFor(flags.pipeline),
      runId: Option.getOrUndefined(flags.runId),
      fresh: flags.fresh,
      retryFailed: flags.retryFailed,
      columns: columnMapping,
      price: price(judgeInfo.provider, judgeInfo.model),
      manifestExtra: {
        version: VERSION,
        argv: recordedArgv,
        options: gathered.recorded,
        optionSources: gathered.sources,
        ...(Option.isSome(flags.store) ? { store: maskUrlsIn(flags.store.value), cluster: flags.cluster } : {})
      },
      details: flags.details,
      batch,
      maxCostUsd: Option.getOrUndefined(flags.maxCost),
      gates: thresholds,
      snapshotEvery: snapshotCases
    })
    // --trace-otlp: the run's spans go to a collector (engine/Tracing.ts, loaded only then); else tracing is off.
    const traced = yield* tracingFor(flags)
    return yield* Effect.gen(function*() {
      const judgeInfo = (yield* Judgments.Judgments).identity
      if (Option.isSome(flags.maxCost) && price(judgeInfo.provider, judgeInfo.model) === undefined) {
        return yield* new UsageError({
          problem: `--max-cost needs a price for ${judgeInfo.model}: give --price-in/--price-out or --prices`
        })
      }
      if (judgeInfo.traits.deterministic && flags.iterations > 1 && !flags.quiet) {
        yield* Console.error(
          `the ${
            judgeInfo.traits.languageModel ? "judge" : "heuristic judge"
          } is deterministic: iterations will agree exactly (iterations measure an LLM judge's stability)`
        )
      }
      if (flags.dryRun) {
        const e = yield* estimate(pipeline, runOptions(judgeInfo))
        yield* Console.log([
          `dry run: ${pipeline.name} with ${judgeInfo.label}`,
          ...(e.targetCalls === undefined
            ? []
            : [
              `  target calls:      ${thousands(e.targetCalls)} (to ${
                maskUrlsIn(Option.getOrElse(flags.target, () => ""))
              }; answers already in the run's journal are not asked again)`
            ]),
          `  judge calls:       ${thousands(e.calls)}${
            e.alreadyDone > 0 ? ` (${thousands(e.alreadyDone)} more already in the journal or cache)` : ""
          }`,
          ...(e.judgments > e.calls
            ? [`  judgments:         ${thousands(e.judgments)} (listwise: several hits a call)`]
            : []),
          `  estimated tokens:  ${thousands(e.inputTokens)} in / ${
            thousands(e.outputTokens)
          } out (≈ 4 characters a token, ${ESTIMATED_OUTPUT_TOKENS} output tokens a judgment)`,
          ...(e.judgments > 0
            ? [
              `  per judgment:      ${(e.inputTokens / e.judgments).toFixed(1)} in / ${
                (e.outputTokens / e.judgments).toFixed(1)
              } out`
            ]
            : []),
          `  estimated cost:    ${formatUsd(e.cost.usd)}${batch === undefined ? "" : " (synchronous)"}`,
          `  with --batch:      ${
            formatUsd(
              cost({
                input: e.inputTokens,
                output: e.outputTokens,
                batchInput: e.inputTokens,
                batchOutput: e.outputTokens
              }, e.cost.price ?? undefined).usd
            )
          }${
            judgeInfo.traits.runsLocally
              ? " (local judge: no Batch API)"
              : " (Batch API price; prompt-cache hits would lower both)"
          }`,
          `  run directory:     ${displayPath(e.runDir)} (${
            fs.existsSync(e.runDir) ? "exists: a real run resumes it" : "not created"
          })`
        ].join("\n"))
        return
      }
      const outcome = yield* run(pipeline, runOptions(judgeInfo))
      const j = outcome.judgments
      // Counts are printed one way everywhere: with thousands separators (1,800).
      const reused = [
        j.reused > 0 ? `${thousands(j.reused)} reused from the journal` : "",
        j.cached > 0 ? `${thousands(j.cached)} from the cache` : ""
      ].filter((x) => x !== "")
      if (!flags.quiet) {
        yield* Console.error(
          `${thousands(j.total)} judgments: ${thousands(j.ok)} ok, ${thousands(j.failed)} failed${
            reused.length > 0 ? `, ${reused.join(", ")}` : ""
          }; tokens ${thousands(outcome.tokens.input)} in / ${thousands(outcome.tokens.output)} out; cost ${
            formatUsd(outcome.cost.usd)
          }`
        )
      }
      yield* finishRun(outcome, { json: flags.json, thresholds, maxFailures: flags.maxFailures })
    }).pipe(
      Effect.provide(services),
      Effect.provideService(Redaction.Redaction, redactor),
      Effect.withSpan("rag-eval run", {
        attributes: { "rag_eval.pipeline": pipeline.name, "rag_eval.dry_run": flags.dryRun }
      }),
      traced
    )
  })

/** Variables that hold credentials rag-eval reads (masked in spans like any secret it was given). */
const CREDENTIAL_VARIABLES = ["OPENAI_API_KEY", "MISTRAL_API_KEY", "API_KEY", "RAG_EVAL_TOKEN", "PGPASSWORD"]

/** `--trace-otlp`: provide the exporter (every secret the run was given masked in what it sends); else tracing off. */
const tracingFor = (flags: RunFlags) =>
  Effect.gen(function*() {
    if (Option.isNone(flags.traceOtlp)) {
      return <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.withTracerEnabled(self, false)
    }
    const Tracing = yield* Effect.promise(() => import("../engine/Tracing.js"))
    const endpoint = Tracing.traceEndpoint(flags.traceOtlp.value)
    if (typeof endpoint === "string") return yield* new UsageError({ problem: endpoint })
    // The environment's credentials, read through Config as every setting: the providers' keys,
    // serve's token, PostgreSQL's password, and every variable a --target-header names.
    const referenced = flags.targetHeader.flatMap((h) =>
      [...h.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!)
    )
    const values = yield* Effect.forEach([...new Set([...CREDENTIAL_VARIABLES, ...referenced])], (name) =>
      Config.option(Config.string(name)).pipe(
        Effect.orElseSucceed(() =>
          Option.none<string>()
        ),
        Effect.map((value) => [name, Option.getOrUndefined(value)] as const)
      ))
    const env: Record<string, string | undefined> = Object.fromEntries(values)
    const expand = (text: string) =>
      text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env[name] ?? "")
    const secrets = Tracing.secretValues({
      values: [
        ...Option.toArray(flags.apiKey).map(Redacted.value),
        ...flags.targetHeader.map((h) => expand(h.slice(h.indexOf(":") + 1).trim())),
        ...referenced.flatMap((name) => env[name] === undefined ? [] : [env[name]!])
      ],
      urls: [flags.baseUrl, flags.target, flags.store].flatMap(Option.toArray).map(String),
      env
    })
    const layer = Tracing.layerOtlp(endpoint, secrets)
    return <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provide(self, layer)
  })

/** The `--target-*` flags given without `--target`. */
const orphanTargetFlags = (flags: RunFlags): Array<string> => [
  ...(Option.isSome(flags.targetPreset) ? ["--target-preset"] : []),
  ...(Option.isSome(flags.targetBody) ? ["--target-body"] : []),
  ...(flags.targetHeader.length > 0 ? ["--target-header"] : []),
  ...(Option.isSome(flags.targetAnswer) ? ["--target-answer"] : []),
  ...(Option.isSome(flags.targetContexts) ? ["--target-contexts"] : []),
  ...(Option.isSome(flags.targetDelta) ? ["--target-delta"] : []),
  ...(Option.isSome(flags.targetModel) ? ["--target-model"] : []),
  ...(Option.isSome(flags.targetTimeout) ? ["--target-timeout"] : []),
  ...(Option.isSome(flags.targetRpm) ? ["--target-rpm"] : []),
  ...(flags.regenerate ? ["--regenerate"] : [])
]

/**
 * `--target`'s configuration (undefined without it): checked, with its headers' `${NAME}`s read from
 * the environment. `--target-*` flags without `--target` are a usage error.
 */
const resolveTarget = (flags: RunFlags) =>
  Effect.gen(function*() {
    if (Option.isNone(flags.target)) {
      const orphans = orphanTargetFlags(flags)
      if (orphans.length > 0) {
        return yield* new UsageError({
          problem: `${orphans.join(", ")} ${
            orphans.length === 1 ? "needs" : "need"
          } --target URL (the live system to ask for answers)`
        })
      }
      return undefined
    }
    const { resolve } = yield* Effect.promise(() => import("../target/TargetConfig.js"))
    return yield* resolve({
      url: flags.target.value,
      preset: Option.getOrUndefined(flags.targetPreset),
      body: Option.getOrUndefined(flags.targetBody),
      headers: flags.targetHeader.length === 0 ? undefined : flags.targetHeader,
      answer: Option.getOrUndefined(flags.targetAnswer),
      contexts: Option.getOrUndefined(flags.targetContexts),
      delta: Option.getOrUndefined(flags.targetDelta),
      model: Option.getOrUndefined(flags.targetModel),
      timeoutMs: Option.getOrUndefined(flags.targetTimeout)
    })
  })

/**
 * Every secret the command sends, still `Redacted`: the judge's API key (`--api-key`, or the
 * environment's), the credentials in `--base-url` and `--store`, the target's headers and URL, every
 * secret pipeline option (`--search-token`) and the secrets of every URL among the options
 * (`--search-url`). The run's redactor is built from them (`domain/Redaction.ts`).
 */
const runSecrets = (flags: RunFlags, options: PipelineOptions, target: TargetConfig | undefined) =>
  Effect.gen(function*() {
    const secrets: Array<Redacted.Redacted<string>> = []
    const provider = Option.getOrUndefined(flags.provider)
    const apiKey = Option.getOrUndefined(flags.apiKey) ??
      (provider === undefined ? undefined : yield* OpenAiProvider.environmentKey(provider))
    // The key, and the header it is sent in.
    if (apiKey !== undefined) secrets.push(...Redaction.headerSecrets(`Bearer ${Redacted.value(apiKey)}`))
    if (Option.isSome(flags.baseUrl)) secrets.push(...Redaction.urlSecrets(flags.baseUrl.value))
    if (Option.isSome(flags.store)) secrets.push(...Redaction.urlSecrets(flags.store.value))
    if (target !== undefined) {
      const { secretsOf } = yield* Effect.promise(() => import("../target/TargetConfig.js"))
      secrets.push(...secretsOf(target))
    }
    for (const value of Object.values(options)) {
      if (Redacted.isRedacted(value)) secrets.push(...Redaction.headerSecrets(value as Redacted.Redacted<string>))
      else if (typeof value === "string") secrets.push(...Redaction.urlSecrets(value))
    }
    return secrets
  })

/**
 * The generate stage's layer for `--target` (undefined without it): the target asked live, or
 * counted for `--dry-run`.
 */
const targetLayer = (flags: RunFlags, config: TargetConfig | undefined, batch: boolean) =>
  Effect.gen(function*() {
    if (config === undefined) return undefined
    if (batch) {
      return yield* new UsageError({
        problem:
          "--batch with --target: the Batch API judges answers that exist already; run without --batch (or generate the answers first, then judge them with --batch)"
      })
    }
    const Generate = yield* Effect.promise(() => import("../target/Generate.js"))
    const TargetClient = yield* Effect.promise(() => import("../target/TargetClient.js"))
    const settings = {
      regenerate: flags.regenerate,
      concurrency: flags.targetConcurrency,
      rpm: Option.getOrUndefined(flags.targetRpm),
      maxRetries: flags.maxRetries,
      maxWaitMs: parseWait(flags.maxWait) ?? 10 * 60_000
    }
    return flags.dryRun
      ? Generate.layerEstimate(config, settings)
      : Generate.layerLive(config, settings).pipe(Layer.provide(TargetClient.layer(config)))
  })
