/**
 * What `rag-eval synthesize` does, loaded only when it runs: check the flags, choose the layers (judge,
 * journal, cache, progress) as `run` does, and drive `src/synthesize/Synthesize.ts`.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import { loadStoreModule } from "../cluster/Peers.js"
import { UsageError } from "../domain/Errors.js"
import { HEURISTIC_PROVIDER, traitsOfProvider } from "../domain/JudgeTraits.js"
import { thousands } from "../domain/Numbers.js"
import { maskUrlsIn, redactArgv } from "../domain/Secrets.js"
import { VERSION } from "../domain/Version.js"
import { ESTIMATED_OUTPUT_TOKENS } from "../engine/Budget.js"
import * as Judgments from "../engine/Judgments.js"
import * as Progress from "../engine/Progress.js"
import { Shutdown } from "../engine/Shutdown.js"
import { judgeLayer } from "../judges/JudgeSettings.js"
import { cost, formatUsd, loadPriceFile, type Price, priceFor } from "../pricing/Prices.js"
import * as JudgmentCache from "../store/JudgmentCache.js"
import * as JudgmentJournal from "../store/JudgmentJournal.js"
import { loadPersonas, parseMix } from "../synthesize/Mix.js"
import { type Converter, CONVERTERS } from "../synthesize/Outputs.js"
import { REJECTIONS } from "../synthesize/SynthesisPipeline.js"
import { dryRun, synthesize, type SynthesizeOptions } from "../synthesize/Synthesize.js"
import { batchOptions } from "./BatchFlags.js"
import { displayPath } from "./Display.js"
import { RecordedArgv } from "./Resume.js"
import { judgeSettings, providerFlagsProblem } from "./RunFlags.js"
import type { SynthesizeFlags } from "./SynthesizeFlags.js"

const parseAs = (text: string) =>
  Effect.gen(function*() {
    const out: Array<Converter> = []
    for (const raw of text.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
      const name = raw === "qrels" ? "search-relevance" : raw
      if (!(CONVERTERS as ReadonlyArray<string>).includes(name)) {
        return yield* new UsageError({ problem: `--as: unknown format "${raw}" (formats: ${CONVERTERS.join(", ")})` })
      }
      if (!out.includes(name as Converter)) out.push(name as Converter)
    }
    return out
  })

export const synthesizeAction = (flags: SynthesizeFlags) =>
  Effect.gen(function*() {
    if (flags.docs.length === 0) {
      return yield* new UsageError({ problem: "give the documents with --docs PATH (a folder, files or globs)" })
    }
    const problem = providerFlagsProblem({ ...flags, seed: Option.some(flags.seed) })
    if (problem !== undefined) return yield* new UsageError({ problem })
    if (flags.size < 1) return yield* new UsageError({ problem: `--size must be at least 1 (got ${flags.size})` })
    if (flags.concurrency < 1) {
      return yield* new UsageError({ problem: `--concurrency must be at least 1 (got ${flags.concurrency})` })
    }
    if (Option.isSome(flags.maxCost) && !(flags.maxCost.value > 0)) {
      return yield* new UsageError({ problem: `--max-cost must be greater than 0 (got ${flags.maxCost.value})` })
    }
    const heuristic = !traitsOfProvider(Option.getOrElse(flags.provider, () => HEURISTIC_PROVIDER)).languageModel
    const mix = Option.isSome(flags.mix) ? yield* parseMix(flags.mix.value, heuristic) : undefined
    const personas = Option.isSome(flags.personas) ? yield* loadPersonas(flags.personas.value) : undefined
    const as = Option.isSome(flags.as) ? yield* parseAs(flags.as.value) : []
    if (Option.isNone(flags.provider) && !flags.quiet) {
      yield* Console.error(
        "no --provider given: using the offline heuristic generator and checks (extractive questions, lexical checks — not an LLM)"
      )
    }
    const settings = { ...judgeSettings({ ...flags, seed: Option.some(flags.seed) }, flags.concurrency) }
    const shutdown = yield* Shutdown
    if (flags.cluster && Option.isNone(flags.store)) {
      return yield* new UsageError({ problem: "--cluster needs --store postgres://… (the store the runners share)" })
    }
    const stored = Option.isNone(flags.store) ? undefined : yield* Effect.flatMap(
      loadStoreModule(flags.cluster ? "--cluster" : "--store", () => import("../cluster/RunSetup.js")),
      (m) =>
        m.storeLayers({
          store: Option.getOrThrow(flags.store),
          cluster: flags.cluster,
          noCache: flags.noCache,
          judge: settings,
          retryFailed: flags.retryFailed,
          stopping: shutdown.stopping
        })
    )
    const judge = judgeLayer({
      ...settings,
      requireKey: !flags.dryRun && !flags.cluster,
      stop: shutdown.requested,
      ...(flags.cluster ? { preflight: false } : {})
    })
    const batch = yield* batchOptions({
      batch: flags.batch,
      detach: false,
      batchRepair: "batch",
      batchPoll: flags.batchPoll,
      maxCost: flags.maxCost,
      dryRun: flags.dryRun
    }, settings)
    const table = Option.isSome(flags.prices) ? yield* loadPriceFile(flags.prices.value) : undefined
    const storage = stored ?? Layer.merge(
      JudgmentJournal.layerFile,
      flags.noCache ? JudgmentCache.layerNone : JudgmentCache.layerFile(JudgmentCache.cacheDir(flags.work))
    )
    const services = Layer.mergeAll(
      (flags.dryRun ? Judgments.layerEstimate : Judgments.layer).pipe(Layer.provide(judge)),
      flags.quiet ? Progress.layerSilent : Progress.layerStderr
    ).pipe(Layer.provideMerge(storage))
    const recordedArgv = redactArgv(yield* RecordedArgv, ["--api-key"])
    return yield* Effect.gen(function*() {
      const identity = (yield* Judgments.Judgments).identity
      const price: Price | undefined = priceFor(identity.provider, identity.model, {
        table,
        flag: { input: Option.getOrUndefined(flags.priceIn), output: Option.getOrUndefined(flags.priceOut) }
      })
      if (Option.isSome(flags.maxCost) && price === undefined) {
        return yield* new UsageError({
          problem: `--max-cost needs a price for ${identity.model}: give --price-in/--price-out or --prices`
        })
      }
      const options: SynthesizeOptions = {
        docs: flags.docs,
        size: flags.size,
        out: flags.out,
        workRoot: flags.work,
        chunkTokens: flags.chunkTokens,
        seed: flags.seed,
        mix,
        personas,
        maxCandidates: Option.getOrUndefined(flags.maxCandidates),
        as,
        overwrite: flags.overwrite,
        fresh: flags.fresh,
        retryFailed: flags.retryFailed,
        concurrency: flags.concurrency,
        price,
        maxCostUsd: Option.getOrUndefined(flags.maxCost),
        batch,
        command: ["rag-eval", ...recordedArgv].join(" "),
        manifestExtra: {
          version: VERSION,
          argv: recordedArgv,
          ...(Option.isSome(flags.store) ? { store: maskUrlsIn(flags.store.value), cluster: flags.cluster } : {})
        }
      }
      if (flags.dryRun) {
        const d = yield* dryRun(options)
        const e = d.firstWave.estimate
        const perCandidate = d.firstWave.candidates === 0 ? 0 : e.calls / d.firstWave.candidates
        const bound = cost({
          input: Math.round((e.inputTokens / Math.max(1, d.firstWave.candidates)) * d.maxCandidates),
          output: Math.round((e.outputTokens / Math.max(1, d.firstWave.candidates)) * d.maxCandidates)
        }, price)
        yield* Console.log([
          `dry run: synthesize ${flags.size} items with ${identity.label}`,
          `  documents:         ${thousands(d.corpus.documents)} (${thousands(d.corpus.chunks)} chunks${
            d.corpus.skipped.length > 0 ? `; ${d.corpus.skipped.length} file(s) skipped` : ""
          })`,
          `  first wave:        ${thousands(d.firstWave.candidates)} candidates, ${thousands(e.calls)} calls${
            e.alreadyDone > 0 ? ` (${thousands(e.alreadyDone)} more already in the journal or cache)` : ""
          }`,
          `  estimated tokens:  ${thousands(e.inputTokens)} in / ${
            thousands(e.outputTokens)
          } out (≈ 4 characters a token, ${ESTIMATED_OUTPUT_TOKENS} output tokens a call)`,
          `  estimated cost:    ${formatUsd(e.cost.usd)} for the first wave`,
          `  at most:           ${thousands(d.maxCandidates)} candidates (--max-candidates), ≈ ${
            thousands(Math.round(perCandidate * d.maxCandidates))
          } calls, ${formatUsd(bound.usd)}`,
          `  work directory:    ${displayPath(`${flags.work}/synthesize/${d.id}`)} (${
            fs.existsSync(`${flags.work}/synthesize/${d.id}`) ? "exists: a real run resumes it" : "not created"
          })`
        ].join("\n"))
        return
      }
      const r = yield* synthesize(options)
      if (flags.json) {
        yield* Console.log(JSON.stringify({
          id: r.id,
          items: r.items.length,
          size: r.size,
          candidates: r.candidates,
          waves: r.waves,
          rejected: r.rejected,
          ...(r.short === undefined ? {} : { short: r.short }),
          cost: r.cost,
          judgments: r.judgments,
          corpus: { documents: r.corpus.documents, chunks: r.corpus.chunks, skipped: r.corpus.skipped.length },
          files: r.files,
          workDir: r.workDir
        }))
        return
      }
      if (!flags.quiet) {
        const reasons = Object.entries(r.rejected).sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${n} ${REJECTIONS[k as keyof typeof REJECTIONS] ?? k}`)
        yield* Console.error(
          `${r.items.length} of ${r.size} items from ${r.candidates} candidates in ${r.waves} wave(s)${
            reasons.length > 0 ? `; rejected: ${reasons.join(", ")}` : ""
          }`
        )
        yield* Console.error(
          `${thousands(r.judgments.total)} judgments (${thousands(r.judgments.reused)} reused from the journals${
            r.judgments.cached > 0 ? `, ${thousands(r.judgments.cached)} from the cache` : ""
          }); tokens ${thousands(r.cost.inputTokens)} in / ${thousands(r.cost.outputTokens)} out; cost ${
            formatUsd(r.cost.usd)
          }`
        )
        if (r.short !== undefined) yield* Console.error(`the set is short (${r.items.length} of ${r.size}): ${r.short}`)
      }
      for (const f of r.files) yield* Console.log(`wrote ${displayPath(f)}`)
    }).pipe(Effect.provide(services))
  })
