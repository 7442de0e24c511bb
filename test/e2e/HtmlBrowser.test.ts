/**
 * The HTML report in a real browser: Debian's `chromium` driven by `playwright-core`. Runs the
 * installed CLI (`dist/bin.js`) with `--format html` on a rubric and a retrieval pipeline, with a
 * hostile case text, opens each page from disk and checks: no console error, no request but the file
 * itself, every chart has drawn marks, the case table sorts on a click and filters. A screenshot of
 * each page is saved in the test's temp dir. Without chromium the test is skipped, visibly.
 *
 * Enable: `apt-get install chromium` (or set RAG_EVAL_CHROMIUM to a Chromium binary).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { cli } from "../support/ChildCli.js"
import { tempDir } from "../support/RunPipeline.js"

const chromiumPath = [process.env.RAG_EVAL_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => p !== undefined && p !== "" && fs.existsSync(p))

const HOSTILE = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`

const runDirOf = (out: string, pipeline: string) => {
  const dir = Path.join(out, pipeline)
  return Path.join(dir, fs.readdirSync(dir)[0]!)
}

const inspect = async (file: string, screenshot: string) => {
  const { chromium } = await import("playwright-core")
  const browser = await chromium.launch({
    executablePath: chromiumPath!,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
  })
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const errors: Array<string> = []
    const requests: Array<string> = []
    const failed: Array<string> = []
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text())
    })
    page.on("pageerror", (e) => errors.push(String(e)))
    page.on("request", (r) => requests.push(r.url()))
    page.on("requestfailed", (r) => failed.push(r.url()))
    await page.goto(`file://${file}`, { waitUntil: "load" })
    const charts = await page.locator("figure.chart").count()
    // Each chart: an SVG whose mark groups hold drawn shapes (bars, cells, text).
    const marks = await page.$$eval("figure.chart", (figures) =>
      figures.map((f) => f.querySelectorAll("svg g.role-mark path, svg g.role-mark rect, svg g.role-mark text").length))
    const pwned = await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned ?? 0)
    // Sort by the line column: descending on the second click.
    const lines = () => page.$$eval("#cases tbody tr", (rows) => rows.map((r) => Number((r as unknown as { cells: ArrayLike<{ textContent: string | null }> }).cells[1]!.textContent)))
    const before = await lines()
    const header = page.locator("#cases thead th", { hasText: /^line$/ })
    await header.click()
    const ascending = await lines()
    await header.click()
    const descending = await lines()
    const sortState = await header.getAttribute("aria-sort")
    await page.fill("#filter", "zzz-no-such-text")
    const shownAfterFilter = await page.locator("#cases tbody tr:not([hidden])").count()
    await page.fill("#filter", "")
    await page.screenshot({ path: screenshot, fullPage: false })
    return { errors, requests, failed, charts, marks, pwned, before, ascending, descending, sortState, shownAfterFilter }
  } finally {
    await browser.close()
  }
}

const title = chromiumPath === undefined
  ? "HTML report in headless Chromium — SKIPPED: no chromium on this machine (apt-get install chromium, or set RAG_EVAL_CHROMIUM)"
  : `HTML report in headless Chromium (${chromiumPath})`

describe.skipIf(chromiumPath === undefined)(title, () => {
  it("rag-answers: charts drawn, no request beyond the file, no console error, case text inert, table sorts and filters", async () => {
    const dir = tempDir("html-browser-")
    const csv = fs.readFileSync(Path.resolve("test-sets/rag-answers/sample.csv"), "utf8").split("\n")
    // A hostile question on the first data row (quoted: it holds a comma-free HTML payload).
    const [head, first, ...rest] = csv
    const cells = first!.split(",")
    cells[0] = `"${HOSTILE.replace(/"/g, "\"\"")}"`
    const input = Path.join(dir, "cases.csv")
    fs.writeFileSync(input, [head, cells.join(","), ...rest].join("\n"))
    const out = Path.join(dir, "out")
    const r = await cli(["run", "pipelines/rag-answers.ts", "--csv", input, "--out", out, "--format", "markdown,html"])
    expect(r.stderr).not.toContain("internal error")
    expect(r.code).toBe(0)
    const file = Path.join(runDirOf(out, "rag-answers"), "report.html")
    const html = fs.readFileSync(file, "utf8")
    expect(html).not.toMatch(/https?:\/\//)
    expect(html).not.toContain("<script>window.__pwned")
    expect(html).toContain("&lt;script&gt;window.__pwned=1&lt;/script&gt;")
    const shot = Path.join(dir, "rag-answers.png")
    const seen = await inspect(file, shot)
    expect(seen.errors).toEqual([])
    expect(seen.failed).toEqual([])
    expect(seen.requests).toEqual([`file://${file}`])
    expect(seen.pwned).toBe(0)
    // The distributions of the six dimensions and the composite, and the per-case composite bars.
    expect(seen.charts).toBe(8)
    for (const n of seen.marks) expect(n).toBeGreaterThan(0)
    expect(seen.ascending).toEqual([...seen.before].sort((a, b) => a - b))
    expect(seen.descending).toEqual([...seen.before].sort((a, b) => b - a))
    expect(seen.sortState).toBe("descending")
    expect(seen.shownAfterFilter).toBe(0)
    expect(fs.statSync(shot).size).toBeGreaterThan(10_000)
  }, 90_000)

  it("course-retrieval: per-case bars of the headline metric and the flagged IDCG = 0 query; every chart drawn", async () => {
    const dir = tempDir("html-browser-")
    const out = Path.join(dir, "out")
    const r = await cli(["run", "pipelines/course-retrieval.ts", "--input", "test-sets/course-retrieval/sample.json", "--out", out, "--format", "csv,html"])
    expect(r.code).toBe(0)
    const file = Path.join(runDirOf(out, "course-retrieval"), "report.html")
    const html = fs.readFileSync(file, "utf8")
    expect(html).toContain(`id="per-case"`)
    expect(html).toContain(`id="flagged"`)
    const seen = await inspect(file, Path.join(dir, "course-retrieval.png"))
    expect(seen.errors).toEqual([])
    expect(seen.requests).toEqual([`file://${file}`])
    expect(seen.charts).toBeGreaterThan(3)
    for (const n of seen.marks) expect(n).toBeGreaterThan(0)
    expect(seen.descending).toEqual([...seen.before].sort((a, b) => b - a))
  }, 90_000)
})
