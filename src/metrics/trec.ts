/**
 * TREC interop (SPEC §3): read qrels and runs, evaluate them the way trec_eval 9 does, print
 * trec_eval-style output, and write judged grades as qrels so results can be cross-checked.
 *
 * trec_eval conventions followed (from its sources: `get_qrels.c`, `get_trec_results.c`,
 * `form_res_rels.c`, `m_*.c`, `meas_avg.c`, `trec_eval.c`):
 * - A run's `rank` column is ignored: each query's docs are re-sorted by score descending, ties
 *   broken by doc id in DESCENDING byte order (`comp_sim_docno` returns `strcmp(p2, p1)`). Scores are
 *   read into a C `float` in trec_eval 9, so scores equal after rounding to 32 bits tie
 *   (`Math.fround`); trec_eval 10 reads a `double`, where such scores do not tie.
 * - Retrieved docs absent from the qrels are non-relevant with no gain (RELVALUE_NONPOOL);
 *   negative qrels grades are "in the pool but unjudged": never relevant, no gain, not in IDCG.
 * - Relevant ⇔ grade ≥ relevanceLevel (`-l`, default 1); R = judged docs with such a grade.
 * - NDCG (`ndcg_cut_k`, `ndcg`) uses the qrels grades as linear gains regardless of the relevance
 *   level, and IDCG from all judged grades of the query, retrieved or not.
 * - Only queries in both the qrels and the run are evaluated and averaged; queries in the run without
 *   qrels are ignored (listed in `unjudgedQueries`). A query in the qrels with no relevant doc is
 *   still evaluated and averaged: it scores 0 on every measure (trec_eval does not skip it).
 * - `complete` (`-c`): the mean is over every qrels query; qrels queries missing from the run score 0
 *   (they appear in `perQuery` with zeros and in `missingQueries`, but are not printed per query,
 *   as in trec_eval 9; trec_eval 10 prints their zero lines).
 * - Duplicate (qid, docid) pairs in a run or in qrels are errors, as in trec_eval.
 * Values print with 4 decimals like C's `%6.4f` (ties at the 5th decimal round half to even).
 * test/commands/TrecParity.test.ts checks these line by line against trec_eval 10.0-rc2's output.
 */
import * as Effect from "effect/Effect"
import { InputError } from "../domain/Errors.js"
import { measure, type RankingMetric, trecName } from "./registry.js"
import { defaultThreshold, mean, unjudgedGrade } from "./relevance.js"

/** qid → (docid → grade). */
export type Qrels = ReadonlyMap<string, ReadonlyMap<string, number>>

export interface RunEntry {
  readonly qid: string
  readonly docid: string
  readonly rank: number
  readonly score: number
  readonly tag: string
  /** 1-based line in the run file. */
  readonly line: number
}

/** qid → entries in file order. */
export type Run = ReadonlyMap<string, ReadonlyArray<RunEntry>>

/** Splits text into numbered content lines: blank lines and `#` comments skipped. */
const contentLines = (text: string): Array<{ readonly line: number; readonly fields: Array<string> }> => {
  const lines: Array<{ line: number; fields: Array<string> }> = []
  text.split(/\r\n|\r|\n/).forEach((raw, index) => {
    const trimmed = raw.trim()
    if (trimmed === "" || trimmed.startsWith("#")) return
    lines.push({ line: index + 1, fields: trimmed.split(/\s+/) })
  })
  return lines
}

const integerPattern = /^[+-]?\d+$/
const numberPattern = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

/**
 * Parses qrels: `qid iter docid grade` per line, whitespace-separated (the iter column is ignored).
 * Grades are integers (negative = judged as unjudged, as in trec_eval).
 */
export const parseQrels = (text: string, file: string): Effect.Effect<Qrels, InputError> => {
  const qrels = new Map<string, Map<string, number>>()
  const firstLine = new Map<string, number>()
  for (const { line, fields } of contentLines(text)) {
    const fail = (problem: string, field?: string) =>
      Effect.fail(new InputError({ file, line, problem, ...(field === undefined ? {} : { field }) }))
    if (fields.length !== 4) {
      return fail(`expected 4 columns "qid iter docid grade", found ${fields.length}`)
    }
    const [qid = "", , docid = "", gradeText = ""] = fields
    if (!integerPattern.test(gradeText)) return fail(`grade "${gradeText}" is not an integer`, "grade")
    const key = `${qid}\u0000${docid}`
    const previous = firstLine.get(key)
    if (previous !== undefined) {
      return fail(`duplicate judgment for query "${qid}", doc "${docid}" (first on line ${previous})`, "docid")
    }
    firstLine.set(key, line)
    let docs = qrels.get(qid)
    if (docs === undefined) {
      docs = new Map()
      qrels.set(qid, docs)
    }
    docs.set(docid, Number(gradeText))
  }
  return Effect.succeed(qrels)
}

/**
 * Parses a run: `qid Q0 docid rank score tag` per line, whitespace-separated. Columns after the tag
 * are ignored (as trec_eval does); fewer than 6 is an error. Scores are decimal numbers.
 */
export const parseRun = (text: string, file: string): Effect.Effect<Run, InputError> => {
  const run = new Map<string, Array<RunEntry>>()
  const firstLine = new Map<string, number>()
  for (const { line, fields } of contentLines(text)) {
    const fail = (problem: string, field?: string) =>
      Effect.fail(new InputError({ file, line, problem, ...(field === undefined ? {} : { field }) }))
    if (fields.length < 6) {
      return fail(`expected 6 columns "qid Q0 docid rank score tag", found ${fields.length}`)
    }
    const [qid = "", , docid = "", rankText = "", scoreText = "", tag = ""] = fields
    if (!integerPattern.test(rankText)) return fail(`rank "${rankText}" is not an integer`, "rank")
    if (!numberPattern.test(scoreText)) return fail(`score "${scoreText}" is not a number`, "score")
    const score = Number(scoreText)
    if (!Number.isFinite(score)) return fail(`score "${scoreText}" is not a finite number`, "score")
    const key = `${qid}\u0000${docid}`
    const previous = firstLine.get(key)
    if (previous !== undefined) {
      return fail(`duplicate doc "${docid}" for query "${qid}" (first on line ${previous})`, "docid")
    }
    firstLine.set(key, line)
    let entries = run.get(qid)
    if (entries === undefined) {
      entries = []
      run.set(qid, entries)
    }
    entries.push({ qid, docid, rank: Number(rankText), score, tag, line })
  }
  return Effect.succeed(run)
}

/** C `strcmp` on the UTF-8 bytes = comparison by code point (JS `<` compares UTF-16 units). */
export const compareCodePoints = (x: string, y: string): number => {
  const xs = Array.from(x)
  const ys = Array.from(y)
  const n = Math.min(xs.length, ys.length)
  for (let i = 0; i < n; i++) {
    const a = (xs[i] ?? "").codePointAt(0) ?? 0
    const b = (ys[i] ?? "").codePointAt(0) ?? 0
    if (a !== b) return a - b
  }
  return xs.length - ys.length
}

/** trec_eval's ranking of a query's entries: float score descending, then doc id descending. */
export const rankEntries = (entries: ReadonlyArray<RunEntry>): Array<RunEntry> =>
  [...entries].sort((p1, p2) => {
    const s1 = Math.fround(p1.score)
    const s2 = Math.fround(p2.score)
    if (s1 > s2) return -1
    if (s1 < s2) return 1
    return compareCodePoints(p2.docid, p1.docid)
  })

export interface TrecOptions {
  readonly qrels: Qrels
  readonly run: Run
  readonly metrics: ReadonlyArray<RankingMetric>
  /** Relevant ⇔ grade ≥ relevanceLevel (trec_eval `-l`, default 1). */
  readonly relevanceLevel?: number
  /** Average over every qrels query, missing ones scoring 0 (trec_eval `-c`). */
  readonly complete?: boolean
}

export interface TrecEvaluation {
  readonly metrics: ReadonlyArray<RankingMetric>
  /** qid → metric name → value, qids in trec_eval order (byte order). */
  readonly perQuery: ReadonlyMap<string, Readonly<Record<string, number>>>
  /** metric name → mean over the averaged queries. */
  readonly mean: Readonly<Record<string, number>>
  /** Number of queries averaged over (trec_eval `num_q`). */
  readonly queries: number
  readonly relevanceLevel: number
  readonly complete: boolean
  /** Run queries without qrels: ignored. */
  readonly unjudgedQueries: ReadonlyArray<string>
  /** Qrels queries absent from the run: scored 0 when `complete`, otherwise not averaged. */
  readonly missingQueries: ReadonlyArray<string>
  /** Evaluated queries with no relevant judged doc (they score 0). */
  readonly queriesWithoutRelevant: ReadonlyArray<string>
  /** Tag of the run's last line (trec_eval `runid`), if any. */
  readonly runTag?: string
}

/** Evaluates a run against qrels per trec_eval conventions (see the module comment). */
export const evaluateTrec = (options: TrecOptions): TrecEvaluation => {
  const { qrels, run, metrics } = options
  const relevanceLevel = options.relevanceLevel ?? defaultThreshold
  const complete = options.complete ?? false
  const perQuery = new Map<string, Record<string, number>>()
  const evaluated = [...run.keys()].filter((qid) => qrels.has(qid)).sort(compareCodePoints)
  const queriesWithoutRelevant: Array<string> = []
  for (const qid of evaluated) {
    const judged = qrels.get(qid) ?? new Map<string, number>()
    const ranked = rankEntries(run.get(qid) ?? [])
    const grades = ranked.map((entry) => judged.get(entry.docid) ?? unjudgedGrade)
    const gold = [...judged.values()]
    if (!gold.some((grade) => grade >= relevanceLevel)) queriesWithoutRelevant.push(qid)
    const values: Record<string, number> = {}
    for (const spec of metrics) values[spec.name] = measure(spec, { grades, gold }, { threshold: relevanceLevel }).value
    perQuery.set(qid, values)
  }
  const missingQueries = [...qrels.keys()].filter((qid) => !run.has(qid)).sort(compareCodePoints)
  if (complete) {
    for (const qid of missingQueries) {
      const zeros: Record<string, number> = {}
      for (const spec of metrics) zeros[spec.name] = 0
      perQuery.set(qid, zeros)
    }
  }
  const ordered = new Map([...perQuery.entries()].sort(([x], [y]) => compareCodePoints(x, y)))
  const averaged = [...ordered.values()]
  const means: Record<string, number> = {}
  for (const spec of metrics) means[spec.name] = mean(averaged.map((values) => values[spec.name] ?? 0))
  const lastTag = lastRunTag(run)
  return {
    metrics,
    perQuery: ordered,
    mean: means,
    queries: averaged.length,
    relevanceLevel,
    complete,
    unjudgedQueries: [...run.keys()].filter((qid) => !qrels.has(qid)).sort(compareCodePoints),
    missingQueries,
    queriesWithoutRelevant,
    ...(lastTag === undefined ? {} : { runTag: lastTag })
  }
}

/** The tag on the run's last line (trec_eval prints it as `runid`). */
const lastRunTag = (run: Run): string | undefined => {
  let last: RunEntry | undefined = undefined
  for (const entries of run.values()) {
    for (const entry of entries) if (last === undefined || entry.line > last.line) last = entry
  }
  return last?.tag
}

/**
 * C `printf("%.4f")`: JavaScript's `toFixed` rounds exact ties up, glibc rounds them to even. A tie
 * at the 5th decimal needs x·10⁴ = j + ½ exactly, i.e. x a multiple of 1/32, where `toFixed(5)` is
 * exact — so only those values are re-rounded.
 */
export const formatFixed4 = (x: number): string => {
  if (Number.isInteger(x * 32)) {
    const five = x.toFixed(5)
    if (five.endsWith("5")) {
      const truncated = five.slice(0, -1)
      const lastDigit = Number(truncated.at(-1))
      if (lastDigit % 2 === 0) return truncated
    }
  }
  return x.toFixed(4)
}

export interface TrecFormatOptions {
  /** Per-query lines before the `all` lines (trec_eval `-q`). Default false. */
  readonly perQuery?: boolean
  /** "trec": trec_eval measure names (`ndcg_cut_10`, `P_5`…, default); "spec": ours (`ndcg@10`). */
  readonly names?: "trec" | "spec"
}

/**
 * trec_eval's relational output: `measure \t qid|all \t value`, the measure padded to 22 characters
 * (`%-22s\t%s\t%6.4f`), `runid` and `num_q` in the summary.
 */
export const formatTrec = (evaluation: TrecEvaluation, options: TrecFormatOptions = {}): string => {
  const label = (spec: RankingMetric) => (options.names === "spec" ? spec.name : trecName(spec))
  const row = (name: string, qid: string, value: string) => `${name.padEnd(22)}\t${qid}\t${value}\n`
  let out = ""
  if (options.perQuery === true) {
    const missing = new Set(evaluation.missingQueries)
    for (const [qid, values] of evaluation.perQuery) {
      if (missing.has(qid)) continue
      for (const spec of evaluation.metrics) out += row(label(spec), qid, formatFixed4(values[spec.name] ?? 0))
    }
  }
  if (evaluation.runTag !== undefined) out += row("runid", "all", evaluation.runTag)
  out += row("num_q", "all", String(evaluation.queries))
  for (const spec of evaluation.metrics) out += row(label(spec), "all", formatFixed4(evaluation.mean[spec.name] ?? 0))
  return out
}

export interface TrecJson {
  readonly queries: number
  readonly relevanceLevel: number
  readonly complete: boolean
  readonly runTag?: string
  readonly metrics: ReadonlyArray<{ readonly name: string; readonly trecName: string }>
  readonly mean: Readonly<Record<string, number>>
  readonly perQuery: Readonly<Record<string, Readonly<Record<string, number>>>>
  readonly unjudgedQueries: ReadonlyArray<string>
  readonly missingQueries: ReadonlyArray<string>
  readonly queriesWithoutRelevant: ReadonlyArray<string>
}

/** The evaluation as plain JSON-ready data (full precision; per-query values keyed by qid). */
export const trecToJson = (evaluation: TrecEvaluation): TrecJson => ({
  queries: evaluation.queries,
  relevanceLevel: evaluation.relevanceLevel,
  complete: evaluation.complete,
  ...(evaluation.runTag === undefined ? {} : { runTag: evaluation.runTag }),
  metrics: evaluation.metrics.map((spec) => ({ name: spec.name, trecName: trecName(spec) })),
  mean: { ...evaluation.mean },
  perQuery: Object.fromEntries([...evaluation.perQuery].map(([qid, values]) => [qid, { ...values }])),
  unjudgedQueries: [...evaluation.unjudgedQueries],
  missingQueries: [...evaluation.missingQueries],
  queriesWithoutRelevant: [...evaluation.queriesWithoutRelevant]
})

export interface Judgment {
  readonly qid: string
  readonly docid: string
  readonly grade: number
}

/**
 * Judged grades as qrels text (`qid 0 docid grade`, one per line, in input order). Ids containing
 * whitespace cannot be written: they are a `InputError` naming the judgment index (1-based) as
 * `line`; so are grades that are not integers (qrels grades are integers).
 */
export const writeQrels = (judgments: Iterable<Judgment>, file = "qrels"): Effect.Effect<string, InputError> => {
  let out = ""
  let index = 0
  for (const { qid, docid, grade } of judgments) {
    index++
    const bad = [
      ["qid", qid],
      ["docid", docid]
    ].find(([, id]) => id === "" || /\s/.test(id ?? ""))
    if (bad !== undefined) {
      return Effect.fail(
        new InputError({
          file,
          line: index,
          field: bad[0] ?? "",
          problem: `${bad[0]} "${bad[1]}" is empty or contains whitespace`
        })
      )
    }
    if (!Number.isSafeInteger(grade)) {
      return Effect.fail(
        new InputError({ file, line: index, field: "grade", problem: `grade ${grade} is not an integer` })
      )
    }
    out += `${qid} 0 ${docid} ${grade}\n`
  }
  return Effect.succeed(out)
}
