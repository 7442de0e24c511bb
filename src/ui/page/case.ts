/**
 * A case: its question, answer, reference and passages; each judgment a person can label (claims,
 * hits, grades, nuggets, per-case metrics) with the judge's verdict, reason and evidence; the judge's
 * replies; and the agreement so far, updated after every label. Keyboard first: j/k move between
 * judgments, number keys give a grade or verdict, y agrees, x says wrong, n/p go to the next or
 * previous case of the list or queue.
 */
import { agreementPanel } from "./agreement.js"
import { api, type CaseTarget, type CaseView, type Label } from "./api.js"
import { fmt, h, mount, route, usd, when } from "./dom.js"
import { navigation } from "./nav.js"
import { keyHelp, say, setKeys, shell } from "./shell.js"

/** A case's status in words. */
export const STATUS_TEXT = { fail: "failing", warn: "flagged", pass: "passing", none: "no verdict" } as const

export const valueText = (label: Label["label"]): string =>
  "agree" in label
    ? label.agree ? "the judge is right" : "the judge is wrong"
    : "grade" in label
    ? `grade ${label.grade}`
    : "verdict" in label
    ? label.verdict
    : "support" in label
    ? label.support.replace("_", " ")
    : "value" in label
    ? `value ${fmt(label.value)}`
    : `preference ${label.preference}`

const sameValue = (a: Label["label"], b: Label["label"]) => JSON.stringify(a) === JSON.stringify(b)

export const fieldsBlock = (fields: CaseView["fields"]) =>
  h("dl", { class: "fields" }, fields.map(([name, text]) => [h("dt", null, name), h("dd", { class: "text" }, text)]))

export const tablesBlock = (tables: CaseView["tables"]) =>
  tables.map((t) =>
    h(
      "div",
      { class: "detail-table" },
      h("h3", null, t.caption),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          null,
          h("thead", null, h("tr", null, t.columns.map((c) => h("th", null, c)))),
          h(
            "tbody",
            null,
            t.rows.map((r) =>
              h(
                "tr",
                { class: r.status === undefined || r.status === "none" ? undefined : `row-${r.status}` },
                r.cells.map((c, k) =>
                  h("td", {
                    class: (t.textColumns ?? []).includes(k) ? "text" : typeof c === "number" ? "num" : undefined
                  }, c === null ? "—" : typeof c === "number" ? fmt(c) : c)
                )
              )
            )
          )
        )
      )
    )
  )

export const judgmentsBlock = (judgments: CaseView["judgments"]) =>
  h(
    "details",
    { class: "judgments" },
    h("summary", null, `The judge's replies (${judgments.length})`),
    judgments.length === 0
      ? h("p", { class: "sub" }, "No judgment of this case is in the journal.")
      : h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          null,
          h(
            "thead",
            null,
            h(
              "tr",
              null,
              ["criterion", "target", "status", "score", "reason", "tokens in/out", "latency"].map((c) =>
                h("th", null, c)
              )
            )
          ),
          h(
            "tbody",
            null,
            judgments.map((j) =>
              h(
                "tr",
                { class: j.status === "ok" ? undefined : "row-fail" },
                h("td", null, j.criterion),
                h("td", null, j.target),
                h("td", null, j.status),
                h("td", { class: "num" }, fmt(j.score)),
                h(
                  "td",
                  { class: "text" },
                  j.reason,
                  j.evidence === undefined ? null : h("div", { class: "evidence" }, `evidence: ${j.evidence}`),
                  j.raw === undefined ? null : h("pre", { class: "raw" }, j.raw)
                ),
                h("td", { class: "num" }, `${j.inputTokens}/${j.outputTokens}`),
                h("td", { class: "num" }, `${j.latencyMs} ms`)
              )
            )
          )
        )
      )
  )

export const systemLine = (c: CaseView) => {
  const s = c.system
  const parts: Array<string> = []
  if (s.latencyMs !== null) parts.push(`system latency ${fmt(s.latencyMs, 0)} ms`)
  if (s.ttfbMs !== null) parts.push(`first byte ${fmt(s.ttfbMs, 0)} ms`)
  if (s.answerStatus !== null && s.answerStatus !== "ok") parts.push(`answer ${s.answerStatus}`)
  if (s.judgeInputTokens !== null) parts.push(`judge tokens ${s.judgeInputTokens} in / ${s.judgeOutputTokens ?? 0} out`)
  if (s.judgeCostUsd !== null) parts.push(`judge cost ${usd(s.judgeCostUsd)}`)
  return parts.length === 0 ? null : h("p", { class: "sub system" }, parts.join(" · "))
}

export const caseView = async (root: HTMLElement, params: URLSearchParams, parts: ReadonlyArray<string>) => {
  const runId = parts[1]!
  const caseId = parts[3]!
  const iteration = params.get("iteration") === null ? undefined : Number(params.get("iteration"))
  const [view, agreement] = await Promise.all([api.case(runId, caseId, iteration), api.agreement(runId)])
  const targets: Array<CaseTarget> = [...view.targets]
  let selected = Math.max(0, targets.findIndex((t) => t.label === undefined))
  const note = h("input", {
    type: "text",
    id: "label-note",
    placeholder: "Note for the next label (optional; e to focus)",
    "aria-label": "Note"
  })
  const agreementSlot = h("div", { id: "agreement-slot" }, agreementPanel(agreement))
  const items: Array<HTMLElement> = []
  const busy = new Set<number>()
  // Labels are saved one after another, in the order they were given: each answer carries the
  // agreement so far, and an earlier answer arriving last would show fewer labels than were saved.
  let saves: Promise<unknown> = Promise.resolve()

  const suffix = iteration === undefined || iteration === 1 ? "" : `?iteration=${iteration}`
  const go = async (step: 1 | -1) => {
    const next = await navigation.neighbour(runId, caseId, step)
    if (next === undefined) say(step === 1 ? "No next case in this list." : "No previous case in this list.")
    else location.hash = route("run", runId, "case", next) + suffix
  }

  const labelLine = (t: CaseTarget) =>
    t.label === undefined
      ? null
      : h(
        "div",
        { class: "your-label" },
        h("span", { class: "badge label-badge" }, `your label: ${valueText(t.label.label)}`),
        " ",
        h("span", { class: "sub" }, `by ${t.label.by}, ${when(t.label.at)}`),
        t.label.note === undefined ? null : h("div", { class: "sub note" }, `note: ${t.label.note}`)
      )

  const submit = async (k: number, value: Label["label"]) => {
    const t = targets[k]
    if (t === undefined || busy.has(k)) return
    busy.add(k)
    items[k]?.classList.add("busy")
    // On to the next judgment not labelled yet at once, so keys typed while this label is being
    // saved go to the next judgment (a failed save is said and leaves this one unlabelled).
    const next = targets.findIndex((x, i) => i > k && x.label === undefined && !busy.has(i))
    select(next === -1 ? Math.min(k + 1, targets.length - 1) : next)
    try {
      const noteText = note.value.trim()
      const save = saves.then(() =>
        api.label(runId, {
          caseId,
          target: t.target,
          label: value,
          ...(noteText === "" ? {} : { note: noteText }),
          ...(iteration === undefined ? {} : { iteration })
        })
      )
      saves = save.catch(() => undefined)
      const created = await save
      targets[k] = { ...t, label: created.label }
      // The note went with this label; one typed for the next label meanwhile stays.
      if (note.value.trim() === noteText) note.value = ""
      renderItem(k)
      agreementSlot.replaceChildren(agreementPanel(created.agreement))
      say(`Labelled “${t.title}”: ${valueText(value)}.`)
    } catch (e) {
      say(`Not saved: ${e instanceof Error ? e.message : String(e)}`, "error")
    } finally {
      busy.delete(k)
      items[k]?.classList.remove("busy")
    }
  }

  const renderItem = (k: number) => {
    const t = targets[k]!
    const ownValue = t.choices.length <= 2
      ? (() => {
        const input = h("input", {
          type: "number",
          step: "any",
          class: "own-value",
          placeholder: "your value",
          "aria-label": `Your value of ${t.title}`
        })
        const button = h("button", {
          onclick: () => {
            const v = Number(input.value)
            if (input.value.trim() !== "" && Number.isFinite(v)) void submit(k, { value: v })
          }
        }, "save")
        return h("span", { class: "own" }, input, button)
      })()
      : null
    const el = h(
      "div",
      {
        class: `target${k === selected ? " selected" : ""}${t.label === undefined ? "" : " labelled"}`,
        "data-target": t.key,
        tabindex: -1
      },
      h("div", { class: "target-title" }, t.title),
      t.text === undefined ? null : h("div", { class: "text hit-text" }, t.text),
      h(
        "div",
        { class: "judge-says" },
        h("span", { class: "sub" }, "judge: "),
        h("span", { class: `badge verdict verdict-${String(t.judged).replace(/[^a-z0-9_-]/gi, "")}` }, t.judgedText),
        t.reason === undefined ? null : h("span", { class: "reason" }, ` ${t.reason}`),
        t.evidence === undefined ? null : h("div", { class: "evidence" }, `evidence: ${t.evidence}`)
      ),
      h(
        "div",
        { class: "choices" },
        t.choices.map((c) =>
          h(
            "button",
            {
              class: t.label !== undefined && sameValue(t.label.label, c.value) ? "choice chosen" : "choice",
              "aria-pressed": t.label !== undefined && sameValue(t.label.label, c.value) ? "true" : "false",
              onclick: () => {
                select(k)
                void submit(k, c.value)
              }
            },
            h("kbd", null, c.key),
            ` ${c.text}`
          )
        ),
        ownValue
      ),
      labelLine(t)
    )
    el.addEventListener("click", (e) => {
      if ((e.target as HTMLElement).closest("button, input") === null) select(k)
    })
    items[k]?.replaceWith(el)
    items[k] = el
  }

  const select = (k: number) => {
    if (targets.length === 0) return
    items[selected]?.classList.remove("selected")
    selected = Math.max(0, Math.min(targets.length - 1, k))
    items[selected]?.classList.add("selected")
    items[selected]?.scrollIntoView({ block: "nearest" })
  }

  // Targets grouped as the case lists them.
  const groups: Array<{ name: string; indexes: Array<number> }> = []
  targets.forEach((t, k) => {
    const last = groups.at(-1)
    if (last !== undefined && last.name === t.group) last.indexes.push(k)
    else groups.push({ name: t.group, indexes: [k] })
  })
  const targetSection = h(
    "section",
    { class: "targets", id: "targets" },
    h("h2", null, `Judgments to review (${targets.length})`),
    note,
    groups.map((g) => {
      const block = h("div", { class: "target-group" }, h("h3", null, g.name))
      for (const k of g.indexes) {
        items[k] = h("div")
        block.appendChild(items[k]!)
        renderItem(k)
      }
      return block
    })
  )

  setKeys((e) => {
    const t = targets[selected]
    if (e.key === "j" || e.key === "ArrowDown") select(selected + 1)
    else if (e.key === "k" || e.key === "ArrowUp") select(selected - 1)
    else if (e.key === "n" || e.key === "ArrowRight") void go(1)
    else if (e.key === "p" || e.key === "ArrowLeft") void go(-1)
    else if (e.key === "e") note.focus()
    else if (e.key === "b" || e.key === "Escape") location.hash = route("run", runId)
    else if (t !== undefined) {
      const choice = t.choices.find((c) => c.key === e.key)
      if (choice === undefined) return false
      void submit(selected, choice.value)
    } else return false
    return true
  })

  const position = navigation.position(runId, caseId)
  mount(
    root,
    shell(
      `Case ${view.caseId}`,
      h(
        "nav",
        { class: "crumbs" },
        h("a", { href: "#/" }, "Runs"),
        " › ",
        h("a", { href: route("run", runId) }, `run ${runId}`),
        " › ",
        h("span", null, view.caseId),
        position === undefined ? null : h("span", { class: "sub" }, ` (${position})`),
        " ",
        h("button", { onclick: () => void go(-1), title: "p" }, "← previous (p)"),
        h("button", { onclick: () => void go(1), title: "n" }, "next (n) →")
      ),
      h(
        "p",
        { class: `case-status status-${view.status}` },
        STATUS_TEXT[view.status],
        view.why === undefined ? null : `: ${view.why}`,
        view.line === null ? null : h("span", { class: "sub" }, ` · input line ${view.line}`),
        view.iteration === 1 ? null : h("span", { class: "sub" }, ` · iteration ${view.iteration}`)
      ),
      view.problem === undefined ? null : h("p", { class: "error" }, view.problem),
      h(
        "div",
        { class: "columns" },
        h(
          "div",
          { class: "main-column" },
          fieldsBlock(view.fields),
          systemLine(view),
          targetSection,
          tablesBlock(view.tables),
          judgmentsBlock(view.judgments),
          h(
            "details",
            { class: "raw-record" },
            h("summary", null, "The record as the run wrote it"),
            h("pre", { class: "raw" }, JSON.stringify(view.record, null, 2))
          )
        ),
        h("aside", { class: "side-column" }, agreementSlot)
      ),
      keyHelp([
        ["j / k", "next / previous judgment"],
        ["0–9", "give that grade or verdict (the keys on the buttons)"],
        ["y / x", "the judge is right / wrong"],
        ["e", "write a note for the next label"],
        ["n / p", "next / previous case (of the list or the queue)"],
        ["b", "back to the run"],
        ["?", "this help"]
      ])
    )
  )
  select(selected)
}
