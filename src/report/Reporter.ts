/**
 * Reporters turn a finished run (its summary, and its records streamed back from disk) into files.
 * Each format is a Layer; `--format` chooses which are merged into `Reporters`, so a new format is
 * added without touching stage code.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import { type OutputError, UsageError } from "../domain/Errors.js"
import { inline } from "../domain/Markdown.js"
import { thousands } from "../domain/Numbers.js"
import { type ChosenDetails, DEFAULT_DETAILS, detailsChooser } from "../engine/Details.js"
import { type LineReport, type LinesInput, type Reporter, Reporters, type ReportInput } from "../engine/ReportInput.js"
import { runWithoutPrompts } from "../engine/Summary.js"
import { writeAtomic } from "../io/Files.js"
import { csvLine, csvNumber, type CsvOptions, safeCsv } from "./Csv.js"
import { FORMATS } from "./Formats.js"
import { markdownReport } from "./MarkdownReport.js"

export type { ReportInput } from "../engine/ReportInput.js"

export { type Reporter, Reporters } from "../engine/ReportInput.js"

export { DEFAULT_DETAILS } from "../engine/Details.js"

/**
 * `<stem>.md`. Bounded: the view's per-case sections get at most `--details N` cases (the failed,
 * then the lowest by the headline metric, in input order); the page ends saying how many were left
 * out and where they are, so a 100k-row run's report.md stays well under 1 MB. The engine hands the
 * choice over (`input.chosen`, folded while it wrote the records) and the chosen records are the only
 * ones decoded (`input.recordsAt`); given neither, the records are read to choose, then again.
 */
export const markdown: Reporter = {
  format: "markdown",
  write: (input) =>
    Effect.gen(function*() {
      const path = Path.join(input.info.runDir, `${input.stem}.md`)
      const chosen = input.chosen ?? (yield* chooseDetails(input, input.details ?? DEFAULT_DETAILS))
      const records = chosen.ordinals === undefined
        ? input.records().pipe(Stream.zipWithIndex)
        : input.recordsAt !== undefined
        ? input.recordsAt(chosen.ordinals)
        : input.records().pipe(Stream.zipWithIndex, Stream.filter(([, i]) => chosen.ordinals!.has(i)))
      const banner = input.partial === undefined ? "" : `> **Partial report**: ${inline(input.partial, 1000)}\n\n`
      const trailer = chosen.ordinals === undefined
        ? ""
        : `\n---\n\n**Details for ${thousands(chosen.ordinals.size)} of ${
          thousands(chosen.total)
        } cases** (--details ${chosen.limit}: the failed first, then the lowest${
          chosen.by === undefined ? "" : ` by ${inline(chosen.by)}`
        }); ` +
          `the other ${
            thousands(chosen.total - chosen.ordinals.size)
          } are left out here. Every case is in ${input.stem}.csv (and ${input.stem}.json / ${input.stem}.html with --format json,html).\n`
      const content = Stream.make(banner).pipe(
        Stream.concat(markdownReport(input, records)),
        Stream.concat(Stream.make(trailer))
      )
      yield* writeAtomic(path, content)
      return [path]
    })
}

/** report.md's choice of cases (`Details.detailsChooser`) over the records read back. */
export const chooseDetails = (input: ReportInput, limit: number): Effect.Effect<ChosenDetails, OutputError> =>
  Effect.suspend(() => {
    const chooser = detailsChooser(limit, input.caseMetrics.rank ?? [])
    return input.records().pipe(
      Stream.runForEach((record) => Effect.sync(() => chooser.add(input.caseMetrics.of(record)))),
      Effect.map(() => chooser.result())
    )
  })

/**
 * `<stem>.csv`; formula-like text cells neutralised unless `options.raw` (see `Csv.ts`). Every row
 * starts with the case id and its line in the input (`case_id`, `line`), whatever the input had.
 */
export const csvReporter = (options: CsvOptions = safeCsv): Reporter => {
  const lines = (input: LinesInput): LineReport => ({
    path: Path.join(input.info.runDir, `${input.stem}.csv`),
    header: csvLine(["case_id", "line", ...input.view.csvHeader(input.info)], options),
    line: (record, c) =>
      csvLine(
        [c.caseId, c.line === undefined ? "" : csvNumber(c.line), ...input.view.csvRow(input.info, record)],
        options
      )
  })
  return {
    format: "csv",
    lines,
    write: (input) => {
      const report = lines(input)
      const content = Stream.make(report.header).pipe(
        Stream.concat(input.records().pipe(Stream.map((r) => report.line(r, input.caseMetrics.of(r)))))
      )
      return writeAtomic(report.path, content).pipe(Effect.as([report.path]))
    }
  }
}

export const csv: Reporter = csvReporter()

/** `<stem>.json`: the run, its summary and every record with its case metrics (`metrics`), streamed (never built as one string). */
export const json: Reporter = {
  format: "json",
  write: (input) => {
    const path = Path.join(input.info.runDir, `${input.stem}.json`)
    let first = true
    const content = Stream.make(
      `{\n${input.partial === undefined ? "" : `"partial": ${JSON.stringify(input.partial)},\n`}"run": ${
        JSON.stringify(runWithoutPrompts(input.info))
      },\n"summary": ${JSON.stringify(input.summary)},\n"records": [\n`
    ).pipe(
      Stream.concat(
        input.records().pipe(Stream.map((r) => {
          const sep = first ? "" : ",\n"
          first = false
          return sep + JSON.stringify({ ...(r as object), metrics: input.caseMetrics.of(r).metrics })
        }))
      ),
      Stream.concat(Stream.make("\n]\n}\n"))
    )
    return writeAtomic(path, content).pipe(Effect.as([path]))
  }
}

/**
 * `<stem>.html`: one self-contained page with charts (`Html.ts`). Loaded on use, so the CLI's
 * start-up and the other formats never load the charting library.
 */
export const html: Reporter = {
  format: "html",
  write: (input) => Effect.flatMap(Effect.promise(() => import("./Html.js")), (m) => m.writeHtml(input)),
  writeFinal: (info, final, partial) =>
    Effect.flatMap(Effect.promise(() => import("./Html.js")), (m) => m.writeFinalHtml(info, final, partial))
}

/** The text formats (what library callers and the test helpers write by default); add `html` for the page with charts. */
export const all: ReadonlyArray<Reporter> = [markdown, csv, json]
export { defaultFormats } from "./Formats.js"

/** Parse `--format markdown,csv,json`; `csvRaw` (`--csv-raw`) writes CSV cells without neutralising formulas. */
export const parseFormats = (
  value: string,
  options: { readonly csvRaw?: boolean } = {}
): Effect.Effect<ReadonlyArray<Reporter>, UsageError> => {
  const names = value.split(",").map((s) => s.trim().toLowerCase()).filter((s) => s.length > 0)
  const known = new Map([markdown, csvReporter({ raw: options.csvRaw === true }), json, html].map((r) => [r.format, r]))
  known.set("md", markdown)
  const unknown = names.filter((n) => !known.has(n))
  if (names.length === 0 || unknown.length > 0) {
    return Effect.fail(
      new UsageError({
        problem: `--format: unknown format ${unknown.map((u) => `"${u}"`).join(", ") || "(empty)"}; choose from ${
          FORMATS.join(", ")
        }`
      })
    )
  }
  return Effect.succeed([...new Set(names.map((n) => known.get(n)!))])
}

export const layer = (reporters: ReadonlyArray<Reporter>) => Layer.succeed(Reporters, reporters)
