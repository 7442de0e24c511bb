/**
 * report.md, as the HTML page is built: one skeleton for every pipeline, from what the engine's fold
 * holds and what the pipeline declares, with the kind's own sections where they belong.
 *
 *   # title · description · who judged (the heuristic judge says what it measures here)
 *   Run parameters (the run's, then the kind's own rows)
 *   the kind's sections before the metrics (notices, criteria, definitions)
 *   Headline metrics: value on its scale, 95% interval, cases, which way is better, what it is
 *   the kind's sections after the metrics (distributions, claims, latency, cost, analyses)
 *   Failed cases and the lowest cases by the ranking metrics, each as the kind shows a case
 *   Failed judgments (with the judge's raw reply) and the kind's other failures (retrievals)
 *   the kind's per-case table, then the per-case details (bounded by `--details`: see Reporter.ts)
 *
 * Every case text is escaped by the kind's blocks (`domain/Markdown.ts`); the skeleton escapes what
 * it prints itself.
 */
import * as Stream from "effect/Stream"
import type { OutputError } from "../domain/Errors.js"
import { inline } from "../domain/Markdown.js"
import { type MetricSpec, numberText, valueText } from "../domain/Metric.js"
import { thousands } from "../domain/Numbers.js"
import type { ListedFailure, RunInfo } from "../engine/Pipeline.js"
import type { ReportInput } from "../engine/ReportInput.js"
import { judgeSentence, parameterRows, parametersMarkdown } from "./Sections.js"

/** Who judged, as a markdown quote (nothing when nothing is judged): see `Sections.judgeSentence`. */
export const judgeBanner = (info: RunInfo, heuristic: string | undefined): string => {
  const judged = judgeSentence(info, heuristic)
  return judged === undefined
    ? ""
    : `> ${judged.heuristic ? `**${inline(judged.lead)}**` : inline(judged.lead)}${
      judged.rest === "" ? "" : ` ${inline(judged.rest)}`
    }\n\n`
}

const interval = (ci: { readonly lower: number; readonly upper: number } | null | undefined, m: MetricSpec) =>
  ci === null || ci === undefined ? "—" : `${numberText(m, ci.lower, false)}–${numberText(m, ci.upper, false)}`

/** The headline metrics: each value on its scale, its interval and cases (a mean of cases), direction and meaning. */
export const headlineMarkdown = (input: ReportInput): string => {
  const present = input.metricSpecs.filter((m) => m.name in input.metrics)
  // A mean no case has is named once below the table, not listed as a row of dashes.
  const none = present.filter((m) => input.summary.metrics[m.name]?.n === 0)
  const specs = present.filter((m) => !none.includes(m))
  if (specs.length === 0 && none.length === 0) return ""
  return [
    "## Headline metrics",
    "",
    "| Metric | Value | 95% CI | Cases | Better | Meaning |",
    "|---|---|---|---|---|---|",
    ...specs.map((m) => {
      const stats = input.summary.metrics[m.name]
      return `| ${inline(m.name, 200)} | ${inline(valueText(m, input.metrics[m.name]))} | ${interval(stats?.ci, m)} | ${
        stats === undefined ? "—" : thousands(stats.n)
      } | ${m.direction === "none" ? "—" : m.direction} | ${inline(m.description, 160)} |`
    }),
    "",
    ...(none.length === 0 ? [] : [
      `No case has ${
        none.map((m) => inline(m.name, 100)).join(", ")
      }: the test set does not give what they need, or every judgment they need failed.`,
      ""
    ]),
    "A mean is over the cases that have the metric (a case that cannot have it — no reference, a failed judgment — is left out, never counted as 0); its interval is a 95% bootstrap interval of the mean.",
    ""
  ].join("\n")
}

/** A case block: `### heading` then the kind's body. */
const caseSection = (heading: string, body: string) => `### ${heading}\n\n${body}\n`

/** Failed judgments, with the judge's raw reply (the first ones; every one is in judgments.jsonl). */
export const failedJudgmentsMarkdown = (
  failures: ReadonlyArray<ListedFailure>,
  failed: number
): string =>
  failures.length === 0 ? "" : [
    `## Failed judgments (${thousands(failed)})`,
    "",
    "| Line | Case | Criterion | Target | Reason | Raw reply |",
    "|---|---|---|---|---|---|",
    ...failures.map((f) =>
      `| ${f.line ?? ""} | ${inline(f.caseId, 200)} | ${inline(f.criterion ?? "", 200)} | ${
        inline(f.target ?? "", 200)
      } | ${inline(f.reason)} | ${f.raw === undefined ? "—" : `<code>${inline(f.raw, 200)}</code>`} |`
    ),
    failed > failures.length ? `\n(first ${failures.length} listed; all are in judgments.jsonl)` : "",
    ""
  ].join("\n")

/** Failures that are not judgments (failed retrievals): the cases are left out of every mean. */
const otherFailuresMarkdown = (failures: ReadonlyArray<ListedFailure>): string =>
  failures.length === 0 ? "" : [
    `## Failed retrievals (${failures.length} listed)`,
    "",
    "These queries got no hits because the retriever failed; they are left out of every mean (unknown, not 0).",
    "",
    "| Line | Case | Query | Problem |",
    "|---|---|---|---|",
    ...failures.map((f) =>
      `| ${f.line ?? ""} | ${inline(f.caseId, 200)} | ${inline(f.query ?? "", 80)} | ${inline(f.reason, 300)} |`
    ),
    ""
  ].join("\n")

/** The first failed cases and the lowest by the ranking metrics, each as the kind shows a case. */
const casesMarkdown = <R, X>(input: ReportInput<R, X>): string => {
  const { info, summary, view } = input
  const parts: Array<string> = []
  if (summary.failed.length > 0) {
    parts.push(
      `## Failed cases (${thousands(summary.failedCases)})`,
      "",
      `A judgment or the retrieval failed, or the case has no score${
        summary.failedCases > summary.failed.length ? ` (the first ${summary.failed.length} shown)` : ""
      }.`,
      "",
      ...summary.failed.map((r) => {
        const c = view.caseMarkdown(info, r)
        return caseSection(c.title, c.body)
      })
    )
  }
  const rank = input.caseMetrics.rank ?? []
  if (summary.lowest.length > 0 && rank.length > 0) {
    parts.push(
      `## Lowest ${rank.map((m) => inline(m, 100)).join(", then ")} (${summary.lowest.length})`,
      "",
      ...summary.lowest.map((r) => {
        const c = view.caseMarkdown(info, r)
        return caseSection(c.title, c.body)
      })
    )
  }
  return parts.join("\n")
}

/**
 * report.md: the skeleton above, over the records chosen for details with their position in the run
 * (see `Reporter.chooseDetails`).
 */
export const markdownReport = <R, X>(
  input: ReportInput<R, X>,
  records: Stream.Stream<readonly [R, number], OutputError>
): Stream.Stream<string, OutputError> => {
  const { info, summary, view } = input
  const own = view.sections?.(info, summary) ?? {}
  const table = view.caseTable
  return Stream.make(
    `# ${view.title}\n\n`,
    `${info.description}\n\n`,
    judgeBanner(info, view.heuristic),
    parametersMarkdown(parameterRows(info, summary, view.parameters?.(info, summary))) + "\n",
    ...(own.before ?? []).map((s) => s + "\n"),
    headlineMarkdown(input) + "\n",
    ...(own.after ?? []).map((s) => s + "\n"),
    casesMarkdown(input) + "\n",
    failedJudgmentsMarkdown(summary.failures, summary.judgments.failed) + "\n",
    otherFailuresMarkdown(view.caseFailures?.(summary) ?? []) + "\n"
  ).pipe(
    Stream.concat(
      table === undefined ? Stream.empty : Stream.make(
        `## Per-case results\n\n| ${table.header.join(" | ")} |\n|${table.header.map(() => "---").join("|")}|\n`
      ).pipe(
        Stream.concat(records.pipe(Stream.map(([r]) => `| ${table.row(r).join(" | ")} |\n`))),
        Stream.concat(Stream.make("\n"))
      )
    ),
    Stream.concat(Stream.make("## Per-case details\n\n")),
    Stream.concat(records.pipe(Stream.map(([r, ordinal]) => {
      const c = view.caseMarkdown(info, r)
      return caseSection(`${ordinal + 1}. ${c.title}`, c.body)
    })))
  )
}
