/**
 * Aggregate stage of answer-correctness: per claim metric its mean over the cases that have it,
 * with a 95% bootstrap interval (the Poisson bootstrap: online, constant memory), the claim and
 * verdict counts, the failed and lowest cases (bounded lists) and the tokens.
 */
import * as Metric from "../../domain/Metric.js"
import type { MetricSpec } from "../../domain/Metric.js"
import type { AggregateStage } from "../../engine/Pipeline.js"
import { compactTokens, type MutableTokens, noTokens, type Tokens } from "../../pricing/Prices.js"
import { type PoissonBootstrap, poissonBootstrap } from "../../stats/PoissonBootstrap.js"
import { empty, mean, push, type Welford } from "../../stats/Welford.js"
import { type ClaimList } from "./Claims.js"
import { claimMetricNames, correctnessMetricSpecs, type CorrectnessRecord } from "./CorrectnessScore.js"

export interface MetricSummary {
  readonly name: string
  /** Cases with a value (the others cannot have the metric: no reference, no contexts…). */
  readonly n: number
  readonly mean: number | null
  /** 95% bootstrap interval of the mean; null with fewer than two cases. */
  readonly ci: { readonly lower: number; readonly upper: number } | null
}

/** Claims counted over the run, by side and verdict. */
export interface ClaimCounts {
  readonly answerClaims: number
  readonly referenceClaims: number
  /** Answer claims against the reference. */
  readonly answerVsReference: { readonly entailed: number; readonly neutral: number; readonly contradicted: number }
  /** Reference claims against the answer. */
  readonly referenceVsAnswer: { readonly entailed: number; readonly neutral: number; readonly contradicted: number }
  /** Answer claims no context entails (with contexts). */
  readonly unsupportedByContexts: number
  /** Answers that abstain (words, no claim). */
  readonly abstained?: number | undefined
  /** Cases the judge did not read (the heuristic judge reads English only), and the first reason. */
  readonly notJudged?: number | undefined
  readonly notJudgedReason?: string | undefined
}

export interface CorrectnessSummary {
  readonly cases: number
  readonly judgments: { readonly ok: number; readonly failed: number }
  /** Cases with a failed judgment. */
  readonly failedCases: number
  readonly metrics: ReadonlyArray<MetricSummary>
  readonly claims: ClaimCounts
  /** Failed cases first, then the lowest scores (ties in input order); bounded. */
  readonly lowest: ReadonlyArray<CorrectnessRecord>
  readonly failures: ReadonlyArray<
    {
      readonly caseId: string
      readonly line: number
      readonly criterion: string
      readonly reason: string
      readonly raw?: string | undefined
    }
  >
  readonly tokens: Tokens
}

const MAX_FAILURES_LISTED = 50
/** Seed of the bootstrap: the same run gives the same intervals. */
const BOOTSTRAP_SEED = 20240626

type Counts = { entailed: number; neutral: number; contradicted: number }

interface Acc {
  cases: number
  ok: number
  failed: number
  failedCases: number
  stats: Array<Welford>
  boot: PoissonBootstrap
  counts: {
    answerClaims: number
    referenceClaims: number
    answerVsReference: Counts
    referenceVsAnswer: Counts
    unsupportedByContexts: number
    abstained: number
    notJudged: number
    notJudgedReason?: string | undefined
  }
  lowest: Array<CorrectnessRecord>
  failures: Array<CorrectnessSummary["failures"][number]>
  tokens: MutableTokens
}

/** Order of the lowest list: failed cases first, then by score (unknown last), then input order. */
const rank = (r: CorrectnessRecord): number => (r.failed > 0 ? -1 : r.score ?? 2)

const countVerdicts = (counts: Counts, list: ClaimList | undefined) => {
  if (list === undefined || list.status !== "ok") return
  for (const c of list.claims) {
    const v = c.against?.verdict
    if (v !== undefined && v !== null) counts[v]++
  }
}

/** The headline metrics: each claim metric's mean, and the failed judgments. */
export const correctnessHeadline = (): ReadonlyArray<MetricSpec> => [
  ...correctnessMetricSpecs.map((m) => ({ ...m, description: `mean ${m.description}, over the cases that have it` })),
  Metric.count("failed", "judgments recorded as failed (never scored)")
]

export const correctnessSummary = (
  options: { readonly lowest: number }
): AggregateStage<CorrectnessRecord, CorrectnessSummary> => ({
  init: (): Acc => ({
    cases: 0,
    ok: 0,
    failed: 0,
    failedCases: 0,
    stats: claimMetricNames.map(() => empty()),
    boot: poissonBootstrap(claimMetricNames.length, { seed: BOOTSTRAP_SEED }),
    counts: {
      answerClaims: 0,
      referenceClaims: 0,
      answerVsReference: { entailed: 0, neutral: 0, contradicted: 0 },
      referenceVsAnswer: { entailed: 0, neutral: 0, contradicted: 0 },
      unsupportedByContexts: 0,
      abstained: 0,
      notJudged: 0
    },
    lowest: [],
    failures: [],
    tokens: noTokens()
  }),
  add: (accU, r) => {
    const acc = accU as Acc
    acc.cases++
    acc.failed += r.failed
    if (r.failed > 0) acc.failedCases++
    const values = claimMetricNames.map((name) => r.metrics[name])
    values.forEach((v, i) => {
      if (v !== null) push(acc.stats[i]!, v)
    })
    acc.boot.add(values)
    const { answer, reference } = r.claims
    if (answer.status === "ok") {
      acc.counts.answerClaims += answer.claims.length
      for (const c of answer.claims) {
        if (c.contexts.length > 0 && c.contexts.every((k) => k.verdict !== null && k.verdict !== "entailed")) {
          acc.counts.unsupportedByContexts++
        }
      }
    }
    if (reference?.status === "ok") acc.counts.referenceClaims += reference.claims.length
    if (r.claims.abstained === true) acc.counts.abstained++
    if (r.claims.unread !== undefined) {
      acc.counts.notJudged++
      acc.counts.notJudgedReason ??= r.claims.unread
    }
    countVerdicts(acc.counts.answerVsReference, answer)
    countVerdicts(acc.counts.referenceVsAnswer, reference)
    for (const f of r.failures) {
      if (acc.failures.length < MAX_FAILURES_LISTED) {
        acc.failures.push({
          caseId: r.caseId,
          line: r.line,
          criterion: `${f.criterion} (${f.target})`,
          reason: f.reason,
          raw: f.raw
        })
      }
    }
    // Count the judgments this record holds: extractions, checks and nugget grades.
    acc.ok += judgmentsOf(r) - r.failed
    for (const key of ["input", "output", "cachedInput", "batchInput", "batchOutput", "batchCachedInput"] as const) {
      acc.tokens[key] += r.tokens[key] ?? 0
    }
    if (options.lowest > 0) {
      const list = acc.lowest
      const k = rank(r)
      if (list.length < options.lowest || k < rank(list[list.length - 1]!)) {
        let i = list.length
        while (i > 0 && rank(list[i - 1]!) > k) i--
        list.splice(i, 0, r)
        if (list.length > options.lowest) list.pop()
      }
    }
    return acc
  },
  finish: (accU): CorrectnessSummary => {
    const acc = accU as Acc
    const intervals = acc.boot.intervals()
    return {
      cases: acc.cases,
      judgments: { ok: acc.ok, failed: acc.failed },
      failedCases: acc.failedCases,
      metrics: claimMetricNames.map((name, i) => ({
        name,
        n: acc.stats[i]!.n,
        mean: mean(acc.stats[i]!),
        ci: intervals[i] ?? null
      })),
      claims: acc.counts,
      lowest: acc.lowest,
      failures: acc.failures,
      tokens: compactTokens(acc.tokens)
    }
  },
  metrics: (s) => ({ ...Object.fromEntries(s.metrics.map((m) => [m.name, m.mean])), failed: s.judgments.failed }),
  headline: correctnessHeadline,
  lowScores: (s) => ({ lowest: s.lowest, failures: s.failures })
})

/** Judgments behind a record: two extractions at most, one check per claim and text, one grade per nugget. */
const judgmentsOf = (r: CorrectnessRecord): number => {
  let n = 1 + (r.reference === undefined ? 0 : 1) + (r.claims.nuggets?.length ?? 0)
  for (const list of [r.claims.answer, r.claims.reference]) {
    if (list === undefined || list.status !== "ok") continue
    for (const c of list.claims) n += (c.against === undefined ? 0 : 1) + c.contexts.length
  }
  return n
}
