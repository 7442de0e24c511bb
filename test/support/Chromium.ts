/**
 * The headless browser of the browser tests (`test/e2e/HtmlBrowser.test.ts`, `test/ui/Browser.test.ts`),
 * found and launched in one place.
 *
 * Debian's `chromium-headless-shell` comes first: Chromium's "old" headless shell, the same Blink
 * renderer without the full browser's windowing layers — what Playwright itself runs for headless
 * Chromium. Measured on the 2-core VM (2026-11-30, every process counted, two alternations each):
 * `HtmlBrowser` 89–90 CPU-s with `chromium --headless` against 46–47 with the shell, `ui/Browser`
 * 47–51 against 30–35; the same tests pass. `chromium` (new headless) is still used when the shell is
 * not installed, and `RAG_EVAL_CHROMIUM` names any other binary.
 */
import * as fs from "node:fs"
import type { Browser } from "playwright-core"

export const chromiumPath: string | undefined = [
  process.env.RAG_EVAL_CHROMIUM,
  "/usr/bin/chromium-headless-shell",
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser"
].find((p) => p !== undefined && p !== "" && fs.existsSync(p))

/** Why the browser tests are skipped, for their titles. */
export const noChromium =
  "no chromium on this machine (apt-get install chromium-headless-shell, or set RAG_EVAL_CHROMIUM)"

export const launchChromium = async (): Promise<Browser> => {
  if (chromiumPath === undefined) throw new Error(noChromium)
  const { chromium } = await import("playwright-core")
  return chromium.launch({
    executablePath: chromiumPath,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
  })
}
