/**
 * Online folds shared by the retrieval pipelines' aggregate stages: per-metric means that skip
 * unknown values, latency percentiles per span, and token usage per judged hit and per request.
 */
import type { RetrievalInfo } from "../../domain/Case.js"
import { compactTokens, type MutableTokens, noTokens, type Tokens } from "../../pricing/Prices.js"
import { type SpanStats, spanStats } from "../../stats/Latency.js"

// ---------------------------------------------------------------------------------------------
// Means of possibly unknown values

export interface MeanAcc {
  readonly sums: Map<string, { n: number; sum: number }>
}

export const meanInit = (names: ReadonlyArray<string> = []): MeanAcc => ({
  sums: new Map(names.map((n) => [n, { n: 0, sum: 0 }]))
})

/** Adds each known value (null / undefined = unknown, skipped). */
export const meanAdd = (acc: MeanAcc, values: Readonly<Record<string, number | null | undefined>>): MeanAcc => {
  for (const [name, value] of Object.entries(values)) {
    let s = acc.sums.get(name)
    if (s === undefined) acc.sums.set(name, s = { n: 0, sum: 0 })
    if (value !== null && value !== undefined && Number.isFinite(value)) {
      s.n++
      s.sum += value
    }
  }
  return acc
}

export interface Means {
  /** Mean over the values known; null when none was. */
  readonly mean: Readonly<Record<string, number | null>>
  /** How many values each mean is over. */
  readonly n: Readonly<Record<string, number>>
}

export const meanFinish = (acc: MeanAcc): Means => ({
  mean: Object.fromEntries([...acc.sums].map(([k, s]) => [k, s.n === 0 ? null : s.sum / s.n])),
  n: Object.fromEntries([...acc.sums].map(([k, s]) => [k, s.n]))
})

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

export interface TokenAcc {
  input: number
  output: number
  /** The cached and Batch API parts (see `Tokens` in pricing/Prices.ts), when some record has them. */
  parts?: MutableTokens | undefined
  /** Judged hits (ok or failed) whose tokens are counted. */
  hits: number
  /** Requests (queries with at least one judgment). */
  requests: number
}

export interface TokenSummary extends Tokens {
  readonly input: number
  readonly output: number
  readonly perJudgedHit: { readonly input: number; readonly output: number } | null
  readonly perRequest: { readonly input: number; readonly output: number } | null
}

export const tokensInit = (): TokenAcc => ({ input: 0, output: 0, hits: 0, requests: 0 })

export const tokensAdd = (acc: TokenAcc, tokens: Tokens, hits: number): TokenAcc => {
  acc.input += tokens.input
  acc.output += tokens.output
  if (tokens.cachedInput !== undefined || tokens.batchInput !== undefined) {
    const parts = acc.parts ??= noTokens()
    parts.cachedInput += tokens.cachedInput ?? 0
    parts.batchInput += tokens.batchInput ?? 0
    parts.batchOutput += tokens.batchOutput ?? 0
    parts.batchCachedInput += tokens.batchCachedInput ?? 0
  }
  acc.hits += hits
  if (hits > 0) acc.requests++
  return acc
}

export const tokensFinish = (acc: TokenAcc): TokenSummary => ({
  ...(acc.parts === undefined ? {} : compactTokens({ ...acc.parts, input: acc.input, output: acc.output })),
  input: acc.input,
  output: acc.output,
  perJudgedHit: acc.hits === 0 ? null : { input: acc.input / acc.hits, output: acc.output / acc.hits },
  perRequest: acc.requests === 0 ? null : { input: acc.input / acc.requests, output: acc.output / acc.requests }
})
