/**
 * Stages of the search-relevance pipeline (SPEC §2.4): a query and its ranked hits → one checklist
 * judgment per hit (grade 0–3, confidence 1–5, justification) → NDCG / MAP / MRR per query.
 *
 * Input (JSONL, or JSON): `{ id?, query: "…" | { inputs: { text } }, hits: [{ id, text, … }],
 * eval?: { fields: [...] } }` — the HTTP API's request body, one per line. `eval.fields` (or the
 * pipeline's default fields) chooses which fields of each hit the judge reads; one field is shown as
 * its value, several as `field: value` lines. Without any, the hit's `text` is used, or else every
 * field but `id` and `score`. A hit may carry the retriever's `score` (for the score threshold).
 *
 * Per query (grades g_i in rank order; relevant ⇔ g_i ≥ 2, the top two grades):
 *   NDCG    = DCG / IDCG, exponential gain: DCG = Σ_i (2^g_i − 1) / log2(i + 1), over the whole list;
 *             IDCG from the judged grades sorted descending (proxy); IDCG = 0 → 0, flagged
 *   NDCG@10 = the same cut at 10
 *   AP      = Σ_k P@k · rel(k) / R, R = relevant hits found in the list (proxy: no gold) → MAP
 *   RR      = 1 / rank of the first relevant hit, 0 if none → MRR
 * A failed judgment makes the query's metrics unknown; a query without hits scores 0 (NDCG flagged).
 */
import * as Either from "effect/Either"
import { isRecord } from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { Passage } from "../../domain/Case.js"
import { oneLine } from "../../domain/Markdown.js"
import type { MetricSpec } from "../../domain/Metric.js"
import type { AggregateStage, JudgeStage, LoadContext, LoadStage, ScoreStage } from "../../engine/Pipeline.js"
import { checkColumns } from "../../load/CaseMapping.js"
import type { InputDoc } from "../../load/InputFields.js"
import {
  decodeFields,
  expecting,
  idText,
  issueDecoder,
  objectWith,
  OptionalId,
  optionalOrNull,
  type RowProblem
} from "../../load/RowSchema.js"
import { declare, measure, type RankingMetric } from "../../metrics/registry.js"
import { judgedRelevantAt } from "../../metrics/relevance.js"
import {
  type GradedRecord,
  gradedScore,
  type GradedSummary,
  gradedSummary,
  judgeHits,
  type QueryMetrics
} from "../graded-hits/GradedHits.js"
import {
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

export const defaultRubric = "search-relevance/checklist"

export const searchFields = { id: "id", query: "query", hits: "hits" } as const

/** search-relevance's input, for help (see `InputFields.ts`). */
export const searchInput: InputDoc = {
  format:
    "JSONL or a JSON array, one search request each (the HTTP API's body); --columns renames id, question (= query) and fragments (= hits)",
  fields: [
    ...queryFieldDocs,
    {
      name: "hits",
      required: true,
      holds: "the ranked hits, { id?, text (or other fields), score? } (not read with --retriever http|bm25)"
    },
    { name: "eval", required: false, holds: "{ fields: [...] }: the hit fields the judge reads (default: text)" },
    ...measurementFieldDocs("the search")
  ],
  exampleExtension: ".jsonl",
  example: [
    `{"query":"heat pump","hits":[{"id":"d1","text":"A heat pump moves heat."}]}`,
    `{"id":"q2","query":"tea","hits":[{"t":"Tea"}],"eval":{"fields":["t"]}}`
  ],
  minimal: `{"query":"tea","hits":[{"text":"Tea is a drink."}]}\n`
}

export interface SearchFields {
  readonly id: string
  readonly query: string
  readonly hits: string
}

export const fieldsFor = (ctx: LoadContext | undefined): SearchFields => ({
  id: ctx?.columns?.id ?? searchFields.id,
  query: ctx?.columns?.question ?? searchFields.query,
  hits: ctx?.columns?.fragments ?? searchFields.hits
})

const valueText = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v))

/** Fields that are never the hit's content. */
const META = new Set(["id", "_id", "score", "_score"])

/**
 * The text the judge reads for a hit: the chosen fields (one: its value; several: `field: value`
 * lines); without a choice, `text`, else every non-meta field. Undefined when none of the chosen
 * fields is present.
 */
export const hitText = (
  hit: Readonly<Record<string, unknown>>,
  fields: ReadonlyArray<string> | undefined
): string | undefined => {
  const chosen = fields ?? (typeof hit.text === "string" ? ["text"] : Object.keys(hit).filter((k) => !META.has(k)))
  const present = chosen.filter((f) => hit[f] !== undefined && hit[f] !== null)
  if (present.length === 0) return undefined
  if (present.length === 1 && (fields === undefined || fields.length === 1)) return valueText(hit[present[0]!])
  return present.map((f) => `${f}: ${valueText(hit[f])}`).join("\n")
}

/** A case's `eval.fields`, when it has valid ones. */
export const caseFields = (source: Readonly<Record<string, unknown>>): ReadonlyArray<string> | undefined => {
  const evalOptions = source.eval
  if (!isRecord(evalOptions) || !Array.isArray(evalOptions.fields)) return undefined
  const fields = evalOptions.fields.filter((f): f is string => typeof f === "string" && f !== "")
  return fields.length === 0 ? undefined : fields
}

/** `eval`: the hit fields the judge reads for this query. */
const EvalOptions = Schema.Struct({
  fields: Schema.optionalWith(
    Schema.Array(Schema.String.pipe(Schema.filter((f) => f !== "" || "a field name is empty"))).annotations(
      expecting("a list of field names")
    ),
    { exact: true }
  )
}).annotations(expecting("{ \"fields\": [...] }"))

/** A hit: an object with an optional id and retriever score; the object itself is kept as its fields. */
export const SearchHit = objectWith(
  Schema.Struct({ id: OptionalId, score: Score }),
  (hit, object) => Either.right({ id: idText(hit.id), score: hit.score ?? undefined, object })
).annotations(expecting("a hit (an object)"))

const HitArray = Schema.Array(SearchHit).annotations(expecting("a list of hits"))

/** A search request under the schema's names (`fieldsFor` maps them to the row's). */
const searchRow = (hitsRequired: boolean) =>
  Schema.Struct({
    id: OptionalId,
    query: Query,
    eval: optionalOrNull(EvalOptions),
    hits: hitsRequired ? HitArray : optionalOrNull(HitArray),
    ...measurementFields
  })

/** The row schemas, with and without the hits required (a live retriever supplies them). */
export const SearchRow = { required: searchRow(true), optional: searchRow(false) } as const

const decodeRow = { required: issueDecoder(SearchRow.required), optional: issueDecoder(SearchRow.optional) } as const

export interface SearchLoadOptions {
  /** Hits must be present (false when a live retriever supplies them). Default true. */
  readonly hitsRequired?: boolean | undefined
  /** Default hit fields for the judge when a case has no `eval.fields`. */
  readonly fields?: ReadonlyArray<string> | undefined
}

/**
 * Decodes a search request into its hit list; a hit's text is its chosen fields (`hitText`), and a
 * hit with none of them is a problem of that hit.
 */
export const searchDecoder = (f: SearchFields, options: SearchLoadOptions = {}): HitListDecoder => {
  const decode = (options.hitsRequired ?? true) ? decodeRow.required : decodeRow.optional
  const names = { id: f.id, query: f.query, eval: "eval", hits: f.hits, ...measurementNames }
  return (values) =>
    Either.flatMap(decodeFields(decode, names, values), (row): Either.Either<HitList, RowProblem> => {
      const chosen = row.eval?.fields
      const fields = (chosen === undefined || chosen.length === 0 ? undefined : chosen) ?? options.fields
      const hits: Array<Hit> = []
      for (const [i, { id, score, object }] of (row.hits ?? []).entries()) {
        const text = hitText(object, fields)
        if (text === undefined) {
          const problem = fields === undefined
            ? "the hit has no text"
            : `the hit has none of the fields ${fields.map((x) => `"${x}"`).join(", ")}`
          return Either.left({ path: [f.hits, i], problem })
        }
        hits.push({ id, text, score, fields: object })
      }
      return Either.right({
        id: idText(row.id),
        query: row.query,
        hits,
        retrieval: retrievalInfo(row.latencyMs, row.usage)
      })
    })
}

/** Load stage: search requests (JSONL or JSON), one query with its ranked hits each. */
export const loadRequests = (options: SearchLoadOptions = {}): LoadStage =>
  loadHitLists({
    describe:
      "search requests (JSONL/JSON) { id?, query | query.inputs.text, hits: [{ id, text, … }], eval?: { fields } }",
    fields: fieldsFor,
    checkColumns: (ctx, columns, f) =>
      checkColumns(
        ctx.file,
        columns,
        (options.hitsRequired ?? true) ? { question: f.query, fragments: f.hits } : { question: f.query }
      ),
    decoder: (f) => searchDecoder(f, options)
  })

// ---------------------------------------------------------------------------------------------
// Judge, score, aggregate

/** The rubric's variables: `query`, and `passage` per hit (the chosen fields of the hit). */
/** The listwise version of the checklist judge (`--listwise`). */
export const listwiseRubric = "search-relevance/checklist-listwise"

export const judgeSearchHits = (
  rubric: string = defaultRubric,
  options: {
    readonly fields?: ReadonlyArray<string> | undefined
    /** Judge every hit of a query in one call with this listwise rubric (e.g. `listwiseRubric`). */
    readonly listwise?: string | undefined
  } = {}
): JudgeStage =>
  judgeHits({
    rubric,
    listwise: options.listwise === undefined ? undefined : { rubric: options.listwise },
    hitVar: "passage",
    caseVars: (c) => ({ query: c.question }),
    // The loader already built precomputed hits' text; chosen fields also apply to live hits.
    hitText: (p, c) => {
      const fields = caseFields(c.source) ?? options.fields
      return fields === undefined || p.fields === undefined ? p.text : hitText(p.fields, fields) ?? p.text
    }
  })

/** A hit's label: its title / name field, else the start of its text. */
export const hitLabel = (p: Passage): string => {
  const f = p.fields ?? {}
  const title = [f.title, f.name, f.subjectName].find((x): x is string => typeof x === "string" && x.trim() !== "")
  return oneLine(title ?? p.text, 80)
}

/**
 * The per-query metrics, in report order: ranking metrics of the registry (`metrics/registry.ts`,
 * which computes them and gives their range and direction), exponential gain, relevant ⇔ grade ≥
 * `judgedRelevantAt`. Each is named once, here.
 */
export const searchRanking = {
  ndcg: { name: "ndcg", kind: "ndcg", gain: "exponential" },
  ndcg10: { name: "ndcg@10", kind: "ndcg", k: 10, gain: "exponential" },
  map: { name: "map", kind: "averagePrecision" },
  mrr: { name: "mrr", kind: "reciprocalRank" }
} as const satisfies Readonly<Record<string, RankingMetric>>

const ranking: ReadonlyArray<RankingMetric> = Object.values(searchRanking)

export const searchMetricSpecs: ReadonlyArray<MetricSpec> = [
  declare(searchRanking.ndcg, "NDCG over every hit, gain 2^grade − 1, ideal = the judged grades sorted (proxy)"),
  declare(searchRanking.ndcg10, "NDCG@10, gain 2^grade − 1 (proxy)"),
  declare(searchRanking.map, "average precision (relevant ⇔ grade ≥ 2; R = relevant hits in the list)"),
  declare(searchRanking.mrr, "1 / rank of the first relevant hit (0 if none)")
]

export const searchMetrics: QueryMetrics = (grades) => {
  if (grades.some((g) => g === null)) {
    return { values: Object.fromEntries(ranking.map((m) => [m.name, null])), flagged: [] }
  }
  const query = { grades: grades as ReadonlyArray<number> }
  const values: Record<string, number> = {}
  const flagged: Array<string> = []
  for (const metric of ranking) {
    const result = measure(metric, query, { threshold: judgedRelevantAt })
    values[metric.name] = result.value
    if (result.flagged) flagged.push(metric.name)
  }
  return { values, flagged }
}

export const searchScore = (): ScoreStage<GradedRecord> =>
  gradedScore({
    metrics: searchMetrics,
    declared: searchMetricSpecs,
    rankBy: "ndcg",
    label: hitLabel,
    query: (c) => c.question
  })

export const searchSummary = (): AggregateStage<GradedRecord, GradedSummary> =>
  gradedSummary({ metrics: searchMetricSpecs })
