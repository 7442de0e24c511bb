/**
 * What the retrieval pipelines' own folds share: the failed retrievals, latency percentiles per span,
 * and the judge's tokens per judged hit and per request.
 */
import type { RetrievalInfo } from "../../domain/Case.js"
import * as Metric from "../../domain/Metric.js"
import type { ListedFailure } from "../../engine/Pipeline.js"
import type { Tokens } from "../../pricing/Prices.js"
import { type SpanStats, spanStats } from "../../stats/Latency.js"

// ---------------------------------------------------------------------------------------------
// Retrieval failures

/** A failed retrieval as the summaries list it. */
export interface RetrievalFailure {
  readonly caseId: string
  readonly line: number
  readonly query: string
  readonly message: string
}

/** The queries whose retrieval failed: how many, and the first `MAX_LISTED`. */
export interface RetrievalFailures {
  readonly count: number
  readonly cases: ReadonlyArray<RetrievalFailure>
}

const MAX_LISTED = 50

/** The headline count of failed retrievals (every retrieval pipeline's, under one name). */
export const retrievalFailuresSpec = Metric.count("retrievalFailures", "queries whose retrieval failed (no metrics)")

/** Counts the failed retrievals of the records handed to it, listing the first `MAX_LISTED`. */
export const retrievalFailuresFold = () => {
  let count = 0
  let cases: Array<RetrievalFailure> = []
  return {
    /** What is held (plain data), for `restore`: a resume's snapshot (`Accumulator.save`). */
    save: (): RetrievalFailures => ({ count, cases: [...cases] }),
    restore: (state: RetrievalFailures) => {
      count = state.count
      cases = [...state.cases]
    },
    add: (r: { caseId: string; line: number; query: string; retrieval?: RetrievalInfo | undefined }) => {
      count++
      if (cases.length < MAX_LISTED) {
        cases.push({
          caseId: r.caseId,
          line: r.line,
          query: r.query,
          message: r.retrieval?.error?.message ?? "retrieval failed"
        })
      }
    },
    finish: (): RetrievalFailures => ({ count, cases })
  }
}

/** The failed retrievals as the reports' failure sections list them. */
export const listedRetrievals = (failures: RetrievalFailures): ReadonlyArray<ListedFailure> =>
  failures.cases.map((f) => ({ caseId: f.caseId, line: f.line, query: f.query, reason: f.message }))

// ---------------------------------------------------------------------------------------------
// Latency

/** Span name → statistics over queries, in the order: total, the system's sub-spans, judge. */
export type LatencySummary = Readonly<Record<string, SpanStats>>

/** Latencies are kept per span (one number per query: percentiles need them all). */
export interface LatencyAcc {
  readonly spans: Map<string, Array<number>>
}

export const latencyInit = (): LatencyAcc => ({ spans: new Map() })

export const latencyAdd = (acc: LatencyAcc, latency: Readonly<Record<string, number>>): LatencyAcc => {
  for (const [span, ms] of Object.entries(latency)) {
    if (!Number.isFinite(ms)) continue
    let list = acc.spans.get(span)
    if (list === undefined) acc.spans.set(span, list = [])
    list.push(ms)
  }
  return acc
}

const spanOrder = (name: string) => (name === "total" ? 0 : name === "judge" ? 2 : 1)

export const latencyFinish = (acc: LatencyAcc): LatencySummary => {
  const out: Record<string, SpanStats> = {}
  const names = [...acc.spans.keys()].sort((a, b) => spanOrder(a) - spanOrder(b))
  for (const name of names) {
    const stats = spanStats(acc.spans.get(name) ?? [])
    if (stats !== undefined) out[name] = stats
  }
  return out
}

/**
 * One query's latencies: `total` (the system's end-to-end time: measured around a live call, or the
 * input's total), the system's sub-spans (retrieve, rerank, generate…), and `judge` — the summed
 * time of the query's judge calls, evaluation overhead shown apart — when it had judgments.
 */
export const caseLatency = (retrieval: RetrievalInfo | undefined, judgeMs?: number): Record<string, number> => {
  const out: Record<string, number> = {}
  if (retrieval?.latencyMs !== undefined) out.total = retrieval.latencyMs
  for (const [span, ms] of Object.entries(retrieval?.spans ?? {})) {
    if (span !== "total" && span !== "judge") out[span] = ms
  }
  if (judgeMs !== undefined) out.judge = judgeMs
  return out
}

// ---------------------------------------------------------------------------------------------
// Tokens

/** Hits judged (ok or failed) and requests (queries with at least one judgment). */
export interface JudgedCounts {
  readonly hits: number
  readonly requests: number
}

export interface TokenSummary {
  readonly input: number
  readonly output: number
  readonly perJudgedHit: { readonly input: number; readonly output: number } | null
  readonly perRequest: { readonly input: number; readonly output: number } | null
}

/** The iteration's judge tokens (the engine's count) per judged hit and per request. */
export const tokenSummary = (tokens: Tokens, judged: JudgedCounts): TokenSummary => ({
  input: tokens.input,
  output: tokens.output,
  perJudgedHit: judged.hits === 0 ? null : { input: tokens.input / judged.hits, output: tokens.output / judged.hits },
  perRequest: judged.requests === 0
    ? null
    : { input: tokens.input / judged.requests, output: tokens.output / judged.requests }
})
