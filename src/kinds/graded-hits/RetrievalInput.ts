/**
 * What the retrieval kinds' test sets share, and the one loader of hit lists that course-retrieval,
 * search-relevance and evidence-retrieval use: each kind declares its row schema and turns a
 * decoded row into a `HitList`; this module makes the case of it (ids, ranks, passages, the
 * system's measurements) and the load stage around it.
 *
 * Shared fields: the query given as text or as `{ inputs: { text } }` (the search API's shape), a
 * hit's optional retriever `score`, and the system's per-query latency and token usage when the
 * input carries them. Latency (`latencyMs`): a number (the end-to-end time, ms) or an object of
 * numbers — `total` and any sub-spans (`retrieve`, `rerank`, `generate`…). Usage (`usage`):
 * `{ inputTokens, outputTokens }`, OpenAI's `{ prompt_tokens, completion_tokens }` or
 * `{ input_tokens, output_tokens }`.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { EvalCase, Passage, RetrievalInfo } from "../../domain/Case.js"
import type { InputError } from "../../domain/Errors.js"
import type { LoadContext, LoadStage } from "../../engine/Pipeline.js"
import type { InputField } from "../../load/InputFields.js"
import { readRows, type Row } from "../../load/Rows.js"
import { expecting, optionalOrNull, requiredText, rowError, type RowProblem } from "../../load/RowSchema.js"
import { uniqueIds } from "../../retrieval/Params.js"

// ---------------------------------------------------------------------------------------------
// Shared fields

/** The query: text, or `{ inputs: { text } }`; trimmed, not blank. */
export const Query = Schema.compose(
  Schema.transform(
    Schema.Union(
      Schema.String,
      Schema.Struct({ inputs: Schema.Struct({ text: Schema.String }).annotations(expecting("{ \"text\": … }")) })
    ).annotations(expecting("the query as text or { \"inputs\": { \"text\": … } }")),
    Schema.String,
    { strict: true, decode: (q) => (typeof q === "string" ? q : q.inputs.text), encode: (text) => text }
  ),
  requiredText("query")
)

/** A hit's retriever score (for the score threshold): a number; null or absent is none. */
export const Score = optionalOrNull(Schema.Finite)

const atLeastZero = (what: string) =>
  Schema.Number.pipe(Schema.filter((n) => (Number.isFinite(n) && n >= 0) || `expected ${what} ≥ 0, found ${n}`))
    .annotations(
      expecting(`${what} (a number ≥ 0)`)
    )

const Millis = atLeastZero("milliseconds")

/** `latencyMs`: the query's end-to-end milliseconds, or an object of spans (`total`, `retrieve`…). */
const LatencyValue = Schema.Union(Millis, Schema.Record({ key: Schema.String, value: Millis })).annotations(
  expecting("milliseconds (a number) or an object of spans")
)

export const Latency = optionalOrNull(LatencyValue)

const tokens = optionalOrNull(atLeastZero("a token count"))

/** `usage`: the tokens the system spent on the query, under any of the usual names. */
const UsageValue = Schema.Struct({
  inputTokens: tokens,
  outputTokens: tokens,
  prompt_tokens: tokens,
  completion_tokens: tokens,
  input_tokens: tokens,
  output_tokens: tokens
}).annotations(expecting("{ inputTokens, outputTokens }"))

export const Usage = optionalOrNull(UsageValue)

/** The measurement fields of a row, for a kind's row schema. */
export const measurementFields = { latencyMs: Latency, usage: Usage } as const

/** Their names in the row (fixed: `--columns` does not rename them). */
export const measurementNames = { latencyMs: "latencyMs", usage: "usage" } as const

/** The help of the fields every query row has: its id and query. */
export const queryFieldDocs: ReadonlyArray<InputField> = [
  { name: "id", required: false, holds: "the query's id (without it, queries are numbered)" },
  { name: "query", required: true, holds: "the query: a text, or { inputs: { text } }" }
]

/** The help of the measurement fields (`measurementFields`); `what` is what was measured ("the search"). */
export const measurementFieldDocs = (what: string): ReadonlyArray<InputField> => [
  { name: measurementNames.latencyMs, required: false, holds: `${what}'s time in ms, or { span: ms }` },
  { name: measurementNames.usage, required: false, holds: `{ inputTokens, outputTokens } ${what} spent` }
]

/** The system's latency and usage for the query, as a `RetrievalInfo` of the precomputed retriever. */
export const retrievalInfo = (
  latency: typeof LatencyValue.Type | null | undefined,
  usage: typeof UsageValue.Type | null | undefined
): RetrievalInfo | undefined => {
  let latencyMs: number | undefined
  let spans: Record<string, number> | undefined
  if (typeof latency === "number") {
    latencyMs = latency
  } else if (latency !== undefined && latency !== null) {
    for (const [span, ms] of Object.entries(latency)) {
      if (span === "total") latencyMs = ms
      else (spans ??= {})[span] = ms
    }
  }
  const tokens = usage === undefined || usage === null ? undefined : {
    inputTokens: usage.inputTokens ?? usage.prompt_tokens ?? usage.input_tokens ?? 0,
    outputTokens: usage.outputTokens ?? usage.completion_tokens ?? usage.output_tokens ?? 0
  }
  if (latencyMs === undefined && spans === undefined && tokens === undefined) return undefined
  return {
    retriever: "precomputed",
    status: "ok",
    ...(latencyMs === undefined ? {} : { latencyMs }),
    ...(spans === undefined ? {} : { spans }),
    ...(tokens === undefined ? {} : { usage: tokens })
  }
}

/** The first of `names` present in the row (aliases of one field). */
export const firstField = (
  values: Readonly<Record<string, unknown>>,
  names: ReadonlyArray<string>
): string | undefined => names.find((n) => Object.hasOwn(values, n) && values[n] !== undefined)

// ---------------------------------------------------------------------------------------------
// Rows → cases

/** One hit of a row, decoded: the case makes it a passage. */
export interface Hit {
  readonly id: string | undefined
  readonly text: string
  readonly score: number | undefined
  /** The hit's fields as the passage keeps them (reports, live field choice). */
  readonly fields: Readonly<Record<string, unknown>> | undefined
}

/** A retrieval row decoded by its kind. */
export interface HitList {
  readonly id: string | undefined
  readonly query: string
  /** Empty when the row has none (a live retriever supplies them). */
  readonly hits: ReadonlyArray<Hit>
  readonly gold?: ReadonlyArray<string> | undefined
  readonly retrieval: RetrievalInfo | undefined
}

/** A kind's decoding of one row's values; a problem's path starts with the row's field name. */
export type HitListDecoder = (values: Readonly<Record<string, unknown>>) => Either.Either<HitList, RowProblem>

/**
 * The case of a decoded row: its id (else its 1-based position), its hits as ranked passages with
 * unique ids (a hit without an id is numbered by rank; repeats get `~2`, `~3`), and its measurements.
 */
export const hitListCase = (row: Row, ordinal: number, list: HitList): EvalCase => {
  const ids = uniqueIds(list.hits.map((h) => h.id))
  return {
    id: list.id ?? String(ordinal + 1),
    ordinal,
    line: row.line,
    question: list.query,
    passages: list.hits.map((h, i): Passage => ({
      id: ids[i]!,
      rank: i + 1,
      text: h.text,
      ...(h.score === undefined ? {} : { score: h.score }),
      ...(h.fields === undefined ? {} : { fields: h.fields })
    })),
    ...(list.gold === undefined ? {} : { gold: list.gold }),
    source: row.values,
    ...(list.retrieval === undefined ? {} : { retrieval: list.retrieval })
  }
}

/** The case for one row, or the input error naming the file, the line and the field. */
export const toHitListCase = (
  row: Row,
  ordinal: number,
  file: string,
  decode: HitListDecoder
): Effect.Effect<EvalCase, InputError> =>
  Effect.suspend(() =>
    Either.match(decode(row.values), {
      onLeft: (problem) => Effect.fail(rowError(file, row, problem)),
      onRight: (list) => Effect.succeed(hitListCase(row, ordinal, list))
    })
  )

/** A retrieval kind's load stage: its field names for a run, its column check and its row decoder. */
export interface HitListLoad<F> {
  readonly describe: string
  readonly fields: (ctx: LoadContext) => F
  readonly checkColumns: (
    ctx: LoadContext,
    columns: ReadonlyArray<string>,
    fields: F
  ) => Effect.Effect<void, InputError>
  readonly decoder: (fields: F) => HitListDecoder
}

/** The load stage of a retrieval kind: every row of the file decoded into its case, in order. */
export const loadHitLists = <F>(load: HitListLoad<F>): LoadStage => ({
  describe: load.describe,
  checkColumns: (ctx, columns) => load.checkColumns(ctx, columns, load.fields(ctx)),
  cases: (ctx) => {
    const decode = load.decoder(load.fields(ctx))
    return readRows(ctx.file).pipe(
      Stream.zipWithIndex,
      Stream.mapEffect(([row, i]) => toHitListCase(row, i, ctx.file, decode))
    )
  }
})
