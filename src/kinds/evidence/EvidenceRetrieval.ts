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
import type { EvalCase, RetrievalInfo } from "../../domain/Case.js"
import { InputError } from "../../domain/Errors.js"
import * as Metric from "../../domain/Metric.js"
import type { MetricSpec } from "../../domain/Metric.js"
import type { AggregateStage, LoadContext, LoadStage, ScoreStage } from "../../engine/Pipeline.js"
import type { PipelineOptions } from "../../engine/PipelineOptions.js"
import { checkColumns } from "../../load/CaseMapping.js"
import type { InputDoc } from "../../load/InputFields.js"
import type { Row } from "../../load/Rows.js"
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
import {
  coverageMatrix,
  type EvidenceMetrics,
  type EvidenceQueryScores,
  scoreEvidenceQuery
} from "../../metrics/evidence.js"
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
  Score,
  toHitListCase
} from "../graded-hits/RetrievalInput.js"
import {
  caseLatency,
  latencyAdd,
  latencyFinish,
  latencyInit,
  type LatencySummary
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

export const toEvidenceCase = (
  row: Row,
  ordinal: number,
  file: string,
  f: EvidenceFields,
  options: EvidenceLoadOptions = {}
): Effect.Effect<EvalCase, InputError> => toHitListCase(row, ordinal, file, evidenceDecoder(f, options))

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

const excerpt = (text: string) => {
  const one = text.replace(/\s+/g, " ").trim()
  return one.length > 100 ? `${one.slice(0, 99)}…` : one
}

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
    })
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
      caseId: c.id,
      ordinal: c.ordinal,
      line: c.line,
      iteration,
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

export interface EvidenceRunSummary {
  /** Queries in the input (evaluated + failed retrievals). */
  readonly cases: number
  /** Queries the metrics are over. */
  readonly queries: number
  readonly metrics: EvidenceMetrics
  readonly goldSpans: number
  readonly fuzzyThreshold: number
  readonly withoutGold: { readonly count: number; readonly ids: ReadonlyArray<string> }
  readonly retrievalFailures: {
    readonly count: number
    readonly cases: ReadonlyArray<
      { readonly caseId: string; readonly line: number; readonly query: string; readonly message: string }
    >
  }
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
  /** Worst queries by PerQueryCoverage@10 (bounded), lowest first. */
  readonly lowest: ReadonlyArray<
    { readonly caseId: string; readonly query: string; readonly coverageAt10: number; readonly reciprocalRank: number }
  >
  /** Judgments are never made here; kept for the shared report helpers. */
  readonly judgments: { readonly ok: number; readonly failed: number }
  readonly tokens: { readonly input: number; readonly output: number }
}

const MAX_LISTED = 50

interface Acc {
  cases: number
  queries: number
  spans: number
  covered3: number
  covered10: number
  sums: {
    p5: number
    cov3: number
    cov10: number
    full3: number
    full10: number
    ap: number
    rr: number
    hit10: number
  }
  withoutGold: number
  withoutGoldIds: Array<string>
  failures: number
  failureList: Array<EvidenceRunSummary["retrievalFailures"]["cases"][number]>
  kept: number
  belowThreshold: number
  beyondTopK: number
  latency: ReturnType<typeof latencyInit>
  withUsage: number
  input: number
  output: number
  usd: number
  priced: number
  lowest: Array<EvidenceRunSummary["lowest"][number]>
}

export const evidenceSummary = (
  settings: EvidenceSettings = defaultSettings,
  options: { readonly lowest?: number } = {}
): AggregateStage<EvidenceRecord, EvidenceRunSummary> => {
  const keep = options.lowest ?? 10
  return {
    init: (): Acc => ({
      cases: 0,
      queries: 0,
      spans: 0,
      covered3: 0,
      covered10: 0,
      sums: { p5: 0, cov3: 0, cov10: 0, full3: 0, full10: 0, ap: 0, rr: 0, hit10: 0 },
      withoutGold: 0,
      withoutGoldIds: [],
      failures: 0,
      failureList: [],
      kept: 0,
      belowThreshold: 0,
      beyondTopK: 0,
      latency: latencyInit(),
      withUsage: 0,
      input: 0,
      output: 0,
      usd: 0,
      priced: 0,
      lowest: []
    }),
    add: (accU, r) => {
      const acc = accU as Acc
      acc.cases++
      acc.latency = latencyAdd(acc.latency, r.latency)
      if (r.usage !== undefined) {
        acc.withUsage++
        acc.input += r.usage.inputTokens
        acc.output += r.usage.outputTokens
      }
      if (r.cost !== null) {
        acc.usd += r.cost
        acc.priced++
      }
      const s = r.scores
      if (s === null) {
        acc.failures++
        if (acc.failureList.length < MAX_LISTED) {
          acc.failureList.push({
            caseId: r.caseId,
            line: r.line,
            query: r.query,
            message: r.retrieval?.error?.message ?? "retrieval failed"
          })
        }
        return acc
      }
      acc.queries++
      acc.kept += r.chunks.length
      acc.belowThreshold += r.retrieval?.belowThreshold ?? 0
      acc.beyondTopK += r.retrieval?.beyondTopK ?? 0
      acc.spans += s.goldSpans
      acc.covered3 += s.coveredAt3
      acc.covered10 += s.coveredAt10
      acc.sums.p5 += s.precisionAt5
      acc.sums.cov3 += s.coverageAt3
      acc.sums.cov10 += s.coverageAt10
      acc.sums.full3 += s.fullCoverageAt3
      acc.sums.full10 += s.fullCoverageAt10
      acc.sums.ap += s.averagePrecision
      acc.sums.rr += s.reciprocalRank
      acc.sums.hit10 += s.hitAt10
      if (s.goldSpans === 0) {
        acc.withoutGold++
        if (acc.withoutGoldIds.length < MAX_LISTED) acc.withoutGoldIds.push(r.caseId)
      }
      if (keep > 0) {
        const entry = {
          caseId: r.caseId,
          query: r.query,
          coverageAt10: s.coverageAt10,
          reciprocalRank: s.reciprocalRank
        }
        const worse = (a: typeof entry, b: typeof entry) =>
          a.coverageAt10 < b.coverageAt10 || (a.coverageAt10 === b.coverageAt10 && a.reciprocalRank < b.reciprocalRank)
        const list = acc.lowest
        if (list.length < keep || worse(entry, list[list.length - 1]!)) {
          let i = list.length
          while (i > 0 && worse(entry, list[i - 1]!)) i--
          list.splice(i, 0, entry)
          if (list.length > keep) list.pop()
        }
      }
      return acc
    },
    metrics: (s) => ({
      ...s.metrics,
      retrievalFailures: s.retrievalFailures.count,
      ...(s.cost.totalUsd === null ? {} : { costUsd: s.cost.totalUsd })
    }),
    headline: () => [
      ...evidenceCaseMetrics.map((m) => ({ ...m, description: `mean over the queries: ${m.description}` })),
      Metric.fraction("EvidenceRecall@3", "gold spans covered by the top 3 / all gold spans of the run (micro)"),
      Metric.fraction("EvidenceRecall@10", "gold spans covered by the top 10 / all gold spans of the run (micro)"),
      Metric.count("retrievalFailures", "queries whose retrieval failed (no metrics)"),
      Metric.usd("costUsd", "the queries' retrieval cost, from their reported tokens (when priced)")
    ],
    lowScores: (s) => ({ lowest: s.lowest, withoutGold: s.withoutGold, retrievalFailures: s.retrievalFailures }),
    finish: (accU): EvidenceRunSummary => {
      const acc = accU as Acc
      const macro = (sum: number) => (acc.queries === 0 ? 0 : sum / acc.queries)
      const micro = (covered: number) => (acc.spans === 0 ? 0 : covered / acc.spans)
      return {
        cases: acc.cases,
        queries: acc.queries,
        metrics: {
          "Precision@5": macro(acc.sums.p5),
          "EvidenceRecall@3": micro(acc.covered3),
          "EvidenceRecall@10": micro(acc.covered10),
          "PerQueryCoverage@3": macro(acc.sums.cov3),
          "PerQueryCoverage@10": macro(acc.sums.cov10),
          "FullCoverageRate@3": macro(acc.sums.full3),
          "FullCoverageRate@10": macro(acc.sums.full10),
          MAP: macro(acc.sums.ap),
          MRR: macro(acc.sums.rr),
          "HitRate@10": macro(acc.sums.hit10)
        },
        goldSpans: acc.spans,
        fuzzyThreshold: settings.fuzzyThreshold,
        withoutGold: { count: acc.withoutGold, ids: acc.withoutGoldIds },
        retrievalFailures: { count: acc.failures, cases: acc.failureList },
        chunks: { kept: acc.kept, belowThreshold: acc.belowThreshold, beyondTopK: acc.beyondTopK },
        latency: latencyFinish(acc.latency),
        cost: {
          queriesWithUsage: acc.withUsage,
          inputTokens: acc.input,
          outputTokens: acc.output,
          pricePer1K: settings.pricePer1K ?? null,
          totalUsd: acc.priced === 0 ? null : acc.usd,
          perQueryUsd: acc.priced === 0 ? null : acc.usd / acc.priced
        },
        lowest: acc.lowest,
        judgments: { ok: 0, failed: 0 },
        tokens: { input: 0, output: 0 }
      }
    }
  }
}
