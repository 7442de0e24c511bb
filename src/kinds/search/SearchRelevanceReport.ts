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
import { judgedRelevantAt } from "../../metrics/relevance.js"
import { csvMaybeNumber, csvNumber } from "../../report/Csv.js"
import type { GradedRecord, GradedSummary } from "../graded-hits/GradedHits.js"
import {
  fixed,
  flagsCell,
  gradeCell,
  gradedHitsMarkdown,
  gradedHitsView,
  type GradedRunSummary,
  hitsTable
} from "../graded-hits/RetrievalReport.js"

const proxyNotice = [
  "> ⚠️ **Proxy metrics — judged relevance, no gold labels.** Each hit's grade (0–3) is the judge's; a hit is",
  "> relevant when its grade is ≥ 2. NDCG's ideal ordering is the judged grades sorted descending, and AP's R is",
  "> the relevant hits found in the list itself: hits the search never returned are unknown, so there is no recall.",
  ""
].join("\n")

const value = (r: GradedRecord, k: string) => r.metrics?.[k] ?? null

const relevantCount = (r: GradedRecord) => r.hits.filter((h) => h.grade !== null && h.grade >= judgedRelevantAt).length

/** What the headline table cannot say: queries measured, left out and flagged, and the grades given. */
const resultsSection = (s: GradedRunSummary) =>
  [
    "## Queries and grades",
    "",
    `Queries: ${s.cases} (${s.extra.measured} measured${
      s.extra.retrievalFailures.count > 0
        ? `, ${s.extra.retrievalFailures.count} retrieval failure(s) left out`
        : ""
    }${
      s.extra.casesWithFailedJudgments > 0
        ? `; ${s.extra.casesWithFailedJudgments} with a failed judgment have unknown metrics`
        : ""
    }).` +
    ((s.extra.flagged.ndcg ?? 0) > 0
      ? ` ${s.extra.flagged.ndcg} query(ies) had no hit graded above 0 (IDCG = 0): NDCG set to 0 by convention and flagged ⚑.`
      : ""),
    "",
    "NDCG: Σ (2^grade − 1) / log2(rank + 1) over the list, / the ideal (the judged grades sorted); AP: Σ P@k · rel(k) / R with R the relevant hits in the list; RR: 1 / rank of the first hit graded ≥ 2 (0 if none).",
    "",
    "| Grade | Hits |",
    "|---|---|",
    ...Object.entries(s.extra.grades).sort((a, b) => Number(b[0]) - Number(a[0])).map(([g, c]) => `| ${g} | ${c} |`),
    ""
  ].join("\n")

const caseTable = {
  header: ["#", "Id", "Query", "Hits", "Relevant", "NDCG", "NDCG@10", "AP", "RR", "Tokens in / out"],
  row: (r: GradedRecord) =>
    r.metrics === null
      ? [String(r.ordinal + 1), inline(r.caseId, 200), inline(r.query, 80), "—", "retrieval failed", "", "", "", "", ""]
      : [
        String(r.ordinal + 1),
        inline(r.caseId, 200),
        inline(r.query, 80),
        String(r.hits.length),
        String(relevantCount(r)),
        `${fixed(value(r, "ndcg"))}${r.flagged.includes("ndcg") ? " ⚑" : ""}`,
        fixed(value(r, "ndcg@10")),
        fixed(value(r, "map")),
        fixed(value(r, "mrr")),
        `${thousands(r.tokens.input)} / ${thousands(r.tokens.output)}`
      ]
}

const caseMarkdown = (r: GradedRecord) => ({
  title: `${inline(r.query, 120)} — NDCG ${fixed(value(r, "ndcg"), 3)}`,
  body: [
    `Id ${code(r.caseId)}, line ${r.line}.`,
    "",
    hitsTable(r, "No hits.", ["Rank", "Hit", "Grade", "Relevant", "Confidence", "Justification"], (h) => [
      h.rank,
      inline(`${h.id}: ${h.label}`, 100),
      gradeCell(h.grade),
      h.grade === null ? "—" : h.grade >= judgedRelevantAt ? "yes" : "no",
      h.confidence ?? "—",
      inline(h.reason, 400)
    ]),
    ""
  ].join("\n")
})

export const searchReport = (options: { readonly title: string }): ReportView<GradedRecord, GradedSummary> => ({
  ...gradedHitsView(),
  ...gradedHitsMarkdown({
    title: options.title,
    heuristic:
      "a lexical relevance model: the query's terms found in the hit, each weighted by how many of the other hits retrieved for the query hold it, and how typical of those hits the hit's other words are, with a margin-based confidence (its agreement with NIST assessors is in docs/judge-quality.md)",
    proxyNotice,
    criterionNote: "relevant = 2 or 3; confidence 1–5",
    resultsSection,
    caseTable,
    caseMarkdown
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
