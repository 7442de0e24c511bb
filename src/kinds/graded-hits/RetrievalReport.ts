/**
 * Report sections shared by the retrieval pipelines: the retriever and its parameters, latency
 * percentiles per span, judge token usage, retrieval failures, proxy-vs-gold wording, and the
 * qrels file of judged grades.
 */
import * as Stream from "effect/Stream"
import type { CaseDetail, DetailRow } from "../../domain/CaseDetail.js"
import type { OutputError } from "../../domain/Errors.js"
import { inline } from "../../domain/Markdown.js"
import { thousands } from "../../domain/Numbers.js"
import type { CaseMarkdown, DataFile, RunInfo } from "../../engine/Pipeline.js"
import type { RunSummary } from "../../engine/Pipeline.js"
import { judgedRelevantAt } from "../../metrics/relevance.js"
import { criterionSection } from "../../report/Sections.js"
import { type GradedRecord, type GradedSummary, LISTWISE_MAX_HITS, qrelsLines } from "./GradedHits.js"
import { type LatencySummary, listedRetrievals, type TokenSummary, tokenSummary } from "./RetrievalStats.js"

/** The summary a graded-hits view is given: the engine's, with the kind's own part. */
export type GradedRunSummary = RunSummary<GradedRecord, GradedSummary>

/** Each per-query metric's mean over the queries that have it (null: none has it). */
export const means = (s: GradedRunSummary): Readonly<Record<string, number | null>> =>
  Object.fromEntries(Object.values(s.metrics).map((m) => [m.name, m.mean]))

/** `0.8235`, `—` for unknown. */
export const fixed = (
  x: number | null | undefined,
  digits = 4
) => (x === null || x === undefined || !Number.isFinite(x) ? "—" : x.toFixed(digits))

/** Milliseconds for tables: one decimal under 100 ms, whole numbers above. */
export const ms = (
  x: number | null | undefined
) => (x === null || x === undefined ? "—" : x < 100 ? x.toFixed(1) : thousands(Math.round(x)))

export const heuristicBanner = (info: RunInfo, what: string) =>
  !info.judge.traits.languageModel
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
export const retrievalSection = (
  info: RunInfo,
  pruned: { readonly kept: number; readonly belowThreshold: number; readonly beyondTopK: number },
  itemName = "hits"
) => {
  const params = info.retriever.params
  const rows = [
    `| Retriever | ${inline(info.retriever.name)}${
      info.retriever.name === "precomputed" ? " (hits as given in the input)" : ""
    } |`,
    ...["topK", "scoreThreshold", "prefetchLimit", "rerankTopN"].map((k) =>
      `| ${PARAM_LABELS[k]} | ${params[k] === undefined ? "not set" : inline(paramValue(params[k]), 200)} |`
    ),
    ...Object.entries(params).filter(([k]) => PARAM_LABELS[k] === undefined).map(([k, v]) =>
      `| ${inline(k, 100)} | ${inline(paramValue(v), 200)} |`
    )
  ]
  return [
    "## Retrieval parameters",
    "",
    "| Parameter | Value |",
    "|---|---|",
    ...rows,
    "",
    `${thousands(pruned.kept)} ${itemName} evaluated; ${
      thousands(pruned.belowThreshold)
    } dropped below the score threshold and ${
      thousands(pruned.beyondTopK)
    } beyond top-k before evaluation (threshold first, then top-k; input order kept).`,
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
    ...spans.map(([name, s]) =>
      `| ${SPAN_LABELS[name] ?? inline(name, 100)} | ${s.n} | ${ms(s.mean)} | ${ms(s.p50)} | ${ms(s.p90)} | ${
        ms(s.p99)
      } | ${ms(s.max)} |`
    ),
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

// ---------------------------------------------------------------------------------------------
// qrels

export interface QrelsLine {
  readonly qid: string
  readonly docid: string
  readonly grade: number
}

/** qrels ids cannot hold whitespace: it becomes `_`. */
const qrelsId = (id: string) => (id === "" ? "_" : id.replace(/\s+/g, "_"))

/** The qrels file of an iteration: `qrels.txt`, or `qrels-iteration-N.txt` when the run has several iterations. */
export const qrelsName = (
  info: RunInfo,
  iteration: number
) => (info.iterations === 1 ? "qrels.txt" : `qrels-iteration-${iteration}.txt`)

/** How a report names the qrels files of its run. */
export const qrelsNote = (info: RunInfo, what: string) =>
  `${what} are written as TREC qrels to \`${
    info.iterations === 1 ? "qrels.txt" : "qrels-iteration-N.txt"
  }\` (every case of the run, in input order), to cross-check with trec_eval.`

/**
 * The judged grades of every record as TREC qrels (`qid 0 docid grade`, input order), so they can be
 * cross-checked with trec_eval: a data file of the run (`ReportView.dataFiles`), written from all of
 * its records whatever the formats chosen. Failed judgments are left out; whitespace in an id
 * becomes `_` (qrels ids cannot hold it).
 */
export const qrelsFile = <R>(
  info: RunInfo,
  iteration: number,
  records: Stream.Stream<R, OutputError>,
  lines: (record: R) => ReadonlyArray<QrelsLine>
): DataFile => ({
  name: qrelsName(info, iteration),
  content: records.pipe(
    Stream.map((r) => lines(r).map((l) => `${qrelsId(l.qid)} 0 ${qrelsId(l.docid)} ${l.grade}\n`).join(""))
  )
})

/**
 * A case's graded hits in its details section: why there are none (its retrieval failed, or found
 * nothing: `none`), else a table with `header`'s columns and a row per hit.
 */
export const hitsTable = (
  r: GradedRecord,
  none: string,
  header: ReadonlyArray<string>,
  row: (hit: GradedRecord["hits"][number]) => ReadonlyArray<string | number>
): string =>
  r.retrieval?.status === "failed"
    ? `**Retrieval failed:** ${inline(r.retrieval.error?.message ?? "", 500)}`
    : r.hits.length === 0
    ? none
    : [
      `| ${header.join(" | ")} |`,
      `|${header.map(() => "---").join("|")}|`,
      ...r.hits.map((h) => `| ${row(h).join(" | ")} |`)
    ].join("\n")

/** A hit's grade in a table: the grade, or a failed judgment. */
export const gradeCell = (grade: number | null): string => (grade === null ? "**failed**" : String(grade))

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
  /** After the headline metrics: the queries counted, the grade distribution, bands… */
  readonly resultsSection: (summary: GradedRunSummary) => string
  /** The per-query table: its header and a row of escaped cells per query. */
  readonly caseTable: { readonly header: ReadonlyArray<string>; row(record: GradedRecord): ReadonlyArray<string> }
  /** A query as report.md shows it: its heading's text and its hits with the judge's grades and reasons. */
  readonly caseMarkdown: (record: GradedRecord) => CaseMarkdown
}

/** The report.md parts of a graded-hits kind, in the one order both kinds use (the skeleton draws the rest). */
export const gradedHitsMarkdown = (v: GradedHitsMarkdown) => ({
  title: v.title,
  heuristic: v.heuristic,
  sections: (info: RunInfo, summary: GradedRunSummary) => ({
    before: [
      v.proxyNotice,
      retrievalSection(info, summary.extra.hits, v.itemName),
      "## Criterion\n\n" + info.rubrics.map((r) => criterionSection(r, v.criterionNote)).join("\n")
    ],
    after: [
      v.resultsSection(summary),
      latencySection(summary.extra.latency),
      tokensSection(tokenSummary(summary.tokens, summary.extra.judged), info),
      qrelsNote(info, "The judged grades") + "\n"
    ]
  }),
  caseTable: v.caseTable,
  caseMarkdown: (_info: RunInfo, r: GradedRecord) => v.caseMarkdown(r)
})

/** A graded-hits case in the HTML page: the query (and context), then every hit with its text, grade and the judge's reason. */
export const gradedHitsDetail = (r: GradedRecord): CaseDetail => ({
  fields: [["Query", r.query], ...Object.entries(r.context)],
  ...(r.retrieval?.status === "failed" ? { problem: `Retrieval failed: ${r.retrieval.error?.message ?? ""}` } : {}),
  tables: [{
    caption: r.hits.length === 0
      ? "No hits retrieved"
      : `Hits (${r.hits.length}): the judge's grade (relevant at ≥ 2) and reason${
        r.failedJudgments > 0 ? `; ${r.failedJudgments} judgment(s) failed` : ""
      }`,
    columns: ["Rank", "Hit", "Text", "Retriever score", "Grade", "Confidence", "Judge's reason"],
    textColumns: [2, 6],
    rows: r.hits.map((h): DetailRow => ({
      cells: [
        h.rank,
        h.label,
        h.text ?? "",
        h.retrieverScore ?? null,
        h.grade === null ? "failed" : h.grade,
        h.confidence ?? null,
        h.reason
      ],
      status: h.grade === null ? "fail" : h.grade >= judgedRelevantAt ? "pass" : "none"
    }))
  }]
})

/** What every graded-hits view shares besides its markdown: failures, flags, the qrels data file, the HTML case blocks. */
export const gradedHitsView = () => ({
  caseFlags: (r: GradedRecord) => r.flagged.length === 0 ? [] : [flagsCell(r.flagged)],
  caseDetail: gradedHitsDetail,
  caseFailures: (summary: GradedRunSummary) => listedRetrievals(summary.extra.retrievalFailures),
  flagged: (summary: GradedRunSummary) => summary.extra.flagged,
  dataFiles: (
    info: RunInfo,
    iteration: number,
    records: Stream.Stream<GradedRecord, OutputError>
  ) => [qrelsFile(info, iteration, records, qrelsLines)]
})
