/**
 * The judge, score and aggregate stages shared by the pipelines that grade every retrieved hit
 * (course-retrieval, search-relevance): one judgment per hit, then per-query ranking metrics over the
 * judged grades, aggregated online.
 *
 * Judge: one task per hit, target `hit:<id>`, with the case's variables (query / skill / question)
 * and the hit's text under the rubric's variable name. The hit's rank is deliberately not a
 * variable: the same hit judged at another rank (another top-k, a reranker) keeps its judgment key,
 * so it is reused from the cache instead of paid for again.
 *
 * Listwise (`listwise` option, `--listwise`): the hits of a query are judged together, at most
 * `LISTWISE_MAX_HITS` a call, with a listwise rubric; each hit still gets its own judgment (and a
 * share of the call's tokens), so scoring and reports are the same either way.
 *
 * Unknowns are never scores: a failed judgment leaves its hit's grade null and the query's ranking
 * metrics null (a ranking with a hole cannot be measured); a failed retrieval leaves every metric of
 * the query null. Means skip nulls and say over how many queries they are.
 */
import { type EvalCase, type Passage, recordOrigin, type RetrievalInfo } from "../../domain/Case.js"
import type { Judgment } from "../../domain/Judgment.js"
import type { MetricSpec } from "../../domain/Metric.js"
import type { AggregateStage, JudgeStage, ListSpec, RunInfo, ScoreStage, TaskSpec } from "../../engine/Pipeline.js"
import { addUsageTo, compactTokens, noTokens, type Tokens } from "../../pricing/Prices.js"
import {
  caseLatency,
  type JudgedCounts,
  latencyAdd,
  latencyFinish,
  latencyInit,
  type LatencySummary,
  type RetrievalFailures,
  retrievalFailuresFold,
  retrievalFailuresSpec
} from "./RetrievalStats.js"

/** The judge target of a hit. */
export const hitTarget = (p: Pick<Passage, "id">): string => `hit:${p.id}`

export interface HitJudgeOptions {
  readonly rubric: string
  /** Name of the hit's variable in the rubric template (`course`, `passage`). */
  readonly hitVar: string
  /** The case's variables (query, skill, question…). */
  readonly caseVars: (c: EvalCase) => Readonly<Record<string, string>>
  /** The hit's text as the judge sees it (default: the passage text). */
  readonly hitText?: ((p: Passage, c: EvalCase) => string) | undefined
  /**
   * Judge a query's hits together with this listwise rubric (one with an `item` template) instead
   * of one call per hit. Lists longer than `maxHits` (default `LISTWISE_MAX_HITS`) are split into
   * consecutive, near-equal groups.
   */
  readonly listwise?: { readonly rubric: string; readonly maxHits?: number | undefined } | undefined
}

/** Most hits judged in one listwise call: longer prompts dilute the judge's attention. */
export const LISTWISE_MAX_HITS = 20

/** Split `n` items into consecutive groups of at most `max`, as equal in size as possible. */
export const groupSizes = (n: number, max: number): Array<number> => {
  if (n === 0) return []
  const groups = Math.ceil(n / Math.max(1, max))
  return Array.from({ length: groups }, (_, i) => Math.floor(n / groups) + (i < n % groups ? 1 : 0))
}

/**
 * The texts of a case's hits as the judge sees them, in rank order: each hit's variable, and — one
 * array shared by all of the case's tasks — their `pool` (the heuristic judge's corpus statistics;
 * not a variable, so not part of any judgment key).
 */
const hitTexts = (options: HitJudgeOptions, c: EvalCase): ReadonlyArray<string> =>
  c.passages.map((p) => options.hitText?.(p, c) ?? p.text)

/**
 * One judgment per retrieved hit: pointwise (one call per hit), or listwise (one call per query,
 * one verdict per hit). Rank is never a variable, but a listwise grade is given in the context of
 * the other hits, so its key covers the whole list (see `Runner`).
 */
export const judgeHits = (options: HitJudgeOptions): JudgeStage => {
  const listwise = options.listwise
  if (listwise !== undefined) {
    const max = listwise.maxHits ?? LISTWISE_MAX_HITS
    return {
      rubrics: [listwise.rubric],
      tasks: (c) => {
        const vars = options.caseVars(c)
        const pool = hitTexts(options, c)
        const items = c.passages.map((p, i) => ({ target: hitTarget(p), vars: { [options.hitVar]: pool[i]! } }))
        let start = 0
        return groupSizes(items.length, max).map((size): ListSpec => {
          const group = items.slice(start, start += size)
          return { rubric: listwise.rubric, vars, items: group, pool }
        })
      }
    }
  }
  return {
    rubrics: [options.rubric],
    tasks: (c) => {
      const vars = options.caseVars(c)
      const pool = hitTexts(options, c)
      return c.passages.map((p, i): TaskSpec => ({
        rubric: options.rubric,
        target: hitTarget(p),
        vars: { ...vars, [options.hitVar]: pool[i]! },
        pool
      }))
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Score

export interface HitGrade {
  readonly id: string
  readonly rank: number
  /** One-line label for reports (a course's name and code, a hit's title or start of text). */
  readonly label: string
  /**
   * The hit's text, for the HTML report's case blocks (cut at `HIT_TEXT_MAX`: a record holds what a
   * reader needs to check the grade, not the corpus). Absent in records written before it was kept.
   */
  readonly text?: string | undefined
  /** The retriever's score, when it gave one. */
  readonly retrieverScore?: number | undefined
  readonly status: "ok" | "failed"
  /** The judge's grade; null when the judgment failed. */
  readonly grade: number | null
  readonly confidence?: number | undefined
  /** The judge's justification (for a failed judgment: why it failed). */
  readonly reason: string
  readonly raw?: string | undefined
  readonly tokens: { readonly input: number; readonly output: number }
  readonly latencyMs: number
}

/** A query's per-query metrics from its grades in rank order (null = failed judgment). */
export type QueryMetrics = (grades: ReadonlyArray<number | null>) => {
  readonly values: Readonly<Record<string, number | null>>
  /** Metrics whose value is a convention (NDCG with IDCG = 0). */
  readonly flagged: ReadonlyArray<string>
}

export interface GradedRecord {
  readonly caseId: string
  readonly ordinal: number
  readonly line: number
  readonly iteration: number
  /** The query text (question, skill search…). */
  readonly query: string
  /** Other case fields shown in reports (e.g. the skill). */
  readonly context: Readonly<Record<string, string>>
  readonly hits: ReadonlyArray<HitGrade>
  /** Retrieval status, counts of pruned hits, latency: undefined for plain precomputed input. */
  readonly retrieval?: RetrievalInfo | undefined
  /** Per-query metrics; null when the retrieval failed (unknown, not 0). */
  readonly metrics: Readonly<Record<string, number | null>> | null
  readonly flagged: ReadonlyArray<string>
  readonly failedJudgments: number
  /** The case's judge tokens (with the cached and Batch API parts when there are any). */
  readonly tokens: Tokens
  /** total / sub-spans / judge, ms (see `RetrievalStats.caseLatency`). */
  readonly latency: Readonly<Record<string, number>>
}

export interface GradedScoreOptions {
  readonly metrics: QueryMetrics
  /** What `metrics` computes per query: name, range, direction. */
  readonly declared: ReadonlyArray<MetricSpec>
  /** The metric that ranks the worst queries (e.g. `ndcg@10`); the ten lowest are kept. */
  readonly rankBy: string
  readonly label: (p: Passage) => string
  readonly query: (c: EvalCase) => string
  readonly context?: ((c: EvalCase) => Readonly<Record<string, string>>) | undefined
}

/** The grade of every hit from its judgment (target `hit:<id>`), in rank order. */
/** A hit's text is kept in its record up to this many characters (the rest is in the input). */
export const HIT_TEXT_MAX = 1000

const keptText = (text: string) => (text.length > HIT_TEXT_MAX ? `${text.slice(0, HIT_TEXT_MAX - 1)}…` : text)

export const gradeHits = (
  c: EvalCase,
  judgments: ReadonlyArray<Judgment>,
  label: (p: Passage) => string
): Array<HitGrade> => {
  const byTarget = new Map(judgments.map((j) => [j.target, j]))
  return c.passages.map((p): HitGrade => {
    const j = byTarget.get(hitTarget(p))
    const ok = j !== undefined && j.status === "ok" && j.score !== null
    return {
      id: p.id,
      rank: p.rank,
      label: label(p),
      text: keptText(p.text),
      ...(p.score === undefined ? {} : { retrieverScore: p.score }),
      status: ok ? "ok" : "failed",
      grade: ok ? j.score : null,
      ...(j?.confidence === undefined ? {} : { confidence: j.confidence }),
      reason: j?.reason ?? "no judgment recorded",
      ...(j?.raw === undefined ? {} : { raw: j.raw }),
      tokens: { input: j?.usage.inputTokens ?? 0, output: j?.usage.outputTokens ?? 0 },
      latencyMs: j?.latencyMs ?? 0
    }
  })
}

export const gradedScore = (options: GradedScoreOptions): ScoreStage<GradedRecord> => ({
  // The per-query metrics (null when the retrieval failed); a case failed when its retrieval or a
  // judgment failed.
  perCase: {
    declared: () => options.declared,
    of: (r) => ({
      caseId: r.caseId,
      line: r.line,
      metrics: Object.fromEntries(options.declared.map((m) => [m.name, r.metrics?.[m.name] ?? null])),
      failed: r.metrics === null || r.failedJudgments > 0
    }),
    rank: { by: [options.rankBy] }
  },
  // Agreement across iterations by rank position (one unit per record and rank: the grades contract
  // has one unit per record, so pooled per-hit agreement is not available).
  grades: (r) => ({ caseId: r.caseId, grades: Object.fromEntries(r.hits.map((h) => [`grade@${h.rank}`, h.grade])) }),
  score: (c, judgments, iteration) => {
    const hits = gradeHits(c, judgments, options.label)
    const failedRetrieval = c.retrieval?.status === "failed"
    const computed = failedRetrieval ? undefined : options.metrics(hits.map((h) => h.grade))
    const tokens = noTokens()
    let judgeMs = 0
    for (const j of judgments) {
      addUsageTo(tokens, j.usage, j.via)
      judgeMs += j.latencyMs
    }
    return {
      ...recordOrigin(c, iteration),
      query: options.query(c),
      context: options.context?.(c) ?? {},
      hits,
      ...(c.retrieval === undefined ? {} : { retrieval: c.retrieval }),
      metrics: computed?.values ?? null,
      flagged: computed?.flagged ?? [],
      failedJudgments: hits.filter((h) => h.status === "failed").length,
      tokens: compactTokens(tokens),
      latency: caseLatency(c.retrieval, judgments.length > 0 ? judgeMs : undefined)
    }
  }
})

/** The judged grades of a record as TREC qrels lines (failed judgments left out). */
export const qrelsLines = (
  r: GradedRecord
): ReadonlyArray<{ readonly qid: string; readonly docid: string; readonly grade: number }> =>
  r.hits.flatMap((h) => (h.grade === null ? [] : [{ qid: r.caseId, docid: h.id, grade: h.grade }]))

// ---------------------------------------------------------------------------------------------
// Aggregate

/**
 * What the graded-hits pipelines fold of their own, beside the engine's fold (each ranking metric's
 * mean over the queries that have it, with its interval; the lowest and failed queries; the failed
 * judgments and the counts): the hits' grades, the queries measured, flagged and failed, what the
 * retrieval parameters pruned, latency per span, and how many hits and requests were judged.
 */
export interface GradedSummary {
  /** Queries whose metrics are known (retrieval ok). */
  readonly measured: number
  /** Queries with at least one failed judgment (their ranking metrics are unknown). */
  readonly casesWithFailedJudgments: number
  readonly retrievalFailures: RetrievalFailures
  /** Metric → queries where its value is a convention (NDCG with IDCG = 0). */
  readonly flagged: Readonly<Record<string, number>>
  /** Grade → judged hits with it (every value of the rubric's scale present). */
  readonly grades: Readonly<Record<string, number>>
  /** Hits retrieved (after threshold / top-k) and hits pruned by the parameters. */
  readonly hits: { readonly kept: number; readonly belowThreshold: number; readonly beyondTopK: number }
  readonly latency: LatencySummary
  /** Hits judged (ok or failed) and requests (queries with at least one judgment): the token averages' denominators. */
  readonly judged: JudgedCounts
}

export const gradedSummary = (options: {
  /** The per-query metrics whose IDCG-flags are counted. */
  readonly metrics: ReadonlyArray<MetricSpec>
}): AggregateStage<GradedRecord, GradedSummary> => ({
  start: (info: RunInfo) => {
    const failures = retrievalFailuresFold()
    const init = () => ({
      flagged: new Map(options.metrics.map((m) => [m.name, 0])),
      grades: new Map((info.rubrics[0]?.scale ?? []).map((v) => [v.score, 0])),
      latency: latencyInit(),
      measured: 0,
      casesWithFailed: 0,
      kept: 0,
      belowThreshold: 0,
      beyondTopK: 0,
      judgedHits: 0,
      requests: 0
    })
    let s = init()
    return {
      add: (r) => {
        s.kept += r.hits.length
        s.belowThreshold += r.retrieval?.belowThreshold ?? 0
        s.beyondTopK += r.retrieval?.beyondTopK ?? 0
        for (const h of r.hits) {
          if (h.grade !== null) s.grades.set(h.grade, (s.grades.get(h.grade) ?? 0) + 1)
        }
        s.judgedHits += r.hits.length
        if (r.hits.length > 0) s.requests++
        if (r.failedJudgments > 0) s.casesWithFailed++
        latencyAdd(s.latency, r.latency)
        if (r.metrics === null) {
          failures.add(r)
          return
        }
        s.measured++
        for (const f of r.flagged) s.flagged.set(f, (s.flagged.get(f) ?? 0) + 1)
      },
      save: () => structuredClone({ own: s, failures: failures.save() }),
      restore: (state) => {
        const saved = structuredClone(state) as { own: ReturnType<typeof init>; failures: RetrievalFailures }
        failures.restore(saved.failures)
        s = saved.own
      },
      finish: () => ({
        measured: s.measured,
        casesWithFailedJudgments: s.casesWithFailed,
        retrievalFailures: failures.finish(),
        flagged: Object.fromEntries(s.flagged),
        grades: Object.fromEntries([...s.grades].sort((a, b) => a[0] - b[0]).map(([g, n]) => [String(g), n])),
        hits: { kept: s.kept, belowThreshold: s.belowThreshold, beyondTopK: s.beyondTopK },
        latency: latencyFinish(s.latency),
        judged: { hits: s.judgedHits, requests: s.requests }
      })
    }
  },
  metrics: (x) => ({ retrievalFailures: x.retrievalFailures.count }),
  headline: () => [retrievalFailuresSpec]
})
