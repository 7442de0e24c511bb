/**
 * Two runs compared: compare's paired tests per metric, the cases ordered by change (worst first),
 * and a case's two answers side by side with their verdicts, latency and cost — where a person can
 * say which answer is better (a preference label, kept in run A's labels).
 */
import { api, type CaseView, type Comparison } from "./api.js"
import { fieldsBlock, judgmentsBlock, STATUS_TEXT, systemLine, valueText } from "./case.js"
import { fmt, h, mount, pText, route, signed } from "./dom.js"
import { metricText } from "./runs.js"
import { keyHelp, say, setKeys, shell } from "./shell.js"

const PAGE = 50

const winnerText = (m: Comparison["metrics"][number]) =>
  m.winner === "A"
    ? "B worse"
    : m.winner === "B"
    ? "B better"
    : m.winner === "none"
    ? "n.s."
    : "too few cases"

const metricsTable = (c: Comparison) =>
  h(
    "div",
    { class: "table-wrap", id: "compare-metrics-wrap" },
    h(
      "table",
      { class: "compare", id: "compare-metrics" },
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          ["metric", "n", "mean A", "mean B", "Δ", "95% CI", "p t / rand.", "W/T/L", "verdict"].map((x) =>
            h("th", null, x)
          )
        )
      ),
      h(
        "tbody",
        null,
        c.metrics.map((m) =>
          h(
            "tr",
            { class: m.winner === "A" ? "row-fail" : m.winner === "B" ? "row-pass" : undefined, title: m.verdict },
            h(
              "td",
              { class: "metric-cell" },
              m.metric,
              m.lowerIsBetter ? h("span", { class: "sub", title: "lower is better" }, " ↓") : null
            ),
            h("td", { class: "num" }, String(m.n)),
            h("td", { class: "num" }, fmt(m.meanA)),
            h("td", { class: "num" }, fmt(m.meanB)),
            h("td", { class: "num" }, signed(m.delta)),
            h("td", { class: "nowrap" }, m.ci.lower === null ? "—" : `[${signed(m.ci.lower)}, ${signed(m.ci.upper)}]`),
            h("td", { class: "num" }, `${pText(m.pTTest)} / ${pText(m.pRandomisation)}`),
            h("td", { class: "nowrap" }, `${m.wins}/${m.ties}/${m.losses}`),
            h("td", { class: "nowrap", title: m.verdict }, winnerText(m))
          )
        ),
        c.pending.map((m) => h("tr", { class: "pending" }, h("td", null, m), h("td", { class: "sub" }, "testing…"))),
        c.failed.map((f) =>
          h("tr", { class: "row-warn" }, h("td", null, f.metric), h("td", { class: "sub" }, f.problem))
        )
      )
    ),
    c.pending.length === 0
      ? null
      : h(
        "p",
        { class: "sub", id: "compare-pending" },
        `compare's tests run in the background, one metric at a time: ${c.pending.length} to go (about n × 10,000 draws each).`
      )
  )

export const compareView = async (root: HTMLElement, params: URLSearchParams, parts: ReadonlyArray<string>) => {
  const a = parts[1]!
  const b = parts[2]!
  const metric = params.get("metric") ?? undefined
  const offset = Number(params.get("offset") ?? "0") || 0
  const c = await api.compare({ a, b, ...(metric === undefined ? {} : { metric }), offset, limit: PAGE })
  const set = (changes: Readonly<Record<string, string | undefined>>) => {
    const next = new URLSearchParams(params)
    for (const [k, v] of Object.entries(changes)) {
      if (v === undefined) next.delete(k)
      else next.set(k, v)
    }
    location.hash = `${route("compare", a, b)}?${next.toString()}`
  }
  const metricSelect = h(
    "select",
    { id: "compare-metric", "aria-label": "Order cases by the change of" },
    c.metrics.map((m) => h("option", { value: m.metric, selected: m.metric === c.metric }, m.metric))
  )
  metricSelect.addEventListener("change", () => set({ metric: metricSelect.value, offset: undefined }))
  const rows = c.changed.rows.map((r) =>
    h(
      "tr",
      {
        "data-case": r.caseId,
        class: r.change === null ? undefined : r.change < 0 ? "row-fail" : r.change > 0 ? "row-pass" : undefined
      },
      h("td", { class: "case-id" }, h("a", { href: route("compare", a, b, "case", r.caseId) }, r.caseId)),
      h("td", { class: "text-cell" }, r.question ?? ""),
      h("td", { class: "num" }, fmt(r.a)),
      h("td", { class: "num" }, fmt(r.b)),
      h("td", { class: "num" }, signed(r.change))
    )
  )
  let selected = 0
  setKeys((e) => {
    if (e.key === "j" || e.key === "ArrowDown") selected = Math.min(rows.length - 1, selected + 1)
    else if (e.key === "k" || e.key === "ArrowUp") selected = Math.max(0, selected - 1)
    else if (e.key === "Enter" || e.key === "o") {
      const r = c.changed.rows[selected]
      if (r !== undefined) location.hash = route("compare", a, b, "case", r.caseId)
      return true
    } else return false
    rows.forEach((row, k) => row.classList.toggle("selected", k === selected))
    rows[selected]?.scrollIntoView({ block: "nearest" })
    return true
  })
  rows[0]?.classList.add("selected")
  const metricsSlot = h("div", null, metricsTable(c))
  // Until every metric is tested, the table is asked for again (the rest of the view stays as it is).
  const hash = location.hash
  const poll = async (last: Comparison) => {
    if (last.pending.length === 0 || location.hash !== hash) return
    await new Promise((r) => setTimeout(r, 1000))
    if (location.hash !== hash) return
    const next = await api.compare({ a, b, ...(metric === undefined ? {} : { metric }), offset, limit: 1 })
    metricsSlot.replaceChildren(metricsTable(next))
    await poll(next)
  }
  void poll(c).catch(() => undefined)
  mount(
    root,
    shell(
      `Compare ${c.a.id} → ${c.b.id}`,
      h(
        "section",
        { class: "compare-runs" },
        h(
          "div",
          null,
          h("strong", null, "A "),
          h("a", { href: route("run", c.a.id) }, c.a.id),
          h("span", { class: "sub" }, ` ${c.a.pipeline} · ${c.a.judge.label}`)
        ),
        h(
          "div",
          null,
          h("strong", null, "B "),
          h("a", { href: route("run", c.b.id) }, c.b.id),
          h("span", { class: "sub" }, ` ${c.b.pipeline} · ${c.b.judge.label}`)
        ),
        h(
          "p",
          { class: "sub" },
          `${c.cases} paired cases; Δ = B − A; p of the paired t-test / the randomisation test, which decides (α = ${c.alpha}, seed ${c.seed}); 95% bootstrap CI of the mean difference; ↓ lower is better; n.s. not significant. Hover a row for its verdict.`
        )
      ),
      metricsSlot,
      h(
        "section",
        { class: "toolbar" },
        h("span", null, "Cases by the change of "),
        metricSelect,
        h(
          "span",
          { class: "sub", id: "changed-count" },
          ` — ${c.changed.worse} worse, ${c.changed.better} better, of ${c.changed.total}; worst first`
        )
      ),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "cases", id: "changed" },
          h(
            "thead",
            null,
            h(
              "tr",
              null,
              h("th", null, "case"),
              h("th", null, "question"),
              h("th", { class: "num" }, "A"),
              h("th", { class: "num" }, "B"),
              h("th", { class: "num" }, "change")
            )
          ),
          h("tbody", null, rows)
        )
      ),
      h(
        "nav",
        { class: "pager" },
        h(
          "button",
          { disabled: offset === 0, onclick: () => set({ offset: String(Math.max(0, offset - PAGE)) }) },
          "← previous"
        ),
        h("button", {
          disabled: offset + PAGE >= c.changed.total,
          onclick: () => set({ offset: String(offset + PAGE) })
        }, "next →")
      ),
      keyHelp([["j / k", "next / previous case"], ["Enter", "the two answers side by side"], ["?", "this help"]])
    )
  )
}

const PREFERENCES: ReadonlyArray<{ readonly value: -2 | -1 | 0 | 1 | 2; readonly key: string; readonly text: string }> =
  [
    { value: -2, key: "1", text: "A much better" },
    { value: -1, key: "2", text: "A better" },
    { value: 0, key: "3", text: "alike" },
    { value: 1, key: "4", text: "B better" },
    { value: 2, key: "5", text: "B much better" }
  ]

const side = (name: string, runId: string, view: CaseView) =>
  h(
    "div",
    { class: "side" },
    h("h2", null, `${name}: `, h("a", { href: route("run", runId, "case", view.caseId) }, `run ${runId}`)),
    h(
      "p",
      { class: `case-status status-${view.status}` },
      STATUS_TEXT[view.status],
      view.why === undefined ? null : `: ${view.why}`
    ),
    fieldsBlock(view.fields),
    systemLine(view),
    h(
      "div",
      { class: "verdicts" },
      // The verdicts that decide the metrics: claims against the other side (not the contexts), hits, grades, nuggets.
      view.targets.filter((t) =>
        t.target.kind !== "metric" && !(t.target.kind === "claim" && typeof t.target.against !== "string")
      ).map((t) =>
        h(
          "div",
          { class: "verdict-row" },
          h("span", { class: `badge verdict verdict-${String(t.judged).replace(/[^a-z0-9_-]/gi, "")}` }, t.judgedText),
          " ",
          h("span", null, t.title),
          h("span", { class: "sub" }, ` (${t.group})`)
        )
      )
    ),
    h(
      "p",
      { class: "metrics-line" },
      view.metrics.filter((m) => m.spec.direction !== "none").map((
        m
      ) => [metricText({ name: m.spec.name, value: m.value, ci: null, spec: m.spec }), " "])
    ),
    judgmentsBlock(view.judgments)
  )

export const compareCaseView = async (root: HTMLElement, _params: URLSearchParams, parts: ReadonlyArray<string>) => {
  const a = parts[1]!
  const b = parts[2]!
  const caseId = parts[4]!
  const [va, vb, labels] = await Promise.all([api.case(a, caseId), api.case(b, caseId), api.labels(a)])
  const existing = labels.labels.find((l) =>
    l.caseId === caseId && l.target.kind === "preference" && l.target.other.runId === vb.runId
  )
  const current = h(
    "p",
    { class: "sub", id: "preference-now" },
    existing === undefined ? "No preference given yet." : `Your preference: ${valueText(existing.label)}`
  )
  const prefer = async (value: -2 | -1 | 0 | 1 | 2) => {
    try {
      const created = await api.label(a, {
        caseId,
        target: { kind: "preference", other: { runId: b } },
        label: { preference: value }
      })
      current.textContent = `Your preference: ${valueText(created.label.label)}`
      say(`Saved: ${PREFERENCES.find((p) => p.value === value)!.text}.`)
    } catch (e) {
      say(`Not saved: ${e instanceof Error ? e.message : String(e)}`, "error")
    }
  }
  setKeys((e) => {
    const p = PREFERENCES.find((x) => x.key === e.key)
    if (p !== undefined) {
      void prefer(p.value)
      return true
    }
    if (e.key === "b" || e.key === "Escape") {
      location.hash = route("compare", a, b)
      return true
    }
    return false
  })
  mount(
    root,
    shell(
      `Case ${caseId}: A and B`,
      h(
        "nav",
        { class: "crumbs" },
        h("a", { href: "#/" }, "Runs"),
        " › ",
        h("a", { href: route("compare", a, b) }, `compare ${a} → ${b}`),
        " › ",
        h("span", null, caseId)
      ),
      h(
        "section",
        { class: "preference" },
        h("span", null, "Which answer is better? "),
        PREFERENCES.map((p) =>
          h("button", { class: "choice", onclick: () => void prefer(p.value) }, h("kbd", null, p.key), ` ${p.text}`)
        ),
        current
      ),
      h("div", { class: "side-by-side" }, side("A", a, va), side("B", b, vb)),
      keyHelp([["1–5", "A much better … B much better"], ["b", "back to the comparison"], ["?", "this help"]])
    )
  )
}
