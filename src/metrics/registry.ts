/**
 * Metric names → specs → per-query values → means (the ranx pattern). Names are case-insensitive:
 *
 * | form | metric | trec_eval name |
 * |---|---|---|
 * | `ndcg`, `ndcg@k`, `ndcg_cut_k`, `ndcg_cut.k` | NDCG, linear gain (or the `gain` option) | `ndcg`, `ndcg_cut_k` |
 * | `ndcg_exp`, `ndcg_exp@k` | NDCG, exponential gain 2^rel − 1 | — |
 * | `p@k`, `precision@k`, `P_k`; `p`, `precision`, `set_P` | precision (at k / of the whole list) | `P_k`, `set_P` |
 * | `map`, `ap`, `map@k`, `map_cut_k` | average precision (MAP once averaged) | `map`, `map_cut_k` |
 * | `mrr`, `rr`, `recip_rank`, `mrr@k` | reciprocal rank (MRR once averaged) | `recip_rank` |
 * | `hit@k`, `hitrate@k`, `success_k`, `hit` | hit (HitRate once averaged) | `success_k` |
 * | `recall@k`, `recall_k`, `recall`, `set_recall` | recall — gold judgments only | `recall_k`, `set_recall` |
 * | `r-precision`, `rprec`, `r_precision` | R-precision | `Rprec` |
 *
 * A metric is evaluated per query on its ranked grades (and the gold grades when there are qrels),
 * values are kept per query, and the aggregate is the mean over queries (empty → 0).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { UsageError } from "../domain/Errors.js"
import * as Metric from "../domain/Metric.js"
import { averagePrecision } from "./averagePrecision.js"
import type { Gain } from "./dcg.js"
import { hit } from "./hitRate.js"
import { ndcg } from "./ndcg.js"
import { precision } from "./precision.js"
import { recall } from "./recall.js"
import { reciprocalRank } from "./reciprocalRank.js"
import { countRelevant, defaultThreshold, mean, unjudgedGrade } from "./relevance.js"
import { rPrecision } from "./rPrecision.js"

export type MetricKind = "ndcg" | "precision" | "averagePrecision" | "reciprocalRank" | "hit" | "recall" | "rPrecision"

/**
 * A ranking metric the registry computes (`measure`). Not a declaration of what is reported: that is
 * `domain/Metric.MetricSpec`, which `declare` derives from this (name, range 0–1, higher is better).
 */
export interface RankingMetric {
  /** Canonical name, used as the key of per-query values and means (`ndcg@10`, `p@5`, `map`…). */
  readonly name: string
  readonly kind: MetricKind
  /** Cut-off; absent = the whole list. */
  readonly k?: number
  /** NDCG only. */
  readonly gain?: Gain
}

export interface ParseOptions {
  /** Gain of a bare `ndcg` / `ndcg@k` (default "linear"); `ndcg_exp` is always exponential. */
  readonly gain?: Gain
  /**
   * Whether gold judgments will be available. When false, `recall` is refused: without ground
   * truth there is no true recall (SPEC §3). Default true.
   */
  readonly gold?: boolean
}

/** The valid forms, for error messages and `--help`. */
export const validMetricForms =
  "ndcg, ndcg@k, ndcg_exp, ndcg_exp@k, p@k (precision@k; p = whole list), map (ap, map@k), " +
  "mrr (rr, mrr@k), hit@k (hitrate@k), recall@k (recall), r-precision (rprec); " +
  "trec_eval names also work: ndcg_cut_k, P_k, map_cut_k, recip_rank, success_k, recall_k, Rprec, set_P, set_recall; " +
  "k is a positive integer, names are case-insensitive"

interface Base {
  readonly kind: MetricKind
  /** Prefix of the canonical name. */
  readonly canonical: string
  readonly gain?: Gain
}

/** Base names (lowercase) → metric. `undefined` gain means "the ParseOptions gain". */
const bases: ReadonlyMap<string, Base> = new Map<string, Base>([
  ["ndcg", { kind: "ndcg", canonical: "ndcg" }],
  ["ndcg_cut", { kind: "ndcg", canonical: "ndcg" }],
  ["ndcg_exp", { kind: "ndcg", canonical: "ndcg_exp", gain: "exponential" }],
  ["ndcg-exp", { kind: "ndcg", canonical: "ndcg_exp", gain: "exponential" }],
  ["p", { kind: "precision", canonical: "p" }],
  ["precision", { kind: "precision", canonical: "p" }],
  ["set_p", { kind: "precision", canonical: "p" }],
  ["map", { kind: "averagePrecision", canonical: "map" }],
  ["ap", { kind: "averagePrecision", canonical: "map" }],
  ["map_cut", { kind: "averagePrecision", canonical: "map" }],
  ["mrr", { kind: "reciprocalRank", canonical: "mrr" }],
  ["rr", { kind: "reciprocalRank", canonical: "mrr" }],
  ["recip_rank", { kind: "reciprocalRank", canonical: "mrr" }],
  ["hit", { kind: "hit", canonical: "hit" }],
  ["hitrate", { kind: "hit", canonical: "hit" }],
  ["hit_rate", { kind: "hit", canonical: "hit" }],
  ["success", { kind: "hit", canonical: "hit" }],
  ["recall", { kind: "recall", canonical: "recall" }],
  ["set_recall", { kind: "recall", canonical: "recall" }],
  ["r-precision", { kind: "rPrecision", canonical: "rprec" }],
  ["r_precision", { kind: "rPrecision", canonical: "rprec" }],
  ["rprecision", { kind: "rPrecision", canonical: "rprec" }],
  ["rprec", { kind: "rPrecision", canonical: "rprec" }]
])

/** Names that take no cut-off. */
const uncut: ReadonlySet<MetricKind> = new Set<MetricKind>(["rPrecision"])
/** trec_eval "set" names, which mean the whole list. */
const setNames: ReadonlySet<string> = new Set(["set_p", "set_recall"])

const usage = (name: string, why: string): UsageError =>
  new UsageError({ problem: `metric "${name}": ${why}; valid forms: ${validMetricForms}` })

/** `ndcg@10` / `ndcg_cut.10` / `ndcg_cut_10` / `ndcg` → base and cut-off text. */
const splitName = (lower: string): { readonly base: string; readonly cut: string | undefined } => {
  const at = lower.indexOf("@")
  if (at >= 0) return { base: lower.slice(0, at), cut: lower.slice(at + 1) }
  const dot = /^(.+)\.([^.]*)$/.exec(lower)
  if (dot !== null) return { base: dot[1] ?? "", cut: dot[2] ?? "" }
  const trec = /^(.+)_(\d+)$/.exec(lower)
  if (trec !== null && bases.has(trec[1] ?? "")) return { base: trec[1] ?? "", cut: trec[2] ?? "" }
  return { base: lower, cut: undefined }
}

/** Parses one metric name into a spec, or a UsageError listing the valid forms. */
export const parseMetric = (name: string, options: ParseOptions = {}): Either.Either<RankingMetric, UsageError> => {
  const lower = name.trim().toLowerCase()
  const { base, cut } = splitName(lower)
  const known = bases.get(base)
  if (known === undefined) return Either.left(usage(name, "unknown metric"))
  if (known.kind === "recall" && options.gold === false) {
    return Either.left(usage(name, "recall needs gold judgments (qrels); proxy evaluation has no true recall"))
  }
  let k: number | undefined = undefined
  if (cut !== undefined) {
    if (uncut.has(known.kind) || setNames.has(base)) return Either.left(usage(name, "this metric takes no cut-off"))
    if (!/^\d+$/.test(cut) || Number(cut) < 1 || !Number.isSafeInteger(Number(cut))) {
      return Either.left(usage(name, `cut-off "${cut}" is not a positive integer`))
    }
    k = Number(cut)
  }
  const gain: Gain | undefined = known.kind === "ndcg" ? known.gain ?? options.gain ?? "linear" : undefined
  const canonical = k === undefined ? known.canonical : `${known.canonical}@${k}`
  return Either.right({
    name: canonical,
    kind: known.kind,
    ...(k === undefined ? {} : { k }),
    ...(gain === undefined ? {} : { gain })
  })
}

/**
 * Parses a list of names (or one comma-separated string), dropping duplicates by canonical name
 * (`p@5` and `precision@5` are one metric). Fails on the first invalid name.
 */
export const parseMetrics = (
  names: string | ReadonlyArray<string>,
  options: ParseOptions = {}
): Effect.Effect<ReadonlyArray<RankingMetric>, UsageError> => {
  const list = typeof names === "string" ? names.split(",") : names
  const specs: Array<RankingMetric> = []
  const seen = new Set<string>()
  for (const raw of list) {
    if (raw.trim() === "") continue
    const parsed = parseMetric(raw, options)
    if (Either.isLeft(parsed)) return Effect.fail(parsed.left)
    if (!seen.has(parsed.right.name)) {
      seen.add(parsed.right.name)
      specs.push(parsed.right)
    }
  }
  if (specs.length === 0) return Effect.fail(usage(typeof names === "string" ? names : "", "no metric given"))
  return Effect.succeed(specs)
}

/**
 * The declaration of a ranking metric, as summaries, reports, gates and `compare` read it: its name,
 * the kind's words for it, and the range and direction every registry metric has (a fraction of
 * 0–1, higher is better).
 */
export const declare = (metric: RankingMetric, description: string): Metric.MetricSpec =>
  Metric.fraction(metric.name, description)

/** trec_eval's name for a spec (for output that diffs against trec_eval); our name when it has none. */
export const trecName = (spec: RankingMetric): string => {
  const k = spec.k
  switch (spec.kind) {
    case "ndcg":
      if (spec.gain === "exponential") return spec.name
      return k === undefined ? "ndcg" : `ndcg_cut_${k}`
    case "precision":
      return k === undefined ? "set_P" : `P_${k}`
    case "averagePrecision":
      return k === undefined ? "map" : `map_cut_${k}`
    case "reciprocalRank":
      return k === undefined ? "recip_rank" : spec.name
    case "hit":
      return k === undefined ? spec.name : `success_${k}`
    case "recall":
      return k === undefined ? "set_recall" : `recall_${k}`
    case "rPrecision":
      return "Rprec"
  }
}

/** One query's judged ranking. */
export interface QueryGrades {
  /** Grades of the ranked items, rank order (`grades[0]` is rank 1). */
  readonly grades: ReadonlyArray<number>
  /**
   * Gold grades of every judged item of the query (qrels), retrieved or not. Absent = proxy
   * evaluation: the ideal ordering and R come from `grades` alone.
   */
  readonly gold?: ReadonlyArray<number>
}

export interface EvaluateOptions {
  /** Relevant ⇔ grade ≥ threshold (default 1; the LLM pipelines pass 2). NDCG ignores it. */
  readonly threshold?: number
}

export interface MetricValue {
  readonly value: number
  /** True when the value is a convention for an undefined case (NDCG with IDCG = 0). */
  readonly flagged: boolean
}

/** One metric on one query, with the flag. */
export const measure = (spec: RankingMetric, query: QueryGrades, options: EvaluateOptions = {}): MetricValue => {
  const threshold = options.threshold ?? defaultThreshold
  const { grades, gold } = query
  const totalRelevant = gold === undefined ? undefined : countRelevant(gold, threshold)
  const cut = { k: spec.k, threshold }
  const plain = (value: number): MetricValue => ({ value, flagged: false })
  switch (spec.kind) {
    case "ndcg":
      return ndcg(grades, { k: spec.k, gain: spec.gain ?? "linear", ideal: gold })
    case "precision":
      return plain(precision(grades, cut))
    case "averagePrecision":
      return plain(averagePrecision(grades, { ...cut, totalRelevant }))
    case "reciprocalRank":
      return plain(reciprocalRank(grades, cut))
    case "hit":
      return plain(hit(grades, cut))
    case "recall":
      // Only reachable without gold if the caller skipped `parseMetric(…, { gold: false })`: R then
      // falls back to the relevant items found in the list.
      return plain(recall(grades, { ...cut, totalRelevant: totalRelevant ?? countRelevant(grades, threshold) }))
    case "rPrecision":
      return plain(rPrecision(grades, { threshold, totalRelevant }))
  }
}

/** One metric on one query. */
export const evaluate = (spec: RankingMetric, query: QueryGrades, options: EvaluateOptions = {}): number =>
  measure(spec, query, options).value

/**
 * A query's ranked doc ids against its qrels (doc id → grade): grades in rank order, unjudged docs
 * at −1 (trec_eval's "not in pool": no gain, never relevant), gold = every judged grade.
 */
export const gradesFromQrels = (
  rankedDocIds: ReadonlyArray<string>,
  qrels: ReadonlyMap<string, number>
): QueryGrades => ({
  grades: rankedDocIds.map((id) => qrels.get(id) ?? unjudgedGrade),
  gold: Array.from(qrels.values())
})

/** One metric on ranked doc ids judged by qrels. */
export const evaluateRanking = (
  spec: RankingMetric,
  rankedDocIds: ReadonlyArray<string>,
  qrels: ReadonlyMap<string, number>,
  options: EvaluateOptions = {}
): number => evaluate(spec, gradesFromQrels(rankedDocIds, qrels), options)

export interface QueryScores {
  readonly id: string
  /** Metric name → value. */
  readonly values: Readonly<Record<string, number>>
  /** Names of the metrics whose value here is a convention (NDCG with IDCG = 0). */
  readonly flagged: ReadonlyArray<string>
}

export interface MetricSummary {
  /** Per-query values, in input order — kept for per-query reports and paired tests. */
  readonly perQuery: ReadonlyArray<QueryScores>
  /** Metric name → mean over queries (0 when there are none). */
  readonly mean: Readonly<Record<string, number>>
  /** Metric name → number of flagged queries. */
  readonly flagged: Readonly<Record<string, number>>
  readonly queries: number
}

/** Every metric on every query, then the means. */
export const evaluateAll = (
  specs: ReadonlyArray<RankingMetric>,
  queries: ReadonlyArray<QueryGrades & { readonly id: string }>,
  options: EvaluateOptions = {}
): MetricSummary => {
  const perQuery = queries.map((query): QueryScores => {
    const values: Record<string, number> = {}
    const flagged: Array<string> = []
    for (const spec of specs) {
      const result = measure(spec, query, options)
      values[spec.name] = result.value
      if (result.flagged) flagged.push(spec.name)
    }
    return { id: query.id, values, flagged }
  })
  return { perQuery, ...summarize(specs, perQuery) }
}

/** Means and flag counts of kept per-query values. */
export const summarize = (
  specs: ReadonlyArray<RankingMetric>,
  perQuery: ReadonlyArray<QueryScores>
): { readonly mean: Record<string, number>; readonly flagged: Record<string, number>; readonly queries: number } => {
  const means: Record<string, number> = {}
  const flagged: Record<string, number> = {}
  for (const spec of specs) {
    means[spec.name] = mean(perQuery.map((query) => query.values[spec.name] ?? 0))
    flagged[spec.name] = perQuery.filter((query) => query.flagged.includes(spec.name)).length
  }
  return { mean: means, flagged, queries: perQuery.length }
}
