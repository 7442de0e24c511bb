/**
 * Stages of the evidence-retrieval pipeline (SPEC §2.5): retrieval measured against gold evidence
 * spans, with no LLM — the judge stage has no tasks (`Stages.noLlm`).
 *
 * Input (JSONL, or JSON): `{ id?, query, gold: ["span", …], chunks: [{ id?, text, score? } | "text",
 * …], latencyMs?, usage? }` — `gold` may also be named `goldEvidence`, `gold_evidence` or
 * `evidence`; `chunks` may be `retrieved`, `hits` or `contexts`. `latencyMs` is the query's
 * end-to-end time or an object of spans (`total`, `retrieve`, `rerank`, `generate`…); `usage` the
 * tokens the system spent on it. With a live retriever (`http`, `bm25`) the chunks come from it.
 *
 * Matching and metrics are `metrics/evidence.ts`: a chunk covers a gold span when the normalised
 * span is a substring of it or their difflib ratio ≥ the fuzzy threshold (default 0.7); Precision@5,
 * EvidenceRecall@3/@10 (micro), PerQueryCoverage@3/@10 (macro), FullCoverageRate@3/@10, MAP, MRR,
 * HitRate@10. The aggregate is an online fold of the same sums `summarizeEvidence` computes. A query
 * whose live retrieval failed is left out of every metric (unknown, not 0) and listed.
 *
 * Cost, when the input reports tokens and a price is set: cost = (input + output tokens) / 1000 ×
 * price per 1K, per query and summed.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { recordOrigin, type RetrievalInfo } from "../../domain/Case.js"
import { InputError } from "../../domain/Errors.js"
import { oneLine } from "../../domain/Markdown.js"
import * as Metric from "../../domain/Metric.js"
import type { MetricSpec } from "../../domain/Metric.js"
import type { AggregateStage, LoadContext, LoadStage, ScoreStage } from "../../engine/Pipeline.js"
import type { PipelineOptions } from "../../engine/PipelineOptions.js"
import { checkColumns } from "../../load/CaseMapping.js"
import type { InputDoc } from "../../load/InputFields.js"
import {
  built,
  decodeFields,
  expecting,
  idText,
  issueDecoder,
  objectWith,
  OptionalId,
  optionalOrNull
} from "../../load/RowSchema.js"
import { defaultFuzzyThreshold } from "../../metrics/difflib.js"
import { coverageMatrix, type EvidenceQueryScores, scoreEvidenceQuery } from "../../metrics/evidence.js"
import {
  firstField,
  type Hit,
  type HitList,
  type HitListDecoder,
  loadHitLists,
  measurementFieldDocs,
  measurementFields,
  measurementNames,
  Query,
  queryFieldDocs,
  retrievalInfo,
  Score
} from "../graded-hits/RetrievalInput.js"
import {
  caseLatency,
  latencyAdd,
  latencyFinish,
  latencyInit,
  type LatencySummary,
  type RetrievalFailures,
  retrievalFailuresFold,
  retrievalFailuresSpec
} from "../graded-hits/RetrievalStats.js"

export const goldNames = ["gold", "goldEvidence", "gold_evidence", "evidence"] as const
export const chunkNames = ["chunks", "retrieved", "hits", "contexts"] as const

/** evidence-retrieval's input, for help (see `InputFields.ts`). */
export const evidenceInput: InputDoc = {
  format: "JSONL or a JSON array, one query each; --columns renames id, question (= query) and fragments (= chunks)",
  fields: [
    ...queryFieldDocs,
    {
      name: "gold",
      required: true,
      holds: "the gold evidence spans, texts (also read as goldEvidence, gold_evidence, evidence)"
    },
    {
      name: "chunks",
      required: true,
      holds:
        "the retrieved chunks in rank order, texts or { id?, text, score? } (also read as retrieved, hits, contexts; not read with --retriever http|bm25)"
    },
    ...measurementFieldDocs("the retrieval")
  ],
  exampleExtension: ".jsonl",
  example: [
    `{"query":"leave?","gold":["25 days"],"chunks":[{"text":"25 days a year"}]}`,
    `{"id":"q2","query":"pay day?","gold":["the 25th"],"chunks":["On the 25th."]}`
  ],
  minimal: `{"query":"leave?","gold":["25 days"],"chunks":["25 days a year"]}\n`
}

export interface EvidenceFields {
  readonly id: string
  readonly query: string
  /** Explicit names (from `--columns`), else the first alias present in each row. */
  readonly gold: ReadonlyArray<string>
  readonly chunks: ReadonlyArray<string>
}

export const fieldsFor = (ctx: LoadContext | undefined): EvidenceFields => ({
  id: ctx?.columns?.id ?? "id",
  query: ctx?.columns?.question ?? "query",
  gold: ctx?.columns?.gold === undefined ? goldNames : [ctx.columns.gold],
  chunks: ctx?.columns?.fragments === undefined ? chunkNames : [ctx.columns.fragments]
})

/** A chunk given as an object: an optional id and score, and its text (`text`, else `content`). */
const ChunkObject = objectWith(
  Schema.Struct({
    id: OptionalId,
    score: Score,
    text: optionalOrNull(Schema.String),
    content: Schema.optionalWith(Schema.Unknown, { exact: true })
  }),
  // `content` is read only when there is no `text`, so a chunk with both keeps whatever `content` holds.
  (c, object): Either.Either<Hit, ParseResult.ParseIssue> => {
    const text = c.text ?? c.content ?? undefined
    if (typeof text === "string") {
      return Either.right({ id: idText(c.id), text, score: c.score ?? undefined, fields: object })
    }
    const field = (c.text === undefined || c.text === null) && text !== undefined ? "content" : "text"
    return Either.left(new ParseResult.Pointer(field, object, new ParseResult.Type(Schema.String.ast, text)))
  }
)

/** A retrieved chunk: a text, or an object with its text. */
export const Chunk = Schema.Union(
  ChunkObject,
  Schema.transform(Schema.String, built<Hit>(), {
    strict: true,
    decode: (text) => ({ id: undefined, text, score: undefined, fields: undefined }),
    encode: (hit) => hit.text
  })
).annotations(expecting("a text or an object"))

const ChunkArray = Schema.Array(Chunk).annotations(expecting("a list of retrieved chunks"))

/** A query with its gold evidence and chunks, under the schema's names (`fieldsFor` and the aliases map them to the row's). */
const evidenceRow = (chunksRequired: boolean) =>
  Schema.Struct({
    id: OptionalId,
    query: Query,
    gold: Schema.Array(Schema.String).annotations(expecting("a list of gold evidence spans (texts)")),
    chunks: chunksRequired ? ChunkArray : optionalOrNull(ChunkArray),
    ...measurementFields
  })

/** The row schemas, with and without the chunks required (a live retriever supplies them). */
export const EvidenceRow = { required: evidenceRow(true), optional: evidenceRow(false) } as const

const decodeRow = {
  required: issueDecoder(EvidenceRow.required),
  optional: issueDecoder(EvidenceRow.optional)
} as const

export interface EvidenceLoadOptions {
  /** Chunks must be present (false when a live retriever supplies them). Default true. */
  readonly chunksRequired?: boolean | undefined
}

/** Decodes a query row into its hit list and gold spans; `gold` and `chunks` under the first alias present. */
export const evidenceDecoder = (f: EvidenceFields, options: EvidenceLoadOptions = {}): HitListDecoder => {
  const decode = (options.chunksRequired ?? true) ? decodeRow.required : decodeRow.optional
  return (values) => {
    const names = {
      id: f.id,
      query: f.query,
      gold: firstField(values, f.gold) ?? f.gold[0]!,
      chunks: firstField(values, f.chunks) ?? f.chunks[0]!,
      ...measurementNames
    }
    return Either.map(decodeFields(decode, names, values), (row): HitList => ({
      id: idText(row.id),
      query: row.query,
      hits: row.chunks ?? [],
      gold: row.gold,
      retrieval: retrievalInfo(row.latencyMs, row.usage)
    }))
  }
}

/** Load stage: queries with gold evidence and (unless retrieved live) their ranked chunks. */
export const loadQueries = (options: EvidenceLoadOptions = {}): LoadStage =>
  loadHitLists({
    describe:
      "evidence queries (JSONL/JSON) { id?, query, gold: [spans], chunks: [{ id?, text, score? }], latencyMs?, usage? }",
    fields: fieldsFor,
    checkColumns: (ctx, columns, f) => {
      const missing = (names: ReadonlyArray<string>, what: string) =>
        names.some((n) => columns.includes(n))
          ? Effect.void
          : Effect.fail(
            new InputError({
              file: ctx.file,
              problem: `no ${what} field (${names.map((n) => `"${n}"`).join(" or ")}); available: ${
                columns.map((c) => `"${c}"`).join(", ") || "none"
              }`
            })
          )
      return checkColumns(ctx.file, columns, { question: f.query }).pipe(
        Effect.zipRight(missing(f.gold, "gold evidence")),
        Effect.zipRight((options.chunksRequired ?? true) ? missing(f.chunks, "retrieved chunks") : Effect.void)
      )
    },
    decoder: (f) => evidenceDecoder(f, options)
  })

// ---------------------------------------------------------------------------------------------
// Settings

export interface EvidenceSettings {
  /** difflib ratio at or above which a chunk covers a span (default 0.7). */
  readonly fuzzyThreshold: number
  /** USD per 1K tokens (input + output) of the system under test; undefined: cost unknown. */
  readonly pricePer1K?: number | undefined
}

export const defaultSettings: EvidenceSettings = { fuzzyThreshold: defaultFuzzyThreshold }

/** Settings from the pipeline's decoded options (their ranges are checked as they are decoded). */
export const settingsFromOptions = (o: Pick<PipelineOptions, "fuzzyThreshold" | "pricePer1k">): EvidenceSettings => ({
  fuzzyThreshold: o.fuzzyThreshold ?? defaultFuzzyThreshold,
  pricePer1K: o.pricePer1k
})

// ---------------------------------------------------------------------------------------------
// Score

export interface EvidenceChunk {
  readonly id: string
  readonly rank: number
  readonly score?: number | undefined
  /** Covers at least one gold span. */
  readonly relevant: boolean
  /** 1-based indices of the gold spans it covers. */
  readonly covers: ReadonlyArray<number>
  /** Start of the text, for reports. */
  readonly excerpt: string
  /** The text (cut at `CHUNK_TEXT_MAX`), for the HTML report's case blocks; absent in older records. */
  readonly text?: string | undefined
}

export type EvidenceScores = Omit<EvidenceQueryScores, "id" | "relevance">

export interface EvidenceRecord {
  readonly caseId: string
  readonly ordinal: number
  readonly line: number
  readonly iteration: number
  readonly query: string
  /** Gold spans and the first rank covering each (null: not covered). */
  readonly gold: ReadonlyArray<{ readonly text: string; readonly firstRank: number | null }>
  readonly chunks: ReadonlyArray<EvidenceChunk>
  /** Null when the retrieval failed. */
  readonly scores: EvidenceScores | null
  readonly retrieval?: RetrievalInfo | undefined
  readonly latency: Readonly<Record<string, number>>
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number } | undefined
  /** USD, when usage and a price are known. */
  readonly cost: number | null
}

/** A chunk's text is kept in its record up to this many characters, for the HTML report's case blocks. */
export const CHUNK_TEXT_MAX = 1000

const keptText = (text: string) => (text.length > CHUNK_TEXT_MAX ? `${text.slice(0, CHUNK_TEXT_MAX - 1)}…` : text)

const excerpt = (text: string) => oneLine(text, 100)

/** cost = (input + output) / 1000 × price per 1K; null when either is unknown. */
export const queryCost = (
  usage: { readonly inputTokens: number; readonly outputTokens: number } | undefined,
  pricePer1K: number | undefined
): number | null =>
  usage === undefined || pricePer1K === undefined
    ? null
    : ((usage.inputTokens + usage.outputTokens) / 1000) * pricePer1K

/**
 * The per-query evidence metrics, under the names of their means (the macro metrics): a query's
 * Precision@5, coverage, full coverage, AP, RR and hit. EvidenceRecall@k is micro (covered spans over
 * all spans of the run), so it has no per-query value of its own.
 */
export const evidenceCaseMetrics: ReadonlyArray<MetricSpec> = [
  Metric.fraction("Precision@5", "chunks covering ≥ 1 gold span in the top 5, / 5"),
  Metric.fraction("PerQueryCoverage@3", "gold spans covered by the top 3 / the query's gold spans"),
  Metric.fraction("PerQueryCoverage@10", "gold spans covered by the top 10 / the query's gold spans"),
  Metric.fraction("FullCoverageRate@3", "1 when every gold span is covered in the top 3"),
  Metric.fraction("FullCoverageRate@10", "1 when every gold span is covered in the top 10"),
  Metric.fraction("MAP", "average precision over all ranks (R = relevant chunks in the list)"),
  Metric.fraction("MRR", "1 / rank of the first relevant chunk (0 if none)"),
  Metric.fraction("HitRate@10", "1 when a relevant chunk is in the top 10")
]

const caseValues = (s: EvidenceScores | null): Record<string, number | null> => ({
  "Precision@5": s?.precisionAt5 ?? null,
  "PerQueryCoverage@3": s?.coverageAt3 ?? null,
  "PerQueryCoverage@10": s?.coverageAt10 ?? null,
  "FullCoverageRate@3": s?.fullCoverageAt3 ?? null,
  "FullCoverageRate@10": s?.fullCoverageAt10 ?? null,
  MAP: s?.averagePrecision ?? null,
  MRR: s?.reciprocalRank ?? null,
  "HitRate@10": s?.hitAt10 ?? null
})

export const evidenceScore = (settings: EvidenceSettings = defaultSettings): ScoreStage<EvidenceRecord> => ({
  perCase: {
    declared: () => evidenceCaseMetrics,
    of: (r) => ({
      caseId: r.caseId,
      line: r.line,
      metrics: caseValues(r.scores),
      failed: r.scores === null
    }),
    // The worst queries: lowest coverage in the top 10, then the latest first relevant chunk.
    rank: { by: ["PerQueryCoverage@10", "MRR"] }
  },
  score: (c, _judgments, iteration) => {
    const gold = c.gold ?? []
    const failed = c.retrieval?.status === "failed"
    const matrix = coverageMatrix({ id: c.id, gold, chunks: c.passages.map((p) => p.text) }, {
      fuzzyThreshold: settings.fuzzyThreshold
    })
    const { id: _id, relevance: _relevance, ...scores } = scoreEvidenceQuery(c.id, gold.length, matrix)
    const usage = c.retrieval?.usage
    return {
      ...recordOrigin(c, iteration),
      query: c.question,
      gold: gold.map((text, j) => {
        const i = matrix.findIndex((row) => row[j] === true)
        return { text, firstRank: i === -1 ? null : c.passages[i]!.rank }
      }),
      chunks: c.passages.map((p, i): EvidenceChunk => {
        const covers = (matrix[i] ?? []).flatMap((cell, j) => (cell ? [j + 1] : []))
        return {
          id: p.id,
          rank: p.rank,
          ...(p.score === undefined ? {} : { score: p.score }),
          relevant: covers.length > 0,
          covers,
          excerpt: excerpt(p.text),
          text: keptText(p.text)
        }
      }),
      scores: failed ? null : scores,
      ...(c.retrieval === undefined ? {} : { retrieval: c.retrieval }),
      latency: caseLatency(c.retrieval),
      ...(usage === undefined ? {} : { usage }),
      cost: queryCost(usage, settings.pricePer1K)
    }
  }
})

// ---------------------------------------------------------------------------------------------
// Aggregate

/**
 * What evidence-retrieval folds of its own, beside the engine's fold (each per-query metric's mean —
 * the macro metrics — with its interval, the lowest and failed queries): the micro EvidenceRecall@k
 * (covered spans over all spans of the run, which no per-query value gives), the queries without
 * gold, the failed retrievals, what the parameters pruned, latency per span and the retrieval's cost.
 */
export interface EvidenceRunSummary {
  /** Queries the metrics are over (retrieval ok). */
  readonly queries: number
  readonly goldSpans: number
  /** Gold spans covered by the top 3 and the top 10, over every query. */
  readonly coveredAt3: number
  readonly coveredAt10: number
  readonly fuzzyThreshold: number
  readonly withoutGold: { readonly count: number; readonly ids: ReadonlyArray<string> }
  readonly retrievalFailures: RetrievalFailures
  readonly chunks: { readonly kept: number; readonly belowThreshold: number; readonly beyondTopK: number }
  readonly latency: LatencySummary
  readonly cost: {
    /** Queries whose input reported token usage. */
    readonly queriesWithUsage: number
    readonly inputTokens: number
    readonly outputTokens: number
    readonly pricePer1K: number | null
    readonly totalUsd: number | null
    /** Total / queries with usage. */
    readonly perQueryUsd: number | null
  }
}

const MAX_LISTED = 50

/** EvidenceRecall@k (micro): covered spans / all gold spans of the run; 0 without gold spans. */
export const evidenceRecall = (x: EvidenceRunSummary) => ({
  "EvidenceRecall@3": x.goldSpans === 0 ? 0 : x.coveredAt3 / x.goldSpans,
  "EvidenceRecall@10": x.goldSpans === 0 ? 0 : x.coveredAt10 / x.goldSpans
})

export const evidenceSummary = (
  settings: EvidenceSettings = defaultSettings
): AggregateStage<EvidenceRecord, EvidenceRunSummary> => ({
  start: () => {
    const failures = retrievalFailuresFold()
    const init = () => ({
      latency: latencyInit(),
      withoutGoldIds: [] as Array<string>,
      queries: 0,
      spans: 0,
      covered3: 0,
      covered10: 0,
      withoutGold: 0,
      kept: 0,
      belowThreshold: 0,
      beyondTopK: 0,
      withUsage: 0,
      input: 0,
      output: 0,
      usd: 0,
      priced: 0
    })
    let a = init()
    return {
      add: (r) => {
        latencyAdd(a.latency, r.latency)
        if (r.usage !== undefined) {
          a.withUsage++
          a.input += r.usage.inputTokens
          a.output += r.usage.outputTokens
        }
        if (r.cost !== null) {
          a.usd += r.cost
          a.priced++
        }
        const s = r.scores
        if (s === null) {
          failures.add(r)
          return
        }
        a.queries++
        a.kept += r.chunks.length
        a.belowThreshold += r.retrieval?.belowThreshold ?? 0
        a.beyondTopK += r.retrieval?.beyondTopK ?? 0
        a.spans += s.goldSpans
        a.covered3 += s.coveredAt3
        a.covered10 += s.coveredAt10
        if (s.goldSpans === 0) {
          a.withoutGold++
          if (a.withoutGoldIds.length < MAX_LISTED) a.withoutGoldIds.push(r.caseId)
        }
      },
      save: () => structuredClone({ own: a, failures: failures.save() }),
      restore: (state) => {
        const saved = structuredClone(state) as { own: ReturnType<typeof init>; failures: RetrievalFailures }
        failures.restore(saved.failures)
        a = saved.own
      },
      finish: () => ({
        queries: a.queries,
        goldSpans: a.spans,
        coveredAt3: a.covered3,
        coveredAt10: a.covered10,
        fuzzyThreshold: settings.fuzzyThreshold,
        withoutGold: { count: a.withoutGold, ids: a.withoutGoldIds },
        retrievalFailures: failures.finish(),
        chunks: { kept: a.kept, belowThreshold: a.belowThreshold, beyondTopK: a.beyondTopK },
        latency: latencyFinish(a.latency),
        cost: {
          queriesWithUsage: a.withUsage,
          inputTokens: a.input,
          outputTokens: a.output,
          pricePer1K: settings.pricePer1K ?? null,
          totalUsd: a.priced === 0 ? null : a.usd,
          perQueryUsd: a.priced === 0 ? null : a.usd / a.priced
        }
      })
    }
  },
  metrics: (x) => ({
    ...evidenceRecall(x),
    retrievalFailures: x.retrievalFailures.count,
    ...(x.cost.totalUsd === null ? {} : { costUsd: x.cost.totalUsd })
  }),
  headline: () => [
    Metric.fraction("EvidenceRecall@3", "gold spans covered by the top 3 / all gold spans of the run (micro)"),
    Metric.fraction("EvidenceRecall@10", "gold spans covered by the top 10 / all gold spans of the run (micro)"),
    retrievalFailuresSpec,
    Metric.usd("costUsd", "the queries' retrieval cost, from their reported tokens (when priced)")
  ],
  lowScores: (x) => ({ withoutGold: x.withoutGold, retrievalFailures: x.retrievalFailures })
})
