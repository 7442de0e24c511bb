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
        `${a.labels} label${a.labels === 1 ? "" : "s"}; 95% bootstrap CIs (${a.bootstrap.resamples} resamples)`
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
          g.headline.statistic === "exact agreement"
            ? null
            : [h("dt", null, "exact agreement"), h("dd", null, estimateText(g.exactAgreement))],
          h("dt", null, "pairs"),
          h("dd", { class: "pairs" }, String(g.calibration.pairs)),
          g.disagreedWithoutValue === 0
            ? null
            : [h("dt", null, "“wrong” without a value"), h("dd", null, String(g.disagreedWithoutValue))]
        ),
        h(
          "p",
          { class: "more" },
          g.moreForPlusMinus === null
            ? "Label a few more to see an interval."
            : g.moreForPlusMinus === 0
            ? "The interval is within ±0.1."
            : `About ${g.moreForPlusMinus} more label${g.moreForPlusMinus === 1 ? "" : "s"} would narrow it to ±0.1.`
        )
      )
    ),
    a.pending.map((p) =>
      h("p", { class: "sub" }, `${p.labels} ${p.kind} label${p.labels === 1 ? "" : "s"}: ${p.note}`)
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
