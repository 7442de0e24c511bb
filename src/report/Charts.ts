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

/** One bar of a distribution: a value of a small integer scale (`label` only), or a bin [start, end). */
export interface Bin {
  readonly label: string
  readonly count: number
  readonly start?: number | undefined
  readonly end?: number | undefined
}

/**
 * Counts of each value (small integer scales: every value of the declared range, empty ones too) or
 * 10 equal bins over the declared range (over the values' own when it is unbounded).
 */
export const distribution = (
  values: ReadonlyArray<number>,
  range?: { readonly min: number; readonly max: number | null }
): Array<Bin> => {
  if (values.length === 0) return []
  let min = Infinity
  let max = -Infinity
  let integers = true
  for (const v of values) {
    if (v < min) min = v
    if (v > max) max = v
    if (integers && !Number.isInteger(v)) integers = false
  }
  const declared = range !== undefined && range.max !== null && range.min <= min && max <= range.max
    ? [range.min, range.max] as const
    : undefined
  const [intLo, intHi] = declared !== undefined && Number.isInteger(declared[0]) && Number.isInteger(declared[1])
    ? declared
    : [min, max]
  if (integers && intHi - intLo <= 12) {
    const counts = new Map<number, number>()
    for (let v = intLo; v <= intHi; v++) counts.set(v, 0)
    for (const v of values) counts.set(v, counts.get(v)! + 1)
    return [...counts].map(([v, count]) => ({ label: String(v), count }))
  }
  const [lo, hi] = declared ?? (min >= 0 && max <= 1 ? [0, 1] : [min, max === min ? min + 1 : max])
  const bins = Array<number>(10).fill(0)
  const width = (hi - lo) / 10
  for (const v of values) bins[Math.max(0, Math.min(9, Math.floor((v - lo) / width)))]!++
  const digits = hi - lo >= 10 ? 0 : hi - lo >= 1 ? 1 : 2
  return bins.map((count, i) => {
    const start = lo + i * width
    const end = lo + (i + 1) * width
    return { label: `${start.toFixed(digits)}–${end.toFixed(digits)}`, count, start, end }
  })
}

/** Count axes: whole numbers only (no "0.5 cases"). */
const COUNT_AXIS = { tickMinStep: 1, format: "d" } as const

/**
 * A histogram of a distribution. Bins are drawn on a continuous axis labelled at the bin edges,
 * never one long "0.0–0.1" label per bar: labels that would touch are dropped (`labelOverlap`) and
 * the end labels are kept inside the chart (`labelFlush`), so the labels never overlap whatever the
 * values (the browser test measures them). A small integer scale gets one labelled bar per value.
 */
export const histogram = (bins: ReadonlyArray<Bin>, options: { readonly x: string; readonly y?: string }) => {
  const y = { field: "count", type: "quantitative", title: options.y ?? "cases", axis: COUNT_AXIS }
  const binned = bins.length > 0 && bins[0]!.start !== undefined
  if (!binned) {
    return renderSvg({
      width: { step: Math.max(18, Math.min(40, Math.floor(260 / Math.max(1, bins.length)))) },
      height: 150,
      data: { values: bins.map((b) => ({ label: b.label, count: b.count })) },
      mark: { type: "bar", tooltip: true },
      encoding: {
        x: {
          field: "label",
          type: "ordinal",
          sort: null,
          title: options.x,
          axis: { labelAngle: 0, labelOverlap: "greedy", labelSeparation: 4 }
        },
        y
      }
    })
  }
  const lo = bins[0]!.start!
  const hi = bins[bins.length - 1]!.end!
  const step = (hi - lo) / bins.length
  const span = hi - lo
  const format = span >= 10 ? ",.0f" : span >= 1 ? ".1f" : ".1f"
  return renderSvg({
    width: 260,
    height: 150,
    data: { values: bins.map((b) => ({ start: b.start, end: b.end, count: b.count, range: b.label })) },
    mark: { type: "bar", tooltip: { content: "data" }, binSpacing: 1 },
    encoding: {
      x: {
        field: "start",
        type: "quantitative",
        bin: { binned: true, step },
        scale: { domain: [lo, hi] },
        title: options.x,
        axis: {
          values: bins.map((b) => b.start!).concat(hi),
          format,
          labelAngle: 0,
          labelOverlap: "greedy",
          labelSeparation: 4,
          labelFlush: true
        }
      },
      x2: { field: "end" },
      y
    }
  })
}

/** Horizontal bars of one value per item (per-query metric bars), in the given order. */
export const valueBars = (
  rows: ReadonlyArray<{ readonly label: string; readonly value: number }>,
  options: { readonly x: string; readonly domain?: readonly [number, number] }
) =>
  renderSvg({
    width: 420,
    height: { step: 14 },
    data: {
      values: rows.map((r, i) => ({
        label: `${i + 1}. ${r.label.length > 40 ? `${r.label.slice(0, 39)}…` : r.label}`,
        value: r.value
      }))
    },
    mark: { type: "bar", tooltip: true },
    encoding: {
      y: { field: "label", type: "nominal", sort: null, title: null },
      x: {
        field: "value",
        type: "quantitative",
        title: options.x,
        ...(options.domain === undefined ? {} : { scale: { domain: [...options.domain] } })
      },
      // Bars start at the scale's low end (1 on a 1–5 scale): from 0 they would reach left over the labels.
      ...(options.domain === undefined ? {} : { x2: { datum: options.domain[0] } })
    }
  })

/** A heatmap of a confusion matrix: rows human grades, columns judge grades. */
export const confusionHeatmap = (grades: ReadonlyArray<number>, confusion: ReadonlyArray<ReadonlyArray<number>>) =>
  renderSvg({
    width: { step: 36 },
    height: { step: 28 },
    data: {
      values: confusion.flatMap((row, h) =>
        row.map((n, j) => ({ human: String(grades[h]), judge: String(grades[j]), n }))
      )
    },
    layer: [
      {
        mark: "rect",
        encoding: { color: { field: "n", type: "quantitative", scale: { scheme: "blues" }, legend: null } }
      },
      { mark: { type: "text", fontSize: 11 }, encoding: { text: { field: "n", type: "quantitative" } } }
    ],
    encoding: {
      x: { field: "judge", type: "ordinal", title: "judge grade", axis: { labelAngle: 0 } },
      y: { field: "human", type: "ordinal", title: "human grade" }
    }
  })

/** Grouped bars: one group per item, one bar per series (e.g. agreement and alpha per criterion). */
export const groupedBars = (
  rows: ReadonlyArray<{ readonly item: string; readonly series: string; readonly value: number }>,
  options: { readonly y: string }
) =>
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
