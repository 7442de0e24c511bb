/**
 * Charts for the HTML report: Vega-Lite specs compiled with `vega-lite` and rendered to SVG at
 * report time by `vega`'s headless `View.toSVG()` (no canvas, no browser, no script in the page).
 * Chosen over hand-drawn SVG (axes, ticks, scales, label overlap are what a charting library gets
 * right) and over shipping a chart library into the page (the page would carry ~1 MB of script and
 * render on open; here it carries only the SVG). Loaded only by the HTML reporter: `--format html`.
 *
 * vega-lite is pinned to 6.4.3, the last release that supports Node 20 (6.5 requires Node ≥ 22 and
 * made every install on Node 20 warn EBADENGINE). Measured against 6.5.0: the five sample reports'
 * report.html are byte-identical, a chart costs the same CPU (≈ 22 ms against ≈ 24 ms, four chart
 * kinds × 100), and the html chunk is 1.76 MB against 1.74 MB.
 */
import * as vega from "vega"
import * as vl from "vega-lite"

const CONFIG = {
  background: "transparent",
  font: "system-ui, -apple-system, Segoe UI, sans-serif",
  axis: { labelFontSize: 11, titleFontSize: 11, grid: true, gridColor: "#e5e7eb" },
  view: { stroke: null },
  bar: { color: "#4f6bed" }
} as const

/**
 * Render a Vega-Lite spec to inline SVG. The namespace attributes are dropped: an `<svg>` inside
 * HTML needs none, and the page then holds no `http://` string of its own. Text in the SVG (axis
 * labels, case ids) is escaped by vega's SVG renderer.
 */
export const renderSvg = async (spec: Record<string, unknown>): Promise<string> => {
  const compiled = vl.compile({ config: CONFIG, ...spec } as unknown as vl.TopLevelSpec).spec
  const view = new vega.View(vega.parse(compiled), { renderer: "none" })
  try {
    const svg = await view.toSVG()
    return svg.replace(/ xmlns(?::xlink)?="[^"]*"/g, "")
  } finally {
    view.finalize()
  }
}

/** Bars of counts: one bar per label, in the given order. */
export const countBars = (rows: ReadonlyArray<{ readonly label: string; readonly count: number }>, options: { readonly x: string; readonly y?: string; readonly width?: number }) =>
  renderSvg({
    width: options.width ?? 250,
    height: 160,
    data: { values: rows.map((r) => ({ label: r.label, count: r.count })) },
    mark: { type: "bar", tooltip: true },
    encoding: {
      x: { field: "label", type: "ordinal", sort: null, title: options.x, axis: { labelAngle: 0 } },
      y: { field: "count", type: "quantitative", title: options.y ?? "cases" }
    }
  })

/** Horizontal bars of one value per item (per-query metric bars), in the given order. */
export const valueBars = (rows: ReadonlyArray<{ readonly label: string; readonly value: number }>, options: { readonly x: string; readonly domain?: readonly [number, number] }) =>
  renderSvg({
    width: 420,
    height: { step: 14 },
    data: { values: rows.map((r, i) => ({ label: `${i + 1}. ${r.label.length > 40 ? `${r.label.slice(0, 39)}…` : r.label}`, value: r.value })) },
    mark: { type: "bar", tooltip: true },
    encoding: {
      y: { field: "label", type: "nominal", sort: null, title: null },
      x: { field: "value", type: "quantitative", title: options.x, ...(options.domain === undefined ? {} : { scale: { domain: [...options.domain] } }) }
    }
  })

/** A heatmap of a confusion matrix: rows human grades, columns judge grades. */
export const confusionHeatmap = (grades: ReadonlyArray<number>, confusion: ReadonlyArray<ReadonlyArray<number>>) =>
  renderSvg({
    width: { step: 36 },
    height: { step: 28 },
    data: { values: confusion.flatMap((row, h) => row.map((n, j) => ({ human: String(grades[h]), judge: String(grades[j]), n }))) },
    layer: [
      { mark: "rect", encoding: { color: { field: "n", type: "quantitative", scale: { scheme: "blues" }, legend: null } } },
      { mark: { type: "text", fontSize: 11 }, encoding: { text: { field: "n", type: "quantitative" } } }
    ],
    encoding: {
      x: { field: "judge", type: "ordinal", title: "judge grade", axis: { labelAngle: 0 } },
      y: { field: "human", type: "ordinal", title: "human grade" }
    }
  })

/** Grouped bars: one group per item, one bar per series (e.g. agreement and alpha per criterion). */
export const groupedBars = (rows: ReadonlyArray<{ readonly item: string; readonly series: string; readonly value: number }>, options: { readonly y: string }) =>
  renderSvg({
    width: { step: 18 },
    height: 160,
    data: { values: [...rows] },
    mark: { type: "bar", tooltip: true },
    encoding: {
      x: { field: "item", type: "nominal", title: null, axis: { labelAngle: -30 } },
      xOffset: { field: "series", type: "nominal" },
      y: { field: "value", type: "quantitative", title: options.y },
      color: { field: "series", type: "nominal", title: null }
    }
  })
