/**
 * The building blocks of the HTML pages, for any pipeline: escaping, tables, the folded per-case
 * block (`caseBlock`) with its anchor (`caseAnchor`) and a view's `CaseDetail` tables, pass/fail
 * colouring by `data-status`, the case filter ("only failing" and a text box) with the inline script
 * that sorts and filters, and the page shell. Nothing here knows a pipeline; every string from a
 * case goes through `esc`, and the page makes no request when opened (inline CSS and script, a CSP
 * that forbids loading anything).
 */
import type { CaseDetail, DetailCell, DetailTable, Status } from "../domain/CaseDetail.js"

const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g

/** Case text as HTML text (element content or a quoted attribute value). */
export const esc = (text: string): string =>
  text.replace(CONTROLS, "\uFFFD").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;"
  ).replace(/'/g, "&#39;")

/** Text cut to `max` characters (an ellipsis says so). */
export const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** A number for a table: integers as they are, others with `digits` decimals; `—` for unknown. */
export const fmt = (
  x: number | null | undefined,
  digits = 3
) => (x === null || x === undefined || !Number.isFinite(x) ? "—" : Number.isInteger(x) ? String(x) : x.toFixed(digits))

/** A table; header text is escaped, cells are HTML the caller escaped. */
export const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, attrs = "") =>
  `<table${attrs}><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>${
    rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join("")}</tr>`).join("\n")
  }</tbody></table>`

export const figure = (caption: string, svg: string) =>
  `<figure class="chart"><figcaption>${esc(caption)}</figcaption>${svg}</figure>`

/** The element id of a case's folded block: `case-<n>`, n the case's 1-based position in the input. */
export const caseAnchor = (ordinal: number) => `case-${ordinal + 1}`

/** A link to a case's block (the script opens it on arrival). */
export const caseLink = (ordinal: number, text: string) =>
  `<a class="caselink" href="#${caseAnchor(ordinal)}">${esc(text)}</a>`

/** ` data-status="fail"`: what the colouring and the "only failing" filter read. */
export const statusAttr = (
  status: Status | undefined
) => (status === undefined || status === "none" ? ` data-status="none"` : ` data-status="${status}"`)

const STATUS_WORD: Readonly<Record<Status, string>> = { fail: "failing", warn: "flagged", pass: "passing", none: "" }

/** A short coloured word for a status (`failing`, `flagged`, `passing`). */
export const statusBadge = (status: Status, why?: string) =>
  status === "none"
    ? ""
    : `<span class="badge ${status}"${why === undefined || why === "" ? "" : ` title="${esc(why)}"`}>${
      STATUS_WORD[status]
    }</span>`

/** What the colours mean, above a table that has them. */
export const legend = (
  what: { readonly fail: string; readonly warn?: string | undefined; readonly pass?: string | undefined }
) =>
  `<p class="legend note"><span class="swatch fail"></span> ${esc(what.fail)}${
    what.warn === undefined ? "" : ` <span class="swatch warn"></span> ${esc(what.warn)}`
  }${what.pass === undefined ? "" : ` <span class="swatch pass"></span> ${esc(what.pass)}`}</p>`

/**
 * The case filter: a text box (rows whose text holds it) and an "only failing" box (hides every
 * row and case block whose `data-status` is neither `fail` nor `warn`), with the count shown.
 */
export const filterControls = (shown: number, failing: number) =>
  `<div class="filters"><label><input id="only-failing" type="checkbox"> only failing or flagged cases (${failing})</label> ` +
  `<input id="filter" type="search" placeholder="filter cases by text" aria-label="filter cases by text"> ` +
  `<span class="note"><span id="shown">${shown}</span> shown</span></div>`

/** Text longer than this in a case block is cut (the full text is in report.json). */
export const DETAIL_TEXT_MAX = 1000

const detailCell = (cell: DetailCell, text: boolean) =>
  cell === null
    ? `<td class="n">—</td>`
    : typeof cell === "number"
    ? `<td class="n">${fmt(cell)}</td>`
    : `<td${text ? ` class="t"` : ""}>${esc(cut(cell, DETAIL_TEXT_MAX))}</td>`

/**
 * One of a case block's tables (hits, claims, gold spans): every cell escaped, each row coloured by
 * its status. A column with nothing in any row (no confidence, no retriever score) is left out.
 */
export const detailTable = (t: DetailTable) => {
  const texts = new Set(t.textColumns ?? [])
  if (t.rows.length === 0) return `<p class="caption">${esc(t.caption)}</p>`
  const shown = t.columns.flatMap((
    _,
    i
  ) => (t.rows.some((r) => r.cells[i] !== null && r.cells[i] !== undefined && r.cells[i] !== "") ? [i] : []))
  return `<p class="caption">${esc(t.caption)}</p><table class="detail"><thead><tr>${
    shown.map((i) => `<th>${esc(t.columns[i]!)}</th>`).join("")
  }</tr></thead><tbody>` +
    t.rows.map((r) =>
      `<tr${statusAttr(r.status)}>${shown.map((i) => detailCell(r.cells[i] ?? null, texts.has(i))).join("")}</tr>`
    ).join("") +
    `</tbody></table>`
}

export interface CaseBlock {
  /** The case's 0-based position in the input (its anchor is `caseAnchor(ordinal)`). */
  readonly ordinal: number
  readonly caseId: string
  readonly line?: number | undefined
  readonly status: Status
  /** Why the status (a failed judgment, `ndcg@10` set by convention…), shown beside it. */
  readonly why?: string | undefined
  /** Short text after the case id in the folded line, e.g. `ndcg@10 0.620`. */
  readonly headline?: string | undefined
  readonly detail: CaseDetail
  /** Set when the detail's tables were left out (the page's size budget): says where they are. */
  readonly omitted?: string | undefined
}

/** A case, folded (`<details>`): its id, line, status and headline value; open, its fields and tables. */
export const caseBlock = (b: CaseBlock) => {
  const d = b.detail
  const fields = (d.fields ?? []).filter(([, v]) => v !== "")
  return `<details class="casedetail" id="${caseAnchor(b.ordinal)}"${statusAttr(b.status)}><summary>` +
    `<span class="num">${b.ordinal + 1}.</span> <strong>${esc(cut(b.caseId, 200))}</strong>` +
    `${b.line === undefined ? "" : ` <span class="note">line ${b.line}</span>`}` +
    `${b.headline === undefined ? "" : ` — ${esc(b.headline)}`} ${statusBadge(b.status)}` +
    `${
      b.why === undefined || b.why === "" ? "" : ` <span class="why">${esc(cut(b.why, 300))}</span>`
    }</summary><div class="body">` +
    (d.problem === undefined ? "" : `<p class="problem">${esc(cut(d.problem, DETAIL_TEXT_MAX))}</p>`) +
    (fields.length === 0
      ? ""
      : `<dl>${
        fields.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(cut(v, DETAIL_TEXT_MAX * 2))}</dd>`).join("")
      }</dl>`) +
    (b.omitted !== undefined ? `<p class="note">${esc(b.omitted)}</p>` : (d.tables ?? []).map(detailTable).join("")) +
    `</div></details>`
}

export const STYLE = `
:root{--fg:#1f2937;--muted:#6b7280;--line:#e5e7eb;--accent:#4f6bed;--bad:#b91c1c;--badbg:#fef2f2;--warnc:#b45309;--warnbg:#fffbeb;--good:#15803d;--goodbg:#f0fdf4;--warn:#fef3c7}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);margin:0 auto;max-width:1200px;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0;overflow-wrap:anywhere}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}th{background:#f9fafb}
.note{color:var(--muted)}.banner{background:var(--warn);border:1px solid #f59e0b;padding:8px 12px;border-radius:6px;margin:8px 0}
.judge{background:#eef2ff;border-left:4px solid var(--accent);padding:6px 10px}
.charts{display:flex;flex-wrap:wrap;gap:16px}figure.chart{margin:0;border:1px solid var(--line);border-radius:6px;padding:8px;max-width:100%}figure.chart figcaption{font-weight:600;margin-bottom:4px;max-width:320px;overflow-wrap:anywhere}figure.chart svg{max-width:100%;height:auto}
.failed{color:var(--bad);font-weight:600}code{font-size:12px;background:#f3f4f6;padding:1px 3px;border-radius:3px;white-space:pre-wrap;word-break:break-word}
#cases{font-size:12px}#cases th{cursor:pointer;user-select:none;position:sticky;top:0;z-index:1}#cases th[aria-sort=ascending]::after{content:" ▲"}#cases th[aria-sort=descending]::after{content:" ▼"}
#cases td.n{text-align:right;white-space:nowrap}#cases td:not(.n):not(.st){min-width:8em;max-width:32em}.bar{display:inline-block;height:8px;background:var(--accent);margin-right:4px;vertical-align:middle;opacity:.6}
.tablewrap{max-height:70vh;overflow:auto;border:1px solid var(--line)}.filters{margin:6px 0;display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center}#filter{padding:4px 8px;width:280px;max-width:100%}
[data-status=fail]{background:var(--badbg)}[data-status=warn]{background:var(--warnbg)}[data-status=pass]{background:var(--goodbg)}
tr[data-status=fail]>td:first-child{box-shadow:inset 4px 0 var(--bad)}tr[data-status=warn]>td:first-child{box-shadow:inset 4px 0 #f59e0b}tr[data-status=pass]>td:first-child{box-shadow:inset 4px 0 var(--good)}
.badge{display:inline-block;font-size:11px;font-weight:600;border-radius:9px;padding:0 7px;color:#fff;vertical-align:1px}.badge.fail{background:var(--bad)}.badge.warn{background:#d97706}.badge.pass{background:var(--good)}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-left:8px}.swatch.fail{background:var(--bad)}.swatch.warn{background:#f59e0b}.swatch.pass{background:var(--good)}
.value{white-space:nowrap}.value.fail{color:var(--bad);font-weight:600}.value.pass{color:var(--good)}.clip{max-height:4.4em;overflow:hidden}
details.casedetail{border:1px solid var(--line);border-radius:6px;margin:6px 0;background:#fff}details.casedetail[data-status=fail]{border-left:4px solid var(--bad)}details.casedetail[data-status=warn]{border-left:4px solid #f59e0b}details.casedetail[data-status=pass]{border-left:4px solid var(--good)}
details.casedetail>summary{cursor:pointer;padding:6px 10px;overflow-wrap:anywhere}details.casedetail>.body{padding:4px 12px 10px;background:#fff}details.casedetail:target>summary{outline:2px solid var(--accent)}
.casedetail .num{color:var(--muted)}.casedetail .why{color:var(--muted);font-size:12px}.problem{color:var(--bad);font-weight:600}
.casedetail dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0}.casedetail dt{font-weight:600;color:var(--muted)}.casedetail dd{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
.caption{font-weight:600;margin:8px 0 2px}table.detail{font-size:12px;width:100%}table.detail td.t{white-space:pre-wrap;overflow-wrap:anywhere;min-width:12em}table.detail td.n{text-align:right;white-space:nowrap}
`

/**
 * Sort (click a header; numbers by value), filter (text box; "only failing"), and open a case's
 * block when a link to it is followed. No framework, no request.
 */
export const SCRIPT = `
(function(){
function each(list,f){Array.prototype.forEach.call(list,f)}
function openCase(){var id=decodeURIComponent(location.hash.slice(1));if(id.indexOf("case-")!==0)return;var d=document.getElementById(id);if(d&&d.tagName==="DETAILS"){d.hidden=false;d.open=true;d.scrollIntoView({block:"start"})}}
window.addEventListener("hashchange",openCase);openCase();
var table=document.getElementById("cases");if(!table)return;
var body=table.tBodies[0];var heads=table.tHead.rows[0].cells;
function key(cell){var v=cell.getAttribute("data-v");return v===null?null:Number(v)}
each(heads,function(th,col){th.addEventListener("click",function(){
var dir=th.getAttribute("aria-sort")==="ascending"?"descending":"ascending";
each(heads,function(h){h.removeAttribute("aria-sort")});th.setAttribute("aria-sort",dir);
var rows=Array.prototype.slice.call(body.rows);var sign=dir==="ascending"?1:-1;
rows.sort(function(a,b){var x=a.cells[col],y=b.cells[col];var kx=key(x),ky=key(y);
if(kx!==null||ky!==null){if(kx===null)return 1;if(ky===null)return -1;return (kx-ky)*sign}
return x.textContent.localeCompare(y.textContent)*sign});
rows.forEach(function(r){body.appendChild(r)})})});
var box=document.getElementById("filter");var only=document.getElementById("only-failing");var count=document.getElementById("shown");
function failing(el){var s=el.getAttribute("data-status");return s==="fail"||s==="warn"}
function apply(){var q=box.value.toLowerCase();var onlyFailing=only.checked;var n=0;
each(body.rows,function(r){var show=(q===""||r.textContent.toLowerCase().indexOf(q)!==-1)&&(!onlyFailing||failing(r));r.hidden=!show;if(show)n++});
each(document.querySelectorAll("details.casedetail"),function(d){d.hidden=onlyFailing&&!failing(d)});
count.textContent=String(n)}
box.addEventListener("input",apply);only.addEventListener("change",apply);
})();
`

/** The page shell: a CSP that forbids any request, the style, the body, the script. */
export const page = (title: string, body: ReadonlyArray<string>) =>
  `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
  `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">` +
  `<title>${esc(title)}</title><style>${STYLE}</style></head><body>\n${
    body.filter((b) => b !== "").join("\n")
  }\n<script>${SCRIPT}</script></body></html>\n`
