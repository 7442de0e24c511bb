/**
 * Report view for rubric pipelines (SPEC §2.1): run parameters, criteria with a description of every
 * score value, the per-dimension aggregate table, the lowest-composite rows with the judge's reasons,
 * failed judgments, and per-row details; the CSV is the input columns + one column per dimension +
 * composite + one reason column per dimension.
 */
import { inline } from "../../domain/Markdown.js"
import type { ReportView, RunInfo, RunSummary } from "../../engine/Pipeline.js"
import { type CsvCell, csvMaybeNumber, sourceCells } from "../../report/Csv.js"
import { answerLines, criterionSection, num, questionLines } from "../../report/Sections.js"
import { claimCell, claimTable } from "../correctness/CorrectnessReport.js"
import {
  checksClaims,
  type Dimension,
  type DimensionScore,
  dimensionWeight,
  type Gate,
  type ReferenceClaims,
  referenceClaimSpecs,
  type RubricRecord
} from "./RubricScore.js"
import type { RubricSummary } from "./RubricSummary.js"

/** A case's claims against its reference, in report.md (nothing without a reference): rag-answers and answer-synthesis. */
export const referenceClaimsMarkdown = (claims: ReferenceClaims | undefined): ReadonlyArray<string> =>
  claims === undefined ? [] : [
    `**Claims against the reference** — precision ${num(claims.precision)} · recall ${num(claims.recall)} · F1 ${
      num(claims.f1)
    }`,
    "",
    "Answer claims:",
    "",
    claimTable(claims.answer, "reference"),
    "Reference claims:",
    "",
    claimTable(claims.reference, "answer")
  ]

/** The claim CSV columns (precision, recall, F1, answer claims, reference claims); empty cells for a case without a reference. */
export const referenceClaimsCells = (
  claims: ReferenceClaims | undefined
): ReadonlyArray<CsvCell> => [
  csvMaybeNumber(claims?.precision, 4),
  csvMaybeNumber(claims?.recall, 4),
  csvMaybeNumber(claims?.f1, 4),
  claimCell(claims?.answer),
  claimCell(claims?.reference)
]

const scoreCell = (d: DimensionScore) => d.status === "failed" ? "**failed**" : `${d.score}/${d.max}`

const dimensionTable = (r: RubricRecord) =>
  [
    "| Dimension | Score | Weight | Reason |",
    "|---|---|---|---|",
    ...r.dimensions.map((d) => `| ${d.name} | ${scoreCell(d)} | ${d.weight} | ${inline(d.reason)} |`)
  ].join("\n")

const criteria = (info: RunInfo, dimensions: ReadonlyArray<Dimension>, gate: Gate | undefined) => {
  const lines = ["## Criteria", ""]
  for (const d of dimensions) {
    const r = info.rubrics.find((x) => x.id === d.rubric)
    if (r !== undefined) lines.push(criterionSection(r, `weight ${dimensionWeight(d, r)}`))
  }
  lines.push(
    "### Composite",
    "",
    "Each score is normalised to 0–1 as score / max; the composite is the weighted mean of the normalised scores."
  )
  if (gate !== undefined) {
    const name = info.rubrics.find((r) => r.id === gate.rubric)?.name ?? gate.rubric
    const zero = gate.zeroAt.length > 0 ? `${name} ${gate.zeroAt.join(" or ")} sets the composite to 0` : ""
    const weights = Object.entries(gate.weightAt).map(([s, w]) => `${name} ${s} raises its weight to ${w}`).join("; ")
    lines.push(`Gate: ${[zero, weights].filter((x) => x !== "").join("; ")}.`)
  }
  if (checksClaims(info)) {
    lines.push(
      "With a reference answer, correctness comes from the claim checks: the composite is the mean of the dimensions' composite and the claim F1 (a harmful answer stays 0)."
    )
  }
  lines.push("A failed judgment is never scored: its dimension stays empty and the row has no composite.", "")
  return lines.join("\n")
}

type Summary = RunSummary<RubricRecord, RubricSummary>

const aggregate = (info: RunInfo, dimensions: ReadonlyArray<Dimension>, summary: Summary) => {
  const lines = [
    "## Results by dimension",
    "",
    "| Dimension | Range | Scored | Failed | Distribution |",
    "|---|---|---|---|---|"
  ]
  for (const d of dimensions) {
    const r = info.rubrics.find((x) => x.id === d.rubric)
    const m = summary.metrics[d.rubric]
    if (r === undefined || m === undefined) continue
    const dist = Object.entries(summary.extra.distributions[d.rubric] ?? {}).map(([s, n]) => `${s}: ${n}`).join(" · ")
    lines.push(`| ${r.name} | ${r.min}–${r.max} | ${m.n} | ${summary.cases - m.n} | ${dist} |`)
  }
  const claims = referenceClaimSpecs.flatMap((spec) => {
    const m = summary.metrics[spec.name]
    return m === undefined ? [] : [m]
  })
  if (claims.length > 0) {
    lines.push(
      "",
      `**Claims against the reference answers** (RAGChecker's claim metrics, over the cases with a reference): ` +
        claims.map((m) => `${m.name} ${num(m.mean, 3)} (${m.n} cases)`).join(" · ") + "."
    )
  }
  const c = summary.metrics.composite!
  const histogram = summary.extra.histogram
  lines.push(
    "",
    `**Composite**: mean ${num(c.mean, 3)} (std ${num(c.std, 3)}, min ${num(c.min, 3)}, max ${
      num(c.max, 3)
    }) over ${c.n} rows` +
      (summary.cases > c.n
        ? `; ${summary.cases - c.n} row(s) have no composite because a judgment failed`
        : "") +
      ".",
    "",
    `Gate: ${summary.extra.gated.zeroed} row(s) zeroed as harmful, ${summary.extra.gated.reweighted} row(s) reweighted as questionable.`,
    "",
    "| Composite | " + histogram.map((_, i) => `${(i / 10).toFixed(1)}–${((i + 1) / 10).toFixed(1)}`).join(" | ") +
      " |",
    "|---|" + histogram.map(() => "---").join("|") + "|",
    "| Rows | " + histogram.join(" | ") + " |",
    ""
  )
  return lines.join("\n")
}

const rowBlock = (r: RubricRecord) =>
  [
    ...questionLines(r),
    ...answerLines(r.answer),
    dimensionTable(r),
    "",
    ...referenceClaimsMarkdown(r.claims)
  ].join("\n")

export const rubricReport = (
  options: { readonly dimensions: ReadonlyArray<Dimension>; readonly gate?: Gate | undefined; readonly title: string }
): ReportView<RubricRecord, RubricSummary> => ({
  title: options.title,
  heuristic: "deterministic lexical proxies (term overlap, support in the fragments, length, a harm lexicon)",
  sections: (info, summary) => ({
    before: [criteria(info, options.dimensions, options.gate)],
    after: [aggregate(info, options.dimensions, summary)]
  }),
  caseMarkdown: (_info, r) => ({
    title: `${inline(r.question, 120)} — composite ${num(r.composite, 3)}`,
    body: rowBlock(r)
  }),
  csvHeader: (info) => {
    const names = options.dimensions.map((d) => info.rubrics.find((r) => r.id === d.rubric)?.name ?? d.rubric)
    return [
      ...info.input.columns,
      ...names,
      "Composite",
      ...names.map((name) => `${name} reason`),
      ...(checksClaims(info)
        ? ["Claim precision", "Claim recall", "Claim F1", "Answer claims", "Reference claims"]
        : [])
    ]
  },
  csvRow: (info, r) => [
    ...sourceCells(info.input.columns, r.source),
    ...r.dimensions.map((d) => csvMaybeNumber(d.score)),
    csvMaybeNumber(r.composite, 4),
    ...r.dimensions.map((d) => (d.status === "failed" ? `judge_failed: ${d.reason}` : d.reason)),
    ...(checksClaims(info) ? referenceClaimsCells(r.claims) : [])
  ]
})
