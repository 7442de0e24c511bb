/** The runs list: every run with its pipeline, date, judge, cases, headline metrics with CIs, cost, status. */
import { api, type RunList } from "./api.js"
import { fmt, h, mount, route, usd, when } from "./dom.js"
import { shell, type View } from "./shell.js"

type Run = RunList["runs"][number]

const STATUS_TEXT: Readonly<Record<Run["status"], string>> = {
  complete: "complete",
  partial: "partial",
  "failed-judgments": "failed judgments",
  running: "running",
  stopped: "stopped",
  failed: "failed"
}

export const statusBadge = (status: Run["status"]) =>
  h("span", { class: `badge status-${status}` }, STATUS_TEXT[status])

export const judgeBadge = (run: Run) =>
  h(
    "span",
    { class: run.judge.heuristic ? "badge heuristic" : "badge judge", title: run.judge.label },
    run.judge.heuristic ? "heuristic judge" : `${run.judge.provider} ${run.judge.model}`
  )

/** A headline metric with its CI: "0.812 [0.79, 0.83]". */
export const metricText = (m: Run["metrics"][number]) =>
  h(
    "span",
    { class: "metric" },
    h(
      "span",
      { class: "metric-nv" },
      h("span", { class: "metric-name" }, m.name),
      " ",
      h("span", { class: "metric-value" }, fmt(m.value))
    ),
    m.ci === null ? null : [" ", h("span", { class: "ci" }, `[${fmt(m.ci.lower)}, ${fmt(m.ci.upper)}]`)]
  )

/** The headline metrics worth a glance: the first four, as the server orders them (the ranking metric first). */
export const glance = (run: Run) => run.metrics.slice(0, 4)

export const runsView: View = async (root, params) => {
  const pipeline = params.get("pipeline") ?? ""
  const q = params.get("q") ?? ""
  const list = await api.runs({ pipeline, q })
  const all = pipeline === "" && q === "" ? list : await api.runs()
  const pipelines = [...new Set(all.runs.map((r) => r.pipeline))].sort()
  const chosen: Array<string> = []
  const compareButton = h(
    "button",
    { class: "primary", disabled: true, id: "compare-selected" },
    "Compare selected (A → B)"
  )
  const updateCompare = () => {
    compareButton.disabled = chosen.length !== 2
    compareButton.textContent = chosen.length === 2
      ? `Compare ${chosen[0]} → ${chosen[1]}`
      : `Compare: pick two runs (${chosen.length}/2)`
  }
  compareButton.addEventListener("click", () => {
    if (chosen.length === 2) location.hash = route("compare", chosen[0]!, chosen[1]!)
  })
  updateCompare()
  const apply = (next: { pipeline?: string; q?: string }) => {
    const p = new URLSearchParams()
    const pl = next.pipeline ?? pipeline
    const qq = next.q ?? q
    if (pl !== "") p.set("pipeline", pl)
    if (qq !== "") p.set("q", qq)
    location.hash = `#/${p.toString() === "" ? "" : `?${p.toString()}`}`
  }
  const search = h("input", {
    type: "search",
    id: "run-filter",
    placeholder: "Filter runs: id, judge, input, date…",
    value: q,
    "aria-label": "Filter runs by text"
  })
  search.addEventListener("change", () => apply({ q: search.value.trim() }))
  const select = h(
    "select",
    {
      id: "pipeline-filter",
      "aria-label": "Pipeline",
      onchange: (e) => apply({ pipeline: (e.target as HTMLSelectElement).value })
    },
    h("option", { value: "", selected: pipeline === "" }, "every pipeline"),
    pipelines.map((p) => h("option", { value: p, selected: p === pipeline }, p))
  )
  const rows = list.runs.map((run) => {
    const box = h("input", { type: "checkbox", "aria-label": `Select run ${run.id} to compare` })
    box.addEventListener("change", () => {
      const at = chosen.indexOf(run.id)
      if (box.checked && at === -1) chosen.push(run.id)
      if (!box.checked && at !== -1) chosen.splice(at, 1)
      updateCompare()
    })
    return h(
      "tr",
      { "data-case": run.id },
      h("td", null, box),
      h(
        "td",
        { class: "run-name" },
        h("a", { href: route("run", run.id) }, run.id),
        h("div", { class: "sub" }, run.pipeline),
        h("div", { class: "sub nowrap", title: run.startedAt }, when(run.startedAt))
      ),
      h("td", null, judgeBadge(run)),
      h("td", { class: "num" }, fmt(run.cases)),
      h("td", null, glance(run).map((m) => h("div", null, metricText(m)))),
      h("td", { class: "num" }, usd(run.costUsd)),
      h(
        "td",
        null,
        statusBadge(run.status),
        run.target === null ? null : h("div", { class: "sub" }, `target ${run.target}`)
      ),
      h("td", { class: "num" }, run.labels)
    )
  })
  mount(
    root,
    shell(
      "Runs",
      h(
        "section",
        { class: "toolbar" },
        select,
        search,
        compareButton
      ),
      list.runs.length === 0
        ? h(
          "p",
          { class: "empty" },
          all.runs.length === 0
            ? "No runs under the output root yet. Run a pipeline (rag-eval run …) and reload."
            : "No run matches the filter."
        )
        : h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "runs", id: "runs" },
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                h("th", null, ""),
                h("th", null, "run · started"),
                h("th", null, "judge"),
                h("th", { class: "num" }, "cases"),
                h("th", null, "headline metrics [95% CI]"),
                h("th", { class: "num" }, "cost"),
                h("th", null, "status"),
                h("th", { class: "num" }, "labels")
              )
            ),
            h("tbody", null, rows)
          )
        ),
      list.problems.length === 0
        ? null
        : h(
          "details",
          { class: "problems" },
          h(
            "summary",
            null,
            `${list.problems.length} run director${list.problems.length === 1 ? "y" : "ies"} could not be read`
          ),
          h("ul", null, list.problems.map((p) => h("li", null, h("code", null, p.dir), ": ", p.problem)))
        )
    )
  )
}
