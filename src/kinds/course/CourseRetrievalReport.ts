/**
 * Report view of the course-retrieval pipeline (SPEC §2.3): a clear PROXY notice, run and retrieval
 * parameters, the relevance rubric, the averaged metrics with their interpretation bands, the grade
 * distribution, latency, judge usage, the worst queries, failures, a per-query table and per-query
 * details with the judge's reasons. The CSV has one row per case. Writes `qrels.txt` too.
 */
import { inline, quoteBlock } from "../../domain/Markdown.js"
import type { ReportView, RunInfo } from "../../engine/Pipeline.js"
import { csvMaybeNumber, csvNumber } from "../../report/Csv.js"
import type { GradedRecord, GradedSummary } from "../graded-hits/GradedHits.js"
import {
  fixed,
  flagsCell,
  gradeCell,
  gradedHitsMarkdown,
  gradedHitsView,
  type GradedRunSummary,
  hitsTable,
  means
} from "../graded-hits/RetrievalReport.js"
import { type Band, ndcgBand, precisionBand } from "./CourseRetrieval.js"

const proxyNotice = [
  "> ⚠️ **Proxy metrics — no ground truth.** Relevance is the judge's grade, not a human label. NDCG's ideal",
  "> ordering is the judge's own grades sorted descending (\"how close is the ranking to the best ordering of",
  "> what was retrieved\"), and Precision counts grades ≥ 2 as relevant. Courses that were never retrieved are",
  "> unknown, so **true recall (and F1) cannot be computed**. Compare runs on the same test set and judge.",
  ""
].join("\n")

const bandText = (band: Band | undefined) => (band === undefined ? "—" : `${band.level}: ${band.verdict}`)
const maybe = <A>(
  x: number | null | undefined,
  f: (x: number) => A
) => (x === null || x === undefined ? undefined : f(x))

/** A fraction as a percentage. */
const pct = (x: number | null | undefined) => (x === null || x === undefined ? "—" : `${(x * 100).toFixed(1)}%`)

const resultsSection = (s: GradedRunSummary) => {
  const m = means(s)
  const ndcgBandNow = maybe(m["ndcg@10"], ndcgBand)
  const precisionBandNow = maybe(m["precision@10"], precisionBand)
  const flagged = s.extra.flagged["ndcg@10"] ?? 0
  return [
    "## Verdict",
    "",
    `**NDCG@10 ${fixed(m["ndcg@10"], 3)} — ${bandText(ndcgBandNow)}** · **Precision@10 ${
      fixed(m["precision@10"], 3)
    } — ${bandText(precisionBandNow)}**`,
    "",
    `Cases: ${s.cases} (${s.extra.measured} measured${
      s.extra.retrievalFailures.count > 0 ? `, ${s.extra.retrievalFailures.count} retrieval failure(s) left out` : ""
    }${
      s.extra.casesWithFailedJudgments > 0
        ? `; ${s.extra.casesWithFailedJudgments} with a failed judgment have no NDCG / Precision`
        : ""
    }).` +
    (flagged > 0
      ? ` ${flagged} case(s) had no course graded above 0, or no course at all (IDCG = 0): their NDCG is set to 0 and flagged ⚑.`
      : ""),
    "",
    "### Grade distribution",
    "",
    "| Grade | Courses |",
    "|---|---|",
    ...Object.entries(s.extra.grades).sort((a, b) => Number(b[0]) - Number(a[0])).map(([g, c]) => `| ${g} | ${c} |`),
    "",
    "### Interpretation bands",
    "",
    "| NDCG@10 | Level | Verdict |",
    "|---|---|---|",
    "| ≥ 0.9 | Excellent | Near-perfect ranking |",
    "| 0.7–0.9 | Good | Strong ranking quality |",
    "| 0.5–0.7 | Fair | Acceptable, room for improvement |",
    "| < 0.5 | Poor | Needs significant work |",
    "",
    "| Precision@10 | Level | Verdict |",
    "|---|---|---|",
    "| ≥ 0.8 | Excellent | 80% of top 10 are relevant |",
    "| 0.6–0.8 | Good | Most top results are relevant |",
    "| 0.4–0.6 | Fair | Mixed relevance in top results |",
    "| < 0.4 | Poor | Few top results are relevant |",
    ""
  ].join("\n")
}

const value = (r: GradedRecord, k: string) => r.metrics?.[k] ?? null

const caseTable = {
  header: ["#", "Case", "Skill", "Courses", "Avg", "%3", "%0", "NDCG@5", "NDCG@10", "P@5", "P@10", "NDCG@10 band"],
  row: (r: GradedRecord) =>
    r.metrics === null
      ? [
        String(r.ordinal + 1),
        inline(r.caseId, 200),
        inline(r.context.skill ?? "", 60),
        "—",
        "retrieval failed",
        "",
        "",
        "",
        "",
        "",
        "",
        ""
      ]
      : [
        String(r.ordinal + 1),
        inline(r.caseId, 200),
        inline(r.context.skill ?? "", 60),
        String(r.hits.length),
        fixed(value(r, "averageRelevance"), 2),
        pct(value(r, "highlyRelevantRate")),
        pct(value(r, "irrelevantRate")),
        fixed(value(r, "ndcg@5"), 3),
        `${fixed(value(r, "ndcg@10"), 3)}${r.flagged.includes("ndcg@10") ? " ⚑" : ""}`,
        fixed(value(r, "precision@5"), 2),
        fixed(value(r, "precision@10"), 2),
        maybe(value(r, "ndcg@10"), ndcgBand)?.level ?? "—"
      ]
}

const caseMarkdown = (r: GradedRecord) => ({
  title: `${inline(r.caseId, 200)} — ${inline(r.context.skill ?? "", 100)} — NDCG@10 ${fixed(value(r, "ndcg@10"), 3)}`,
  body: [
    `**Question** (line ${r.line}):`,
    "",
    quoteBlock(r.query),
    "",
    hitsTable(
      r,
      "No courses were retrieved.",
      ["Rank", "Course", "Grade", "Reason"],
      (h) => [h.rank, inline(h.label, 100), gradeCell(h.grade), inline(h.reason, 400)]
    ),
    ""
  ].join("\n")
})

export const courseReport = (options: { readonly title: string }): ReportView<GradedRecord, GradedSummary> => ({
  ...gradedHitsView(),
  ...gradedHitsMarkdown({
    title: options.title,
    heuristic:
      "a lexical relevance model: the skill's terms (and the question's other terms) found in the course's name and learning outcomes, each weighted by how many of the other courses retrieved for it hold them",
    proxyNotice,
    itemName: "courses",
    criterionNote: "relevant = 2 or 3",
    resultsSection,
    caseTable,
    caseMarkdown
  }),
  csvHeader: () => [
    "id",
    "question",
    "skill",
    "totalCourses",
    "averageRelevance",
    "highlyRelevantRate",
    "irrelevantRate",
    "ndcg@5",
    "ndcg@10",
    "precision@5",
    "precision@10",
    "ndcg@10 band",
    "precision@10 band",
    "grades",
    "failed judgments",
    "retrieval",
    "latency ms",
    "judge input tokens",
    "judge output tokens",
    "flags"
  ],
  csvRow: (_info: RunInfo, r) => {
    const v = (k: string, digits = 4) => csvMaybeNumber(value(r, k), digits)
    return [
      r.caseId,
      r.query,
      r.context.skill ?? "",
      r.metrics === null ? "" : csvNumber(r.hits.length),
      v("averageRelevance"),
      v("highlyRelevantRate", 2),
      v("irrelevantRate", 2),
      v("ndcg@5"),
      v("ndcg@10"),
      v("precision@5"),
      v("precision@10"),
      maybe(value(r, "ndcg@10"), ndcgBand)?.level ?? "",
      maybe(value(r, "precision@10"), precisionBand)?.level ?? "",
      r.hits.map((h) => (h.grade === null ? "failed" : String(h.grade))).join(" "),
      csvNumber(r.failedJudgments),
      r.retrieval?.status === "failed" ? `failed: ${r.retrieval.error?.message ?? ""}` : "ok",
      csvMaybeNumber(r.latency.total),
      csvNumber(r.tokens.input),
      csvNumber(r.tokens.output),
      flagsCell(r.flagged)
    ]
  }
})
