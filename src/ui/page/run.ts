/**
 * A run: its headline, the judge's agreement so far, the review queue, and its cases — filtered
 * (failing, text, a metric range, labelled), sorted, paged from the server.
 */
import { agreementPanel } from "./agreement.js"
import { api, type CasePage, type RunDetail } from "./api.js"
import { fmt, h, mount, route, usd, when } from "./dom.js"
import { navigation } from "./nav.js"
import { glance, judgeBadge, metricText, statusBadge } from "./runs.js"
import { keyHelp, setKeys, shell } from "./shell.js"

const PAGE = 50

const FILTER_KEYS = [
  "failing",
  "q",
  "metric",
  "min",
  "max",
  "sort",
  "order",
  "labelled",
  "iteration",
  "offset"
] as const

export const caseQuery = (params: URLSearchParams): Record<string, string | number | undefined> => {
  const out: Record<string, string | number | undefined> = {}
  for (const k of FILTER_KEYS) {
    const v = params.get(k)
    if (v !== null && v !== "") out[k] = v
  }
  if (out["failing"] !== undefined) {
    out["failing"] = out["failing"] === "1" || out["failing"] === "true"
      ? "true"
      : undefined
  }
  out["limit"] = PAGE
  return out
}

const statusDot = (status: CasePage["rows"][number]["status"]) =>
  h("span", {
    class: `dot dot-${status}`,
    title: status === "fail" ? "failing" : status === "warn" ? "flagged" : status === "pass" ? "passing" : "no verdict"
  })

export const runView = async (root: HTMLElement, params: URLSearchParams, parts: ReadonlyArray<string>) => {
  const id = parts[1]!
  const iteration = params.get("iteration") === null ? undefined : Number(params.get("iteration"))
  const [detail, agreement] = await Promise.all([api.run(id, iteration), api.agreement(id)])
  const query = caseQuery(params)
  // The default order: the run's headline metric, lowest first (where the failures are).
  if (
    query["sort"] === undefined && detail.run.headline !== null &&
    detail.caseMetrics.some((m) => m.name === detail.run.headline)
  ) {
    query["sort"] = detail.run.headline
    query["order"] ??= "asc"
  }
  const page = await api.cases(id, query)
  const offset = page.offset
  navigation.set({
    kind: "list",
    runId: id,
    query,
    ids: page.rows.map((r) => r.caseId),
    offset,
    total: page.total,
    iteration: detail.iteration
  })

  const setParam = (changes: Readonly<Record<string, string | undefined>>) => {
    const next = new URLSearchParams(params)
    for (const [k, v] of Object.entries(changes)) {
      if (v === undefined || v === "") next.delete(k)
      else next.set(k, v)
    }
    if (!("offset" in changes)) next.delete("offset")
    location.hash = `${route("run", id)}${next.toString() === "" ? "" : `?${next.toString()}`}`
  }

  const metrics = detail.caseMetrics
  const shown = metrics.filter((m) => m.direction !== "none").slice(0, 5)
  const headline = detail.run.headline
  const sortMetric = String(query["sort"] ?? "line")
  const failing = h("input", { type: "checkbox", id: "only-failing", checked: query["failing"] === "true" })
  failing.addEventListener("change", () => setParam({ failing: failing.checked ? "1" : undefined }))
  const search = h("input", {
    type: "search",
    id: "case-search",
    placeholder: "Search the cases' text…",
    value: String(query["q"] ?? ""),
    "aria-label": "Search cases"
  })
  search.addEventListener("change", () => setParam({ q: search.value.trim() }))
  const metricOptions = (selected: string, extra: ReadonlyArray<readonly [string, string]> = []) => [
    ...extra.map(([value, text]) => h("option", { value, selected: value === selected }, text)),
    ...metrics.map((m) => h("option", { value: m.name, selected: m.name === selected }, m.name))
  ]
  const sort = h(
    "select",
    { id: "sort", "aria-label": "Sort by" },
    metricOptions(sortMetric, [["line", "input order"]])
  )
  sort.addEventListener(
    "change",
    () => setParam({ sort: sort.value, order: sort.value === "line" ? undefined : String(query["order"] ?? "asc") })
  )
  const order = h(
    "select",
    { id: "order", "aria-label": "Order" },
    h("option", { value: "asc", selected: query["order"] !== "desc" }, "lowest first"),
    h("option", { value: "desc", selected: query["order"] === "desc" }, "highest first")
  )
  order.addEventListener("change", () => setParam({ order: order.value }))
  const rangeMetric = h(
    "select",
    { id: "range-metric", "aria-label": "Metric range" },
    metricOptions(String(query["metric"] ?? ""), [["", "metric range…"]])
  )
  const min = h("input", {
    type: "number",
    id: "range-min",
    step: "any",
    placeholder: "min",
    value: query["min"] === undefined ? "" : String(query["min"]),
    "aria-label": "Minimum"
  })
  const max = h("input", {
    type: "number",
    id: "range-max",
    step: "any",
    placeholder: "max",
    value: query["max"] === undefined ? "" : String(query["max"]),
    "aria-label": "Maximum"
  })
  const applyRange = () =>
    setParam({
      metric: rangeMetric.value,
      min: rangeMetric.value === "" ? undefined : min.value,
      max: rangeMetric.value === "" ? undefined : max.value
    })
  rangeMetric.addEventListener("change", applyRange)
  min.addEventListener("change", applyRange)
  max.addEventListener("change", applyRange)
  const labelled = h(
    "select",
    { id: "labelled", "aria-label": "Labelled" },
    h("option", { value: "", selected: query["labelled"] === undefined }, "labelled or not"),
    h("option", { value: "no", selected: query["labelled"] === "no" }, "not labelled yet"),
    h("option", { value: "yes", selected: query["labelled"] === "yes" }, "labelled")
  )
  labelled.addEventListener("change", () => setParam({ labelled: labelled.value }))
  const iterationSelect = detail.run.iterations <= 1
    ? null
    : h(
      "select",
      { id: "iteration", "aria-label": "Iteration" },
      Array.from(
        { length: detail.run.iterations },
        (_, i) => h("option", { value: String(i + 1), selected: i + 1 === detail.iteration }, `iteration ${i + 1}`)
      )
    )
  iterationSelect?.addEventListener("change", () => setParam({ iteration: iterationSelect.value }))

  let selected = 0
  const rows = page.rows.map((r, k) =>
    h(
      "tr",
      { "data-case": r.caseId, class: k === 0 ? "selected" : undefined },
      h("td", null, statusDot(r.status)),
      h(
        "td",
        { class: "case-id" },
        h("a", {
          href: route("run", id, "case", r.caseId) + (detail.iteration === 1 ? "" : `?iteration=${detail.iteration}`)
        }, r.caseId)
      ),
      h(
        "td",
        { class: "text-cell" },
        r.question === null ? null : h("div", { class: "question" }, r.question),
        r.answer === null ? null : h("div", { class: "answer sub" }, r.answer)
      ),
      shown.map((m) =>
        h("td", { class: m.name === headline ? "num headline-col" : "num" }, fmt(r.metrics[m.name] ?? null))
      ),
      h("td", { class: "num" }, r.labels === 0 ? "" : String(r.labels))
    )
  )
  const selectRow = (k: number) => {
    if (rows.length === 0) return
    rows[selected]?.classList.remove("selected")
    selected = Math.max(0, Math.min(rows.length - 1, k))
    rows[selected]!.classList.add("selected")
    rows[selected]!.scrollIntoView({ block: "nearest" })
  }
  setKeys((e) => {
    if (e.key === "j" || e.key === "ArrowDown") selectRow(selected + 1)
    else if (e.key === "k" || e.key === "ArrowUp") selectRow(selected - 1)
    else if (e.key === "Enter" || e.key === "o") {
      const caseId = page.rows[selected]?.caseId
      if (caseId !== undefined) location.hash = route("run", id, "case", caseId)
    } else if (e.key === "/") search.focus()
    else if (e.key === "f") setParam({ failing: failing.checked ? undefined : "1" })
    else if (e.key === "r") void openQueue()
    else if (e.key === "]" && offset + PAGE < page.total) setParam({ offset: String(offset + PAGE) })
    else if (e.key === "[" && offset > 0) setParam({ offset: String(Math.max(0, offset - PAGE)) })
    else return false
    return true
  })

  const openQueue = async () => {
    const q = await api.queue(id, { size: 20, iteration: detail.iteration })
    if (q.items.length === 0) return
    navigation.set({ kind: "queue", runId: id, items: q.items, iteration: detail.iteration })
    location.hash = route("run", id, "case", q.items[0]!.caseId)
  }

  const run = detail.run
  mount(
    root,
    shell(
      `Run ${run.id}`,
      runHeader(detail),
      h(
        "div",
        { class: "columns" },
        h(
          "div",
          { class: "main-column" },
          h(
            "section",
            { class: "toolbar filters" },
            h(
              "label",
              { class: "check" },
              failing,
              ` only failing (${detail.failing}${detail.verdictsReady ? "" : "+"})`
            ),
            search,
            h("span", { class: "group" }, "sort ", sort, order),
            h("span", { class: "group" }, rangeMetric, min, max),
            labelled,
            iterationSelect
          ),
          h(
            "p",
            { class: "sub", id: "case-count" },
            page.total === 0
              ? "No case matches."
              : `Cases ${offset + 1}–${offset + page.rows.length} of ${page.total}${
                page.total === page.cases ? "" : ` (${page.cases} in the run)`
              }`
          ),
          page.rows.length === 0
            ? null
            : h(
              "div",
              { class: "table-wrap" },
              h(
                "table",
                { class: "cases", id: "cases" },
                h(
                  "thead",
                  null,
                  h(
                    "tr",
                    null,
                    h("th", null, ""),
                    h("th", null, "case"),
                    h("th", null, "question · answer"),
                    shown.map((m) => h("th", { class: "num", title: m.description }, m.name)),
                    h("th", { class: "num" }, "labels")
                  )
                ),
                h("tbody", null, rows)
              )
            ),
          h(
            "nav",
            { class: "pager" },
            h("button", {
              disabled: offset === 0,
              onclick: () => setParam({ offset: String(Math.max(0, offset - PAGE)) })
            }, "← previous"),
            h("button", {
              disabled: offset + PAGE >= page.total,
              onclick: () => setParam({ offset: String(offset + PAGE) })
            }, "next →")
          ),
          detail.notes.length === 0 ? null : h("ul", { class: "notes" }, detail.notes.map((n) => h("li", null, n)))
        ),
        h(
          "aside",
          { class: "side-column" },
          h(
            "section",
            { class: "queue" },
            h("h2", null, "Review queue"),
            h(
              "p",
              { class: "sub" },
              "Cases to label next: where iterations or two judges disagree, then a sample across the range of scores."
            ),
            h("button", { class: "primary", id: "start-queue", onclick: () => void openQueue() }, "Label the queue (r)")
          ),
          agreementPanel(agreement)
        )
      ),
      keyHelp([
        ["j / k", "next / previous case"],
        ["Enter", "open the case"],
        ["/", "search"],
        ["f", "only failing on / off"],
        ["r", "label the review queue"],
        ["] / [", "next / previous page"],
        ["?", "this help"]
      ])
    )
  )
}

export const runHeader = (detail: RunDetail) => {
  const run = detail.run
  return h(
    "section",
    { class: "run-header" },
    h(
      "p",
      { class: "facts" },
      h("span", null, run.pipeline),
      " · ",
      judgeBadge(run),
      " · ",
      statusBadge(run.status),
      " · ",
      h("span", null, `${fmt(detail.cases)} cases`),
      " · ",
      h("span", null, `started ${when(run.startedAt)}`),
      " · ",
      h("span", null, `cost ${usd(run.costUsd)}`),
      run.target === null ? null : [" · ", h("span", null, `target ${run.target}`)]
    ),
    h("p", { class: "metrics-line" }, glance(run).map((m) => [metricText(m), " "]))
  )
}
