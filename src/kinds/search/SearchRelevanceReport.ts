/**
 * Report view of the search-relevance pipeline (SPEC §2.4): proxy notice, run and retrieval
 * parameters, the checklist rubric, mean NDCG / NDCG@10 / MAP / MRR, grade and confidence
 * distribution, latency, judge tokens per judged hit and per request, worst queries, failures, a
 * per-query table and per-hit judgments with confidence and justification. CSV: one row per query.
 * Writes `qrels.txt` too.
 */
import { code } from "../../domain/Markdown.js"
import { inline } from "../../domain/Markdown.js"
import { thousands } from "../../domain/Numbers.js"
import type { ReportView, RunInfo } from "../../engine/Pipeline.js"
import { csvMaybeNumber, csvNumber } from "../../report/Csv.js"
import type { GradedRecord, GradedSummary } from "../graded-hits/GradedHits.js"
import {
  fixed,
  flagsCell,
  gradeCell,
  gradedHitsMarkdown,
  gradedHitsView,
  hitsTable
} from "../graded-hits/RetrievalReport.js"

const proxyNotice = [
  "> ⚠️ **Proxy metrics — judged relevance, no gold labels.** Each hit's grade (0–3) is the judge's; a hit is",
  "> relevant when its grade is ≥ 2. NDCG's ideal ordering is the judged grades sorted descending, and AP's R is",
  "> the relevant hits found in the list itself: hits the search never returned are unknown, so there is no recall.",
  ""
].join("\n")

const value = (r: GradedRecord, k: string) => r.metrics?.[k] ?? null

const relevantCount = (r: GradedRecord) => r.hits.filter((h) => h.grade !== null && h.grade >= 2).length

const resultsSection = (s: GradedSummary) => {
  const n = (k: string) => s.counts[k] ?? 0
  return [
    "## Results (mean over queries)",
    "",
    "| Metric | Mean | Queries | Definition |",
    "|---|---|---|---|",
    `| NDCG | ${fixed(s.means.ndcg, 4)} | ${
      n("ndcg")
    } | Σ (2^grade − 1) / log2(rank + 1) over the whole list, / ideal |`,
    `| NDCG@10 | ${fixed(s.means["ndcg@10"], 4)} | ${n("ndcg@10")} | the same, top 10 |`,
    `| MAP | ${fixed(s.means.map, 4)} | ${
      n("map")
    } | mean of AP = Σ P@k · rel(k) / R (R = relevant hits in the list) |`,
    `| MRR | ${fixed(s.means.mrr, 4)} | ${n("mrr")} | mean of 1 / rank of the first hit graded ≥ 2 (0 if none) |`,
    "",
    `Queries: ${s.cases} (${s.measured} measured${
      s.retrievalFailures.count > 0 ? `, ${s.retrievalFailures.count} retrieval failure(s) left out` : ""
    }${
      s.casesWithFailedJudgments > 0
        ? `; ${s.casesWithFailedJudgments} with a failed judgment have unknown metrics`
        : ""
    }).` +
    ((s.flagged.ndcg ?? 0) > 0
      ? ` ${s.flagged.ndcg} query(ies) had no hit graded above 0 (IDCG = 0): NDCG set to 0 and flagged.`
      : ""),
    "",
    "| Grade | Hits |",
    "|---|---|",
    ...Object.entries(s.grades).sort((a, b) => Number(b[0]) - Number(a[0])).map(([g, c]) => `| ${g} | ${c} |`),
    ""
  ].join("\n")
}

const lowestSection = (s: GradedSummary) =>
  s.lowest.length === 0 ? "" : [
    `## Lowest NDCG (${s.lowest.length})`,
    "",
    "| Query id | Query | NDCG |",
    "|---|---|---|",
    ...s.lowest.map((l) => `| ${inline(l.caseId, 200)} | ${inline(l.query, 100)} | ${fixed(l.value, 4)} |`),
    ""
  ].join("\n")

const tableHeader = [
  "## Per-query results",
  "",
  "| # | Id | Query | Hits | Relevant | NDCG | NDCG@10 | AP | RR | Tokens in / out |",
  "|---|---|---|---|---|---|---|---|---|---|",
  ""
].join("\n")

const tableRow = (r: GradedRecord) =>
  r.metrics === null
    ? `| ${r.ordinal + 1} | ${inline(r.caseId, 200)} | ${inline(r.query, 80)} | — | retrieval failed | | | | | |\n`
    : `| ${r.ordinal + 1} | ${inline(r.caseId, 200)} | ${inline(r.query, 80)} | ${r.hits.length} | ${
      relevantCount(r)
    } | ${fixed(value(r, "ndcg"))}${r.flagged.includes("ndcg") ? " ⚑" : ""} | ${fixed(value(r, "ndcg@10"))} | ${
      fixed(value(r, "map"))
    } | ${fixed(value(r, "mrr"))} | ${thousands(r.tokens.input)} / ${thousands(r.tokens.output)} |\n`

const details = (r: GradedRecord) =>
  [
    `### ${r.ordinal + 1}. ${inline(r.query, 120)}${r.iteration > 1 ? ` (iteration ${r.iteration})` : ""}`,
    "",
    `Id ${code(r.caseId)}, line ${r.line}.`,
    "",
    hitsTable(r, "No hits.", ["Rank", "Hit", "Grade", "Relevant", "Confidence", "Justification"], (h) => [
      h.rank,
      inline(`${h.id}: ${h.label}`, 100),
      gradeCell(h.grade),
      h.grade === null ? "—" : h.grade >= 2 ? "yes" : "no",
      h.confidence ?? "—",
      inline(h.reason, 400)
    ]),
    "",
    ""
  ].join("\n")

export const searchReport = (options: { readonly title: string }): ReportView<GradedRecord, GradedSummary> => ({
  ...gradedHitsView("ndcg"),
  markdown: gradedHitsMarkdown({
    title: options.title,
    heuristic:
      "a lexical relevance model: the query's terms found in the hit, each weighted by how many of the other hits retrieved for the query hold it, and how typical of those hits the hit's other words are, with a margin-based confidence (its agreement with NIST assessors is in docs/judge-quality.md)",
    proxyNotice,
    criterionNote: "relevant = 2 or 3; confidence 1–5",
    resultsSection,
    lowestSection,
    tableHeader,
    tableRow,
    afterTable: "\n⚑ = no hit graded above 0 (IDCG = 0): NDCG set to 0 by convention.\n\n## Per-hit judgments\n\n",
    details
  }),
  csvHeader: () => [
    "id",
    "query",
    "hits",
    "relevant",
    "ndcg",
    "ndcg@10",
    "ap",
    "rr",
    "grades",
    "confidences",
    "failed judgments",
    "retrieval",
    "latency ms",
    "input tokens",
    "output tokens",
    "flags"
  ],
  csvRow: (_info: RunInfo, r) => {
    const v = (k: string) => csvMaybeNumber(value(r, k), 4)
    return [
      r.caseId,
      r.query,
      r.metrics === null ? "" : csvNumber(r.hits.length),
      r.metrics === null ? "" : csvNumber(relevantCount(r)),
      v("ndcg"),
      v("ndcg@10"),
      v("map"),
      v("mrr"),
      r.hits.map((h) => (h.grade === null ? "failed" : String(h.grade))).join(" "),
      r.hits.map((h) => (h.confidence === undefined ? "-" : String(h.confidence))).join(" "),
      csvNumber(r.failedJudgments),
      r.retrieval?.status === "failed" ? `failed: ${r.retrieval.error?.message ?? ""}` : "ok",
      csvMaybeNumber(r.latency.total),
      csvNumber(r.tokens.input),
      csvNumber(r.tokens.output),
      flagsCell(r.flagged)
    ]
  }
})
