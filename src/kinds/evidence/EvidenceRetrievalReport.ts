/**
 * Report view of the evidence-retrieval pipeline (SPEC §2.5): what is measured against gold and
 * what is a proxy, run and retrieval parameters (fuzzy threshold included), the ten metrics with
 * their definitions, latency per span, cost, the worst queries, queries without gold, retrieval
 * failures, a per-query table and per-query details (which rank first covers each gold span).
 * CSV: one row per query. Writes `qrels.txt` of chunk relevance (1 = covers a gold span).
 */
import type { CaseDetail, DetailRow } from "../../domain/CaseDetail.js"
import { code, inline } from "../../domain/Markdown.js"
import { thousands } from "../../domain/Numbers.js"
import type { ReportView, RunInfo, RunSummary } from "../../engine/Pipeline.js"
import { formatUsd } from "../../pricing/Prices.js"
import { csvMaybeNumber, csvNumber } from "../../report/Csv.js"
import { fixed, latencySection, ms, qrelsFile, qrelsNote, retrievalSection } from "../graded-hits/RetrievalReport.js"
import { listedRetrievals } from "../graded-hits/RetrievalStats.js"
import type { EvidenceRecord, EvidenceRunSummary } from "./EvidenceRetrieval.js"

const notice = (threshold: number) =>
  [
    "> **Measured against gold evidence — no LLM.** A retrieved chunk covers a gold span when, after lowercasing",
    `> and collapsing whitespace, the span is a substring of the chunk or their difflib similarity is ≥ ${threshold}`,
    "> (Python's `SequenceMatcher.ratio()`). Recall and coverage are true measurements against the gold spans.",
    "> One part is a proxy: MAP's R is the number of relevant chunks *found in the list* (gold spans are not",
    "> chunks, and several chunks may cover one span).",
    ""
  ].join("\n")

/** What the evidence pipeline adds to the run-parameter table. */
type Summary = RunSummary<EvidenceRecord, EvidenceRunSummary>

const ownParameters = (s: Summary): ReadonlyArray<readonly [string, string]> => [
  ["Queries", `${s.cases}; ${s.extra.goldSpans} gold spans`],
  ["Fuzzy threshold (RAG_EVAL_FUZZY_THRESHOLD)", String(s.extra.fuzzyThreshold)],
  ["Matching", "lexical, against gold evidence (no LLM)"]
]

const pct = (x: number) => `${(x * 100).toFixed(1)}%`

/** What the headline table cannot say: the queries the means are over, and those without gold. */
const queriesSection = (s: Summary) =>
  [
    "## Queries",
    "",
    `The means are over ${s.extra.queries} quer${s.extra.queries === 1 ? "y" : "ies"}` +
    (s.extra.retrievalFailures.count > 0
      ? ` (${s.extra.retrievalFailures.count} retrieval failure(s) left out)`
      : "") +
    (s.extra.withoutGold.count > 0
      ? `; ${s.extra.withoutGold.count} without gold spans count as 0 (${s.extra.withoutGold.ids.map(code).join(", ")})`
      : "") +
    `. EvidenceRecall@k is micro (the run's covered spans over its ${
      thousands(s.extra.goldSpans)
    } gold spans); PerQueryCoverage@k is its macro form (each query's share, averaged).`,
    ""
  ].join("\n")

const costSection = (s: Summary) => {
  const c = s.extra.cost
  if (c.queriesWithUsage === 0) {
    return "## Cost\n\nNo token usage in the input (`usage` per query): cost not computed.\n"
  }
  return [
    "## Cost",
    "",
    "| | Value |",
    "|---|---|",
    `| Queries with token counts | ${c.queriesWithUsage} of ${s.cases} |`,
    `| Tokens | ${thousands(c.inputTokens)} in, ${thousands(c.outputTokens)} out |`,
    `| Price per 1K tokens (RAG_EVAL_PRICE_PER_1K) | ${
      c.pricePer1K === null ? "not set — cost unknown" : `$${c.pricePer1K}`
    } |`,
    `| Total | ${c.totalUsd === null ? "unknown" : formatUsd(c.totalUsd)} |`,
    `| Per query | ${c.perQueryUsd === null ? "unknown" : formatUsd(c.perQueryUsd)} |`,
    "",
    "cost = (input + output tokens) / 1000 × price per 1K, per query, summed.",
    ""
  ].join("\n")
}

const caseTable = {
  header: [
    "#",
    "Id",
    "Query",
    "Gold",
    "Chunks",
    "P@5",
    "Cov@3",
    "Cov@10",
    "Full@10",
    "AP",
    "RR",
    "Hit@10",
    "Latency ms",
    "Cost"
  ],
  row: (r: EvidenceRecord): ReadonlyArray<string> => {
    const s = r.scores
    const head = [String(r.ordinal + 1), inline(r.caseId, 200), inline(r.query, 70), String(r.gold.length)]
    if (s === null) return [...head, "—", "retrieval failed", "", "", "", "", "", "", ms(r.latency.total), ""]
    return [
      String(r.ordinal + 1),
      inline(r.caseId, 200),
      inline(r.query, 70),
      String(s.goldSpans),
      String(r.chunks.length),
      fixed(s.precisionAt5, 2),
      `${s.coveredAt3}/${s.goldSpans}`,
      `${s.coveredAt10}/${s.goldSpans}`,
      s.fullCoverageAt10 === 1 ? "yes" : "no",
      fixed(s.averagePrecision, 3),
      fixed(s.reciprocalRank, 3),
      s.hitAt10 === 1 ? "yes" : "no",
      ms(r.latency.total),
      r.cost === null ? "—" : formatUsd(r.cost)
    ]
  }
}

const caseMarkdown = (r: EvidenceRecord) => ({
  title: `${inline(r.query, 120)} — coverage@10 ${r.scores === null ? "—" : pct(r.scores.coverageAt10)}`,
  body: [
    `Id ${code(r.caseId)}, line ${r.line}.`,
    "",
    r.retrieval?.status === "failed" ? `**Retrieval failed:** ${inline(r.retrieval.error?.message ?? "", 500)}\n` : "",
    "**Gold spans** (first covering rank):",
    "",
    r.gold.length === 0
      ? "(none)"
      : r.gold.map((g, i) =>
        `${i + 1}. ${g.firstRank === null ? "**not covered**" : `rank ${g.firstRank}`} — ${inline(g.text, 200)}`
      ).join("\n"),
    "",
    r.chunks.length === 0 ? "No chunks retrieved." : [
      "| Rank | Chunk | Score | Covers | Text |",
      "|---|---|---|---|---|",
      ...r.chunks.map((c) =>
        `| ${c.rank} | ${inline(c.id, 40)} | ${fixed(c.score, 3)} | ${
          c.covers.length === 0 ? "—" : c.covers.join(", ")
        } | ${inline(c.excerpt, 100)} |`
      )
    ].join("\n"),
    ""
  ].join("\n")
})

/** Chunk relevance as qrels: 1 when the chunk covers a gold span, else 0. */
export const evidenceQrels = (r: EvidenceRecord) =>
  r.scores === null ? [] : r.chunks.map((c) => ({ qid: r.caseId, docid: c.id, grade: c.relevant ? 1 : 0 }))

/** An evidence case in the HTML page: the query, each gold span with the first rank covering it, then every chunk with its text and the spans it covers. */
export const evidenceDetail = (r: EvidenceRecord): CaseDetail => ({
  fields: [["Query", r.query]],
  ...(r.retrieval?.status === "failed" ? { problem: `Retrieval failed: ${r.retrieval.error?.message ?? ""}` } : {}),
  tables: [
    {
      caption: r.gold.length === 0
        ? "No gold spans: this query's coverage counts as 0"
        : `Gold spans (${r.gold.length}): the first rank whose chunk covers each`,
      columns: ["#", "Gold span", "First covering rank"],
      textColumns: [1],
      rows: r.gold.map((g, i): DetailRow => ({
        cells: [i + 1, g.text, g.firstRank === null ? "not covered" : g.firstRank],
        status: g.firstRank === null ? "fail" : "pass"
      }))
    },
    {
      caption: r.chunks.length === 0 ? "No chunks retrieved" : `Chunks (${r.chunks.length}): green covers a gold span`,
      columns: ["Rank", "Chunk", "Score", "Covers spans", "Text"],
      textColumns: [4],
      rows: r.chunks.map((c): DetailRow => ({
        cells: [c.rank, c.id, c.score ?? null, c.covers.length === 0 ? "—" : c.covers.join(", "), c.text ?? c.excerpt],
        status: c.relevant ? "pass" : "none"
      }))
    }
  ]
})

export const evidenceReport = (
  options: { readonly title: string }
): ReportView<EvidenceRecord, EvidenceRunSummary> => ({
  title: options.title,
  caseFlags: (
    r
  ) => (r.scores !== null && r.gold.length === 0 ? ["no gold spans: the query's coverage and recall count as 0"] : []),
  caseDetail: evidenceDetail,
  parameters: (_info, summary) => ownParameters(summary),
  caseFailures: (summary) => listedRetrievals(summary.extra.retrievalFailures),
  dataFiles: (info, iteration, records) => [qrelsFile(info, iteration, records, evidenceQrels)],
  sections: (info, summary) => ({
    before: [notice(summary.extra.fuzzyThreshold), retrievalSection(info, summary.extra.chunks, "chunks")],
    after: [
      queriesSection(summary),
      latencySection(summary.extra.latency),
      costSection(summary),
      qrelsNote(info, "Chunk relevance (1 = covers a gold span)") + "\n"
    ]
  }),
  caseTable,
  caseMarkdown: (_info, r) => caseMarkdown(r),
  csvHeader: () => [
    "id",
    "query",
    "gold spans",
    "chunks",
    "precision@5",
    "covered@3",
    "covered@10",
    "coverage@3",
    "coverage@10",
    "fullCoverage@3",
    "fullCoverage@10",
    "ap",
    "rr",
    "hit@10",
    "retrieval",
    "latency ms",
    "input tokens",
    "output tokens",
    "cost usd"
  ],
  csvRow: (_info: RunInfo, r) => {
    const s = r.scores
    const n = (x: number | undefined) => csvMaybeNumber(x, 4)
    const i = (x: number | undefined) => csvMaybeNumber(x)
    return [
      r.caseId,
      r.query,
      csvNumber(r.gold.length),
      s === null ? "" : csvNumber(r.chunks.length),
      n(s?.precisionAt5),
      i(s?.coveredAt3),
      i(s?.coveredAt10),
      n(s?.coverageAt3),
      n(s?.coverageAt10),
      i(s?.fullCoverageAt3),
      i(s?.fullCoverageAt10),
      n(s?.averagePrecision),
      n(s?.reciprocalRank),
      i(s?.hitAt10),
      r.retrieval?.status === "failed" ? `failed: ${r.retrieval.error?.message ?? ""}` : "ok",
      csvMaybeNumber(r.latency.total),
      csvMaybeNumber(r.usage?.inputTokens),
      csvMaybeNumber(r.usage?.outputTokens),
      csvMaybeNumber(r.cost, 6)
    ]
  }
})
