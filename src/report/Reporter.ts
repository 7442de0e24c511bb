/**
 * Reporters turn a finished run (its summary, and its records streamed back from disk) into files.
 * Each format is a Layer; `--format` chooses which are merged into `Reporters`, so a new format is
 * added without touching stage code.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import { UsageError } from "../domain/Errors.js"
import type { OutputError } from "../domain/Errors.js"
import type { ReportView, RunInfo } from "../engine/Pipeline.js"
import { writeAtomic } from "./Files.js"
import { csvLine, type CsvOptions, safeCsv } from "./Csv.js"

export interface ReportInput<R = unknown, S = unknown> {
  readonly info: RunInfo
  readonly summary: S
  /** Re-readable: each call streams the records again from disk. */
  readonly records: () => Stream.Stream<R, OutputError>
  readonly view: ReportView<R, S>
  /** File name stem, e.g. `report` or `report-iteration-2`. */
  readonly stem: string
}

export interface Reporter {
  readonly format: string
  /** Writes its file(s) into `info.runDir`; returns the paths written. */
  readonly write: (input: ReportInput) => Effect.Effect<ReadonlyArray<string>, OutputError>
}

export class Reporters extends Context.Tag("rag-eval/Reporters")<Reporters, ReadonlyArray<Reporter>>() {}

export const markdown: Reporter = {
  format: "markdown",
  write: (input) => {
    const path = Path.join(input.info.runDir, `${input.stem}.md`)
    return writeAtomic(path, input.view.markdown(input.info, input.summary, input.records())).pipe(Effect.as([path]))
  }
}

/** `<stem>.csv`; formula-like text cells neutralised unless `options.raw` (see `Csv.ts`). */
export const csvReporter = (options: CsvOptions = safeCsv): Reporter => ({
  format: "csv",
  write: (input) => {
    const path = Path.join(input.info.runDir, `${input.stem}.csv`)
    const content = Stream.make(csvLine(input.view.csvHeader(input.info, input.summary), options)).pipe(
      Stream.concat(input.records().pipe(Stream.map((r) => csvLine(input.view.csvRow(input.info, r), options))))
    )
    return writeAtomic(path, content).pipe(Effect.as([path]))
  }
})

export const csv: Reporter = csvReporter()

/** `<stem>.json`: the run, its summary and every record, streamed (never built as one string). */
export const json: Reporter = {
  format: "json",
  write: (input) => {
    const path = Path.join(input.info.runDir, `${input.stem}.json`)
    let first = true
    const content = Stream.make(`{\n"run": ${JSON.stringify(input.info)},\n"summary": ${JSON.stringify(input.summary)},\n"records": [\n`).pipe(
      Stream.concat(input.records().pipe(Stream.map((r) => {
        const sep = first ? "" : ",\n"
        first = false
        return sep + JSON.stringify(r)
      }))),
      Stream.concat(Stream.make("\n]\n}\n"))
    )
    return writeAtomic(path, content).pipe(Effect.as([path]))
  }
}

export const all: ReadonlyArray<Reporter> = [markdown, csv, json]
export { defaultFormats } from "./Formats.js"

/** Parse `--format markdown,csv,json`; `csvRaw` (`--csv-raw`) writes CSV cells without neutralising formulas. */
export const parseFormats = (value: string, options: { readonly csvRaw?: boolean } = {}): Effect.Effect<ReadonlyArray<Reporter>, UsageError> => {
  const names = value.split(",").map((s) => s.trim().toLowerCase()).filter((s) => s.length > 0)
  const known = new Map([markdown, csvReporter({ raw: options.csvRaw === true }), json].map((r) => [r.format, r]))
  known.set("md", markdown)
  const unknown = names.filter((n) => !known.has(n))
  if (names.length === 0 || unknown.length > 0) {
    return Effect.fail(new UsageError({ problem: `--format: unknown format ${unknown.map((u) => `"${u}"`).join(", ") || "(empty)"}; choose from markdown, csv, json` }))
  }
  return Effect.succeed([...new Set(names.map((n) => known.get(n)!))])
}

export const layer = (reporters: ReadonlyArray<Reporter>) => Layer.succeed(Reporters, reporters)
