/** The judge's agreement with the labels so far: calibrate's figures, with CIs and what more labels would buy. */
import type { Agreement } from "./api.js"
import { fmt, h } from "./dom.js"

type Estimate = Agreement["groups"][number]["headline"]["estimate"]

const estimateText = (e: Estimate): string =>
  e.value === null
    ? `undefined${e.reason === undefined ? "" : ` (${e.reason})`}`
    : `${fmt(e.value)}${e.ci === null ? "" : ` [${fmt(e.ci.lower)}, ${fmt(e.ci.upper)}]`}`

export const agreementPanel = (a: Agreement | undefined): HTMLElement => {
  if (a === undefined) {
    return h("section", { class: "agreement", id: "agreement" }, h("h2", null, "Judge agreement"), h("p", null, "…"))
  }
  return h(
    "section",
    { class: "agreement", id: "agreement", "aria-live": "polite" },
    h("h2", null, "Judge agreement with your labels"),
    a.labels === 0
      ? h(
        "p",
        { class: "sub" },
        "No labels yet. Open a case (or the review queue) and label the judge's verdicts: agreement appears here as you go."
      )
      : h(
        "p",
        { class: "sub" },
        `${a.labels} label${
          a.labels === 1 ? "" : "s"
        }; calibrate's figures, 95% bootstrap CIs (${a.bootstrap.resamples} resamples)`
      ),
    a.groups.map((g) =>
      h(
        "div",
        { class: "agreement-group", "data-key": g.kind },
        h("h3", null, g.title),
        h(
          "dl",
          null,
          h("dt", null, g.headline.statistic),
          h("dd", { class: "headline-figure" }, estimateText(g.headline.estimate)),
          h("dt", null, g.second.statistic),
          h("dd", null, estimateText(g.second.estimate)),
          h("dt", null, "pairs"),
          h("dd", { class: "pairs" }, String(g.pairs))
        ),
        h(
          "p",
          { class: "more" },
          g.more === null
            ? `How many more labels to narrow it: ${g.moreNote ?? "not yet known"}.`
            : g.more === 0
            ? "The interval is within ±0.1."
            : `About ${g.more} more label${g.more === 1 ? "" : "s"} would narrow it to ±0.1.`
        )
      )
    ),
    a.agreeOnly === null
      ? null
      : h(
        "p",
        { class: "sub agree-only" },
        `“Right” or “wrong” only: ${a.agreeOnly.agreed} of ${a.agreeOnly.labels} say the judge is right.`
      ),
    a.unpaired.length === 0
      ? null
      : h(
        "details",
        { class: "unpaired" },
        h("summary", null, `${a.unpaired.length} label${a.unpaired.length === 1 ? "" : "s"} with nothing to pair`),
        h("ul", null, a.unpaired.slice(0, 20).map((u) => h("li", null, `${u.caseId} · ${u.target}: ${u.reason}`)))
      ),
    a.file.skipped.length === 0 && !a.file.torn
      ? null
      : h(
        "p",
        { class: "warn" },
        `labels.jsonl: ${a.file.skipped.length} line(s) skipped${a.file.torn ? ", a torn last line left out" : ""}`
      )
  )
}
