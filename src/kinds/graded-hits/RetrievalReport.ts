/**
 * Report sections shared by the retrieval pipelines: the retriever and its parameters, latency
 * percentiles per span, judge token usage, retrieval failures, proxy-vs-gold wording, and the
 * qrels file of judged grades.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import type { OutputError } from "../../domain/Errors.js"
import { type GradedRecord, type GradedSummary, LISTWISE_MAX_HITS, qrelsLines } from "./GradedHits.js"
import { criterionSection, failures, runParameters } from "../rubric/RubricReport.js"
import type { RunInfo } from "../../engine/Pipeline.js"
import type { LatencySummary, TokenSummary } from "./RetrievalStats.js"
import { writeAtomic } from "../../report/Files.js"
import { inline } from "../../report/Markdown.js"
import { thousands } from "../../domain/Numbers.js"

/** `0.8235`, `—` for unknown. */
export const fixed = (x: number | null | undefined, digits = 4) => (x === null || x === undefined || !Number.isFinite(x) ? "—" : x.toFixed(digits))

/** Milliseconds for tables: one decimal under 100 ms, whole numbers above. */
export const ms = (x: number | null | undefined) => (x === null || x === undefined ? "—" : x < 100 ? x.toFixed(1) : thousands(Math.round(x)))

export const heuristicBanner = (info: RunInfo, what: string) =>
  info.judge.provider === "heuristic"
    ? `> **Judged by the heuristic judge** — ${what}, not an LLM. Use an LLM provider for real judgments.\n\n`
    : `> Judged by ${inline(info.judge.label)}.\n\n`

const PARAM_LABELS: Readonly<Record<string, string>> = {
  topK: "Top-k (RAG_TOP_K)",
  scoreThreshold: "Score threshold (RAG_SCORE_THRESHOLD)",
  prefetchLimit: "Hybrid prefetch limit (HYBRID_PREFETCH_LIMIT)",
  rerankTopN: "Rerank top-n (RERANK_TOP_N)"
}

const paramValue = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v))

/** The retriever, every recorded parameter, and what the score threshold and top-k pruned. */
export const retrievalSection = (info: RunInfo, pruned: { readonly kept: number; readonly belowThreshold: number; readonly beyondTopK: number }, itemName = "hits") => {
  const params = info.retriever.params
  const rows = [
    `| Retriever | ${inline(info.retriever.name)}${info.retriever.name === "precomputed" ? " (hits as given in the input)" : ""} |`,
    ...["topK", "scoreThreshold", "prefetchLimit", "rerankTopN"].map((k) => `| ${PARAM_LABELS[k]} | ${params[k] === undefined ? "not set" : inline(paramValue(params[k]), 200)} |`),
    ...Object.entries(params).filter(([k]) => PARAM_LABELS[k] === undefined).map(([k, v]) => `| ${inline(k, 100)} | ${inline(paramValue(v), 200)} |`)
  ]
  return [
    "## Retrieval parameters",
    "",
    "| Parameter | Value |",
    "|---|---|",
    ...rows,
    "",
    `${thousands(pruned.kept)} ${itemName} evaluated; ${thousands(pruned.belowThreshold)} dropped below the score threshold and ${thousands(pruned.beyondTopK)} beyond top-k before evaluation (threshold first, then top-k; input order kept).`,
    ""
  ].join("\n")
}

const SPAN_LABELS: Readonly<Record<string, string>> = {
  total: "total (end to end)",
  retrieve: "retrieve",
  rerank: "rerank",
  generate: "generate (LLM)",
  judge: "judge (evaluation, not the system)"
}

/** avg / P50 / P90 / P99 / max per span; a note when no latency was recorded. */
export const latencySection = (latency: LatencySummary) => {
  const spans = Object.entries(latency)
  if (spans.length === 0) {
    return "## Latency\n\nNo latency recorded: the input carries no `latencyMs` and the hits were not retrieved live.\n"
  }
  return [
    "## Latency per query (ms)",
    "",
    "| Span | Queries | Avg | P50 | P90 | P99 | Max |",
    "|---|---|---|---|---|---|---|",
    ...spans.map(([name, s]) => `| ${SPAN_LABELS[name] ?? inline(name, 100)} | ${s.n} | ${ms(s.mean)} | ${ms(s.p50)} | ${ms(s.p90)} | ${ms(s.p99)} | ${ms(s.max)} |`),
    "",
    "Percentiles interpolate linearly between closest ranks (numpy's default). `total` is measured around a live retrieval call, or taken from the input; sub-spans come from the input or the endpoint; `judge` is the summed time of a query's judge calls.",
    ""
  ].join("\n")
}

/** Judge tokens: total, per judged hit, per request (a query's judgments), and how hits were judged. */
export const tokensSection = (tokens: TokenSummary, info?: Pick<RunInfo, "rubrics">) =>
  [
    "## Judge usage",
    "",
    ...(info === undefined ? [] : [judgingMode(info), ""]),
    "| Tokens | Input | Output |",
    "|---|---|---|",
    `| Total | ${thousands(tokens.input)} | ${thousands(tokens.output)} |`,
    `| Per judged hit | ${fixed(tokens.perJudgedHit?.input, 1)} | ${fixed(tokens.perJudgedHit?.output, 1)} |`,
    `| Per request (query) | ${fixed(tokens.perRequest?.input, 1)} | ${fixed(tokens.perRequest?.output, 1)} |`,
    ""
  ].join("\n")

/** Pointwise or listwise, in one line (listwise rubrics have an item template). */
export const judgingMode = (info: Pick<RunInfo, "rubrics">): string =>
  info.rubrics.some((r) => r.item !== undefined)
    ? `Judged listwise: the hits of a query in one call (at most ${LISTWISE_MAX_HITS} a call), each hit graded on its own; a call's tokens are shared equally among its hits.`
    : "Judged pointwise: one call per hit (`--listwise` judges a query's hits in one call)."

export const retrievalFailuresSection = (failures: { readonly count: number; readonly cases: ReadonlyArray<{ readonly caseId: string; readonly line: number; readonly query: string; readonly message: string }> }) =>
  failures.count === 0 ? "" : [
    `## Retrieval failures (${failures.count})`,
    "",
    "These queries got no hits because the retriever failed; they are left out of every mean (unknown, not 0).",
    "",
    "| Line | Case | Query | Problem |",
    "|---|---|---|---|",
    ...failures.cases.map((f) => `| ${f.line} | ${inline(f.caseId, 200)} | ${inline(f.query, 80)} | ${inline(f.message, 300)} |`),
    failures.count > failures.cases.length ? `\n(first ${failures.cases.length} listed)` : "",
    ""
  ].join("\n")

// ---------------------------------------------------------------------------------------------
// qrels

export interface QrelsLine {
  readonly qid: string
  readonly docid: string
  readonly grade: number
}

/** qrels ids cannot hold whitespace: it becomes `_`. */
const qrelsId = (id: string) => (id === "" ? "_" : id.replace(/\s+/g, "_"))

/**
 * Writes the judged grades as TREC qrels (`qid 0 docid grade`, input order) beside the report —
 * `qrels.txt`, or `qrels-iteration-N.txt` when the run has several iterations — so they can be
 * cross-checked with trec_eval. Failed judgments are left out. Returns a line for the report.
 */
export const writeQrelsFile = <R>(
  info: RunInfo,
  records: Stream.Stream<R, OutputError>,
  lines: (record: R) => ReadonlyArray<QrelsLine>,
  iterationOf: (record: R) => number
): Effect.Effect<string, OutputError> =>
  Effect.gen(function*() {
    const first = yield* Stream.runHead(records)
    const iteration = Option.match(first, { onNone: () => 1, onSome: iterationOf })
    const name = info.iterations === 1 ? "qrels.txt" : `qrels-iteration-${iteration}.txt`
    let count = 0
    let rewritten = 0
    const content = records.pipe(Stream.map((r) =>
      lines(r).map((l) => {
        count++
        const qid = qrelsId(l.qid)
        const docid = qrelsId(l.docid)
        if (qid !== l.qid || docid !== l.docid) rewritten++
        return `${qid} 0 ${docid} ${l.grade}\n`
      }).join("")
    ))
    yield* writeAtomic(Path.join(info.runDir, name), content)
    return `Judged grades written as TREC qrels to \`${name}\` (${thousands(count)} lines${rewritten > 0 ? `; ${rewritten} with whitespace in an id replaced by \`_\`` : ""}), to cross-check with trec_eval.`
  })

/** The CSV `flags` cell of a query: each metric whose value is a convention, e.g. `ndcg@10: IDCG = 0 (no relevant hit), set to 0`. */
export const flagsCell = (flagged: ReadonlyArray<string>): string =>
  flagged.map((m) => `${m}: IDCG = 0 (no hit graded above 0), set to 0`).join("; ")

/** What differs between the markdown reports of the graded-hits kinds (course-retrieval, search-relevance). */
export interface GradedHitsMarkdown {
  readonly title: string
  /** What the heuristic judge does here, for its banner. */
  readonly heuristic: string
  readonly proxyNotice: string
  /** What a hit is called in the retrieval section ("hits", "courses"). */
  readonly itemName?: string | undefined
  /** Added to each criterion's description (what counts as relevant…). */
  readonly criterionNote: string
  readonly resultsSection: (summary: GradedSummary) => string
  readonly lowestSection: (summary: GradedSummary) => string
  readonly tableHeader: string
  readonly tableRow: (record: GradedRecord) => string
  /** After the per-case table: what ⚑ means, and the heading of the details. */
  readonly afterTable: string
  readonly details: (record: GradedRecord) => string
}

/** The markdown report of a graded-hits kind: its sections in the one order both kinds use, then the per-case table and details streamed from the records. */
export const gradedHitsMarkdown = (v: GradedHitsMarkdown) => (info: RunInfo, summary: GradedSummary, records: Stream.Stream<GradedRecord, OutputError>) =>
  Stream.unwrap(writeQrelsFile(info, records, qrelsLines, (r) => r.iteration).pipe(
    Effect.map((qrelsNote) =>
      Stream.make(
        `# ${v.title}\n\n`,
        `${info.description}\n\n`,
        heuristicBanner(info, v.heuristic),
        v.proxyNotice + "\n",
        runParameters(info, summary) + "\n",
        retrievalSection(info, summary.hits, v.itemName) + "\n",
        "## Criterion\n\n" + info.rubrics.map((r) => criterionSection(r, v.criterionNote)).join("\n") + "\n",
        v.resultsSection(summary) + "\n",
        latencySection(summary.latency) + "\n",
        tokensSection(summary.tokens, info) + "\n",
        v.lowestSection(summary) + "\n",
        retrievalFailuresSection(summary.retrievalFailures) + "\n",
        failures(summary) + "\n",
        qrelsNote + "\n\n",
        v.tableHeader
      ).pipe(
        Stream.concat(records.pipe(Stream.map(v.tableRow))),
        Stream.concat(Stream.make(v.afterTable)),
        Stream.concat(records.pipe(Stream.map(v.details)))
      )
    )
  ))
