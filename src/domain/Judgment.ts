/**
 * Judge requests and their results. A `Judgment` is what the journal stores, one JSON line each.
 * A failed judgment keeps `score: null` (never 0) with the reason and the judge's raw text.
 */
import * as Schema from "effect/Schema"
import type { Rubric } from "./Rubric.js"

/** One judgment to make: a rubric applied to one target of one case in one iteration. */
export interface JudgeTask {
  readonly pipeline: string
  readonly caseId: string
  readonly ordinal: number
  /** 1-based iteration. */
  readonly iteration: number
  readonly rubric: Rubric
  /** What is judged: `answer`, or `hit:<passage id>` for per-hit relevance. */
  readonly target: string
  /** Template variables (question, answer, passages, hit…), raw; the renderer escapes them as data. */
  readonly vars: Readonly<Record<string, string>>
  /**
   * The texts of every hit retrieved for the same query (one array shared by its hits): corpus
   * statistics for the heuristic judge's relevance model. Not a template variable — it is not part
   * of the judgment key and LLM judges ignore it.
   */
  readonly pool?: ReadonlyArray<string> | undefined
}

/** One item of a listwise task: its target (`hit:<id>`) and its own variables (the hit's text). */
export interface ListItem {
  readonly target: string
  readonly vars: Readonly<Record<string, string>>
}

/**
 * Several targets of one case judged in one call (listwise): a listwise rubric (one with an `item`
 * template) applied to every item in context. The judge returns one verdict per item, in order.
 */
export interface ListJudgeTask {
  readonly pipeline: string
  readonly caseId: string
  readonly ordinal: number
  readonly iteration: number
  readonly rubric: Rubric
  /** Variables shared by the items (the query…). */
  readonly vars: Readonly<Record<string, string>>
  readonly items: ReadonlyArray<ListItem>
  /**
   * The texts of every hit retrieved for the same query (one array shared by its hits): corpus
   * statistics for the heuristic judge's relevance model. Not a template variable — it is not part
   * of the judgment key and LLM judges ignore it.
   */
  readonly pool?: ReadonlyArray<string> | undefined
}

export const Usage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number
})
export type Usage = typeof Usage.Type
export const noUsage: Usage = { inputTokens: 0, outputTokens: 0 }

/**
 * One call's usage shared by `n` judgments: whole tokens, the remainder going to the first ones, so
 * the shares add up to the call's usage exactly (and per-hit figures are the call's divided by n).
 */
export const splitUsage = (usage: Usage, n: number): Array<Usage> => {
  const share = (total: number, i: number) => Math.floor(total / n) + (i < total % n ? 1 : 0)
  return Array.from({ length: n }, (_, i) => ({ inputTokens: share(usage.inputTokens, i), outputTokens: share(usage.outputTokens, i) }))
}

export const Judgment = Schema.Struct({
  key: Schema.String,
  caseId: Schema.String,
  ordinal: Schema.Number,
  iteration: Schema.Number,
  criterion: Schema.String,
  target: Schema.String,
  status: Schema.Literal("ok", "failed"),
  score: Schema.NullOr(Schema.Number),
  confidence: Schema.optional(Schema.Number),
  reason: Schema.String,
  /** The judge's raw text when it could not be decoded (status failed), for the report. */
  raw: Schema.optional(Schema.String),
  usage: Usage,
  attempts: Schema.Number,
  latencyMs: Schema.Number,
  provider: Schema.String,
  model: Schema.String
})
export type Judgment = typeof Judgment.Type

/** What a judge returns for a task; the runner adds key, ids and timing to make a `Judgment`. */
export interface Verdict {
  readonly status: "ok" | "failed"
  readonly score: number | null
  readonly confidence?: number | undefined
  readonly reason: string
  readonly raw?: string | undefined
  readonly usage: Usage
  readonly attempts: number
}
