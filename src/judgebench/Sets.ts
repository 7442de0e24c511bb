/**
 * The human-labelled sets `judge-bench` measures a judge on, and how each becomes a run's input: the
 * two that ship with the package (`judge-bench/` beside `prompts/`: RAGChecker's meta-evaluation
 * pairs, Apache-2.0; ExpertQA's claims, MIT — their README says what and how much) and the relevance
 * set of calibrate's docs (LLMJudge's test pairs: MS MARCO passages, non-commercial research only, so
 * never shipped: read from `--data DIR` when there, otherwise skipped with the reason).
 *
 * Whole sets run from the shipped files themselves. `--sample N` writes the sample — chosen by
 * `Sample.ts`, stratified — into `<out>/judge-bench/<set>-sample-<N>-seed-<S>/`: the same N and
 * seed write the same files, so the same run is found again and resumed rather than paid twice.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, OutputError } from "../domain/Errors.js"
import { writeFileAtomic } from "../io/Files.js"
import { defaultPromptsDir } from "../judges/Prompt.js"
import { readRows } from "../load/Rows.js"
import { stratifiedSample } from "./Sample.js"

export const SET_NAMES = ["ragchecker", "expertqa", "relevance"] as const
export type SetName = typeof SET_NAMES[number]

/** `judge-bench/` of this package (beside `prompts/`). */
export const shippedDir = Path.join(Path.dirname(defaultPromptsDir), "judge-bench")

/** Where the relevance set is looked for without `--data`: the development layout's shared data. */
export const defaultDataDir = Path.resolve(Path.dirname(defaultPromptsDir), "..", "shared", "data")

export interface SetInfo {
  readonly name: SetName
  readonly title: string
  readonly pipeline: "answer-correctness" | "search-relevance"
  /** What one sampled unit is. */
  readonly unit: string
  readonly stratum: string
}

export const SETS: Readonly<Record<SetName, SetInfo>> = {
  ragchecker: {
    name: "ragchecker",
    title:
      "RAGChecker meta-evaluation, development half (Ru et al., NeurIPS 2024; Apache-2.0): pairs of answers to one question, each compared by two annotators on correctness, completeness and overall quality",
    pipeline: "answer-correctness",
    unit: "pairs",
    stratum: "domain"
  },
  expertqa: {
    name: "expertqa",
    title:
      "ExpertQA, validation split (Malaviya et al., NAACL 2024; MIT): claims of attributed answers, each judged by an expert as fully supported by its cited passages or not",
    pipeline: "answer-correctness",
    unit: "claims",
    stratum: "the expert's label"
  },
  relevance: {
    name: "relevance",
    title:
      "LLMJudge test set (LLM4Eval, SIGIR 2024; TREC DL 2023 passages graded 0–3 by NIST assessors; MS MARCO text, non-commercial research only)",
    pipeline: "search-relevance",
    unit: "graded passages",
    stratum: "NIST's grade"
  }
}

/** A set ready to run: its input, its human labels, how many units it has and how many are used. */
export interface PreparedSet {
  readonly info: SetInfo
  readonly input: string
  readonly labels: string
  readonly items: number
  readonly of: number
}

/** Why a set cannot be measured (skipped, visibly). */
export interface SkippedSet {
  readonly info: SetInfo
  readonly skipped: string
}

type Values = Readonly<Record<string, unknown>>

const readAll = (file: string): Effect.Effect<Array<{ readonly line: number; readonly values: Values }>, InputError> =>
  Stream.runCollect(readRows(file)).pipe(Effect.map((c) => Array.from(c)))

const text = (file: string, line: number, values: Values, field: string): Effect.Effect<string, InputError> => {
  const v = values[field]
  return typeof v === "string" || typeof v === "number"
    ? Effect.succeed(String(v))
    : Effect.fail(new InputError({ file, line, field, problem: `missing ${field} (a string)` }))
}

const jsonl = (rows: ReadonlyArray<unknown>) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n"

const writeSample = (dir: string, files: Readonly<Record<string, string>>): Effect.Effect<void, OutputError> =>
  Effect.gen(function*() {
    yield* Effect.try({
      try: () => fs.mkdirSync(dir, { recursive: true }),
      catch: (e) => new OutputError({ path: dir, problem: `cannot create it: ${(e as Error).message}` })
    })
    for (const [name, content] of Object.entries(files)) {
      const path = Path.join(dir, name)
      // Rewritten only when different: an unchanged file keeps the run's identity and its journal.
      if (fs.existsSync(path) && fs.readFileSync(path, "utf8") === content) continue
      yield* writeFileAtomic(path, content)
    }
  })

export interface PrepareOptions {
  /** `--sample N`: that many units, stratified; undefined: the whole set. */
  readonly sample?: number | undefined
  readonly seed: number
  /** Where sampled inputs are written (`<out>/judge-bench`). */
  readonly workDir: string
  /** The shipped sets' directory (tests point it elsewhere). */
  readonly shipped?: string | undefined
  /** The directory holding `llmjudge-test/` (or that directory itself). */
  readonly data?: string | undefined
}

const sampleDir = (options: PrepareOptions, name: SetName) =>
  Path.join(options.workDir, `${name}-sample-${options.sample}-seed-${options.seed}`)

/** RAGChecker: units are pairs (their two answers and every annotator's preference), stratified by domain. */
const prepareRagChecker = (options: PrepareOptions): Effect.Effect<PreparedSet, InputError | OutputError> =>
  Effect.gen(function*() {
    const dir = Path.join(options.shipped ?? shippedDir, "ragchecker")
    const casesFile = Path.join(dir, "cases.jsonl")
    const prefsFile = Path.join(dir, "preferences.jsonl")
    const cases = yield* readAll(casesFile)
    const prefs = yield* readAll(prefsFile)
    const domainOf = new Map<string, string>()
    for (const c of cases) domainOf.set(String(c.values["id"]), String(c.values["domain"] ?? ""))
    const pairs = new Map<string, { readonly a: string; readonly b: string }>()
    for (const p of prefs) {
      const a = yield* text(prefsFile, p.line, p.values, "id_a")
      const b = yield* text(prefsFile, p.line, p.values, "id_b")
      pairs.set(`${a}\u0000${b}`, { a, b })
    }
    const all = [...pairs.values()]
    const info = SETS.ragchecker
    if (options.sample === undefined || options.sample >= all.length) {
      return { info, input: casesFile, labels: prefsFile, items: all.length, of: all.length }
    }
    const chosen = stratifiedSample(all, (p) => domainOf.get(p.a) ?? "", options.sample, options.seed)
    const ids = new Set(chosen.flatMap((p) => [p.a, p.b]))
    const keys = new Set(chosen.map((p) => `${p.a}\u0000${p.b}`))
    const out = sampleDir(options, "ragchecker")
    yield* writeSample(out, {
      "cases.jsonl": jsonl(cases.filter((c) => ids.has(String(c.values["id"]))).map((c) => c.values)),
      "preferences.jsonl": jsonl(
        prefs.filter((p) => keys.has(`${String(p.values["id_a"])}\u0000${String(p.values["id_b"])}`)).map((p) =>
          p.values
        )
      )
    })
    return {
      info,
      input: Path.join(out, "cases.jsonl"),
      labels: Path.join(out, "preferences.jsonl"),
      items: chosen.length,
      of: all.length
    }
  })

/** ExpertQA: units are claims, stratified by the expert's label. */
const prepareExpertQa = (options: PrepareOptions): Effect.Effect<PreparedSet, InputError | OutputError> =>
  Effect.gen(function*() {
    const dir = Path.join(options.shipped ?? shippedDir, "expertqa")
    const casesFile = Path.join(dir, "cases.jsonl")
    const labelsFile = Path.join(dir, "labels.jsonl")
    const cases = yield* readAll(casesFile)
    const labels = yield* readAll(labelsFile)
    const info = SETS.expertqa
    if (options.sample === undefined || options.sample >= cases.length) {
      return { info, input: casesFile, labels: labelsFile, items: cases.length, of: cases.length }
    }
    const label = new Map(labels.map((l) => [String(l.values["id"]), String(l.values["value"])]))
    const chosen = stratifiedSample(cases, (c) => label.get(String(c.values["id"])) ?? "", options.sample, options.seed)
    const ids = new Set(chosen.map((c) => String(c.values["id"])))
    const out = sampleDir(options, "expertqa")
    yield* writeSample(out, {
      "cases.jsonl": jsonl(chosen.map((c) => c.values)),
      "labels.jsonl": jsonl(labels.filter((l) => ids.has(String(l.values["id"]))).map((l) => l.values))
    })
    return {
      info,
      input: Path.join(out, "cases.jsonl"),
      labels: Path.join(out, "labels.jsonl"),
      items: chosen.length,
      of: cases.length
    }
  })

/** The LLMJudge files in `--data`: `<dir>/llmjudge-test/` or `<dir>` itself. */
export const relevanceFiles = (data: string): { readonly search: string; readonly qrels: string } | undefined => {
  for (const dir of [Path.join(data, "llmjudge-test"), data]) {
    const search = Path.join(dir, "search.jsonl")
    const qrels = Path.join(dir, "qrels.txt")
    if (fs.existsSync(search) && fs.existsSync(qrels)) return { search, qrels }
  }
  return undefined
}

/** The relevance set: units are graded passages, stratified by NIST's grade; a query keeps its sampled hits. */
const prepareRelevance = (options: PrepareOptions): Effect.Effect<PreparedSet | SkippedSet, InputError | OutputError> =>
  Effect.gen(function*() {
    const info = SETS.relevance
    const data = options.data ?? defaultDataDir
    const files = relevanceFiles(data)
    if (files === undefined) {
      return {
        info,
        skipped:
          `its passages are MS MARCO text, licensed for non-commercial research only, so the package does not ship them; ` +
          `no llmjudge-test/search.jsonl and qrels.txt under ${data} (give --data DIR: the layout bench/llmjudge-convert.ts writes from the public naghmefarzi/llmjudge repository)`
      }
    }
    const qrelLines = fs.readFileSync(files.qrels, "utf8").split("\n")
    const graded: Array<{ readonly qid: string; readonly doc: string; readonly grade: string; readonly line: string }> =
      []
    for (const line of qrelLines) {
      const f = line.trim().split(/\s+/)
      if (f.length === 4) graded.push({ qid: f[0]!, doc: f[2]!, grade: f[3]!, line: line.trim() })
    }
    const queries = yield* readAll(files.search)
    if (options.sample === undefined || options.sample >= graded.length) {
      return { info, input: files.search, labels: files.qrels, items: graded.length, of: graded.length }
    }
    const chosen = stratifiedSample(graded, (g) => g.grade, options.sample, options.seed)
    const keep = new Map<string, Set<string>>()
    for (const g of chosen) {
      let docs = keep.get(g.qid)
      if (docs === undefined) keep.set(g.qid, docs = new Set())
      docs.add(g.doc)
    }
    const subset = queries.flatMap((q) => {
      const docs = keep.get(String(q.values["id"]))
      if (docs === undefined) return []
      const hits = (q.values["hits"] as ReadonlyArray<{ readonly id?: unknown }> | undefined) ?? []
      return [{ ...q.values, hits: hits.filter((h) => docs.has(String(h.id))) }]
    })
    const out = sampleDir(options, "relevance")
    yield* writeSample(out, {
      "search.jsonl": jsonl(subset),
      "qrels.txt": chosen.map((g) => g.line).join("\n") + "\n"
    })
    return {
      info,
      input: Path.join(out, "search.jsonl"),
      labels: Path.join(out, "qrels.txt"),
      items: chosen.length,
      of: graded.length
    }
  })

/** Each set named, ready to run or skipped with the reason. */
export const prepareSets = (
  names: ReadonlyArray<SetName>,
  options: PrepareOptions
): Effect.Effect<ReadonlyArray<PreparedSet | SkippedSet>, InputError | OutputError> =>
  Effect.forEach(names, (name) => {
    switch (name) {
      case "ragchecker":
        return prepareRagChecker(options)
      case "expertqa":
        return prepareExpertQa(options)
      case "relevance":
        return prepareRelevance(options)
    }
  })

export const isSkipped = (s: PreparedSet | SkippedSet): s is SkippedSet => "skipped" in s
