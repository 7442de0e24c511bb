/**
 * The report view of a pipeline that declares none: everything from its per-case metrics. report.md
 * shows each case's metrics (the skeleton adds the headline table, the failed and lowest cases and the
 * failures), report.csv one column per metric, report.html its charts and case table — so a new
 * pipeline is an input schema, a judge stage and a score function, and its reports come for free.
 */
import { csvMaybeNumber } from "../domain/CsvCell.js"
import { code, inline } from "../domain/Markdown.js"
import { valueText } from "../domain/Metric.js"
import type { Pipeline, ReportView } from "./Pipeline.js"

export const defaultView = <R, X>(pipeline: Pick<Pipeline<R, X>, "name" | "score">): ReportView<R, X> => {
  const perCase = pipeline.score.perCase
  return {
    title: pipeline.name,
    caseMarkdown: (info, record) => {
      const values = perCase.of(record)
      const rows = perCase.declared(info).map((m) =>
        `| ${inline(m.name, 200)} | ${valueText(m, values.metrics[m.name])} |`
      )
      return {
        title: `${inline(values.caseId, 200)}${values.failed ? " — failed" : ""}`,
        body: [`Line ${values.line}, id ${code(values.caseId)}.`, "", "| Metric | Value |", "|---|---|", ...rows, ""]
          .join("\n")
      }
    },
    csvHeader: (info) => perCase.declared(info).map((m) => m.name),
    csvRow: (info, record) => {
      const values = perCase.of(record).metrics
      return perCase.declared(info).map((m) => csvMaybeNumber(values[m.name]))
    }
  }
}

/** The pipeline's report view, or the default one from its per-case metrics. */
export const viewOf = <R, X>(pipeline: Pick<Pipeline<R, X>, "name" | "score" | "report">): ReportView<R, X> =>
  pipeline.report ?? defaultView(pipeline)
