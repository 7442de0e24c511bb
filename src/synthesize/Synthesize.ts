/**
 * `rag-eval synthesize` as a library function: documents → chunks (`corpus.jsonl`) → candidates,
 * wave after wave → items written and checked by the judging core → the test set, its conversions and
 * a rejection report.
 *
 * **Waves.** A wave is one run of the synthesis pipeline (`SynthesisPipeline.ts`) over a file of
 * candidates (`<work>/wave-<k>.jsonl`), in its own run directory (`<work>-wave-<k>/`: manifest,
 * journal). The first wave asks for 1.5 times the items each type needs; each later one for what is
 * still missing divided by the share of the type's candidates that passed so far (at least ¼), until
 * every type has its count, or the candidates reach `--max-candidates`, or `--max-cost` is spent, or the
 * corpus has no unused chunk left. Every wave is derived from the seed and from the journaled results
 * of the waves before it, so running the same command again replays the same waves: judgments the
 * journals hold are not asked again, whatever was killed when.
 *
 * **Identity.** The work directory is named by a hash of the chunked corpus and every setting that
 * changes the candidates or their judgments (size, mix, seed, chunk size, personas, candidate budget,
 * judge): another corpus, judge or setting is another synthesis, never a mixed one.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { type BudgetReached, UsageError } from "../domain/Errors.js"
import type { JudgeTraits } from "../domain/JudgeTraits.js"
import { thousands } from "../domain/Numbers.js"
import { canonicalJson } from "../engine/JudgmentKey.js"
import { Judgments } from "../engine/Judgments.js"
import { Progress } from "../engine/Progress.js"
import { Reporters } from "../engine/ReportInput.js"
import { precomputed, Retriever } from "../engine/Retriever.js"
import { estimate, run } from "../engine/Runner.js"
import type { BatchOptions, Estimate, RunOptions } from "../engine/RunTypes.js"
import { isAlive, readJsonLines, removeLeftovers, writeAtomic, writeJsonAtomic } from "../io/Files.js"
import { sha256 } from "../judges/Prompt.js"
import type { Price } from "../pricing/Prices.js"
import type { Candidate, TestItem } from "./Candidate.js"
import { DEFAULT_CHUNK_TOKENS } from "./Chunks.js"
import { buildCorpus, type CorpusIndex } from "./Corpus.js"
import {
  countsFor,
  DEFAULT_HEURISTIC_MIX,
  DEFAULT_MIX,
  DEFAULT_PERSONA,
  type Mix,
  mixText,
  QUESTION_TYPES,
  type QuestionType
} from "./Mix.js"
import { type Converter, testSetText, writeOutputs } from "./Outputs.js"
import { Chooser, chunkOrder } from "./Selection.js"
import { type CandidateRecord, synthesisPipeline } from "./SynthesisPipeline.js"

/** The first wave asks for this many candidates per item needed. */
export const FIRST_WAVE_FACTOR = 1.5
/** A later wave assumes at least this share of its candidates passes. */
const MIN_PASS_RATE = 0.25
/** Default `--max-candidates`: this many per item asked for. */
export const DEFAULT_CANDIDATES_PER_ITEM = 4
/** Two questions whose word sets overlap this much (Jaccard) are near duplicates. */
export const DUPLICATE_AT = 0.7

export interface SynthesizeOptions {
  readonly docs: ReadonlyArray<string>
  readonly size: number
  /** The test set (JSONL); `corpus.jsonl`, the conversions and the report go beside it. */
  readonly out: string
  /** Where the synthesis keeps its work (chunks, waves, journals): `<workRoot>/synthesize/<id>`. */
  readonly workRoot: string
  readonly chunkTokens?: number | undefined
  readonly seed?: number | undefined
  /** Undefined: the default mix for the judge (the offline generator writes no comparison questions). */
  readonly mix?: Mix | undefined
  readonly personas?: ReadonlyArray<string> | undefined
  readonly maxCandidates?: number | undefined
  readonly as?: ReadonlyArray<Converter> | undefined
  readonly overwrite?: boolean | undefined
  readonly fresh?: boolean | undefined
  readonly retryFailed?: boolean | undefined
  readonly concurrency?: number | undefined
  readonly price?: Price | undefined
  readonly maxCostUsd?: number | undefined
  readonly batch?: BatchOptions | undefined
  readonly command?: string | undefined
  readonly manifestExtra?: Readonly<Record<string, unknown>> | undefined
}

export interface SynthesisResult {
  readonly id: string
  readonly workDir: string
  readonly items: ReadonlyArray<TestItem>
  readonly size: number
  readonly candidates: number
  readonly waves: number
  readonly rejected: Readonly<Record<string, number>>
  /** Why synthesis stopped short of `size`, when it did. */
  readonly short?: string | undefined
  readonly files: ReadonlyArray<string>
  readonly cost: { readonly usd: number | null; readonly inputTokens: number; readonly outputTokens: number }
  readonly judgments: {
    readonly total: number
    readonly reused: number
    readonly cached: number
    readonly failed: number
  }
  readonly corpus: { readonly documents: number; readonly chunks: number; readonly skipped: CorpusIndex["skipped"] }
}

export interface DryRunResult {
  readonly id: string
  readonly corpus: { readonly documents: number; readonly chunks: number; readonly skipped: CorpusIndex["skipped"] }
  readonly firstWave: { readonly candidates: number; readonly estimate: Estimate }
  readonly maxCandidates: number
}

/** The label of the items' generator: the judge's, or the offline generator's. */
export const generatorLabel = (identity: { provider: string; model: string; traits: JudgeTraits }) =>
  !identity.traits.languageModel
    ? "offline heuristic generator (extractive, deterministic — not an LLM)"
    : `${identity.provider}/${identity.model}`

/** The words of a question for near-duplicate detection. */
const questionWords = (q: string) => new Set(q.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])

const overlap = (a: ReadonlySet<string>, b: ReadonlySet<string>) => {
  let shared = 0
  for (const w of a) if (b.has(w)) shared++
  const union = a.size + b.size - shared
  return union === 0 ? 1 : shared / union
}

const checkOptions = (o: SynthesizeOptions) =>
  Effect.gen(function*() {
    if (!Number.isInteger(o.size) || o.size < 1) {
      return yield* new UsageError({ problem: `--size must be a whole number ≥ 1 (got ${o.size})` })
    }
    const tokens = o.chunkTokens ?? DEFAULT_CHUNK_TOKENS
    if (!Number.isInteger(tokens) || tokens < 50 || tokens > 8000) {
      return yield* new UsageError({ problem: `--chunk-tokens must be a whole number from 50 to 8000 (got ${tokens})` })
    }
    if (o.maxCandidates !== undefined && (!Number.isInteger(o.maxCandidates) || o.maxCandidates < o.size)) {
      return yield* new UsageError({
        problem: `--max-candidates must be a whole number ≥ --size (${o.size}); got ${o.maxCandidates}`
      })
    }
    if (!o.out.endsWith(".jsonl")) {
      return yield* new UsageError({ problem: `--out must name a .jsonl file (the test set), got "${o.out}"` })
    }
    if (o.docs.length === 0) {
      return yield* new UsageError({ problem: "give the documents with --docs PATH (files, folders or globs)" })
    }
  })

/** What every wave's run shares. */
const waveOptions = (o: SynthesizeOptions, id: string, k: number, input: string): RunOptions => ({
  input,
  // <workRoot>/synthesize/<id>-wave-<k>: the pipeline's name is the middle part.
  outRoot: o.workRoot,
  runId: `${id}-wave-${k}`,
  iterations: 1,
  concurrency: o.concurrency ?? 8,
  maxFailures: Number.MAX_SAFE_INTEGER,
  command: o.command ?? "rag-eval synthesize",
  fresh: o.fresh ?? false,
  retryFailed: o.retryFailed ?? false,
  price: o.price,
  batch: o.batch,
  manifestExtra: o.manifestExtra
})

/** The run's layers a wave adds: no retriever, no report formats (the synthesis writes its own). */
const waveLayer = Layer.merge(Layer.succeed(Retriever, precomputed), Layer.succeed(Reporters, []))

const prepareCorpus = (o: SynthesizeOptions, dir: string) =>
  Effect.gen(function*() {
    const progress = yield* Progress
    fs.mkdirSync(dir, { recursive: true })
    // What a killed synthesis left: a half-written chunks file, or a whole one never moved into place.
    removeLeftovers(dir)
    for (const name of fs.readdirSync(dir)) {
      const pid = /^corpus-(\d+)\.jsonl$/.exec(name)?.[1]
      if (pid !== undefined && Number(pid) !== process.pid && !isAlive(Number(pid))) {
        fs.rmSync(Path.join(dir, name), { force: true })
      }
    }
    const tmp = Path.join(dir, `corpus-${process.pid}.jsonl`)
    let lastNote = 0
    const index = yield* buildCorpus(o.docs, tmp, o.chunkTokens ?? DEFAULT_CHUNK_TOKENS, (done, files, chunks) => {
      if (done === files || Date.now() - lastNote > 2000) {
        lastNote = Date.now()
        Effect.runSync(
          progress.note(`chunking: ${thousands(done)} of ${thousands(files)} files, ${thousands(chunks)} chunks`)
        )
      }
    })
    for (const s of index.skipped) yield* progress.note(`skipped ${s.file}: ${s.reason}`)
    return index
  })

/** The synthesis's identity: the corpus and every setting that changes candidates or judgments. */
const identity = (
  o: SynthesizeOptions,
  index: CorpusIndex,
  mix: Mix,
  personas: ReadonlyArray<string>,
  judge: Judgments["Type"]["identity"],
  maxCandidates: number
) =>
  sha256(canonicalJson({
    corpus: index.sha256,
    size: o.size,
    mix: QUESTION_TYPES.map((t) => [t, mix[t]]),
    seed: o.seed ?? 1,
    chunkTokens: o.chunkTokens ?? DEFAULT_CHUNK_TOKENS,
    personas,
    maxCandidates,
    judge: { provider: judge.provider, model: judge.model, params: judge.params, endpoint: judge.endpoint }
  })).slice(0, 12)

const writeWave = (file: string, candidates: ReadonlyArray<Candidate>) =>
  writeAtomic(file, Stream.fromIterable(candidates.map((c) => JSON.stringify(c) + "\n")))

/** Candidates per type for the next wave (see the module comment). */
const waveCounts = (
  k: number,
  targets: Readonly<Record<QuestionType, number>>,
  kept: Readonly<Record<QuestionType, number>>,
  tried: Readonly<Record<QuestionType, number>>,
  budget: number
): Record<QuestionType, number> => {
  const counts = {} as Record<QuestionType, number>
  for (const t of QUESTION_TYPES) {
    const need = Math.max(0, targets[t] - kept[t])
    const rate = tried[t] === 0 ? 1 / FIRST_WAVE_FACTOR : Math.max(MIN_PASS_RATE, kept[t] / tried[t])
    counts[t] = need === 0 ? 0 : Math.ceil(k === 1 ? need * FIRST_WAVE_FACTOR : need / rate)
  }
  // Within the candidate budget: cut the largest counts first.
  let total = QUESTION_TYPES.reduce((s, t) => s + counts[t], 0)
  while (total > budget) {
    const t = QUESTION_TYPES.reduce((a, b) => (counts[b] > counts[a] ? b : a))
    counts[t]--
    total--
  }
  return counts
}

const countText = (counts: Readonly<Record<QuestionType, number>>) =>
  QUESTION_TYPES.filter((t) => counts[t] > 0).map((t) => `${t} ${counts[t]}`).join(", ")

/** `rag-eval synthesize --dry-run`: the corpus chunked (in a temporary directory), the first wave priced. */
export const dryRun = (o: SynthesizeOptions) =>
  Effect.gen(function*() {
    yield* checkOptions(o)
    const judge = (yield* Judgments).identity
    const tmp = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-synthesize-"))
    return yield* Effect.ensuring(
      Effect.gen(function*() {
        const index = yield* prepareCorpus(o, tmp)
        const mix = o.mix ?? (judge.traits.languageModel ? DEFAULT_MIX : DEFAULT_HEURISTIC_MIX)
        const personas = o.personas ?? [DEFAULT_PERSONA]
        const maxCandidates = o.maxCandidates ?? o.size * DEFAULT_CANDIDATES_PER_ITEM
        const id = identity(o, index, mix, personas, judge, maxCandidates)
        const chooser = new Chooser(index, chunkOrder(index, o.seed ?? 1), personas, o.seed ?? 1)
        const targets = countsFor(mix, o.size)
        const zero = Object.fromEntries(QUESTION_TYPES.map((t) => [t, 0])) as Record<QuestionType, number>
        const candidates = yield* chooser.next(waveCounts(1, targets, zero, zero, maxCandidates))
        const waveFile = Path.join(tmp, "wave-1.jsonl")
        yield* writeWave(waveFile, candidates)
        const pipeline = synthesisPipeline(QUESTION_TYPES.filter((t) => mix[t] > 0), generatorLabel(judge))
        const e = yield* estimate(pipeline, waveOptions(o, id, 1, waveFile)).pipe(Effect.provide(waveLayer))
        return {
          id,
          corpus: { documents: index.documents.length, chunks: index.chunks, skipped: index.skipped },
          firstWave: { candidates: candidates.length, estimate: e },
          maxCandidates
        } satisfies DryRunResult
      }),
      Effect.sync(() => fs.rmSync(tmp, { recursive: true, force: true }))
    )
  })

/** `rag-eval synthesize`: see the module comment. */
export const synthesize = (o: SynthesizeOptions) =>
  Effect.gen(function*() {
    yield* checkOptions(o)
    const progress = yield* Progress
    const judgments = yield* Judgments
    const judge = judgments.identity
    const generator = generatorLabel(judge)
    const mix = o.mix ?? (judge.traits.languageModel ? DEFAULT_MIX : DEFAULT_HEURISTIC_MIX)
    const personas = o.personas ?? [DEFAULT_PERSONA]
    const seed = o.seed ?? 1
    const maxCandidates = o.maxCandidates ?? o.size * DEFAULT_CANDIDATES_PER_ITEM
    const workRoot = Path.join(o.workRoot, "synthesize")
    if (fs.existsSync(o.out) && fs.statSync(o.out).isDirectory()) {
      return yield* new UsageError({ problem: `--out ${o.out} is a directory; name the test set's .jsonl file` })
    }

    // 1. The corpus, chunked into the work area, then moved to the synthesis's own directory.
    const index0 = yield* prepareCorpus(o, workRoot)
    const id = identity(o, index0, mix, personas, judge, maxCandidates)
    const workDir = Path.join(workRoot, id)
    fs.mkdirSync(workDir, { recursive: true })
    const corpusFile = Path.join(workDir, "corpus.jsonl")
    fs.renameSync(index0.file, corpusFile)
    const index: CorpusIndex = { ...index0, file: corpusFile }
    // An output file is replaced only when this synthesis wrote it (or with --overwrite).
    const stateFile = Path.join(workDir, "synthesis.json")
    if (fs.existsSync(o.out) && o.overwrite !== true) {
      const state = readState(stateFile)
      const ours = state !== undefined && state.out === Path.resolve(o.out) &&
        (state.written ?? []).includes(sha256(fs.readFileSync(o.out)))
      if (!ours) {
        return yield* new UsageError({
          problem: `${o.out} exists (not written by this synthesis); give --overwrite to replace it, or another --out`
        })
      }
    }
    yield* progress.note(
      `synthesis ${id}: ${thousands(index.chunks)} chunks from ${
        thousands(index.documents.length)
      } documents; ${o.size} items (${mixText(mix)}) by ${generator}`
    )

    // 2. Waves, until every type has its count or a budget or the corpus runs out.
    const chooser = new Chooser(index, chunkOrder(index, seed), personas, seed)
    const targets = countsFor(mix, o.size)
    const kept = Object.fromEntries(QUESTION_TYPES.map((t) => [t, 0])) as Record<QuestionType, number>
    const tried = { ...kept }
    const accepted: Array<{ item: TestItem; words: Set<string> }> = []
    const records: Array<CandidateRecord> = []
    const surplus: Array<string> = []
    const rejected: Record<string, number> = {}
    let candidates = 0
    let spentUsd = 0
    let short: string | undefined
    const totals = { total: 0, reused: 0, cached: 0, failed: 0, input: 0, output: 0 }
    const pipeline = synthesisPipeline(QUESTION_TYPES.filter((t) => mix[t] > 0), generator)
    let k = 0
    for (;;) {
      if (QUESTION_TYPES.every((t) => kept[t] >= targets[t])) break
      const budget = maxCandidates - candidates
      const counts = waveCounts(k + 1, targets, kept, tried, budget)
      if (QUESTION_TYPES.every((t) => counts[t] === 0)) {
        short = `--max-candidates ${maxCandidates} reached`
        break
      }
      if (o.maxCostUsd !== undefined && spentUsd >= o.maxCostUsd) {
        short = `--max-cost $${o.maxCostUsd} spent`
        break
      }
      const wave = yield* chooser.next(counts)
      if (wave.length === 0) {
        short = "every chunk of the corpus has been used"
        break
      }
      k++
      const waveFile = Path.join(workDir, `wave-${k}.jsonl`)
      yield* writeWave(waveFile, wave)
      yield* progress.note(`wave ${k}: ${wave.length} candidates (${countText(countsOf(wave))})`)
      const options = {
        ...waveOptions(o, id, k, waveFile),
        ...(o.maxCostUsd === undefined ? {} : { maxCostUsd: o.maxCostUsd - spentUsd })
      }
      const outcome = yield* run(pipeline, options).pipe(
        Effect.provide(waveLayer),
        Effect.map(Option.some),
        Effect.catchTag("BudgetReached", (e: BudgetReached) =>
          Effect.as(progress.note(`wave ${k}: ${e.message}`), Option.none()))
      )
      if (Option.isNone(outcome)) {
        short =
          `--max-cost $${o.maxCostUsd} spent during wave ${k} (its finished judgments are journaled: run again with a higher --max-cost to continue)`
        break
      }
      const done = outcome.value
      spentUsd += done.cost.usd ?? 0
      totals.total += done.judgments.total
      totals.reused += done.judgments.reused
      totals.cached += done.judgments.cached
      totals.failed += done.judgments.failed
      totals.input += done.tokens.input
      totals.output += done.tokens.output
      candidates += wave.length
      const recordsFile = Path.join(done.info.runDir, "records-iteration-1.jsonl")
      yield* readJsonLines<CandidateRecord>(recordsFile).pipe(
        Stream.runForEach((r) =>
          Effect.sync(() => {
            tried[r.type]++
            let record = r
            if (r.status === "kept" && r.item !== undefined) {
              const words = questionWords(`${r.item.history ?? ""} ${r.item.question}`)
              const twin = accepted.find((a) =>
                overlap(a.words, words) >= DUPLICATE_AT
              )
              if (twin !== undefined) {
                record = {
                  ...r,
                  status: "rejected",
                  reasons: ["duplicate"],
                  why: [`near duplicate of ${twin.item.id}: "${twin.item.question}"`]
                }
              } else if (kept[r.type] < targets[r.type]) {
                kept[r.type]++
                accepted.push({ item: r.item, words })
              } else {
                // A type that has its count already: the item is not needed (not a rejection).
                record = { ...r, status: "kept" }
                surplus.push(r.caseId)
              }
            }
            for (const reason of record.reasons) rejected[reason] = (rejected[reason] ?? 0) + 1
            records.push(record)
          })
        )
      )
      yield* progress.note(
        `wave ${k}: ${
          QUESTION_TYPES.filter((t) => targets[t] > 0).map((t) => `${t} ${kept[t]}/${targets[t]}`).join(", ")
        }`
      )
    }

    // 3. The outputs: the test set in candidate order (wave by wave), its conversions, the corpus, the report.
    const items = accepted.map((a) => a.item)
    // The state first: a synthesis killed between it and the test set finds its own file on the next run.
    const earlier = readState(stateFile)
    const sha = sha256(testSetText(items))
    yield* writeJsonAtomic(stateFile, {
      out: Path.resolve(o.out),
      // What this synthesis wrote there before too: a kill between this file and the test set leaves the older one.
      written: [...new Set([...(earlier?.out === Path.resolve(o.out) ? earlier.written ?? [] : []), sha])].slice(-5),
      items: items.length,
      waves: k,
      candidates
    })
    const files = yield* writeOutputs({
      out: o.out,
      items,
      corpusFile,
      as: o.as ?? [],
      records,
      surplus,
      info: {
        id,
        generator,
        size: o.size,
        targets,
        mix,
        candidates,
        waves: k,
        short,
        corpus: {
          documents: index.documents.length,
          chunks: index.chunks,
          skipped: index.skipped,
          excluded: index.excluded
        },
        nearDuplicateChunks: chooser.nearDuplicates,
        cost: { usd: spentUsd, inputTokens: totals.input, outputTokens: totals.output, priced: o.price !== undefined }
      }
    })
    return {
      id,
      workDir,
      items,
      size: o.size,
      candidates,
      waves: k,
      rejected,
      short,
      files,
      cost: { usd: o.price === undefined ? null : spentUsd, inputTokens: totals.input, outputTokens: totals.output },
      judgments: { total: totals.total, reused: totals.reused, cached: totals.cached, failed: totals.failed },
      corpus: { documents: index.documents.length, chunks: index.chunks, skipped: index.skipped }
    } satisfies SynthesisResult
  })

const countsOf = (wave: ReadonlyArray<Candidate>) => {
  const counts = Object.fromEntries(QUESTION_TYPES.map((t) => [t, 0])) as Record<QuestionType, number>
  for (const c of wave) counts[c.type]++
  return counts
}

const readState = (file: string): { out?: string; written?: Array<string> } | undefined => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as { out?: string; written?: Array<string> }
  } catch {
    return undefined
  }
}
