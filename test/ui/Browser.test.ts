/**
 * The review page in a real browser: headless Chromium (`test/support/Chromium.ts`) driven by
 * `playwright-core`, against the review server (in-process, 127.0.0.1) over real runs (`Fixtures.ts`),
 * with the page as built (`dist/ui-page`: run `npm run build` first). One browser for the file.
 *
 * - A team's path: open a run, filter its failing cases, open one, label five claims with the
 *   keyboard, and see the judge's agreement change; then compare two runs (worst case first, both
 *   answers side by side, a preference given with a key).
 * - Hostile case text (script tags, `javascript:` links, HTML comments, event handlers, in texts, a
 *   case id and the judge's raw replies) executes nothing, opens no dialog and makes no request but
 *   to the server, and shows as text.
 * - Screenshots at 1,400 and 800 px of each view (kept in `test-artifacts/ui/` for a person to look
 *   at), and the layout checked: no horizontal overflow, no two controls or labels overlapping.
 *
 * Without Chromium the test is skipped, visibly (install it: `apt-get install chromium-headless-shell`
 * or `chromium`, or set RAG_EVAL_CHROMIUM to a Chromium binary).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PAGE_DIR } from "../../src/ui/PageAssets.js"
import { chromiumPath, launchChromium, noChromium } from "../support/Chromium.js"
import { repoRoot } from "../support/RunPipeline.js"
import { buildFixtures, failingCaseIds, type Fixtures, HOSTILE_ID, runIdOf } from "./Fixtures.js"
import { startServer, type TestServer } from "./Server.js"

const ARTIFACTS = Path.join(repoRoot, "test-artifacts", "ui")

/** What a page did that it must not: errors, dialogs, requests elsewhere. */
interface Watch {
  readonly errors: Array<string>
  readonly dialogs: Array<string>
  readonly foreign: Array<string>
  readonly requests: Array<string>
}

let fx: Fixtures
let server: TestServer
let browser: Browser
let a: string
let b: string
let search: string

const open = async (width: number): Promise<{ page: Page; watch: Watch }> => {
  const context = await browser.newContext({ viewport: { width, height: 900 } })
  const page = await context.newPage()
  const watch: Watch = { errors: [], dialogs: [], foreign: [], requests: [] }
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") watch.errors.push(m.text())
  })
  page.on("pageerror", (e) => watch.errors.push(String(e)))
  page.on("dialog", (d) => {
    watch.dialogs.push(d.message())
    void d.dismiss()
  })
  page.on("request", (r) => {
    watch.requests.push(r.url())
    if (!r.url().startsWith(`${server.url}/`)) watch.foreign.push(r.url())
  })
  return { page, watch }
}

const clean = (watch: Watch) => {
  expect(watch.errors).toEqual([])
  expect(watch.dialogs).toEqual([])
  expect(watch.foreign).toEqual([])
}

/**
 * Visible boxes of controls and labels that overlap (neither inside the other), and horizontal
 * overflow. Run in the page as a script (the project's TypeScript has no DOM library).
 */
const LAYOUT_PROBLEMS = `(() => {
  const selector = "button, input, select, a, .badge, h1, h2, h3, th, kbd, .metric, dt, label"
  const boxes = Array.from(document.querySelectorAll(selector))
    .filter((el) => {
      const r = el.getBoundingClientRect()
      return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== "hidden"
    })
    .map((el) => ({ el, r: el.getBoundingClientRect() }))
  const name = (el) => el.tagName.toLowerCase() + "." + el.className + " " + JSON.stringify((el.textContent || "").slice(0, 30))
  const overlaps = []
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const p = boxes[i], q = boxes[j]
      if (p.el.contains(q.el) || q.el.contains(p.el)) continue
      const x = Math.min(p.r.right, q.r.right) - Math.max(p.r.left, q.r.left)
      const y = Math.min(p.r.bottom, q.r.bottom) - Math.max(p.r.top, q.r.top)
      if (x > 1 && y > 1) overlaps.push(name(p.el) + " / " + name(q.el))
    }
  }
  return { overlaps, checked: boxes.length, overflow: document.documentElement.scrollWidth - window.innerWidth }
})()`

const layoutProblems = (page: Page) =>
  page.evaluate(LAYOUT_PROBLEMS) as Promise<
    { readonly overlaps: Array<string>; readonly checked: number; readonly overflow: number }
  >

/** Ids (of runs and of short cases) broken over several lines: what a squeezed table column does. */
const BROKEN_IDS = `Array.from(document.querySelectorAll("td.run-name a, td.case-id a"))
  .filter((a) => (a.textContent || "").length <= 12 && a.getClientRects().length > 1)
  .map((a) => a.textContent)`

const shoot = async (page: Page, name: string) => {
  fs.mkdirSync(ARTIFACTS, { recursive: true })
  await page.screenshot({ path: Path.join(ARTIFACTS, `${name}.png`), fullPage: false })
  expect(await page.evaluate(BROKEN_IDS), `${name}: ids broken over lines`).toEqual([])
  const layout = await layoutProblems(page)
  expect(layout.overflow, `${name}: horizontal overflow`).toBeLessThanOrEqual(0)
  expect(layout.overlaps, `${name}: overlapping boxes`).toEqual([])
  expect(layout.checked, `${name}: boxes checked`).toBeGreaterThan(10)
}

const rowsOf = async (page: Page, table: string) => {
  const rows = page.locator(`${table} tbody tr`)
  const out: Array<string> = []
  for (let i = 0; i < (await rows.count()); i++) out.push((await rows.nth(i).getAttribute("data-case")) ?? "")
  return out
}

describe.skipIf(chromiumPath === undefined)("rag-eval ui in Chromium", () => {
  beforeAll(async () => {
    if (!fs.existsSync(Path.join(repoRoot, PAGE_DIR, "app.js"))) {
      throw new Error(`${PAGE_DIR}/app.js is missing: run npm run build first`)
    }
    fx = await buildFixtures()
    a = runIdOf(fx.correctnessA)
    b = runIdOf(fx.correctnessB)
    search = runIdOf(fx.search)
    server = await startServer({ out: fx.out, user: "reviewer", compareInProcessUpTo: Number.POSITIVE_INFINITY })
    browser = await launchChromium()
  })

  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it("open a run, filter its failing cases, open one, label five claims with the keyboard, see the agreement change", async () => {
    const { page, watch } = await open(1400)
    await page.goto(`${server.url}/`)
    await page.locator(`#runs a`, { hasText: a }).click()
    await page.locator("#cases").waitFor()
    expect((await rowsOf(page, "#cases")).length).toBe(12)
    // Failing: the cases with a failed judgment and those answer-correctness' pass rule fails.
    const failingIds = failingCaseIds(fx.correctnessA)
    expect(failingIds).toEqual(expect.arrayContaining(["judge-fails-1", "judge-fails-2"]))
    await page.locator("#only-failing").check()
    await expect.poll(() => page.locator("#cases tbody tr").count()).toBe(failingIds.length)
    const listed = await rowsOf(page, "#cases")
    expect([...listed].sort()).toEqual([...failingIds].sort())
    await page.locator("#cases a", { hasText: "judge-fails-1" }).click()
    await page.locator("#targets").waitFor()
    expect(await page.locator("#agreement").innerText()).toContain("No labels yet")
    // The first claim's check failed (no verdict): the keyboard moves past it, then five labels.
    const first = page.locator(".target.selected")
    expect(await first.innerText()).toContain("no verdict")
    await page.keyboard.press("j")
    // Typed as a fast labeller types, without waiting for each label to be saved: none is lost.
    for (const key of ["2", "2", "0", "2", "1"]) await page.keyboard.press(key)
    await expect.poll(() => page.locator(".target.labelled").count()).toBe(5)
    await page.locator("#agreement", { hasText: "5 labels" }).waitFor()
    const panel = await page.locator("#agreement").innerText()
    expect(panel).toContain("Claim verdicts")
    expect(panel).toContain("5 labels")
    // What the panel shows is what the API says.
    const agreement = await (await fetch(`${server.url}/api/runs/${a}/agreement`)).json() as any
    const claims = agreement.groups.find((g: any) => g.kind === "claim")
    expect(agreement.labels).toBe(5)
    expect(await page.locator("#agreement .agreement-group[data-key=claim] .pairs").innerText()).toBe(
      String(claims.pairs)
    )
    expect(claims.pairs).toBeGreaterThanOrEqual(4)
    const file = fs.readFileSync(Path.join(fx.correctnessA, "labels.jsonl"), "utf8").trim().split("\n")
    expect(file).toHaveLength(5)
    expect(file.every((l) => JSON.parse(l).by === "reviewer")).toBe(true)
    // n goes to the next case of the list (of the failing cases, lowest score first).
    const next = listed[listed.indexOf("judge-fails-1") + 1] ?? listed[0]!
    await page.keyboard.press("n")
    await page.getByRole("heading", { level: 1, name: `Case ${next}`, exact: true }).waitFor()
    await shoot(page, "labelled-case-1400")
    clean(watch)
    await page.context().close()
  })

  it("compare two runs: the paired tests, the cases that got worse first, both answers side by side, a preference by key", async () => {
    const { page, watch } = await open(1400)
    await page.goto(`${server.url}/`)
    await page.locator(`tr[data-case="${a}"] input[type=checkbox]`).check()
    await page.locator(`tr[data-case="${b}"] input[type=checkbox]`).check()
    await page.locator("#compare-selected").click()
    // compare's tests arrive in the background: the table fills in without a reload.
    await page.locator("#compare-metrics-wrap:not(:has(#compare-pending))").waitFor()
    const metrics = await page.locator("#compare-metrics").innerText()
    expect(metrics).toMatch(/f1\s+8\s/)
    const changed = await rowsOf(page, "#changed")
    expect(changed.length).toBe(12)
    const firstChange = await page.locator("#changed tbody tr").first().locator("td").last().innerText()
    expect(firstChange.startsWith("−")).toBe(true)
    await shoot(page, "compare-1400")
    await page.locator("#changed tbody tr").first().locator("a").click()
    await page.locator(".side-by-side").waitFor()
    const sides = await page.locator(".side").allInnerTexts()
    expect(sides).toHaveLength(2)
    await page.keyboard.press("4")
    await page.locator("#preference-now", { hasText: "preference 1" }).waitFor()
    const labels = fs.readFileSync(Path.join(fx.correctnessA, "labels.jsonl"), "utf8").trim().split("\n").map((l) =>
      JSON.parse(l)
    )
    expect(labels.at(-1)).toMatchObject({
      target: { kind: "preference", other: { runId: b } },
      label: { preference: 1 }
    })
    await shoot(page, "compare-case-1400")
    clean(watch)
    await page.context().close()
  })

  it("hostile case text executes nothing, opens no dialog, makes no request but to the server, and shows as text", async () => {
    const { page, watch } = await open(1400)
    /** Opens a view and waits for its heading (a hash change keeps the old view until the new one is drawn). */
    const visit = async (hash: string, title: string) => {
      await page.goto(`${server.url}/${hash}`)
      await page.getByRole("heading", { level: 1, name: title, exact: true }).waitFor()
    }
    await visit(`#/run/${a}?q=${encodeURIComponent("<script>")}`, `Run ${a}`)
    expect(await page.locator("#cases").innerText()).toContain("<script>window.__pwned=1")
    await visit(`#/run/${a}/case/${encodeURIComponent(HOSTILE_ID)}`, `Case ${HOSTILE_ID}`)
    const body = await page.locator("main").innerText()
    expect(body).toContain("<img src=x onerror=")
    expect(body).toContain("<!-- hidden comment -->")
    expect(body).toContain("javascript:alert(document.cookie)")
    await page.locator("details.raw-record summary").click()
    await visit(`#/run/${a}/case/judge-fails-1`, "Case judge-fails-1")
    await page.locator("details.judgments summary").click()
    expect(await page.locator("details.judgments").innerText()).toContain("<b>probably</b>")
    await visit(`#/run/${search}/case/hostile-query`, "Case hostile-query")
    expect(await page.locator("#targets").innerText()).toContain(HOSTILE_ID)
    await visit(`#/compare/${a}/${b}/case/${encodeURIComponent(HOSTILE_ID)}`, `Case ${HOSTILE_ID}: A and B`)
    // Clicking every link the hostile text could have become: none leaves the page's own routes.
    const links = page.locator("a")
    const hrefs: Array<string> = []
    for (let i = 0; i < (await links.count()); i++) hrefs.push((await links.nth(i).getAttribute("href")) ?? "")
    expect(hrefs.every((h) => h.startsWith("#"))).toBe(true)
    const pwned = await page.evaluate("window.__pwned")
    expect(pwned).toBeUndefined()
    expect(await page.locator("main script, main img, main iframe, main svg, main style").count()).toBe(0)
    clean(watch)
    await page.context().close()
  })

  it("every view at 1,400 and 800 px: no horizontal overflow, no overlapping controls (screenshots in test-artifacts/ui)", async () => {
    for (const width of [1400, 800]) {
      const { page, watch } = await open(width)
      const views: ReadonlyArray<readonly [string, string, string]> = [
        ["runs", "#/", "#runs"],
        ["run", `#/run/${a}`, "#cases"],
        ["case", `#/run/${a}/case/q2`, "#targets"],
        ["hits", `#/run/${search}/case/sr-001`, "#targets"],
        ["compare", `#/compare/${a}/${b}`, "#changed"],
        ["compare-case", `#/compare/${a}/${b}/case/q1`, ".side-by-side"]
      ]
      for (const [name, hash, ready] of views) {
        await page.goto(`${server.url}/`)
        await page.locator("#runs").waitFor()
        await page.goto(`${server.url}/${hash}`)
        await page.locator(ready).first().waitFor()
        await shoot(page, `${name}-${width}`)
      }
      clean(watch)
      await page.context().close()
    }
  })
})

describe.skipIf(chromiumPath !== undefined)("rag-eval ui in Chromium", () => {
  it.skip(`skipped: ${noChromium}`, () => {})
})
