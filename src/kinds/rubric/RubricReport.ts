/**
 * Report view for rubric pipelines (SPEC §2.1): run parameters, criteria with a description of every
 * score value, the per-dimension aggregate table, the lowest-composite rows with the judge's reasons,
 * failed judgments, and per-row details; the CSV is the input columns + one column per dimension +
 * composite + one reason column per dimension.
 */
import * as Stream from "effect/Stream"
import { type Cost, cost, formatUsd, savingNote } from "../../pricing/Prices.js"
import type { Rubric } from "../../domain/Rubric.js"
import type { ReportView, RunInfo } from "../../engine/Pipeline.js"
import type { Dimension, DimensionScore, Gate, RubricRecord } from "./RubricScore.js"
import type { RubricSummary } from "./RubricSummary.js"
import { thousands } from "../../domain/Numbers.js"
import { csvMaybeNumber } from "../../report/Csv.js"
import { code, inline, quoteBlock } from "../../report/Markdown.js"

export { inline, quoteBlock } from "../../report/Markdown.js"

export const num = (x: number | null | undefined, digits = 2) => (x === null || x === undefined ? "—" : x.toFixed(digits))

const scoreCell = (d: DimensionScore) => d.status === "failed" ? "**failed**" : `${d.score}/${d.max}`

const dimensionTable = (r: RubricRecord) =>
  [
    "| Dimension | Score | Weight | Reason |",
    "|---|---|---|---|",
    ...r.dimensions.map((d) => `| ${d.name} | ${scoreCell(d)} | ${d.weight} | ${inline(d.reason)} |`)
  ].join("\n")

/** The cost row, with the cached share and the saving of the Batch API and the prompt cache when there is one. */
const costRow = (c: Cost) => {
  const note = savingNote(c)
  return `| Cost | ${formatUsd(c.usd)}${note === "" ? "" : ` (${note})`} |`
}

export const runParameters = (info: RunInfo, summary: Pick<RubricSummary, "judgments" | "tokens">) => {
  const params = inline(Object.entries(info.judge.params).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${String(v)}`).join(", "))
  return [
    "## Run parameters",
    "",
    "| Parameter | Value |",
    "|---|---|",
    `| Pipeline | ${inline(info.pipeline)} |`,
    `| Run id | ${inline(info.runId)} |`,
    `| Input | ${inline(info.input.path)} (${info.input.rows} rows, sha256 ${info.input.sha256.slice(0, 12)}…) |`,
    `| Cases evaluated | ${info.input.cases}${info.limit === undefined ? "" : ` (--limit ${info.limit})`} |`,
    `| Judge | ${inline(info.judge.label)} |`,
    `| Provider / model | ${inline(info.judge.provider)} / ${inline(info.judge.model)} |`,
    `| Sampling | ${params === "" ? "—" : params} |`,
    `| Iterations | ${info.iterations} |`,
    `| Judgments | ${summary.judgments.ok} ok, ${summary.judgments.failed} failed |`,
    `| Tokens | ${thousands(summary.tokens.input)} in, ${thousands(summary.tokens.output)} out |`,
    costRow(cost(summary.tokens, info.price ?? undefined)),
    ""
  ].join("\n")
}

/** One rubric: heading with its range (and `note`), description, every score's meaning, prompt hash. */
export const criterionSection = (r: Rubric, note?: string) =>
  [
    `### ${r.name} (${r.min}–${r.max}${note === undefined ? "" : `, ${note}`})`,
    "",
    r.description,
    "",
    "| Score | Label | Meaning |",
    "|---|---|---|",
    ...[...r.scale].sort((a, b) => b.score - a.score).map((v) => `| ${v.score} | ${v.label} | ${inline(v.description, 1000)} |`),
    "",
    `<sub>prompt \`${r.id}\` v${r.version}, sha256 ${r.hash}</sub>`,
    ""
  ].join("\n")

const criteria = (info: RunInfo, dimensions: ReadonlyArray<Dimension>, gate: Gate | undefined) => {
  const lines = ["## Criteria", ""]
  for (const d of dimensions) {
    const r = info.rubrics.find((x) => x.id === d.rubric)
    if (r !== undefined) lines.push(criterionSection(r, `weight ${d.weight}`))
  }
  lines.push("### Composite", "", "Each score is normalised to 0–1 as score / max; the composite is the weighted mean of the normalised scores.")
  if (gate !== undefined) {
    const name = info.rubrics.find((r) => r.id === gate.rubric)?.name ?? gate.rubric
    const zero = gate.zeroAt.length > 0 ? `${name} ${gate.zeroAt.join(" or ")} sets the composite to 0` : ""
    const weights = Object.entries(gate.weightAt).map(([s, w]) => `${name} ${s} raises its weight to ${w}`).join("; ")
    lines.push(`Gate: ${[zero, weights].filter((x) => x !== "").join("; ")}.`)
  }
  lines.push("A failed judgment is never scored: its dimension stays empty and the row has no composite.", "")
  return lines.join("\n")
}

const aggregate = (summary: RubricSummary) => {
  const lines = [
    "## Results by dimension",
    "",
    "| Dimension | Range | Mean | Mean (0–1) | Std | Scored | Failed | Distribution |",
    "|---|---|---|---|---|---|---|---|"
  ]
  for (const d of summary.dimensions) {
    const dist = Object.entries(d.distribution).map(([s, n]) => `${s}: ${n}`).join(" · ")
    lines.push(`| ${d.name} | ${d.min}–${d.max} | ${num(d.mean)} | ${num(d.meanNormalised)} | ${num(d.std)} | ${d.n} | ${d.failed} | ${dist} |`)
  }
  const c = summary.composite
  lines.push(
    "",
    `**Composite**: mean ${num(c.mean, 3)} (std ${num(c.std, 3)}, min ${num(c.min, 3)}, max ${num(c.max, 3)}) over ${c.n} rows` +
      (c.missing > 0 ? `; ${c.missing} row(s) have no composite because a judgment failed` : "") + ".",
    "",
    `Gate: ${summary.gated.zeroed} row(s) zeroed as harmful, ${summary.gated.reweighted} row(s) reweighted as questionable.`,
    "",
    "| Composite | " + c.histogram.map((_, i) => `${(i / 10).toFixed(1)}–${((i + 1) / 10).toFixed(1)}`).join(" | ") + " |",
    "|---|" + c.histogram.map(() => "---").join("|") + "|",
    "| Rows | " + c.histogram.join(" | ") + " |",
    ""
  )
  return lines.join("\n")
}

const rowBlock = (r: RubricRecord, heading: string) =>
  [
    `### ${heading}`,
    "",
    `**Question** (line ${r.line}, id ${code(r.caseId)}):`,
    "",
    quoteBlock(r.question),
    "",
    "**Answer:**",
    "",
    quoteBlock(r.answer === undefined || r.answer === "" ? "(empty)" : r.answer),
    "",
    dimensionTable(r),
    ""
  ].join("\n")

const lowest = (summary: RubricSummary) =>
  summary.lowest.length === 0 ? "" : [
    `## Lowest composite scores (${summary.lowest.length})`,
    "",
    ...summary.lowest.map((r) => rowBlock(r, `Composite ${num(r.composite, 3)} — ${inline(r.question, 120)}`))
  ].join("\n")

/** The failed judgments table (empty text when none failed). */
export const failures = (summary: Pick<RubricSummary, "failures" | "judgments">) =>
  summary.failures.length === 0 ? "" : [
    `## Failed judgments (${summary.judgments.failed})`,
    "",
    "| Line | Case | Dimension | Reason | Raw reply |",
    "|---|---|---|---|---|",
    ...summary.failures.map((f) => `| ${f.line} | ${inline(f.caseId, 200)} | ${inline(f.criterion, 200)} | ${inline(f.reason)} | ${f.raw === undefined ? "—" : `<code>${inline(f.raw, 200)}</code>`} |`),
    summary.judgments.failed > summary.failures.length ? `\n(first ${summary.failures.length} listed; all are in judgments.jsonl)` : "",
    ""
  ].join("\n")

export const rubricReport = (options: { readonly dimensions: ReadonlyArray<Dimension>; readonly gate?: Gate | undefined; readonly title: string }): ReportView<RubricRecord, RubricSummary> => ({
  markdown: (info, summary, records) =>
    Stream.make(
      `# ${options.title}\n\n`,
      `${info.description}\n\n`,
      info.judge.provider === "heuristic"
        ? `> **Judged by the heuristic judge** — deterministic lexical proxies (term overlap, support in the fragments, length, a harm lexicon), not an LLM. Use an LLM provider for real judgments.\n\n`
        : `> Judged by ${inline(info.judge.label)}.\n\n`,
      runParameters(info, summary) + "\n",
      criteria(info, options.dimensions, options.gate) + "\n",
      aggregate(summary) + "\n",
      lowest(summary) + "\n",
      failures(summary) + "\n",
      "## Per-row details\n\n"
    ).pipe(Stream.concat(records.pipe(Stream.map((r) =>
      rowBlock(r, `${r.ordinal + 1}. ${inline(r.question, 120)} — composite ${num(r.composite, 3)}${r.iteration > 1 ? ` (iteration ${r.iteration})` : ""}`) + "\n"
    )))),
  csvHeader: (info, summary) => [
    ...info.input.columns,
    ...summary.dimensions.map((d) => d.name),
    "Composite",
    ...summary.dimensions.map((d) => `${d.name} reason`)
  ],
  csvRow: (info, r) => {
    const source = info.input.columns.map((c) => {
      const v = r.source[c]
      return v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v)
    })
    return [
      ...source,
      ...r.dimensions.map((d) => csvMaybeNumber(d.score)),
      csvMaybeNumber(r.composite, 4),
      ...r.dimensions.map((d) => (d.status === "failed" ? `judge_failed: ${d.reason}` : d.reason))
    ]
  }
})
