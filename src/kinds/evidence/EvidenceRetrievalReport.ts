/**
 * Report view of the evidence-retrieval pipeline (SPEC §2.5): what is measured against gold and
 * what is a proxy, run and retrieval parameters (fuzzy threshold included), the ten metrics with
 * their definitions, latency per span, cost, the worst queries, queries without gold, retrieval
 * failures, a per-query table and per-query details (which rank first covers each gold span).
 * CSV: one row per query. Writes `qrels.txt` of chunk relevance (1 = covers a gold span).
 */
import * as Stream from "effect/Stream"
import type { CaseDetail, DetailRow } from "../../domain/CaseDetail.js"
import { code, inline } from "../../domain/Markdown.js"
import { thousands } from "../../domain/Numbers.js"
import type { ReportView, RunInfo } from "../../engine/Pipeline.js"
import { formatUsd } from "../../pricing/Prices.js"
import { csvMaybeNumber, csvNumber } from "../../report/Csv.js"
import { parameterRows, parametersMarkdown } from "../../report/Sections.js"
import {
  fixed,
  latencySection,
  ms,
  qrelsFile,
  qrelsNote,
  retrievalFailuresSection,
  retrievalSection
} from "../graded-hits/RetrievalReport.js"
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
const ownParameters = (s: EvidenceRunSummary): ReadonlyArray<readonly [string, string]> => [
  ["Queries", `${s.cases}; ${s.goldSpans} gold spans`],
  ["Fuzzy threshold (RAG_EVAL_FUZZY_THRESHOLD)", String(s.fuzzyThreshold)],
  ["Matching", "lexical, against gold evidence (no LLM)"]
]

const pct = (x: number) => `${(x * 100).toFixed(1)}%`

const metricsSection = (s: EvidenceRunSummary) => {
  const m = s.metrics
  return [
    "## Metrics",
    "",
    "| Metric | Value | Definition |",
    "|---|---|---|",
    `| Precision@5 | ${
      fixed(m["Precision@5"])
    } | chunks covering ≥ 1 gold span in the top 5, / 5 (mean over queries) |`,
    `| EvidenceRecall@3 | ${fixed(m["EvidenceRecall@3"])} | gold spans covered by the top 3 / all gold spans (micro) |`,
    `| EvidenceRecall@10 | ${fixed(m["EvidenceRecall@10"])} | the same with the top 10 |`,
    `| PerQueryCoverage@3 | ${fixed(m["PerQueryCoverage@3"])} | per query covered / its gold spans, averaged (macro) |`,
    `| PerQueryCoverage@10 | ${fixed(m["PerQueryCoverage@10"])} | the same with the top 10 |`,
    `| FullCoverageRate@3 | ${
      fixed(m["FullCoverageRate@3"])
    } | share of queries with every gold span covered in the top 3 |`,
    `| FullCoverageRate@10 | ${fixed(m["FullCoverageRate@10"])} | the same with the top 10 |`,
    `| MAP | ${fixed(m.MAP)} | mean AP over all ranks (R = relevant chunks in the list) |`,
    `| MRR | ${fixed(m.MRR)} | mean 1 / rank of the first relevant chunk |`,
    `| HitRate@10 | ${fixed(m["HitRate@10"])} | share of queries with a relevant chunk in the top 10 |`,
    "",
    `Over ${s.queries} quer${s.queries === 1 ? "y" : "ies"}` +
    (s.retrievalFailures.count > 0 ? ` (${s.retrievalFailures.count} retrieval failure(s) left out)` : "") +
    (s.withoutGold.count > 0
      ? `; ${s.withoutGold.count} without gold spans count as 0 (${s.withoutGold.ids.map(code).join(", ")})`
      : "") +
    ".",
    ""
  ].join("\n")
}

const costSection = (s: EvidenceRunSummary) => {
  const c = s.cost
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

const lowestSection = (s: EvidenceRunSummary) =>
  s.lowest.length === 0 ? "" : [
    `## Lowest coverage (${s.lowest.length})`,
    "",
    "| Query id | Query | Coverage@10 | RR |",
    "|---|---|---|---|",
    ...s.lowest.map((l) =>
      `| ${inline(l.caseId, 200)} | ${inline(l.query, 100)} | ${pct(l.coverageAt10)} | ${fixed(l.reciprocalRank, 3)} |`
    ),
    ""
  ].join("\n")

const tableHeader = [
  "## Per-query results",
  "",
  "| # | Id | Query | Gold | Chunks | P@5 | Cov@3 | Cov@10 | Full@10 | AP | RR | Hit@10 | Latency ms | Cost |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  ""
].join("\n")

const tableRow = (r: EvidenceRecord) => {
  const s = r.scores
  if (s === null) {
    return `| ${r.ordinal + 1} | ${inline(r.caseId, 200)} | ${
      inline(r.query, 70)
    } | ${r.gold.length} | — | retrieval failed | | | | | | | ${ms(r.latency.total)} | |\n`
  }
  return `| ${r.ordinal + 1} | ${inline(r.caseId, 200)} | ${
    inline(r.query, 70)
  } | ${s.goldSpans} | ${r.chunks.length} | ${
    fixed(s.precisionAt5, 2)
  } | ${s.coveredAt3}/${s.goldSpans} | ${s.coveredAt10}/${s.goldSpans} | ${s.fullCoverageAt10 === 1 ? "yes" : "no"} | ${
    fixed(s.averagePrecision, 3)
  } | ${fixed(s.reciprocalRank, 3)} | ${s.hitAt10 === 1 ? "yes" : "no"} | ${ms(r.latency.total)} | ${
    r.cost === null ? "—" : formatUsd(r.cost)
  } |\n`
}

const details = (r: EvidenceRecord) =>
  [
    `### ${r.ordinal + 1}. ${inline(r.query, 120)}${r.iteration > 1 ? ` (iteration ${r.iteration})` : ""}`,
    "",
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
    "",
    ""
  ].join("\n")

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
  headline: "PerQueryCoverage@10",
  caseFlags: (
    r
  ) => (r.scores !== null && r.gold.length === 0 ? ["no gold spans: the query's coverage and recall count as 0"] : []),
  caseDetail: evidenceDetail,
  parameters: (_info, summary) => ownParameters(summary),
  failures: (summary) => ({
    judgments: [],
    retrievals: summary.retrievalFailures.cases.map((f) => ({
      caseId: f.caseId,
      line: f.line,
      query: f.query,
      reason: f.message
    }))
  }),
  dataFiles: (info, iteration, records) => [qrelsFile(info, iteration, records, evidenceQrels)],
  markdown: (info, summary, records) =>
    Stream.make(
      `# ${options.title}\n\n`,
      `${info.description}\n\n`,
      notice(summary.fuzzyThreshold) + "\n",
      parametersMarkdown(parameterRows(info, undefined, ownParameters(summary))) + "\n",
      retrievalSection(info, summary.chunks, "chunks") + "\n",
      metricsSection(summary) + "\n",
      latencySection(summary.latency) + "\n",
      costSection(summary) + "\n",
      lowestSection(summary) + "\n",
      retrievalFailuresSection(summary.retrievalFailures) + "\n",
      qrelsNote(info, "Chunk relevance (1 = covers a gold span)") + "\n\n",
      tableHeader
    ).pipe(
      Stream.concat(records.pipe(Stream.map(tableRow))),
      Stream.concat(Stream.make("\n## Per-query details\n\n")),
      Stream.concat(records.pipe(Stream.map(details)))
    ),
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
