/**
 * The HTML report (`--format html`): one self-contained file a team can open and share — inline CSS,
 * inline SVG charts (see `Charts.ts`), a few KB of inline script for the case table, and no request
 * of any kind when opened. Works for every pipeline from what it declares — its per-case metrics
 * (range, direction) and headline metric, its headline metrics, its failures and flags, the text
 * cells of its CSV, and its `caseDetail` (per-hit text, grade and reason…) — so a new pipeline gets
 * it for free. Case text is escaped everywhere (the building blocks are in `HtmlParts.ts`).
 *
 * Triage: failing cases (a failed judgment or retrieval, no score) are red and flagged ones (a metric
 * set by convention) amber, in the case table and in the folded case blocks; "only failing" hides the
 * rest; each table row links to its case's block, which holds what the view shows of the case.
 *
 * Size: the case table holds every case up to `TABLE_ALL`; beyond that the failed cases, the lowest
 * by the headline metric and a seeded random sample (the page says so) — a 100k-row run stays a few
 * MB; every case is in report.csv / report.json.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { CaseDetail, Status } from "../domain/CaseDetail.js"
import { OutputError } from "../domain/Errors.js"
import { type MetricSpec, rangeText, valueText } from "../domain/Metric.js"
import { CalibrationFile, readJsonFile } from "../domain/RunFiles.js"
import { byNumber, Lowest } from "../engine/CaseFold.js"
import type { FinalMetrics } from "../engine/Iterations.js"
import type { RunInfo } from "../engine/Pipeline.js"
import type { ReportInput } from "../engine/ReportInput.js"
import { writeFileAtomic } from "../io/Files.js"
import { mulberry32Floats } from "../stats/Paired.js"
import { cellText } from "./CaseRows.js"
import { confusionHeatmap, distribution, groupedBars, histogram, valueBars } from "./Charts.js"
import {
  caseBlock,
  caseLink,
  cut as cutTo,
  esc,
  figure,
  filterControls,
  fmt,
  legend,
  page,
  statusAttr,
  statusBadge,
  table
} from "./HtmlParts.js"
import { judgeSentence, parameterRows } from "./Sections.js"

export { distribution } from "./Charts.js"
export { esc } from "./HtmlParts.js"

/** Cases shown all when there are at most this many; beyond, a sample (see the module comment). */
export const TABLE_ALL = 2000
const TABLE_LOWEST = 300
const TABLE_FAILED = 300
const TABLE_SAMPLE = 700
const SAMPLE_SEED = 20241124
const CELL_MAX = 200
const LOWEST_SHOWN = 10
const BARS_SHOWN = 30
const CHARTS_MAX = 24
/**
 * The case blocks' HTML stops growing past this many characters: later blocks keep their summary
 * line (id, status, headline value) and say where the rest is, so a run of long hits stays a page a
 * browser opens quickly (2,000 cases of 10 hits with 1,000-character texts would be ~25 MB).
 */
export const DETAILS_BUDGET = 6_000_000

const cut = (text: string, max = CELL_MAX) => cutTo(text, max)

interface Row {
  readonly ordinal: number
  readonly caseId: string
  readonly line: number | undefined
  /** The declared per-case metrics' values, in declaration order. */
  readonly values: ReadonlyArray<number | null>
  /** The view's text cells (its CSV's text columns). */
  readonly texts: ReadonlyArray<string>
  readonly failed: boolean
  /** What is set by convention for this case, one sentence each (the view's `caseFlags`). */
  readonly flags: ReadonlyArray<string>
  /** The pipeline's own pass/fail verdict (the view's `caseVerdict`), when it has one. */
  readonly verdict: { readonly pass: boolean; readonly why: string } | undefined
}

/**
 * Failing (a failed judgment or retrieval, no score, or the pipeline's verdict says fail), flagged (a
 * metric set by convention), passing (the pipeline's verdict), or none of these.
 */
const statusOf = (row: Row): Status =>
  row.failed || row.verdict?.pass === false
    ? "fail"
    : row.flags.length > 0
    ? "warn"
    : row.verdict?.pass === true
    ? "pass"
    : "none"

const whyOf = (row: Row): string =>
  row.failed
    ? "a judgment or the retrieval failed, or the case has no score"
    : [...(row.verdict === undefined ? [] : [row.verdict.why]), ...row.flags].join("; ")

interface Collected {
  readonly metrics: ReadonlyArray<MetricSpec>
  /** Header of the text columns (the CSV's columns that hold text). */
  readonly textHeader: ReadonlyArray<string>
  readonly total: number
  readonly failedTotal: number
  /** Per declared metric, its known values over every case. */
  readonly values: ReadonlyArray<Array<number>>
  /** Index of the headline metric in `metrics`, or -1. */
  readonly headline: number
  /** Table rows in input order, and whether they are all the cases. */
  readonly rows: ReadonlyArray<Row>
  readonly complete: boolean
  readonly lowest: ReadonlyArray<Row>
}

/** One pass over the records: the declared metrics' values, the failed, the lowest and a seeded sample. */
const collect = (input: ReportInput): Effect.Effect<Collected, OutputError> =>
  Effect.suspend(() => {
    const header = input.view.csvHeader(input.info)
    const metrics = input.caseMetrics.declared
    const rankBy = input.caseMetrics.rank?.[0]
    const headline = rankBy === undefined ? -1 : metrics.findIndex((m) => m.name === rankBy)
    const values: Array<Array<number>> = metrics.map(() => [])
    /** The CSV columns that hold text (from the first record): numbers are the metrics' business. */
    let textColumns: ReadonlyArray<number> | undefined
    const all: Array<Row> = []
    let complete = true
    const failed: Array<Row> = []
    let failedTotal = 0
    const lowest = new Lowest<number, Row>(Math.max(TABLE_LOWEST, LOWEST_SHOWN), byNumber)
    const sample: Array<Row> = []
    const random = mulberry32Floats(SAMPLE_SEED)
    let total = 0
    return input.records().pipe(
      Stream.runForEach((record) =>
        Effect.sync(() => {
          const cells = input.view.csvRow(input.info, record)
          textColumns ??= cells.flatMap((c, i) => (typeof c === "string" ? [i] : []))
          const of = input.caseMetrics.of(record)
          const { caseId, line } = of
          const known = metrics.map((m) => of.metrics[m.name] ?? null)
          known.forEach((v, i) => {
            if (v !== null) values[i]!.push(v)
          })
          const row: Row = {
            ordinal: total,
            caseId,
            line,
            values: known,
            texts: textColumns.map((i) => cellText(cells[i])),
            failed: of.failed,
            flags: input.view.caseFlags?.(record) ?? [],
            verdict: input.view.caseVerdict?.(record)
          }
          total++
          if (row.failed) {
            failedTotal++
            if (failed.length < TABLE_FAILED) failed.push(row)
          }
          const score = headline === -1 ? null : known[headline]
          if (score !== null && score !== undefined) lowest.add(score, row.ordinal, row)
          if (complete) {
            all.push(row)
            if (all.length > TABLE_ALL) complete = false
          }
          // Reservoir sample (algorithm R), seeded: the same cases on every render.
          if (sample.length < TABLE_SAMPLE) sample.push(row)
          else {
            const j = Math.floor(random() * total)
            if (j < TABLE_SAMPLE) sample[j] = row
          }
        })
      ),
      Effect.map((): Collected => {
        const low = lowest.result().map((x) => x.item)
        let rows: ReadonlyArray<Row> = all
        if (!complete) {
          const chosen = new Map<number, Row>()
          for (const r of [...failed, ...low.slice(0, TABLE_LOWEST), ...sample]) chosen.set(r.ordinal, r)
          rows = [...chosen.values()].sort((a, b) => a.ordinal - b.ordinal)
        }
        const textHeader = (textColumns ?? []).map((i) => header[i] ?? "")
        return {
          metrics,
          textHeader,
          total,
          failedTotal,
          values,
          headline,
          rows,
          complete,
          lowest: low.slice(0, LOWEST_SHOWN)
        }
      })
    )
  })

const parameters = (input: ReportInput) =>
  table(
    ["Parameter", "Value"],
    parameterRows(input.info, input.summary, input.view.parameters?.(input.info, input.summary)).map((
      [k, v]
    ) => [esc(k), esc(v)])
  )

const failuresSection = (input: ReportInput, failedRows: number) => {
  const judgments = input.summary.failures
  const retrievals = input.view.caseFailures?.(input.summary) ?? []
  if (judgments.length === 0 && retrievals.length === 0 && failedRows === 0) return ""
  const parts = [
    `<h2 id="failures">Failures</h2>`,
    `<p class="note">${failedRows} case(s) have a failed judgment, a failed retrieval or no score. Failed judgments are never scored as 0.</p>`
  ]
  if (judgments.length > 0) {
    parts.push(
      `<h3>Failed judgments (${judgments.length} listed)</h3>`,
      table(
        ["Line", "Case", "Criterion", "Target", "Reason", "Raw reply"],
        judgments.map((f) => [
          esc(f.line === undefined ? "" : String(f.line)),
          esc(cut(f.caseId)),
          esc(cut(f.criterion ?? "")),
          esc(cut(f.target ?? "")),
          esc(cut(f.reason, 400)),
          f.raw === undefined ? "—" : `<code>${esc(cut(f.raw, 600))}</code>`
        ])
      )
    )
  }
  if (retrievals.length > 0) {
    parts.push(
      `<h3>Failed retrievals (${retrievals.length} listed)</h3>`,
      table(
        ["Line", "Case", "Query", "Error"],
        retrievals.map((
          f
        ) => [esc(String(f.line ?? "")), esc(cut(f.caseId)), esc(cut(f.query ?? "")), esc(cut(f.reason, 400))])
      )
    )
  }
  return parts.join("\n")
}

/** The calibration written by `rag-eval calibrate <run-dir>` (`calibration.json`, decoded through its schema), when present. */
const calibrationSection = async (runDir: string): Promise<string> => {
  const file = Path.join(runDir, "calibration.json")
  if (!fs.existsSync(file)) return ""
  const decoded = Effect.runSync(
    Effect.either(readJsonFile(CalibrationFile, file, "a calibration written by rag-eval calibrate"))
  )
  if (Either.isLeft(decoded)) {
    return `<h2 id="calibration">Calibration</h2><p class="note">calibration.json could not be read (${
      esc(decoded.left.problem)
    }); run <code>rag-eval calibrate</code> again.</p>`
  }
  const c = decoded.right
  const charts: Array<string> = []
  for (const k of c.criteria.filter((k) => k.pairs > 0 && k.grades.length > 0).slice(0, 12)) {
    charts.push(figure(`${k.criterion}: human × judge grades`, await confusionHeatmap(k.grades, k.confusion)))
  }
  return [
    `<h2 id="calibration">Calibration against human labels</h2>`,
    `<p class="note">From <code>rag-eval calibrate</code> (calibration.json): labels ${
      esc(c.labels.file)
    }, ${c.labels.count} labels, relevant at grade ≥ ${c.relevantAt}.</p>`,
    table(
      [
        "Criterion",
        "Pairs",
        "Exact agreement",
        "Cohen's κ",
        "Binary κ",
        "Quadratic κ",
        "Krippendorff's α",
        "Bias (judge − human)"
      ],
      c.criteria.map((k) => [
        esc(k.criterion),
        String(k.pairs),
        fmt(k.exactAgreement.value),
        fmt(k.cohenKappa.value),
        fmt(k.binaryKappa.value),
        fmt(k.quadraticKappa.value),
        fmt(k.krippendorffAlpha.value),
        fmt(k.bias.value)
      ])
    ),
    charts.length === 0 ? "" : `<div class="charts">${charts.join("\n")}</div>`
  ].join("\n")
}

/** A 0–1 metric's cells get a bar. */
const barred = (m: MetricSpec) => m.min === 0 && m.max === 1

/** Sorting by the status column puts the failing first. */
const STATUS_ORDER: Readonly<Record<Status, number>> = { fail: 0, warn: 1, pass: 2, none: 3 }

const caseTable = (input: ReportInput, c: Collected) => {
  const head = [
    "case_id",
    "line",
    "status",
    ...c.metrics.map((m) => m.max === null ? m.name : `${m.name} (${rangeText(m)})`),
    ...c.textHeader
  ]
  const rows = c.rows.map((r) => {
    const metricCells = c.metrics.map((m, i) => {
      const v = r.values[i]
      if (v === null || v === undefined) return `<td class="n">—</td>`
      const bar = barred(m) ? `<span class="bar" style="width:${Math.round(v * 40)}px"></span>` : ""
      return `<td class="n" data-v="${v}">${bar}${fmt(v)}</td>`
    })
    // Three lines of each text at most: the row stays one glance high; its case block has the text in full.
    const textCells = r.texts.map((t) => `<td><div class="clip">${esc(cut(t))}</div></td>`)
    const status = statusOf(r)
    return `<tr${statusAttr(status)}><td>${caseLink(r.ordinal, cut(r.caseId))}</td><td class="n"${
      r.line === undefined ? "" : ` data-v="${r.line}"`
    }>${r.line ?? ""}</td>` +
      `<td class="st" data-v="${STATUS_ORDER[status]}">${statusBadge(status, whyOf(r))}</td>${metricCells.join("")}${
        textCells.join("")
      }</tr>`
  })
  const sampled = c.complete
    ? `All ${c.total} cases.`
    : `${c.rows.length} of ${c.total} cases: every failed case (up to ${TABLE_FAILED}), the ${TABLE_LOWEST} lowest${
      c.headline === -1 ? "" : ` by ${esc(c.metrics[c.headline]!.name)}`
    } and a seeded random sample of ${TABLE_SAMPLE} (the same on every render), in input order. Every case is in report.csv and report.json.`
  const failing = c.rows.filter((r) => statusOf(r) === "fail" || statusOf(r) === "warn").length
  return [
    `<h2 id="case-table">Cases</h2>`,
    `<p class="note" id="sampling">${sampled} Text longer than ${CELL_MAX} characters is cut here (full text in report.csv). Click a column to sort; type to filter; click a case id for its details.</p>`,
    legend({
      fail: `failing: a judgment or the retrieval failed, or no score${
        input.view.caseVerdict === undefined ? "" : ", or the pipeline's verdict is fail"
      }`,
      warn: "flagged ⚑: a metric set by convention",
      pass: input.view.caseVerdict === undefined ? undefined : "passing: the pipeline's verdict is pass"
    }),
    filterControls(c.rows.length, failing),
    `<div class="tablewrap"><table id="cases"><thead><tr>${
      head.map((h) => `<th>${esc(h)}</th>`).join("")
    }</tr></thead><tbody>`,
    rows.join("\n"),
    `</tbody></table></div>`
  ].join("\n")
}

/** The case's block when the view shows nothing of its own: its metrics and its CSV text cells. */
const fallbackDetail = (c: Collected, row: Row): CaseDetail => ({
  fields: [
    ...c.metrics.flatMap((m, i) => (row.values[i] === null ? [] : [[m.name, valueText(m, row.values[i])] as const])),
    ...c.textHeader.map((h, i) => [h, row.texts[i] ?? ""] as const)
  ]
})

/**
 * A folded block per case of the table (every case up to `TABLE_ALL`), in input order, each with the
 * anchor its table row links to. The view's `caseDetail` is read in a second pass over the records,
 * for the table's cases only (memory stays bounded by the table).
 */
const caseBlocks = (input: ReportInput, c: Collected): Effect.Effect<string, OutputError> => {
  const wanted = new Map(c.rows.map((r) => [r.ordinal, r]))
  const detailOf = input.view.caseDetail
  const details = new Map<number, CaseDetail>()
  const read: Effect.Effect<void, OutputError> = detailOf === undefined
    ? Effect.void
    : input.records().pipe(
      Stream.zipWithIndex,
      Stream.runForEach(([record, i]) =>
        Effect.sync(() => {
          if (wanted.has(i)) details.set(i, detailOf(record))
        })
      )
    )
  return Effect.map(read, () => {
    let size = 0
    const blocks = c.rows.map((r) => {
      const score = c.headline === -1 ? null : r.values[c.headline]
      const block = {
        ordinal: r.ordinal,
        caseId: r.caseId,
        line: r.line,
        status: statusOf(r),
        why: whyOf(r),
        headline: score === null || score === undefined ? undefined : `${c.metrics[c.headline]!.name} ${fmt(score)}`,
        detail: details.get(r.ordinal) ?? fallbackDetail(c, r)
      }
      const html = size > DETAILS_BUDGET
        ? caseBlock({
          ...block,
          detail: { fields: [] },
          omitted: `Left out to keep this page small (its case blocks passed ${
            (DETAILS_BUDGET / 1e6).toFixed(0)
          } MB): this case is in report.json and report.md.`
        })
        : caseBlock(block)
      size += html.length
      return html
    })
    return [
      `<h2 id="case-details">Case details</h2>`,
      `<p class="note">Every case of the table above, in input order, folded: click one to open it${
        detailOf === undefined ? " (its metrics and text in full)" : ""
      }. Red: failing; amber: flagged${
        input.view.caseVerdict === undefined ? "" : "; green: passing"
      }. "Only failing" above hides the others here too.</p>`,
      ...blocks
    ].join("\n")
  })
}

/** Who judged (`Sections.judgeSentence`); nothing when nothing is judged. */
const judgeNote = (info: RunInfo, heuristic?: string) => {
  const judged = judgeSentence(info, heuristic)
  return judged === undefined
    ? ""
    : `<p class="judge">${judged.heuristic ? `<strong>${esc(judged.lead)}</strong>` : esc(judged.lead)}${
      judged.rest === "" ? "" : ` ${esc(judged.rest)}`
    }</p>`
}

/** Metrics whose value is a convention for some queries (NDCG with IDCG = 0), from the view's `flagged`. */
const flaggedNote = (input: ReportInput): string => {
  const lines = Object.entries(input.view.flagged?.(input.summary) ?? {}).filter(([, n]) => n > 0)
    .map(([metric, n]) =>
      `${n} quer${
        n === 1 ? "y" : "ies"
      } had no hit graded above 0 (IDCG = 0): ${metric} is set to 0 there by convention, not measured — see the flags column.`
    )
  return lines.length === 0 ? "" : `<p class="banner" id="flagged">⚑ ${lines.map(esc).join("<br>⚑ ")}</p>`
}

const partialBanner = (partial: string | undefined) =>
  partial === undefined ? "" : `<p class="banner" id="partial"><strong>Partial report</strong>: ${esc(partial)}</p>`

/** The headline metrics, each value with its range and unit (`0.620 (0–1)`), which way is better and what it is. */
const headlineTable = (input: ReportInput) => {
  const metrics = Object.entries(input.metrics ?? {})
  if (metrics.length === 0) return ""
  const specs = new Map((input.metricSpecs ?? []).map((m) => [m.name, m]))
  return `<h2 id="metrics">Headline metrics</h2>` +
    table(
      ["Metric", "Value (range)", "Better", "What it is"],
      metrics.map(([k, v]) => {
        const m = specs.get(k)
        return [
          esc(k),
          `<span class="value">${esc(m === undefined ? fmt(v, 4) : valueText(m, v))}</span>`,
          m === undefined || m.direction === "none" ? "" : m.direction,
          esc(m?.description ?? "")
        ]
      })
    )
}

/** The lowest cases by the headline metric, each linking to its block. */
const lowestTable = (c: Collected) =>
  c.lowest.length === 0 || c.headline === -1 ? "" : [
    `<h2 id="lowest">Lowest ${esc(c.metrics[c.headline]!.name)} (${c.lowest.length})</h2>`,
    `<p class="note">Click a case for its details.</p>`,
    `<table class="lowest"><thead><tr><th>Case</th><th>Line</th><th>${
      esc(c.metrics[c.headline]!.name)
    }</th><th>Status</th></tr></thead><tbody>`,
    ...c.lowest.map((r) =>
      `<tr${statusAttr(statusOf(r))}><td>${caseLink(r.ordinal, cut(r.caseId))}</td><td class="n">${
        r.line ?? ""
      }</td><td class="n">${fmt(r.values[c.headline])}</td><td>${statusBadge(statusOf(r), whyOf(r))}</td></tr>`
    ),
    `</tbody></table>`
  ].join("\n")

/** The HTML page of one report (an iteration's, or the run's). */
export const renderHtml = (input: ReportInput): Effect.Effect<string, OutputError> =>
  Effect.flatMap(collect(input), (c) =>
    Effect.flatMap(caseBlocks(input, c), (blocks) =>
      Effect.tryPromise({
        try: async () => {
          const { info } = input
          const charts: Array<string> = []
          for (let i = 0; i < c.metrics.length && charts.length < CHARTS_MAX; i++) {
            const values = c.values[i]!
            // A metric every case has the same value of (or one case has) says nothing as a chart: it is in the table.
            if (values.length < 2 || values.every((v) => v === values[0])) continue
            const m = c.metrics[i]!
            charts.push(
              figure(
                `${m.name} (${values.length} cases; ${rangeText(m)}${
                  m.direction === "none" ? "" : `, ${m.direction} is better`
                })`,
                await histogram(distribution(values, m), { x: m.name })
              )
            )
          }
          const headline = c.headline === -1 ? undefined : c.metrics[c.headline]!
          let perCase = ""
          if (headline !== undefined && c.lowest.length > 0) {
            const known = c.values[c.headline]!.length
            const low = known <= BARS_SHOWN ? c.rows.filter((r) => r.values[c.headline] !== null) : c.lowest
            const bars = [...low].sort((a, b) => a.values[c.headline]! - b.values[c.headline]!).slice(0, BARS_SHOWN)
            const domain: readonly [number, number] | undefined = headline.max === null
              ? undefined
              : [headline.min, headline.max]
            perCase = [
              `<h2 id="per-case">Per-case ${esc(headline.name)}</h2>`,
              `<p class="note">${
                bars.length === known ? "Every case" : `The ${bars.length} lowest cases of ${known}`
              }, lowest first; the case table below shows every metric per case and sorts on any column.</p>`,
              figure(
                `${headline.name} per case`,
                await valueBars(bars.map((r) => ({ label: r.caseId, value: r.values[c.headline]! })), {
                  x: headline.name,
                  ...(domain === undefined ? {} : { domain })
                })
              )
            ].join("\n")
          }
          const constant = c.metrics.flatMap((m, i) => {
            const values = c.values[i]!
            return values.length > 0 && values.every((v) => v === values[0]) ? [`${m.name} = ${fmt(values[0])}`] : []
          })
          const body = [
            `<h1>${esc(info.pipeline)} — ${esc(info.runId)}${
              input.stem === "report" ? "" : ` (${esc(input.stem)})`
            }</h1>`,
            partialBanner(input.partial),
            `<p>${esc(info.description)}</p>`,
            judgeNote(info, input.view.heuristic),
            `<h2 id="parameters">Run parameters</h2>`,
            parameters(input),
            headlineTable(input),
            flaggedNote(input),
            charts.length === 0
              ? ""
              : `<h2 id="distributions">Distributions</h2><div class="charts">${charts.join("\n")}</div>`,
            constant.length === 0
              ? ""
              : `<p class="note" id="constant">The same for every case (no chart): ${esc(constant.join(", "))}.</p>`,
            perCase,
            lowestTable(c),
            failuresSection(input, c.failedTotal),
            await calibrationSection(info.runDir),
            caseTable(input, c),
            blocks
          ]
          return page(`${info.pipeline} ${info.runId}`, body)
        },
        catch: (e) =>
          new OutputError({
            path: Path.join(input.info.runDir, `${input.stem}.html`),
            problem: `cannot render the HTML report: ${e instanceof Error ? e.message : String(e)}`
          })
      })))

export const writeHtml = (input: ReportInput): Effect.Effect<ReadonlyArray<string>, OutputError> => {
  const path = Path.join(input.info.runDir, `${input.stem}.html`)
  return Effect.flatMap(renderHtml(input), (html) => writeFileAtomic(path, html)).pipe(Effect.as([path]))
}

/** `final-report.html` (iterations > 1): metrics as mean ± std, and the agreement between iterations per criterion. */
export const writeFinalHtml = (
  info: RunInfo,
  final: FinalMetrics,
  partial?: string
): Effect.Effect<ReadonlyArray<string>, OutputError> => {
  const path = Path.join(info.runDir, "final-report.html")
  return Effect.tryPromise({
    try: async () => {
      const agreement = Object.entries(final.agreement)
      const series = agreement.flatMap(([criterion, a]) => {
        const rows: Array<{ item: string; series: string; value: number }> = []
        if (a.exactAgreement !== null) {
          rows.push({ item: criterion, series: "exact agreement", value: a.exactAgreement })
        }
        if (a.krippendorffAlpha !== null) {
          rows.push({ item: criterion, series: "Krippendorff's α", value: a.krippendorffAlpha })
        }
        return rows
      })
      const chart = series.length === 0
        ? ""
        : `<div class="charts">${
          figure("Agreement between iterations", await groupedBars(series, { y: "agreement" }))
        }</div>`
      return page(`${info.pipeline} ${info.runId} final`, [
        `<h1>${esc(info.pipeline)} — ${esc(info.runId)}: ${final.iterations} iterations</h1>`,
        partialBanner(partial),
        judgeNote(info),
        `<h2 id="metrics">Metrics across iterations</h2>`,
        table(
          [
            "Metric",
            "Mean",
            "Std",
            ...final.metrics[Object.keys(final.metrics)[0] ?? ""]?.perIteration.map((_, i) => `Iteration ${i + 1}`) ??
              []
          ],
          Object.entries(final.metrics).map((
            [k, m]
          ) => [esc(k), fmt(m.mean, 4), fmt(m.std, 4), ...m.perIteration.map((v) => fmt(v, 4))])
        ),
        `<h2 id="agreement">Agreement between iterations</h2>`,
        agreement.length === 0 ?
          `<p class="note">No criterion was graded in two iterations.</p>` :
          table(
            ["Criterion", "Units", "Exact agreement", "Krippendorff's α (ordinal)"],
            agreement.map((
              [k, a]
            ) => [
              esc(k),
              String(a.units),
              fmt(a.exactAgreement),
              fmt(a.krippendorffAlpha) + (a.krippendorffAlphaNote === undefined
                ? ""
                : ` <span class="note">${esc(a.krippendorffAlphaNote)}</span>`)
            ])
          ),
        chart,
        final.unstable.length === 0 ? "" : `<h3>Unstable cases (${final.unstableCount})</h3>` +
          table(
            ["Case", "Criterion", "Grades"],
            final.unstable.map((
              u
            ) => [
              esc(cut(u.caseId)),
              esc(cut(u.criterion)),
              esc(u.grades.map((g) => (g === null ? "—" : String(g))).join(" · "))
            ])
          )
      ])
    },
    catch: (e) =>
      new OutputError({ path, problem: `cannot render the HTML report: ${e instanceof Error ? e.message : String(e)}` })
  }).pipe(Effect.flatMap((html) => writeFileAtomic(path, html)), Effect.as([path]))
}
