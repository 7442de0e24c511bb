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
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import type { EvalCase, Passage } from "../../domain/Case.js"
import type { InputError } from "../../domain/Errors.js"
import { checkColumns } from "../../load/CaseMapping.js"
import { describeJson } from "../../load/Json.js"
import { readRows, type Row } from "../../load/Rows.js"
import type { InputDoc } from "../../load/InputFields.js"
import { averagePrecision } from "../../metrics/averagePrecision.js"
import { ndcg } from "../../metrics/ndcg.js"
import { reciprocalRank } from "../../metrics/reciprocalRank.js"
import { uniqueIds } from "../../retrieval/Params.js"
import { gradedScore, type GradedRecord, gradedSummary, type GradedSummary, judgeHits, type QueryMetrics } from "../graded-hits/GradedHits.js"
import type { AggregateStage, JudgeStage, LoadContext, LoadStage, ScoreStage } from "../../engine/Pipeline.js"
import { failer, readId, readMeasurements, readQuery, readScore } from "../graded-hits/RetrievalInput.js"

export const defaultRubric = "search-relevance/checklist"

export const searchFields = { id: "id", query: "query", hits: "hits" } as const

/** search-relevance's input, for help (see `InputFields.ts`). */
export const searchInput: InputDoc = {
  format: "JSONL or a JSON array, one search request each (the HTTP API's body); --columns renames id, question (= query) and fragments (= hits)",
  fields: [
    { name: "id", required: false, holds: "the query's id (without it, queries are numbered)" },
    { name: "query", required: true, holds: "the query: a text, or { inputs: { text } }" },
    { name: "hits", required: true, holds: "the ranked hits, { id?, text (or other fields), score? } (not read with --retriever http|bm25)" },
    { name: "eval", required: false, holds: "{ fields: [...] }: the hit fields the judge reads (default: text)" },
    { name: "latencyMs", required: false, holds: "the search's time in ms, or { span: ms }" },
    { name: "usage", required: false, holds: "{ inputTokens, outputTokens } the search spent" }
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

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

const valueText = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v))

/** Fields that are never the hit's content. */
const META = new Set(["id", "_id", "score", "_score"])

/**
 * The text the judge reads for a hit: the chosen fields (one: its value; several: `field: value`
 * lines); without a choice, `text`, else every non-meta field. Undefined when none of the chosen
 * fields is present.
 */
export const hitText = (hit: Readonly<Record<string, unknown>>, fields: ReadonlyArray<string> | undefined): string | undefined => {
  const chosen = fields ?? (typeof hit.text === "string" ? ["text"] : Object.keys(hit).filter((k) => !META.has(k)))
  const present = chosen.filter((f) => hit[f] !== undefined && hit[f] !== null)
  if (present.length === 0) return undefined
  if (present.length === 1 && (fields === undefined || fields.length === 1)) return valueText(hit[present[0]!])
  return present.map((f) => `${f}: ${valueText(hit[f])}`).join("\n")
}

/** A case's `eval.fields`, when it has valid ones. */
export const caseFields = (source: Readonly<Record<string, unknown>>): ReadonlyArray<string> | undefined => {
  const evalOptions = source.eval
  if (!isObject(evalOptions) || !Array.isArray(evalOptions.fields)) return undefined
  const fields = evalOptions.fields.filter((f): f is string => typeof f === "string" && f !== "")
  return fields.length === 0 ? undefined : fields
}

export interface SearchLoadOptions {
  /** Hits must be present (false when a live retriever supplies them). Default true. */
  readonly hitsRequired?: boolean | undefined
  /** Default hit fields for the judge when a case has no `eval.fields`. */
  readonly fields?: ReadonlyArray<string> | undefined
}

export const toSearchCase = (row: Row, ordinal: number, file: string, f: SearchFields, options: SearchLoadOptions = {}): Effect.Effect<EvalCase, InputError> =>
  Effect.suspend(() => {
    const fail = failer(file, row)
    const v = row.values
    const id = readId(v[f.id], f.id, fail)
    if (Either.isLeft(id)) return Effect.fail(id.left)
    const query = readQuery(v[f.query], f.query, fail)
    if (Either.isLeft(query)) return Effect.fail(query.left)
    const evalOptions = v.eval
    if (evalOptions !== undefined && evalOptions !== null) {
      if (!isObject(evalOptions)) return Effect.fail(fail("eval", `expected { "fields": [...] }, found ${describeJson(evalOptions)}`))
      const fields = evalOptions.fields
      if (fields !== undefined && (!Array.isArray(fields) || fields.some((x) => typeof x !== "string" || x === ""))) {
        return Effect.fail(fail("eval", "eval.fields must be a list of field names"))
      }
    }
    const fields = caseFields(v) ?? options.fields
    const raw = v[f.hits]
    const required = options.hitsRequired ?? true
    if (!Array.isArray(raw) && (required || (raw !== undefined && raw !== null))) {
      return Effect.fail(fail(f.hits, `expected a list of hits, found ${raw === undefined ? "nothing" : describeJson(raw)}`))
    }
    const hits = (raw as ReadonlyArray<unknown> | undefined) ?? []
    const parsed: Array<{ id: string | undefined; text: string; score: number | undefined; hit: Readonly<Record<string, unknown>> }> = []
    for (const [i, hit] of hits.entries()) {
      if (!isObject(hit)) return Effect.fail(fail(f.hits, `hit ${i + 1} is ${describeJson(hit)}, expected an object`))
      const hitId = readId(hit.id, f.hits, (field, p) => fail(field, `hit ${i + 1}: ${p}`))
      if (Either.isLeft(hitId)) return Effect.fail(hitId.left)
      const score = readScore(hit.score, f.hits, (field, p) => fail(field, `hit ${i + 1}: ${p}`))
      if (Either.isLeft(score)) return Effect.fail(score.left)
      const text = hitText(hit, fields)
      if (text === undefined) {
        return Effect.fail(fail(f.hits, `hit ${i + 1} has ${fields === undefined ? "no text" : `none of the fields ${fields.map((x) => `"${x}"`).join(", ")}`}`))
      }
      parsed.push({ id: hitId.right, text, score: score.right, hit })
    }
    const measurements = readMeasurements(v, fail)
    if (Either.isLeft(measurements)) return Effect.fail(measurements.left)
    const ids = uniqueIds(parsed.map((p) => p.id))
    return Effect.succeed<EvalCase>({
      id: id.right ?? String(ordinal + 1),
      ordinal,
      line: row.line,
      question: query.right,
      passages: parsed.map((p, i): Passage => ({ id: ids[i]!, rank: i + 1, text: p.text, ...(p.score === undefined ? {} : { score: p.score }), fields: p.hit })),
      source: v,
      ...(measurements.right === undefined ? {} : { retrieval: measurements.right })
    })
  })

/** Load stage: search requests (JSONL or JSON), one query with its ranked hits each. */
export const loadRequests = (options: SearchLoadOptions = {}): LoadStage => ({
  describe: "search requests (JSONL/JSON) { id?, query | query.inputs.text, hits: [{ id, text, … }], eval?: { fields } }",
  checkColumns: (ctx, columns) => {
    const f = fieldsFor(ctx)
    return checkColumns(ctx.file, columns, (options.hitsRequired ?? true) ? { question: f.query, fragments: f.hits } : { question: f.query })
  },
  cases: (ctx) => {
    const f = fieldsFor(ctx)
    let ordinal = 0
    return readRows(ctx.file).pipe(Stream.mapEffect((row) => toSearchCase(row, ordinal++, ctx.file, f, options)))
  }
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
  const one = (title ?? p.text).replace(/\s+/g, " ").trim()
  return one.length > 80 ? `${one.slice(0, 79)}…` : one
}

export const searchMetricNames = ["ndcg", "ndcg@10", "map", "mrr"] as const

/** Relevant ⇔ grade ≥ 2. */
export const RELEVANT_AT = 2

export const searchMetrics: QueryMetrics = (grades) => {
  if (grades.some((g) => g === null)) return { values: { ndcg: null, "ndcg@10": null, map: null, mrr: null }, flagged: [] }
  const known = grades as ReadonlyArray<number>
  const full = ndcg(known, { gain: "exponential" })
  const at10 = ndcg(known, { k: 10, gain: "exponential" })
  return {
    values: {
      ndcg: full.value,
      "ndcg@10": at10.value,
      map: averagePrecision(known, { threshold: RELEVANT_AT }),
      mrr: reciprocalRank(known, { threshold: RELEVANT_AT })
    },
    flagged: [...(full.flagged ? ["ndcg"] : []), ...(at10.flagged ? ["ndcg@10"] : [])]
  }
}

export const searchScore = (): ScoreStage<GradedRecord> =>
  gradedScore({ metrics: searchMetrics, label: hitLabel, query: (c) => c.question })

export const searchSummary = (): AggregateStage<GradedRecord, GradedSummary> =>
  gradedSummary({ metrics: searchMetricNames, key: "ndcg" })
