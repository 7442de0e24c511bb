/**
 * Report view of the answer-synthesis pipeline (SPEC §2.2): run parameters, the two rubrics with
 * every score's meaning, the metrics table with pass rates, the low-score analysis (groups, examples
 * with the judge's reasons, recommendations), failed judgments and per-case details. The CSV has one
 * row per case: queryLogId, question, answer, faithfulness, completeness, overall, pass, reasons.
 * Shared sections (run parameters, a rubric's scale, failed judgments) come from `RubricReport`.
 */
import * as Stream from "effect/Stream"
import { code } from "../../domain/Markdown.js"
import { inline, quoteBlock } from "../../domain/Markdown.js"
import type { Rubric } from "../../domain/Rubric.js"
import type { ReportView, RunInfo } from "../../engine/Pipeline.js"
import { csvMaybeNumber } from "../../report/Csv.js"
import { criterionSection, failures, num, runParameters } from "../../report/Sections.js"
import { referenceClaimsCells, referenceClaimsMarkdown } from "../rubric/RubricReport.js"
import { checksClaims } from "../rubric/RubricScore.js"
import type { LowScoreAnalysis, LowScoreGroup } from "./LowScores.js"
import { defaultConfig, type SynthesisConfig, type SynthesisRecord } from "./SynthesisScore.js"
import type { DimensionMetrics, SynthesisSummary } from "./SynthesisSummary.js"

const pct = (x: number | null) => (x === null ? "—" : `${(x * 100).toFixed(1)}%`)

const passText = (pass: boolean | null) => (pass === null ? "unknown" : pass ? "pass" : "fail")

const rubricOf = (info: RunInfo, id: string): Rubric | undefined => info.rubrics.find((r) => r.id === id)

/** "4 (Mostly true)" using the rubric's own labels; "failed" when the judgment failed. */
const scoreLabel = (rubric: Rubric | undefined, score: number | null) => {
  if (score === null) return "**failed**"
  const label = rubric?.scale.find((v) => v.score === score)?.label
  return label === undefined ? String(score) : `${score} (${label})`
}

const banner = (info: RunInfo) =>
  info.judge.provider === "heuristic"
    ? "> **Judged by the heuristic judge** — deterministic lexical proxies (support of the answer's terms in the context items; context terms tied to the user's need with explanatory connectives), not an LLM. Use an LLM provider for real judgments.\n\n"
    : `> Judged by ${inline(info.judge.label)}.\n\n`

const rubricsSection = (info: RunInfo, config: SynthesisConfig) => {
  const lines = ["## Rubrics", ""]
  const f = rubricOf(info, config.faithfulness)
  const c = rubricOf(info, config.completeness)
  if (f !== undefined) lines.push(criterionSection(f, `safety check, passes at ≥ ${config.passAt}`))
  if (c !== undefined) lines.push(criterionSection(c, `quality check, passes at ≥ ${config.passAt}`))
  lines.push(
    "### Overall score and pass rule",
    "",
    `Overall = (faithfulness + completeness) / 2. A case **passes** when faithfulness ≥ ${config.passAt} **and** completeness ≥ ${config.passAt}.`,
    "A failed judgment is never scored: the case has no overall score, and its pass is *unknown* (neither a pass nor a fail) unless its other score already fails it.",
    ""
  )
  return lines.join("\n")
}

const dimensionRow = (name: string, d: DimensionMetrics) =>
  `| ${name} | ${num(d.mean)} | ${num(d.std)} | ${pct(d.passRate)} (${d.passed} of ${d.n}) | ${d.n} | ${d.failed} |`

/** The user's own rubrics (`--rubrics`): judged beside faithfulness and completeness, not part of overall or pass. */
const extraSection = (summary: SynthesisSummary, config: SynthesisConfig): ReadonlyArray<string> => {
  const extra = summary.dimensions.filter((d) => config.extra?.includes(d.criterion) === true)
  if (extra.length === 0) return []
  return [
    "**Your rubrics** (--rubrics; judged beside the two, not part of overall or the pass verdict):",
    "",
    "| Rubric | Scale | Mean | Normalised (0–1) | Std | Scored | Failed judgments |",
    "|---|---|---|---|---|---|---|",
    ...extra.map((d) =>
      `| ${inline(d.name)} (\`${inline(d.criterion)}\`) | ${d.min}–${d.max} | ${num(d.mean)} | ${
        num(d.meanNormalised)
      } | ${num(d.std)} | ${d.n} | ${d.failed} |`
    ),
    ""
  ]
}

const metricsSection = (info: RunInfo, summary: SynthesisSummary, config: SynthesisConfig) => {
  const m = summary.metrics
  const o = m.overall
  const f = rubricOf(info, config.faithfulness)
  const c = rubricOf(info, config.completeness)
  const dist = (criterion: string) => summary.dimensions.find((d) => d.criterion === criterion)?.distribution ?? {}
  const fd = dist(config.faithfulness)
  const cd = dist(config.completeness)
  const scores = [...new Set([...Object.keys(fd), ...Object.keys(cd)].map(Number))].sort((a, b) => b - a)
  return [
    "## Metrics",
    "",
    `| Dimension | Mean | Std | Pass rate (≥ ${m.passAt}) | Scored | Failed judgments |`,
    "|---|---|---|---|---|---|",
    dimensionRow(f?.name ?? "Faithfulness", m.faithfulness),
    dimensionRow(c?.name ?? "Completeness", m.completeness),
    `| **Overall** | ${num(o.mean)} | ${num(o.std)} | **${pct(o.passRate)}** (${o.passed} of ${
      o.passed + o.failed
    }) | ${o.n} | — |`,
    "",
    `**Overall pass rate** (both ≥ ${m.passAt}): ${pct(o.passRate)} — ${o.passed} passed, ${o.failed} failed` +
    (o.unknown > 0 ? `, ${o.unknown} undecided because a judgment failed (not counted in the rate)` : "") +
    `, of ${m.cases} cases.`,
    "",
    "| Score | " + [f?.name ?? "Faithfulness", c?.name ?? "Completeness"].join(" | ") + " |",
    "|---|---|---|",
    ...scores.map((s) => `| ${s} | ${fd[String(s)] ?? 0} | ${cd[String(s)] ?? 0} |`),
    "",
    ...extraSection(summary, config)
  ].join("\n")
}

const exampleBlock = (g: LowScoreGroup, e: LowScoreGroup["examples"][number], i: number) =>
  [
    `${i + 1}. **${inline(e.question, 200)}** — ${code(e.caseId)} (line ${e.line}${
      e.iteration > 1 ? `, iteration ${e.iteration}` : ""
    }; faithfulness ${e.faithfulness ?? "failed"}, completeness ${e.completeness ?? "failed"})`,
    "",
    quoteBlock(e.answer === "" ? "(empty answer)" : e.answer).split("\n").map((l) => `   ${l}`).join("\n"),
    "",
    `   Judge (${g.dimension} ${e.score}): ${inline(e.reason, 600)}`,
    ""
  ].join("\n")

const groupBlock = (g: LowScoreGroup) => {
  const byScore = Object.entries(g.byScore).map(([s, n]) => `${s}: ${n}`).join(" · ")
  return [
    `### ${g.label} — ${g.count} case${g.count === 1 ? "" : "s"}`,
    "",
    g.description + (g.dimension === "completeness" && byScore !== "" ? ` By score: ${byScore}.` : ""),
    "",
    "**Recommendations**",
    "",
    ...g.recommendations.map((r) => `- ${r}`),
    "",
    `**Examples** (${g.examples.length} of ${g.count})`,
    "",
    ...g.examples.map((e, i) => exampleBlock(g, e, i))
  ].join("\n")
}

const lowScoreSection = (a: LowScoreAnalysis) => {
  const lines = ["## Low-score analysis", ""]
  if (a.failed === 0) {
    lines.push(
      a.cases === 0
        ? "No cases were evaluated."
        : `No case failed (${a.cases} evaluated${a.unknown > 0 ? `, ${a.unknown} undecided` : ""}).`,
      ""
    )
    return lines.join("\n")
  }
  lines.push(
    `${a.failed} of ${a.cases} cases failed (a score below ${a.passAt}). A case appears in every group it falls in.`,
    "",
    "| Failure type | Cases | Share of cases |",
    "|---|---|---|",
    ...a.groups.map((g) => `| ${g.label} | ${g.count} | ${pct(a.cases === 0 ? null : g.count / a.cases)} |`),
    "",
    `Patterns: ${a.patterns.persuasiveButWrong} persuasive but wrong (low faithfulness, good completeness) · ` +
      `${a.patterns.accurateButUnhelpful} accurate but unhelpful (good faithfulness, low completeness) · ${a.patterns.both} low on both.`,
    "",
    ...a.groups.filter((g) => g.count > 0).map(groupBlock)
  )
  return lines.join("\n")
}

const caseBlock = (info: RunInfo, config: SynthesisConfig, r: SynthesisRecord) => {
  const f = rubricOf(info, config.faithfulness)
  const c = rubricOf(info, config.completeness)
  const verdict = r.pass === null ? "UNKNOWN" : r.pass ? "PASS" : "FAIL"
  return [
    `### ${r.ordinal + 1}. ${inline(r.question, 120)} — ${verdict}, overall ${num(r.overall, 1)}${
      r.iteration > 1 ? ` (iteration ${r.iteration})` : ""
    }`,
    "",
    `**Question** (line ${r.line}, queryLogId ${code(r.caseId)}):`,
    "",
    quoteBlock(r.question),
    "",
    `**Context** (${r.context.length} item${r.context.length === 1 ? "" : "s"}): ${
      r.context.length === 0 ? "none" : r.context.map((l) => inline(l, 100)).join(" · ")
    }`,
    "",
    "**Answer:**",
    "",
    quoteBlock(r.answer === undefined || r.answer === "" ? "(empty)" : r.answer),
    "",
    "| Dimension | Score | Reason |",
    "|---|---|---|",
    `| ${f?.name ?? "Faithfulness"} | ${scoreLabel(f, r.faithfulness)} | ${inline(r.reasons.faithfulness)} |`,
    `| ${c?.name ?? "Completeness"} | ${scoreLabel(c, r.completeness)} | ${inline(r.reasons.completeness)} |`,
    "",
    ...referenceClaimsMarkdown(r.claims)
  ].join("\n")
}

const reasonCell = (r: SynthesisRecord, criterion: string, reason: string) =>
  r.dimensions.find((d) => d.criterion === criterion)?.status === "ok" ? reason : `judge_failed: ${reason}`

export const synthesisReport = (
  options: { readonly title: string; readonly config?: SynthesisConfig | undefined }
): ReportView<SynthesisRecord, SynthesisSummary> => {
  const config = options.config ?? defaultConfig
  return {
    headline: "overall",
    failures: (summary) => ({ judgments: summary.failures, retrievals: [] }),
    caseVerdict: (r) =>
      r.pass === null ? undefined : {
        pass: r.pass,
        why: `faithfulness ${r.faithfulness ?? "—"}, completeness ${r.completeness ?? "—"}: ${
          r.pass ? "both" : "not both"
        } ≥ ${config.passAt}`
      },
    markdown: (info, summary, records) =>
      Stream.make(
        `# ${options.title}\n\n`,
        `${info.description}\n\n`,
        banner(info),
        runParameters(info, summary) + "\n",
        rubricsSection(info, config) + "\n",
        metricsSection(info, summary, config) + "\n",
        lowScoreSection(summary.lowScores) + "\n",
        failures(summary) + "\n",
        "## Per-case details\n\n"
      ).pipe(Stream.concat(records.pipe(Stream.map((r) => caseBlock(info, config, r) + "\n")))),
    csvHeader: (info) => [
      "queryLogId",
      "question",
      "answer",
      "faithfulness",
      "completeness",
      "overall",
      "pass",
      "faithfulness reason",
      "completeness reason",
      ...(checksClaims(info)
        ? ["claim precision", "claim recall", "claim F1", "answer claims", "reference claims"]
        : [])
    ],
    csvRow: (info, r) => [
      r.caseId,
      r.question,
      r.answer ?? "",
      csvMaybeNumber(r.faithfulness),
      csvMaybeNumber(r.completeness),
      csvMaybeNumber(r.overall),
      passText(r.pass),
      reasonCell(r, config.faithfulness, r.reasons.faithfulness),
      reasonCell(r, config.completeness, r.reasons.completeness),
      ...(checksClaims(info) ? referenceClaimsCells(r.claims) : [])
    ]
  }
}
