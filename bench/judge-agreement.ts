/**
 * Agreement of the heuristic judge's relevance grades with human labels.
 *
 *   npx tsx bench/judge-agreement.ts [--pool-size N] [data-dir …]   (default ../shared/data/llmjudge-test)
 *
 * A data directory holds `search.jsonl` (search-relevance requests: one query and its hits a line),
 * `qrels.txt` (human grades 0–3, `qid 0 docid grade`) and optionally `llama3-8b-grades.qrels` (an LLM
 * judge's grades on the same pairs, printed as a reference). `bench/llmjudge-convert.ts` builds such
 * a directory from the public LLMJudge / TREC DL files.
 *
 * Every pair is judged exactly as the search-relevance pipeline judges it: the cases are decoded by
 * its loader (`SearchRelevance.searchDecoder`), the tasks come from its judge stage
 * (`judgeSearchHits` with the rubric `search-relevance/checklist`: same variables, same pool), and
 * each verdict from `HeuristicJudge.verdict`. Printed: Cohen's κ on the four grades, κ on
 * relevant/not (grade ≥ 2), the confusion matrix, judgments/s (every pair judged repeatedly for
 * about 3 s in this process after one untimed warm-up pass, tasks — and so their pools —
 * rebuilt each pass as a run builds them), and a leave-one-query-out
 * check of the grade thresholds: they are refitted on all queries but one, the held-out query graded
 * with them, and κ computed over all held-out grades.
 *
 * κ here is a small local function (`cohenKappa`), checked by reproducing the published κ of the
 * Llama-3-8B grades (0.1044 four grades, 0.1545 binary, on llmjudge-test).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import type { EvalCase } from "../src/domain/Case.js"
import type { JudgeTask } from "../src/domain/Judgment.js"
import type { Rubric } from "../src/domain/Rubric.js"
import type { TaskSpec } from "../src/engine/Pipeline.js"
import { relevanceOf } from "../src/judges/Heuristic.js"
import * as HeuristicJudge from "../src/judges/HeuristicJudge.js"
import { loadRubric } from "../src/judges/Prompt.js"
import { THRESHOLDS, THRESHOLDS_ALONE } from "../src/judges/RelevanceModel.js"
import { toHitListCase } from "../src/kinds/graded-hits/RetrievalInput.js"
import { judgeSearchHits, searchDecoder, searchFields } from "../src/kinds/search/SearchRelevance.js"
import { judgedRelevantAt } from "../src/metrics/relevance.js"

const here = Path.dirname(fileURLToPath(import.meta.url))
export const defaultDataDir = Path.resolve(here, "..", "..", "shared", "data", "llmjudge-test")
const RUBRIC = "search-relevance/checklist"
const GRADES = 4

// ---------------------------------------------------------------------------------------------
// Cohen's κ

/** confusion[human][judge] counts. */
export type Confusion = ReadonlyArray<ReadonlyArray<number>>

/**
 * Cohen's κ = (p_o − p_e) / (1 − p_e), p_o = Σ_k n_kk / n, p_e = Σ_k (n_k· / n)(n_·k / n).
 * NaN when undefined (no pairs, or both raters constant on the same value: p_e = 1).
 */
export const cohenKappa = (confusion: Confusion): number => {
  const k = confusion.length
  let n = 0
  let agree = 0
  const rows = new Array<number>(k).fill(0)
  const cols = new Array<number>(k).fill(0)
  for (let i = 0; i < k; i++) {
    for (let j = 0; j < k; j++) {
      const c = confusion[i]![j]!
      n += c
      rows[i]! += c
      cols[j]! += c
      if (i === j) agree += c
    }
  }
  if (n === 0) return Number.NaN
  let expected = 0
  for (let i = 0; i < k; i++) expected += (rows[i]! / n) * (cols[i]! / n)
  return expected === 1 ? Number.NaN : (agree / n - expected) / (1 - expected)
}

const emptyConfusion = (k: number): Array<Array<number>> =>
  Array.from({ length: k }, () => new Array<number>(k).fill(0))

/** The 2×2 table of relevant (grade ≥ `judgedRelevantAt`) or not. */
export const binary = (confusion: Confusion): Confusion => {
  const b = emptyConfusion(2)
  confusion.forEach((row, h) =>
    row.forEach((c, j) => (b[h >= judgedRelevantAt ? 1 : 0]![j >= judgedRelevantAt ? 1 : 0]! += c))
  )
  return b
}

// ---------------------------------------------------------------------------------------------
// Data

export interface Pair {
  readonly qid: string
  readonly docid: string
  readonly human: number
}

/** TREC qrels `qid 0 docid grade` → key `qid docid` → grade. */
export const readQrels = (file: string): Map<string, number> => {
  const out = new Map<string, number>()
  fs.readFileSync(file, "utf8").split("\n").forEach((line, i) => {
    const f = line.trim().split(/\s+/)
    if (f.length === 1 && f[0] === "") return
    const grade = Number(f[3])
    if (f.length !== 4 || !Number.isInteger(grade)) {
      throw new Error(`${file}:${i + 1}: expected "qid 0 docid grade", found "${line}"`)
    }
    out.set(`${f[0]} ${f[2]}`, grade)
  })
  return out
}

/** The search requests of `search.jsonl`, decoded by the pipeline's own loader. */
export const readCases = (file: string): Array<EvalCase> =>
  fs.readFileSync(file, "utf8").split("\n").flatMap((text, i) => {
    if (text.trim() === "") return []
    const row = { line: i + 1, values: JSON.parse(text) as Record<string, unknown> }
    return [Effect.runSync(toHitListCase(row, i, file, searchDecoder(searchFields)))]
  })

const loadCheckedRubric = (): Promise<Rubric> =>
  Effect.runPromise(loadRubric(RUBRIC).pipe(Effect.provide(NodeContext.layer)))

/** The pipeline's tasks of a case, as the runner builds them (`Runner` planSpec). */
const tasksOf = (stage: ReturnType<typeof judgeSearchHits>, rubric: Rubric, c: EvalCase): Array<JudgeTask> =>
  stage.tasks(c).map((spec) => {
    const s = spec as TaskSpec
    return {
      pipeline: "search-relevance",
      caseId: c.id,
      ordinal: c.ordinal,
      iteration: 1,
      rubric,
      target: s.target,
      vars: s.vars,
      pool: s.pool
    }
  })

// ---------------------------------------------------------------------------------------------
// Threshold cross-validation

interface Scored {
  readonly qid: string
  readonly human: number
  readonly s: number
}

const gradeWith = (s: number, t: readonly [number, number, number]): number => {
  const x = Math.round(s * 1e9) / 1e9
  return x >= t[2] ? 3 : x >= t[1] ? 2 : x >= t[0] ? 1 : 0
}

const confusionOf = (rows: ReadonlyArray<Scored>, t: readonly [number, number, number]): Confusion => {
  const c = emptyConfusion(GRADES)
  for (const r of rows) c[r.human]![gradeWith(r.s, t)]!++
  return c
}

/** Candidate thresholds: 0.00, 0.05, …, 1.60 (the shipped ones are on this grid). */
const GRID = Array.from({ length: 33 }, (_, i) => Math.round(i * 5) / 100)

/** The thresholds maximising κ (four grades) + κ (binary) on `rows`, over `GRID`. */
export const fitThresholds = (rows: ReadonlyArray<Scored>): [number, number, number] => {
  // counts[bin][human]: rows whose s falls in [GRID[b], GRID[b+1]); bin 0 below GRID[0].
  const bins = GRID.length + 1
  const counts = Array.from({ length: bins }, () => new Array<number>(GRADES).fill(0))
  for (const r of rows) {
    const x = Math.round(r.s * 1e9) / 1e9
    let b = 0
    while (b < GRID.length && x >= GRID[b]!) b++
    counts[b]![r.human]!++
  }
  const cum = [new Array<number>(GRADES).fill(0)]
  for (let b = 0; b < bins; b++) cum.push(cum[b]!.map((v, h) => v + counts[b]![h]!))
  const between = (lo: number, hi: number) => cum[hi]!.map((v, h) => v - cum[lo]![h]!)
  let best: [number, number, number] = [GRID[0]!, GRID[0]!, GRID[0]!]
  let bestValue = -Infinity
  // Threshold index i means "s ≥ GRID[i-1]": bins ≥ i get at least that grade.
  for (let i = 1; i <= GRID.length; i++) {
    for (let j = i; j <= GRID.length; j++) {
      for (let k = j; k <= GRID.length; k++) {
        const cols = [between(0, i), between(i, j), between(j, k), between(k, bins)]
        const c = emptyConfusion(GRADES)
        for (let g = 0; g < GRADES; g++) for (let h = 0; h < GRADES; h++) c[h]![g] = cols[g]![h]!
        const value = cohenKappa(c) + cohenKappa(binary(c))
        if (value > bestValue) {
          bestValue = value
          best = [GRID[i - 1]!, GRID[j - 1]!, GRID[k - 1]!]
        }
      }
    }
  }
  return best
}

export interface CrossValidation {
  /** Thresholds fitted on all queries of this collection. */
  readonly fitted: readonly [number, number, number]
  /** κ with thresholds fitted on all queries (in-sample). */
  readonly fittedKappa4: number
  readonly fittedKappa2: number
  /** κ over held-out grades, each query graded with thresholds fitted on the others. */
  readonly kappa4: number
  readonly kappa2: number
}

export const leaveOneQueryOut = (rows: ReadonlyArray<Scored>): CrossValidation => {
  const fitted = fitThresholds(rows)
  const all = confusionOf(rows, fitted)
  const held = emptyConfusion(GRADES)
  for (const qid of new Set(rows.map((r) => r.qid))) {
    const t = fitThresholds(rows.filter((r) => r.qid !== qid))
    for (const r of rows) if (r.qid === qid) held[r.human]![gradeWith(r.s, t)]!++
  }
  return {
    fitted,
    fittedKappa4: cohenKappa(all),
    fittedKappa2: cohenKappa(binary(all)),
    kappa4: cohenKappa(held),
    kappa2: cohenKappa(binary(held))
  }
}

// ---------------------------------------------------------------------------------------------
// Measure

export interface Agreement {
  readonly dataDir: string
  /** `MeasureOptions.poolSize`, when hits were split. */
  readonly poolSize?: number | undefined
  readonly queries: number
  /** Judged pairs that have a human grade. */
  readonly pairs: number
  readonly kappa4: number
  readonly kappa2: number
  /** confusion[human][heuristic]. */
  readonly confusion: Confusion
  readonly judgmentsPerSecond: number
  /** The same κ for `llama3-8b-grades.qrels`, when the directory has it. */
  readonly reference?: { readonly name: string; readonly kappa4: number; readonly kappa2: number } | undefined
  readonly crossValidation: CrossValidation
}

export interface MeasureOptions {
  /** How long to judge repeatedly for the throughput figure (default 3 s; 0 skips it). */
  readonly throughputSeconds?: number | undefined
  /**
   * Split each query's hits, in file order, into requests of at most this many hits (default: one
   * request per query, the whole judging pool): how the model fares with a top-k list's small pool.
   */
  readonly poolSize?: number | undefined
}

/** A case's hits in consecutive requests of at most `size` hits (ids `qid`, same query). */
const splitCase = (c: EvalCase, size: number): Array<EvalCase> => {
  const out: Array<EvalCase> = []
  for (let i = 0; i < c.passages.length; i += size) {
    out.push({ ...c, passages: c.passages.slice(i, i + size).map((p, r) => ({ ...p, rank: r + 1 })) })
  }
  return out
}

export const measureAgreement = async (
  dataDir: string = defaultDataDir,
  options: MeasureOptions = {}
): Promise<Agreement> => {
  const qrels = readQrels(Path.join(dataDir, "qrels.txt"))
  const whole = readCases(Path.join(dataDir, "search.jsonl"))
  const poolSize = options.poolSize
  const cases = poolSize === undefined ? whole : whole.flatMap((c) => splitCase(c, poolSize))
  const rubric = await loadCheckedRubric()
  const stage = judgeSearchHits(RUBRIC)

  const confusion = emptyConfusion(GRADES)
  const scored: Array<Scored> = []
  const judged = new Map<string, number>()
  for (const c of cases) {
    for (const task of tasksOf(stage, rubric, c)) {
      const v = HeuristicJudge.verdict(task)
      if (v.status !== "ok" || v.score === null) throw new Error(`${dataDir}: case ${c.id} ${task.target}: ${v.reason}`)
      const docid = task.target.slice("hit:".length)
      const human = qrels.get(`${c.id} ${docid}`)
      if (human === undefined) continue
      judged.set(`${c.id} ${docid}`, v.score)
      confusion[human]![v.score]!++
      const r = relevanceOf(task.vars, { pool: task.pool })
      if (r !== undefined) scored.push({ qid: c.id, human, s: r.score })
    }
  }

  let reference: Agreement["reference"]
  const referenceFile = Path.join(dataDir, "llama3-8b-grades.qrels")
  if (fs.existsSync(referenceFile)) {
    const llm = readQrels(referenceFile)
    const c = emptyConfusion(GRADES)
    for (const [key, human] of qrels) {
      const g = llm.get(key)
      if (g !== undefined) c[human]![g]!++
    }
    reference = {
      name: "Llama-3-8B-Instruct (llama3-8b-grades.qrels)",
      kappa4: cohenKappa(c),
      kappa2: cohenKappa(binary(c))
    }
  }

  let judgmentsPerSecond = Number.NaN
  const seconds = options.throughputSeconds ?? 3
  if (seconds > 0) {
    // One untimed pass first: a long run judges with compiled code, not the interpreter's first pass.
    for (const c of cases) for (const task of tasksOf(stage, rubric, c)) HeuristicJudge.verdict(task)
    let n = 0
    const started = performance.now()
    let elapsed = 0
    while (elapsed < seconds * 1000) {
      for (const c of cases) {
        for (const task of tasksOf(stage, rubric, c)) {
          HeuristicJudge.verdict(task)
          n++
        }
      }
      elapsed = performance.now() - started
    }
    judgmentsPerSecond = n / (elapsed / 1000)
  }

  return {
    dataDir,
    poolSize,
    queries: whole.length,
    pairs: judged.size,
    kappa4: cohenKappa(confusion),
    kappa2: cohenKappa(binary(confusion)),
    confusion,
    judgmentsPerSecond,
    reference,
    crossValidation: leaveOneQueryOut(scored)
  }
}

// ---------------------------------------------------------------------------------------------
// CLI

const f3 = (x: number) => x.toFixed(3)

export const formatAgreement = (a: Agreement): string => {
  const cv = a.crossValidation
  const lines = [
    `${a.dataDir}: ${a.queries} queries, ${a.pairs.toLocaleString("en-US")} judged pairs${
      a.poolSize === undefined ? "" : `, hits split into requests of ≤ ${a.poolSize}`
    } — heuristic judge (${HeuristicJudge.model}), rubric ${RUBRIC}`,
    `  Cohen's κ, four grades:         ${f3(a.kappa4)}`,
    `  Cohen's κ, relevant (≥ 2) or not: ${f3(a.kappa2)}`,
    "  confusion (rows: human grade, columns: heuristic grade 0 1 2 3):",
    ...a.confusion.map((row, h) => `    ${h}: ${row.map((c) => String(c).padStart(6)).join("")}`),
    `  thresholds shipped ${THRESHOLDS.grade1}/${THRESHOLDS.grade2}/${THRESHOLDS.grade3} (hit alone: ${THRESHOLDS_ALONE.grade1}/${THRESHOLDS_ALONE.grade2}/${THRESHOLDS_ALONE.grade3}); refitted on this collection ${
      cv.fitted.join("/")
    } (in-sample κ ${f3(cv.fittedKappa4)} / ${f3(cv.fittedKappa2)})`,
    `  leave-one-query-out (thresholds refitted without the query): κ four grades ${f3(cv.kappa4)}, binary ${
      f3(cv.kappa2)
    }`,
    ...(a.reference === undefined
      ? []
      : [
        `  reference, ${a.reference.name}: κ four grades ${f3(a.reference.kappa4)}, binary ${f3(a.reference.kappa2)}`
      ]),
    `  throughput: ${
      Number.isNaN(a.judgmentsPerSecond)
        ? "not measured"
        : `${Math.round(a.judgmentsPerSecond).toLocaleString("en-US")} judgments/s`
    } (single process, tasks rebuilt each pass)`
  ]
  return lines.join("\n")
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const sizeAt = args.indexOf("--pool-size")
  const poolSize = sizeAt === -1 ? undefined : Number(args[sizeAt + 1])
  if (poolSize !== undefined && !(Number.isInteger(poolSize) && poolSize >= 1)) {
    console.error(`--pool-size: expected a whole number ≥ 1, found "${args[sizeAt + 1] ?? ""}"`)
    process.exitCode = 2
  }
  const dirs = sizeAt === -1 ? args : args.filter((_, i) => i !== sizeAt && i !== sizeAt + 1)
  for (const dir of process.exitCode === 2 ? [] : dirs.length === 0 ? [defaultDataDir] : dirs) {
    if (!fs.existsSync(Path.join(dir, "search.jsonl")) || !fs.existsSync(Path.join(dir, "qrels.txt"))) {
      console.error(`${dir}: expected search.jsonl and qrels.txt (see bench/llmjudge-convert.ts)`)
      process.exitCode = 2
      continue
    }
    console.log(formatAgreement(await measureAgreement(dir, { poolSize })))
  }
}
