/**
 * Report view of the answer-synthesis pipeline (SPEC §2.2): run parameters, the two rubrics with
 * every score's meaning, the metrics table with pass rates, the low-score analysis (groups, examples
 * with the judge's reasons, recommendations), failed judgments and per-case details. The CSV has one
 * row per case: queryLogId, question, answer, faithfulness, completeness, overall, pass, reasons.
 * Shared sections (run parameters, a rubric's scale, failed judgments) come from `RubricReport`.
 */
import { code } from "../../domain/Markdown.js"
import { inline, quoteBlock } from "../../domain/Markdown.js"
import type { Rubric } from "../../domain/Rubric.js"
import type { ReportView, RunInfo, RunSummary } from "../../engine/Pipeline.js"
import { csvMaybeNumber } from "../../report/Csv.js"
import { answerLines, criterionSection, num, questionLines } from "../../report/Sections.js"
import { referenceClaimsCells, referenceClaimsMarkdown } from "../rubric/RubricReport.js"
import { checksClaims } from "../rubric/RubricScore.js"
import type { LowScoreAnalysis, LowScoreGroup } from "./LowScores.js"
import { defaultConfig, type SynthesisConfig, type SynthesisRecord } from "./SynthesisScore.js"
import type { SynthesisSummary } from "./SynthesisSummary.js"

const pct = (x: number | null) => (x === null ? "—" : `${(x * 100).toFixed(1)}%`)

const passText = (pass: boolean | null) => (pass === null ? "unknown" : pass ? "pass" : "fail")

const rubricOf = (info: RunInfo, id: string): Rubric | undefined => info.rubrics.find((r) => r.id === id)

/** "4 (Mostly true)" using the rubric's own labels; "failed" when the judgment failed. */
const scoreLabel = (rubric: Rubric | undefined, score: number | null) => {
  if (score === null) return "**failed**"
  const label = rubric?.scale.find((v) => v.score === score)?.label
  return label === undefined ? String(score) : `${score} (${label})`
}

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

type Summary = RunSummary<SynthesisRecord, SynthesisSummary>

/** A dimension's row: mean, std, pass rate (its per-case pass metric's mean) with the cases passed, scored, failed. */
const dimensionRow = (summary: Summary, name: string, criterion: string, rate: string, passed: number) => {
  const m = summary.metrics[criterion]
  const n = m?.n ?? 0
  return `| ${name} | ${num(m?.mean ?? null)} | ${num(m?.std ?? null)} | ${
    pct(summary.metrics[rate]?.mean ?? null)
  } (${passed} of ${n}) | ${n} | ${summary.cases - n} |`
}

/** The user's own rubrics (`--rubrics`): judged beside faithfulness and completeness, not part of overall or pass. */
const extraSection = (info: RunInfo, summary: Summary, config: SynthesisConfig): ReadonlyArray<string> => {
  const extra = (config.extra ?? []).flatMap((id) => {
    const r = rubricOf(info, id)
    const m = summary.metrics[id]
    return r === undefined || m === undefined ? [] : [{ r, m }]
  })
  if (extra.length === 0) return []
  return [
    "**Your rubrics** (--rubrics; judged beside the two, not part of overall or the pass verdict):",
    "",
    "| Rubric | Scale | Mean | Normalised (0–1) | Std | Scored | Failed judgments |",
    "|---|---|---|---|---|---|---|",
    ...extra.map(({ m, r }) =>
      `| ${inline(r.name)} (\`${inline(r.id)}\`) | ${r.min}–${r.max} | ${num(m.mean)} | ${
        num(summary.extra.rubrics.normalised[r.id] ?? null)
      } | ${num(m.std)} | ${m.n} | ${summary.cases - m.n} |`
    ),
    ""
  ]
}

const metricsSection = (info: RunInfo, summary: Summary, config: SynthesisConfig) => {
  const x = summary.extra
  const o = summary.metrics.overall!
  const f = rubricOf(info, config.faithfulness)
  const c = rubricOf(info, config.completeness)
  const fd = x.rubrics.distributions[config.faithfulness] ?? {}
  const cd = x.rubrics.distributions[config.completeness] ?? {}
  const scores = [...new Set([...Object.keys(fd), ...Object.keys(cd)].map(Number))].sort((a, b) => b - a)
  const passRate = summary.metrics.overallPassRate?.mean ?? null
  return [
    "## Results by dimension",
    "",
    `| Dimension | Mean | Std | Pass rate (≥ ${x.passAt}) | Scored | Failed judgments |`,
    "|---|---|---|---|---|---|",
    dimensionRow(summary, f?.name ?? "Faithfulness", "faithfulness", "faithfulnessPassRate", x.faithfulnessPassed),
    dimensionRow(summary, c?.name ?? "Completeness", "completeness", "completenessPassRate", x.completenessPassed),
    `| **Overall** | ${num(o.mean)} | ${num(o.std)} | **${pct(passRate)}** (${x.passed} of ${
      x.passed + x.failed
    }) | ${o.n} | — |`,
    "",
    `**Overall pass rate** (both ≥ ${x.passAt}): ${pct(passRate)} — ${x.passed} passed, ${x.failed} failed` +
    (x.undecided > 0 ? `, ${x.undecided} undecided because a judgment failed (not counted in the rate)` : "") +
    `, of ${summary.cases} cases.`,
    "",
    "| Score | " + [f?.name ?? "Faithfulness", c?.name ?? "Completeness"].join(" | ") + " |",
    "|---|---|---|",
    ...scores.map((s) => `| ${s} | ${fd[String(s)] ?? 0} | ${cd[String(s)] ?? 0} |`),
    "",
    ...extraSection(info, summary, config)
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
  return [
    ...questionLines(r, "queryLogId"),
    `**Context** (${r.context.length} item${r.context.length === 1 ? "" : "s"}): ${
      r.context.length === 0 ? "none" : r.context.map((l) => inline(l, 100)).join(" · ")
    }`,
    "",
    ...answerLines(r.answer),
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
    title: options.title,
    heuristic:
      "deterministic lexical proxies (support of the answer's terms in the context items; context terms tied to the user's need with explanatory connectives)",
    caseVerdict: (r) =>
      r.pass === null ? undefined : {
        pass: r.pass,
        why: `faithfulness ${r.faithfulness ?? "—"}, completeness ${r.completeness ?? "—"}: ${
          r.pass ? "both" : "not both"
        } ≥ ${config.passAt}`
      },
    sections: (info, summary) => ({
      before: [rubricsSection(info, config)],
      after: [metricsSection(info, summary, config), lowScoreSection(summary.extra.lowScores)]
    }),
    caseMarkdown: (info, r) => ({
      title: `${inline(r.question, 120)} — ${r.pass === null ? "UNKNOWN" : r.pass ? "PASS" : "FAIL"}, overall ${
        num(r.overall, 1)
      }`,
      body: caseBlock(info, config, r)
    }),
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
