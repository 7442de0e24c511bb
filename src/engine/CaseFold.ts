/**
 * The engine's fold over an iteration's records: what every pipeline's summary holds, computed once
 * here, online (memory flat in the number of cases), from what the pipeline declares — its per-case
 * metrics (`PerCaseMetrics`) — and the judgments the core already made:
 *
 * - per declared metric, over the cases that have it: n, mean, sample standard deviation, min, max
 *   and a 95% interval of the mean (the Poisson bootstrap: online, seeded, so a run's intervals are
 *   the same on every render);
 * - the lowest cases by the metrics the pipeline ranks by (ties by the next, then input order), and
 *   the first failed cases (a failed judgment or retrieval, no headline value), both bounded and
 *   holding their records, which the reports show;
 * - the first failed judgments, bounded, with the judge's reason and raw reply.
 *
 * Judgment and token counts are the judging core's (`Sink`), handed in when the iteration ends, so a
 * summary and the cost file cannot disagree. A kind keeps only what is truly its own — claim verdict
 * counts, grade histograms, the low-score analysis — as its `AggregateStage`.
 */
import type { Judgment } from "../domain/Judgment.js"
import type { MetricSpec } from "../domain/Metric.js"
import { type BootstrapState, type PoissonBootstrap, poissonBootstrap } from "../stats/PoissonBootstrap.js"
import type { CaseValues, ListedFailure, MetricStats, Pipeline, RunInfo, RunSummary } from "./Pipeline.js"

export interface CaseFoldOptions {
  readonly declared: ReadonlyArray<MetricSpec>
  /** The metrics that rank cases, lowest first (none: no lowest list). */
  readonly rankBy?: ReadonlyArray<string> | undefined
  /** How many lowest cases to keep (default `DEFAULT_LOWEST`). */
  readonly lowest?: number | undefined
  /** How many failed cases and failed judgments to keep (defaults `DEFAULT_FAILED_CASES`, `DEFAULT_FAILURES`). */
  readonly failedCases?: number | undefined
  readonly failures?: number | undefined
}

export const DEFAULT_LOWEST = 10
export const DEFAULT_FAILED_CASES = 10
export const DEFAULT_FAILURES = 50
/** Seed of the bootstrap: the same records in the same order give the same intervals. */
export const BOOTSTRAP_SEED = 20240626

/**
 * Keep the `size` lowest items by a key compared with `compare`, in bounded memory (a buffer sorted
 * and trimmed when it doubles): `add` is amortised O(log n). Ties keep input order.
 */
export class Lowest<K, A> {
  private items: Array<LowestItem<K, A>>
  constructor(
    private readonly size: number,
    private readonly compare: (a: K, b: K) => number,
    /** Go on from what `save()` gave. */
    saved?: ReadonlyArray<LowestItem<K, A>>
  ) {
    this.items = saved === undefined ? [] : [...saved]
  }
  /** What is held (plain data), for a resume's snapshot. */
  save(): ReadonlyArray<LowestItem<K, A>> {
    return [...this.items]
  }
  add(key: K, ordinal: number, item: A) {
    if (this.size <= 0) return
    this.items.push({ key, ordinal, item })
    if (this.items.length >= this.size * 2) this.trim()
  }
  private trim() {
    this.items.sort((a, b) => this.compare(a.key, b.key) || a.ordinal - b.ordinal)
    this.items.length = Math.min(this.items.length, this.size)
  }
  /** Lowest first (ties in input order). */
  result(): ReadonlyArray<{ readonly key: K; readonly ordinal: number; readonly item: A }> {
    this.trim()
    return this.items
  }
}

export interface LowestItem<K, A> {
  readonly key: K
  readonly ordinal: number
  readonly item: A
}

/** Numbers compared ascending. */
export const byNumber = (a: number, b: number) => a - b

/** Lists of numbers compared element by element, ascending (a ranking by several metrics). */
export const byNumbers = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => {
  for (let i = 0; i < a.length; i++) {
    const d = a[i]! - b[i]!
    if (d !== 0) return d
  }
  return 0
}

/** A failed judgment as the summaries list it. */
export const listedFailure = (j: Judgment, line: number): ListedFailure => ({
  caseId: j.caseId,
  line,
  criterion: j.criterion,
  target: j.target,
  reason: j.reason,
  ...(j.raw === undefined ? {} : { raw: j.raw })
})

interface Running {
  n: number
  sum: number
  /** Welford's running mean and sum of squared deviations, for the standard deviation. */
  mean: number
  m2: number
  min: number
  max: number
}

/** The online fold: `add` each record (in input order) with its values and judgments, then `finish`. */
export interface CaseFold<R> {
  add(record: R, values: CaseValues, judgments: ReadonlyArray<Judgment>): void
  finish<X>(counts: Pick<RunSummary, "judgments" | "tokens">, extra: X): RunSummary<R, X>
  /** What has been folded (plain data, a copy), for `make(options, saved)` to go on from: a resume's snapshot. */
  save(): CaseFoldState<R>
}

/** A fold's state as `save` gives it: structured-cloneable (`v8.serialize`). */
export interface CaseFoldState<R> {
  readonly names: ReadonlyArray<string>
  readonly running: ReadonlyArray<Running>
  readonly boot: BootstrapState
  readonly lowest: ReadonlyArray<LowestItem<ReadonlyArray<number>, R>>
  readonly failed: ReadonlyArray<R>
  readonly failures: ReadonlyArray<ListedFailure>
  readonly cases: number
  readonly failedCases: number
}

/**
 * A fold from nothing, or going on from a state `save` gave (the same declared metrics: another
 * list throws, as does a state not made by `save`).
 */
export const make = <R>(options: CaseFoldOptions, saved?: CaseFoldState<R>): CaseFold<R> => {
  const names = options.declared.map((m) => m.name)
  if (saved !== undefined && JSON.stringify(saved.names) !== JSON.stringify(names)) {
    throw new Error("a saved fold of other metrics")
  }
  const running: Array<Running> = saved === undefined
    ? names.map(() => ({ n: 0, sum: 0, mean: 0, m2: 0, min: Infinity, max: -Infinity }))
    : saved.running.map((r) => ({ ...r }))
  const boot: PoissonBootstrap = poissonBootstrap(names.length, { seed: BOOTSTRAP_SEED }, saved?.boot)
  const rankBy = options.rankBy ?? []
  const lowest = new Lowest<ReadonlyArray<number>, R>(
    rankBy.length === 0 ? 0 : options.lowest ?? DEFAULT_LOWEST,
    byNumbers,
    saved?.lowest
  )
  const failedKeep = options.failedCases ?? DEFAULT_FAILED_CASES
  const failuresKeep = options.failures ?? DEFAULT_FAILURES
  const failed: Array<R> = saved === undefined ? [] : [...saved.failed]
  const failures: Array<ListedFailure> = saved === undefined ? [] : [...saved.failures]
  const values: Array<number | null> = new Array(names.length)
  let cases = saved?.cases ?? 0
  let failedCases = saved?.failedCases ?? 0
  return {
    save: () => ({
      names,
      running: running.map((r) => ({ ...r })),
      boot: boot.save(),
      lowest: lowest.save(),
      failed: [...failed],
      failures: [...failures],
      cases,
      failedCases
    }),
    add: (record, caseValues, judgments) => {
      const ordinal = cases++
      for (let i = 0; i < names.length; i++) {
        const v = caseValues.metrics[names[i]!]
        const x = v === undefined || v === null || !Number.isFinite(v) ? null : v
        values[i] = x
        if (x === null) continue
        const s = running[i]!
        s.n++
        s.sum += x
        const d = x - s.mean
        s.mean += d / s.n
        s.m2 += d * (x - s.mean)
        if (x < s.min) s.min = x
        if (x > s.max) s.max = x
      }
      boot.add(values)
      if (caseValues.failed) {
        failedCases++
        if (failed.length < failedKeep) failed.push(record)
      } else if (rankBy.length > 0) {
        const key = rankBy.map((name) => caseValues.metrics[name])
        if (key.every((k) => k !== null && k !== undefined)) lowest.add(key as ReadonlyArray<number>, ordinal, record)
      }
      if (failures.length < failuresKeep) {
        for (const j of judgments) {
          if (j.status === "failed" && failures.length < failuresKeep) failures.push(listedFailure(j, caseValues.line))
        }
      }
    },
    finish: (counts, extra) => {
      const intervals = boot.intervals()
      const metrics: Record<string, MetricStats> = {}
      names.forEach((name, i) => {
        const s = running[i]!
        metrics[name] = {
          name,
          n: s.n,
          mean: s.n === 0 ? null : s.sum / s.n,
          std: s.n === 0 ? null : s.n === 1 ? 0 : Math.sqrt(s.m2 / (s.n - 1)),
          min: s.n === 0 ? null : s.min,
          max: s.n === 0 ? null : s.max,
          ci: intervals[i] ?? null
        }
      })
      return {
        cases,
        failedCases,
        judgments: counts.judgments,
        tokens: counts.tokens,
        metrics,
        lowest: lowest.result().map((x) => x.item),
        failed,
        failures,
        extra
      }
    }
  }
}

/**
 * A pipeline's summary of records already scored, folded as a run folds them (the engine's fold and
 * the kind's own), with the judgments behind each record when known: for a library caller or a test
 * that holds records, not a run. Judgment and token counts are the run's, handed in (none by default).
 */
export const summarize = <R, X>(
  pipeline: Pick<Pipeline<R, X>, "score" | "aggregate">,
  info: RunInfo,
  records: Iterable<R>,
  options: {
    readonly judgments?: ((record: R) => ReadonlyArray<Judgment>) | undefined
    readonly counts?: Pick<RunSummary, "judgments" | "tokens"> | undefined
  } = {}
): RunSummary<R, X> => {
  const perCase = pipeline.score.perCase
  const fold = make<R>({ declared: perCase.declared(info), rankBy: perCase.rank?.by, lowest: perCase.rank?.keep })
  const own = pipeline.aggregate?.start(info)
  for (const record of records) {
    const values = perCase.of(record)
    fold.add(record, values, options.judgments?.(record) ?? [])
    own?.add(record, values)
  }
  return fold.finish(
    options.counts ?? { judgments: { ok: 0, failed: 0 }, tokens: { input: 0, output: 0 } },
    own?.finish() as X
  )
}
