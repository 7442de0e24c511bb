/**
 * The HTML report (`--format html`): one self-contained file a team can open and share — inline CSS,
 * inline SVG charts (see `Charts.ts`), a few KB of inline script for the case table, and no request
 * of any kind when opened. Works for every pipeline from what it declares — its per-case metrics
 * (range, direction) and headline metric, its headline metrics, its failures and flags, the text
 * cells of its CSV — so a new pipeline gets it for free. Case text is escaped everywhere.
 *
 * Size: the case table holds every case up to `TABLE_ALL`; beyond that the failed cases, the lowest
 * by the headline metric and a seeded random sample (the page says so) — a 100k-row run stays a few
 * MB; every case is in report.csv / report.json.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import * as Either from "effect/Either"
import { OutputError } from "../domain/Errors.js"
import { type MetricSpec, rangeText } from "../domain/Metric.js"
import { CalibrationFile, readJsonFile } from "../domain/RunFiles.js"
import { parameterRows } from "./Sections.js"
import type { FinalMetrics } from "../engine/Iterations.js"
import type { RunInfo } from "../engine/Pipeline.js"
import { caseOf, cellText, Lowest, seededRandom } from "./CaseRows.js"
import { confusionHeatmap, countBars, groupedBars, valueBars } from "./Charts.js"
import { writeFileAtomic } from "../io/Files.js"
import type { ReportInput } from "../engine/ReportInput.js"

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

const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g

/** Case text as HTML text (element content or a quoted attribute value). */
export const esc = (text: string): string =>
  text.replace(CONTROLS, "\uFFFD").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const cut = (text: string, max = CELL_MAX) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

const fmt = (x: number | null | undefined, digits = 3) => (x === null || x === undefined || !Number.isFinite(x) ? "—" : Number.isInteger(x) ? String(x) : x.toFixed(digits))

interface Row {
  readonly ordinal: number
  readonly caseId: string
  readonly line: number | undefined
  /** The declared per-case metrics' values, in declaration order. */
  readonly values: ReadonlyArray<number | null>
  /** The view's text cells (its CSV's text columns). */
  readonly texts: ReadonlyArray<string>
  readonly failed: boolean
}

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
    const header = input.view.csvHeader(input.info, input.summary)
    const metrics = input.caseMetrics?.declared ?? []
    const headline = input.view.headline === undefined ? -1 : metrics.findIndex((m) => m.name === input.view.headline)
    const values: Array<Array<number>> = metrics.map(() => [])
    /** The CSV columns that hold text (from the first record): numbers are the metrics' business. */
    let textColumns: ReadonlyArray<number> | undefined
    const all: Array<Row> = []
    let complete = true
    const failed: Array<Row> = []
    let failedTotal = 0
    const lowest = new Lowest<Row>(Math.max(TABLE_LOWEST, LOWEST_SHOWN))
    const sample: Array<Row> = []
    const random = seededRandom(SAMPLE_SEED)
    let total = 0
    return input.records().pipe(
      Stream.runForEach((record) =>
        Effect.sync(() => {
          const cells = input.view.csvRow(input.info, record)
          textColumns ??= cells.flatMap((c, i) => (typeof c === "string" ? [i] : []))
          const of = input.caseMetrics?.of(record)
          const { caseId, line } = of ?? caseOf(record)
          const known = metrics.map((m) => of?.metrics[m.name] ?? null)
          known.forEach((v, i) => {
            if (v !== null) values[i]!.push(v)
          })
          const row: Row = { ordinal: total, caseId, line, values: known, texts: textColumns.map((i) => cellText(cells[i])), failed: of?.failed === true }
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
        return { metrics, textHeader, total, failedTotal, values, headline, rows, complete, lowest: low.slice(0, LOWEST_SHOWN) }
      })
    )
  })

/** Counts of each value (small integer scales) or 10 bins (anything else), for a distribution chart. */
export const distribution = (values: ReadonlyArray<number>): Array<{ label: string; count: number }> => {
  if (values.length === 0) return []
  let min = Infinity
  let max = -Infinity
  let integers = true
  for (const v of values) {
    if (v < min) min = v
    if (v > max) max = v
    if (integers && !Number.isInteger(v)) integers = false
  }
  if (integers && max - min <= 12) {
    const counts = new Map<number, number>()
    for (let v = min; v <= max; v++) counts.set(v, 0)
    for (const v of values) counts.set(v, counts.get(v)! + 1)
    return [...counts].map(([v, count]) => ({ label: String(v), count }))
  }
  const [lo, hi] = min >= 0 && max <= 1 ? [0, 1] : [min, max === min ? min + 1 : max]
  const bins = Array<number>(10).fill(0)
  const width = (hi - lo) / 10
  for (const v of values) bins[Math.min(9, Math.floor((v - lo) / width))]!++
  const digits = hi - lo >= 10 ? 0 : hi - lo >= 1 ? 1 : 2
  return bins.map((count, i) => ({ label: `${(lo + i * width).toFixed(digits)}–${(lo + (i + 1) * width).toFixed(digits)}`, count }))
}

const STYLE = `
:root{--fg:#1f2937;--muted:#6b7280;--line:#e5e7eb;--accent:#4f6bed;--bad:#b91c1c;--warn:#fef3c7}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);margin:0 auto;max-width:1200px;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}th{background:#f9fafb}
.note{color:var(--muted)}.banner{background:var(--warn);border:1px solid #f59e0b;padding:8px 12px;border-radius:6px;margin:8px 0}
.judge{background:#eef2ff;border-left:4px solid var(--accent);padding:6px 10px}
.charts{display:flex;flex-wrap:wrap;gap:16px}figure.chart{margin:0;border:1px solid var(--line);border-radius:6px;padding:8px}figure.chart figcaption{font-weight:600;margin-bottom:4px}
.case{border:1px solid var(--line);border-radius:6px;padding:8px 12px;margin:8px 0}.case dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0 0}.case dt{font-weight:600;color:var(--muted)}.case dd{margin:0;white-space:pre-wrap}
.failed{color:var(--bad);font-weight:600}code{font-size:12px;background:#f3f4f6;padding:1px 3px;border-radius:3px;white-space:pre-wrap;word-break:break-word}
#cases{font-size:12px}#cases th{cursor:pointer;user-select:none;position:sticky;top:0}#cases th[aria-sort=ascending]::after{content:" ▲"}#cases th[aria-sort=descending]::after{content:" ▼"}
#cases td.n{text-align:right;white-space:nowrap}#cases td:not(.n){min-width:10em;max-width:32em}.bar{display:inline-block;height:8px;background:var(--accent);margin-right:4px;vertical-align:middle;opacity:.6}
.tablewrap{max-height:70vh;overflow:auto;border:1px solid var(--line)}#filter{padding:4px 8px;width:320px;margin:6px 0}
`

/** Sort (click a header; numbers by value) and filter (text box) the case table; no framework. */
const SCRIPT = `
(function(){
var table=document.getElementById("cases");if(!table)return;
var body=table.tBodies[0];var heads=table.tHead.rows[0].cells;
function key(cell){var v=cell.getAttribute("data-v");return v===null?null:Number(v)}
Array.prototype.forEach.call(heads,function(th,col){th.addEventListener("click",function(){
var dir=th.getAttribute("aria-sort")==="ascending"?"descending":"ascending";
Array.prototype.forEach.call(heads,function(h){h.removeAttribute("aria-sort")});th.setAttribute("aria-sort",dir);
var rows=Array.prototype.slice.call(body.rows);var sign=dir==="ascending"?1:-1;
rows.sort(function(a,b){var x=a.cells[col],y=b.cells[col];var kx=key(x),ky=key(y);
if(kx!==null||ky!==null){if(kx===null)return 1;if(ky===null)return -1;return (kx-ky)*sign}
return x.textContent.localeCompare(y.textContent)*sign});
rows.forEach(function(r){body.appendChild(r)})})});
var box=document.getElementById("filter");var count=document.getElementById("shown");
box.addEventListener("input",function(){var q=box.value.toLowerCase();var n=0;
Array.prototype.forEach.call(body.rows,function(r){var show=q===""||r.textContent.toLowerCase().indexOf(q)!==-1;r.hidden=!show;if(show)n++});
count.textContent=String(n)});
})();
`

const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) =>
  `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join("")}</tr>`).join("\n")}</tbody></table>`

const figure = (caption: string, svg: string) => `<figure class="chart"><figcaption>${esc(caption)}</figcaption>${svg}</figure>`

const parameters = (input: ReportInput) =>
  table(["Parameter", "Value"], parameterRows(input.info, input.judged, input.view.parameters?.(input.info, input.summary)).map(([k, v]) => [esc(k), esc(v)]))

const failuresSection = (input: ReportInput, failedRows: number) => {
  const { judgments, retrievals } = input.view.failures?.(input.summary) ?? { judgments: [], retrievals: [] }
  if (judgments.length === 0 && retrievals.length === 0 && failedRows === 0) return ""
  const parts = [`<h2 id="failures">Failures</h2>`, `<p class="note">${failedRows} case(s) have a failed judgment, a failed retrieval or no score. Failed judgments are never scored as 0.</p>`]
  if (judgments.length > 0) {
    parts.push(
      `<h3>Failed judgments (${judgments.length} listed)</h3>`,
      table(["Line", "Case", "Criterion", "Reason", "Raw reply"], judgments.map((f) => [
        esc(f.line === undefined ? "" : String(f.line)),
        esc(cut(f.caseId)),
        esc(cut(f.criterion ?? "")),
        esc(cut(f.reason, 400)),
        f.raw === undefined ? "—" : `<code>${esc(cut(f.raw, 600))}</code>`
      ]))
    )
  }
  if (retrievals.length > 0) {
    parts.push(
      `<h3>Failed retrievals (${retrievals.length} listed)</h3>`,
      table(["Line", "Case", "Query", "Error"], retrievals.map((f) => [esc(String(f.line ?? "")), esc(cut(f.caseId)), esc(cut(f.query ?? "")), esc(cut(f.reason, 400))]))
    )
  }
  return parts.join("\n")
}

const caseCard = (c: Collected, row: Row) => {
  const score = c.headline === -1 ? null : row.values[c.headline]
  const fields = [
    ...c.metrics.map((m, i) => (row.values[i] === null ? "" : `<dt>${esc(m.name)}</dt><dd>${fmt(row.values[i])}</dd>`)),
    ...c.textHeader.map((h, i) => (row.texts[i] === "" ? "" : `<dt>${esc(h)}</dt><dd>${esc(cut(row.texts[i]!, 2000))}</dd>`))
  ].join("")
  return `<div class="case"><strong>${esc(row.caseId)}</strong>${row.line === undefined ? "" : ` <span class="note">line ${row.line}</span>`}${score === null || score === undefined ? "" : ` — ${esc(c.metrics[c.headline]!.name)} ${fmt(score)}`}${row.failed ? ` <span class="failed">failed</span>` : ""}<dl>${fields}</dl></div>`
}

/** The calibration written by `rag-eval calibrate <run-dir>` (`calibration.json`, decoded through its schema), when present. */
const calibrationSection = async (runDir: string): Promise<string> => {
  const file = Path.join(runDir, "calibration.json")
  if (!fs.existsSync(file)) return ""
  const decoded = Effect.runSync(Effect.either(readJsonFile(CalibrationFile, file, "a calibration written by rag-eval calibrate")))
  if (Either.isLeft(decoded)) {
    return `<h2 id="calibration">Calibration</h2><p class="note">calibration.json could not be read (${esc(decoded.left.problem)}); run <code>rag-eval calibrate</code> again.</p>`
  }
  const c = decoded.right
  const charts: Array<string> = []
  for (const k of c.criteria.filter((k) => k.pairs > 0 && k.grades.length > 0).slice(0, 12)) {
    charts.push(figure(`${k.criterion}: human × judge grades`, await confusionHeatmap(k.grades, k.confusion)))
  }
  return [
    `<h2 id="calibration">Calibration against human labels</h2>`,
    `<p class="note">From <code>rag-eval calibrate</code> (calibration.json): labels ${esc(c.labels.file)}, ${c.labels.count} labels, relevant at grade ≥ ${c.relevantAt}.</p>`,
    table(["Criterion", "Pairs", "Exact agreement", "Cohen's κ", "Binary κ", "Quadratic κ", "Krippendorff's α", "Bias (judge − human)"], c.criteria.map((k) => [
      esc(k.criterion),
      String(k.pairs),
      fmt(k.exactAgreement.value),
      fmt(k.cohenKappa.value),
      fmt(k.binaryKappa.value),
      fmt(k.quadraticKappa.value),
      fmt(k.krippendorffAlpha.value),
      fmt(k.bias.value)
    ])),
    charts.length === 0 ? "" : `<div class="charts">${charts.join("\n")}</div>`
  ].join("\n")
}

/** A 0–1 metric's cells get a bar. */
const barred = (m: MetricSpec) => m.min === 0 && m.max === 1

const caseTable = (c: Collected) => {
  const head = ["case_id", "line", ...c.metrics.map((m) => m.name), ...c.textHeader]
  const rows = c.rows.map((r) => {
    const metricCells = c.metrics.map((m, i) => {
      const v = r.values[i]
      if (v === null || v === undefined) return `<td class="n">—</td>`
      const bar = barred(m) ? `<span class="bar" style="width:${Math.round(v * 40)}px"></span>` : ""
      return `<td class="n" data-v="${v}">${bar}${fmt(v)}</td>`
    })
    const textCells = r.texts.map((t) => `<td>${esc(cut(t))}</td>`)
    return `<tr${r.failed ? ` class="failed-row"` : ""}><td>${esc(cut(r.caseId))}</td><td class="n"${r.line === undefined ? "" : ` data-v="${r.line}"`}>${r.line ?? ""}</td>${metricCells.join("")}${textCells.join("")}</tr>`
  })
  const sampled = c.complete
    ? `All ${c.total} cases.`
    : `${c.rows.length} of ${c.total} cases: every failed case (up to ${TABLE_FAILED}), the ${TABLE_LOWEST} lowest${c.headline === -1 ? "" : ` by ${esc(c.metrics[c.headline]!.name)}`} and a seeded random sample of ${TABLE_SAMPLE} (the same on every render), in input order. Every case is in report.csv and report.json.`
  return [
    `<h2 id="case-table">Cases</h2>`,
    `<p class="note" id="sampling">${sampled} Text longer than ${CELL_MAX} characters is cut here (full text in report.csv). Click a column to sort; type to filter.</p>`,
    `<input id="filter" type="search" placeholder="filter cases" aria-label="filter cases"> <span class="note"><span id="shown">${c.rows.length}</span> shown</span>`,
    `<div class="tablewrap"><table id="cases"><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>`,
    rows.join("\n"),
    `</tbody></table></div>`
  ].join("\n")
}

const page = (title: string, body: ReadonlyArray<string>) =>
  `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
  `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">` +
  `<title>${esc(title)}</title><style>${STYLE}</style></head><body>\n${body.filter((b) => b !== "").join("\n")}\n<script>${SCRIPT}</script></body></html>\n`

const judgeNote = (info: RunInfo) =>
  info.judge.provider === "heuristic"
    ? `<p class="judge"><strong>Judged by the heuristic judge</strong> — deterministic lexical proxies, not an LLM.</p>`
    : `<p class="judge">Judged by ${esc(info.judge.label)}.</p>`

/** Metrics whose value is a convention for some queries (NDCG with IDCG = 0), from the view's `flagged`. */
const flaggedNote = (input: ReportInput): string => {
  const lines = Object.entries(input.view.flagged?.(input.summary) ?? {}).filter(([, n]) => n > 0)
    .map(([metric, n]) => `${n} quer${n === 1 ? "y" : "ies"} had no hit graded above 0 (IDCG = 0): ${metric} is set to 0 there by convention, not measured — see the flags column.`)
  return lines.length === 0 ? "" : `<p class="banner" id="flagged">⚑ ${lines.map(esc).join("<br>⚑ ")}</p>`
}

const partialBanner = (partial: string | undefined) => partial === undefined ? "" : `<p class="banner" id="partial"><strong>Partial report</strong>: ${esc(partial)}</p>`

/** The headline metrics with what each is: range, direction. */
const headlineTable = (input: ReportInput) => {
  const metrics = Object.entries(input.metrics ?? {})
  if (metrics.length === 0) return ""
  const specs = new Map((input.metricSpecs ?? []).map((m) => [m.name, m]))
  return `<h2 id="metrics">Headline metrics</h2>` + table(["Metric", "Value", "Range", "Better", "What it is"], metrics.map(([k, v]) => {
    const m = specs.get(k)
    return [esc(k), fmt(v, 4), m === undefined ? "" : esc(rangeText(m)), m === undefined || m.direction === "none" ? "" : m.direction, esc(m?.description ?? "")]
  }))
}

/** The HTML page of one report (an iteration's, or the run's). */
export const renderHtml = (input: ReportInput): Effect.Effect<string, OutputError> =>
  Effect.flatMap(collect(input), (c) =>
    Effect.tryPromise({
      try: async () => {
        const { info } = input
        const charts: Array<string> = []
        for (let i = 0; i < c.metrics.length && charts.length < CHARTS_MAX; i++) {
          const values = c.values[i]!
          // A metric every case has the same value of says nothing as a chart (its value is in the table).
          if (values.length === 0 || values.every((v) => v === values[0])) continue
          const m = c.metrics[i]!
          charts.push(figure(`${m.name} (${values.length} cases; ${rangeText(m)}${m.direction === "none" ? "" : `, ${m.direction} is better`})`, await countBars(distribution(values), { x: m.name })))
        }
        const headline = c.headline === -1 ? undefined : c.metrics[c.headline]!
        let perCase = ""
        if (headline !== undefined && c.lowest.length > 0) {
          const known = c.values[c.headline]!.length
          const low = known <= BARS_SHOWN ? c.rows.filter((r) => r.values[c.headline] !== null) : c.lowest
          const bars = [...low].sort((a, b) => a.values[c.headline]! - b.values[c.headline]!).slice(0, BARS_SHOWN)
          const domain: readonly [number, number] | undefined = headline.max === null ? undefined : [headline.min, headline.max]
          perCase = [
            `<h2 id="per-case">Per-case ${esc(headline.name)}</h2>`,
            `<p class="note">${bars.length === known ? "Every case" : `The ${bars.length} lowest cases of ${known}`}, lowest first; the case table below shows every metric per case and sorts on any column.</p>`,
            figure(`${headline.name} per case`, await valueBars(bars.map((r) => ({ label: r.caseId, value: r.values[c.headline]! })), { x: headline.name, ...(domain === undefined ? {} : { domain }) }))
          ].join("\n")
        }
        const lowestCases = c.lowest.length === 0 ? "" : [
          `<h2 id="lowest">Lowest ${esc(headline?.name ?? "")} (${c.lowest.length})</h2>`,
          `<p class="note">With the judge's reasons.</p>`,
          ...c.lowest.map((r) => caseCard(c, r))
        ].join("\n")
        const body = [
          `<h1>${esc(info.pipeline)} — ${esc(info.runId)}${input.stem === "report" ? "" : ` (${esc(input.stem)})`}</h1>`,
          partialBanner(input.partial),
          `<p>${esc(info.description)}</p>`,
          judgeNote(info),
          `<h2 id="parameters">Run parameters</h2>`,
          parameters(input),
          headlineTable(input),
          flaggedNote(input),
          charts.length === 0 ? "" : `<h2 id="distributions">Distributions</h2><div class="charts">${charts.join("\n")}</div>`,
          perCase,
          lowestCases,
          failuresSection(input, c.failedTotal),
          await calibrationSection(info.runDir),
          caseTable(c)
        ]
        return page(`${info.pipeline} ${info.runId}`, body)
      },
      catch: (e) => new OutputError({ path: Path.join(input.info.runDir, `${input.stem}.html`), problem: `cannot render the HTML report: ${e instanceof Error ? e.message : String(e)}` })
    }))

export const writeHtml = (input: ReportInput): Effect.Effect<ReadonlyArray<string>, OutputError> => {
  const path = Path.join(input.info.runDir, `${input.stem}.html`)
  return Effect.flatMap(renderHtml(input), (html) => writeFileAtomic(path, html)).pipe(Effect.as([path]))
}

/** `final-report.html` (iterations > 1): metrics as mean ± std, and the agreement between iterations per criterion. */
export const writeFinalHtml = (info: RunInfo, final: FinalMetrics, partial?: string): Effect.Effect<ReadonlyArray<string>, OutputError> => {
  const path = Path.join(info.runDir, "final-report.html")
  return Effect.tryPromise({
    try: async () => {
      const agreement = Object.entries(final.agreement)
      const series = agreement.flatMap(([criterion, a]) => {
        const rows: Array<{ item: string; series: string; value: number }> = []
        if (a.exactAgreement !== null) rows.push({ item: criterion, series: "exact agreement", value: a.exactAgreement })
        if (a.krippendorffAlpha !== null) rows.push({ item: criterion, series: "Krippendorff's α", value: a.krippendorffAlpha })
        return rows
      })
      const chart = series.length === 0 ? "" : `<div class="charts">${figure("Agreement between iterations", await groupedBars(series, { y: "agreement" }))}</div>`
      return page(`${info.pipeline} ${info.runId} final`, [
        `<h1>${esc(info.pipeline)} — ${esc(info.runId)}: ${final.iterations} iterations</h1>`,
        partialBanner(partial),
        judgeNote(info),
        `<h2 id="metrics">Metrics across iterations</h2>`,
        table(["Metric", "Mean", "Std", ...final.metrics[Object.keys(final.metrics)[0] ?? ""]?.perIteration.map((_, i) => `Iteration ${i + 1}`) ?? []],
          Object.entries(final.metrics).map(([k, m]) => [esc(k), fmt(m.mean, 4), fmt(m.std, 4), ...m.perIteration.map((v) => fmt(v, 4))])),
        `<h2 id="agreement">Agreement between iterations</h2>`,
        agreement.length === 0 ? `<p class="note">No criterion was graded in two iterations.</p>` : table(["Criterion", "Units", "Exact agreement", "Krippendorff's α (ordinal)"],
          agreement.map(([k, a]) => [esc(k), String(a.units), fmt(a.exactAgreement), fmt(a.krippendorffAlpha) + (a.krippendorffAlphaNote === undefined ? "" : ` <span class="note">${esc(a.krippendorffAlphaNote)}</span>`)])),
        chart,
        final.unstable.length === 0 ? "" : `<h3>Unstable cases (${final.unstableCount})</h3>` +
          table(["Case", "Criterion", "Grades"], final.unstable.map((u) => [esc(cut(u.caseId)), esc(cut(u.criterion)), esc(u.grades.map((g) => (g === null ? "—" : String(g))).join(" · "))]))
      ])
    },
    catch: (e) => new OutputError({ path, problem: `cannot render the HTML report: ${e instanceof Error ? e.message : String(e)}` })
  }).pipe(Effect.flatMap((html) => writeFileAtomic(path, html)), Effect.as([path]))
}
