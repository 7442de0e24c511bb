/**
 * Judge requests and their results. A `Judgment` is what the journal stores, one JSON line each.
 * A failed judgment keeps `score: null` (never 0) with the reason and the judge's raw text.
 */
import type * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { OutputError } from "./Errors.js"
import type { ClaimAgainst } from "./Label.js"
import type { Rubric } from "./Rubric.js"

/**
 * A paid reply that did not decode and is about to be re-asked, journaled first (SPEC §5: at most
 * `--concurrency` paid calls lost to a crash, repairs included). A resume continues from it.
 */
export interface PendingRepair {
  readonly text: string
  readonly problem: string
  /** Tokens paid for every reply so far. */
  readonly usage: Usage
  /** Asks made so far (the first one and its repairs). */
  readonly asks: number
  /** HTTP attempts made so far. */
  readonly attempts: number
}

/** Where a judge keeps its paid replies awaiting repair (the run's journal), and the one a crash left. */
export interface RepairCheckpoint {
  readonly prior?: PendingRepair | undefined
  readonly save: (pending: PendingRepair) => Effect.Effect<void, OutputError>
}

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
  /** Remote judges: where a reply awaiting repair is journaled (absent: kept in memory only). */
  readonly repair?: RepairCheckpoint | undefined
}

/**
 * What a claim check is: claim `index` (1-based) of the answer's or the reference's claims, or
 * nugget `index`, checked against the reference, the answer or the k-th context. A judge reads it
 * here, typed; the item's `target` string (`Targets.ts`) names the same thing in keys and reports.
 */
export interface ClaimRef {
  readonly side: "answer" | "reference" | "nugget"
  readonly index: number
  readonly against: ClaimAgainst
}

/**
 * One item of a listwise task: its target (`hit:<id>`), its own variables (the hit's text) and, for
 * a claim check, what the check is. `claim` is not part of the judgment key (the target says it).
 */
export interface ListItem {
  readonly target: string
  readonly vars: Readonly<Record<string, string>>
  readonly claim?: ClaimRef | undefined
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
  /** As for `JudgeTask`: the list's one call, repaired. */
  readonly repair?: RepairCheckpoint | undefined
  /**
   * The texts of every hit retrieved for the same query (one array shared by its hits): corpus
   * statistics for the heuristic judge's relevance model. Not a template variable — it is not part
   * of the judgment key and LLM judges ignore it.
   */
  readonly pool?: ReadonlyArray<string> | undefined
}

export const Usage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  /**
   * Of `inputTokens`, those the provider served from its prompt cache (OpenAI's
   * `prompt_tokens_details.cached_tokens`, Mistral's equivalent); absent when it reported none.
   */
  cachedInputTokens: Schema.optional(Schema.Number)
})
export type Usage = typeof Usage.Type
export const noUsage: Usage = { inputTokens: 0, outputTokens: 0 }

/**
 * One call's usage shared by `n` judgments: whole tokens, the remainder going to the first ones, so
 * the shares add up to the call's usage exactly (and per-hit figures are the call's divided by n).
 */
export const splitUsage = (usage: Usage, n: number): Array<Usage> => {
  const share = (total: number, i: number) => Math.floor(total / n) + (i < total % n ? 1 : 0)
  const cached = usage.cachedInputTokens
  return Array.from({ length: n }, (_, i) => ({
    inputTokens: share(usage.inputTokens, i),
    outputTokens: share(usage.outputTokens, i),
    ...(cached === undefined ? {} : { cachedInputTokens: share(cached, i) })
  }))
}

/** Two usages added (the cached count only when either has one). */
export const addUsage = (a: Usage, b: Usage): Usage => {
  const cached = a.cachedInputTokens === undefined && b.cachedInputTokens === undefined
    ? undefined
    : (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0)
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(cached === undefined ? {} : { cachedInputTokens: cached })
  }
}

/**
 * Why a failed judgment failed, which decides whether a resume keeps it: `transport` (the server
 * kept failing, timing out or rate-limiting past the budget — infrastructure, asked again on every
 * resume) or `judge` (the judge's answers stayed unusable after repairs, or the provider refused
 * this request — kept; `--retry-failed` asks again).
 */
export const FailureClass = Schema.Literal("transport", "judge")
export type FailureClass = typeof FailureClass.Type

export const Judgment = Schema.Struct({
  key: Schema.String,
  caseId: Schema.String,
  ordinal: Schema.Number,
  iteration: Schema.Number,
  criterion: Schema.String,
  target: Schema.String,
  status: Schema.Literal("ok", "failed"),
  /** Failed judgments only (journals written before it existed lack it: see `failureClass`). */
  failure: Schema.optional(FailureClass),
  score: Schema.NullOr(Schema.Number),
  confidence: Schema.optional(Schema.Number),
  reason: Schema.String,
  /** The text that decided the verdict (a claim check's supporting or contradicting sentence), when the judge gives one. */
  evidence: Schema.optional(Schema.String),
  /**
   * A result that is not a score (a rubric whose output is a list, such as the claims extracted from
   * an answer): what a later round of the same case is built from. Plain JSON.
   */
  value: Schema.optional(Schema.Unknown),
  /** The judge's raw text when it could not be decoded (status failed), for the report. */
  raw: Schema.optional(Schema.String),
  usage: Usage,
  attempts: Schema.Number,
  latencyMs: Schema.Number,
  provider: Schema.String,
  model: Schema.String,
  /** `batch`: made through the provider's Batch API (`--batch`), priced at the batch price. */
  via: Schema.optional(Schema.Literal("batch")),
  /** Journaled from the cache of earlier runs: this run did not pay for it (`--max-cost` counts it as free). */
  fromCache: Schema.optional(Schema.Boolean)
})
export type Judgment = typeof Judgment.Type

/** A journal's line of a paid reply awaiting repair: a `PendingRepair` under its call's first key. */
export const AttemptLine = Schema.Struct({
  key: Schema.String,
  kind: Schema.Literal("attempt"),
  text: Schema.String,
  problem: Schema.String,
  usage: Usage,
  asks: Schema.Number,
  attempts: Schema.Number
})

/** Any line of a judgment journal: a judgment, or a reply awaiting repair. */
export const JournalLine = Schema.Union(AttemptLine, Judgment)

/** A stored judgment's JSON text, decoded; none when it does not decode (a damaged line: judged again). */
export const decodeJudgmentJson = Schema.decodeUnknownOption(Schema.parseJson(Judgment))

const decodeAttemptJson = Schema.decodeUnknownOption(Schema.parseJson(AttemptLine))

/** A stored reply awaiting repair, decoded to what the judge continues from; none when it does not decode. */
export const decodePendingRepairJson = (text: string): PendingRepair | undefined =>
  Option.getOrUndefined(
    Option.map(
      decodeAttemptJson(text),
      (a): PendingRepair => ({ text: a.text, problem: a.problem, usage: a.usage, asks: a.asks, attempts: a.attempts })
    )
  )

/** What a judge returns for a task; the runner adds key, ids and timing to make a `Judgment`. */
export interface Verdict {
  readonly status: "ok" | "failed"
  /** For failed verdicts: whether a resume asks again (`transport`) or keeps it (`judge`). */
  readonly failure?: FailureClass | undefined
  readonly score: number | null
  readonly confidence?: number | undefined
  readonly reason: string
  /** See `Judgment.evidence`. */
  readonly evidence?: string | undefined
  /** See `Judgment.value`. */
  readonly value?: unknown
  readonly raw?: string | undefined
  readonly usage: Usage
  readonly attempts: number
}

/**
 * The failure class of a failed judgment; for lines journaled before the field existed, a provider
 * error (the only transport failure then) is recognised by its reason.
 */
export const failureClass = (j: Pick<Judgment, "status" | "failure" | "reason">): FailureClass | undefined =>
  j.status !== "failed" ? undefined : j.failure ?? (j.reason.startsWith("provider error") ? "transport" : "judge")
