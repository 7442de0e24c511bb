/**
 * The review page: one HTML shell, one script and one style sheet, bundled by esbuild when the CLI
 * is built (`scripts/bundle.mjs` → `dist/ui-page/`), so nothing is built on the user's machine. They
 * are read once when the server starts and served from memory by name: no request path reaches the
 * file system.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export interface Asset {
  readonly body: string
  readonly contentType: string
}

export interface PageAssets {
  readonly html: string
  readonly assets: ReadonlyMap<string, Asset>
  /** Why the page is missing (not built), when it is. */
  readonly missing: string | undefined
}

/** The directory of the package this module belongs to (the one with rag-eval's package.json). */
export const packageRoot = (from: string = fileURLToPath(import.meta.url)): string | undefined => {
  let dir = Path.dirname(from)
  for (;;) {
    const manifest = Path.join(dir, "package.json")
    try {
      if ((JSON.parse(fs.readFileSync(manifest, "utf8")) as { name?: unknown }).name === "rag-eval") return dir
    } catch {
      // Not here: one level up.
    }
    const up = Path.dirname(dir)
    if (up === dir) return undefined
    dir = up
  }
}

export const PAGE_DIR = Path.join("dist", "ui-page")

const shell = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>rag-eval review</title>
<link rel="stylesheet" href="/assets/app.css">
</head>
<body>
<div id="app"><p class="loading">Loading…</p></div>
<script type="module" src="/assets/app.js"></script>
</body>
</html>
`

const missingShell = (why: string) =>
  shell.replace("<p class=\"loading\">Loading…</p>", `<p>${why.replace(/[<>&]/g, "")}</p>`)

/** Reads the bundled page from `<package>/dist/ui-page/` (or `dir`). */
export const loadPageAssets = (dir?: string): PageAssets => {
  const root = dir ?? (() => {
    const pkg = packageRoot()
    return pkg === undefined ? undefined : Path.join(pkg, PAGE_DIR)
  })()
  const read = (name: string) => {
    try {
      return root === undefined ? undefined : fs.readFileSync(Path.join(root, name), "utf8")
    } catch {
      return undefined
    }
  }
  const script = read("app.js")
  const style = read("app.css")
  if (script === undefined || style === undefined) {
    const why = "The review page is not built: run npm run build (it bundles the page into dist/ui-page)."
    return { html: missingShell(why), assets: new Map(), missing: why }
  }
  return {
    html: shell,
    assets: new Map([
      ["app.js", { body: script, contentType: "text/javascript; charset=utf-8" }],
      ["app.css", { body: style, contentType: "text/css; charset=utf-8" }]
    ]),
    missing: undefined
  }
}
