/**
 * The review page (`rag-eval ui`): a hash router over four views — runs, a run, a case, two runs
 * compared — built with plain DOM calls (`dom.ts`: text is always text). Bundled by esbuild when the
 * CLI is built; no framework, no request but to the server that served it.
 */
import { caseView } from "./case.js"
import { compareCaseView, compareView } from "./compare.js"
import { h, mount } from "./dom.js"
import { runView } from "./run.js"
import { runsView } from "./runs.js"
import { installKeys, setKeys, shell, type View } from "./shell.js"

const app = document.getElementById("app")!

const routes: ReadonlyArray<{ readonly match: (parts: ReadonlyArray<string>) => boolean; readonly view: View }> = [
  { match: (p) => p.length === 0, view: runsView },
  { match: (p) => p.length === 2 && p[0] === "run", view: runView },
  { match: (p) => p.length === 4 && p[0] === "run" && p[2] === "case", view: caseView },
  { match: (p) => p.length === 3 && p[0] === "compare", view: compareView },
  { match: (p) => p.length === 5 && p[0] === "compare" && p[3] === "case", view: compareCaseView }
]

let rendering = 0

const render = async () => {
  const hash = location.hash.replace(/^#\/?/, "")
  const [path = "", search = ""] = hash.split("?", 2) as [string?, string?]
  const parts = path === "" ? [] : path.split("/").map((p) => {
    try {
      return decodeURIComponent(p)
    } catch {
      return p
    }
  })
  const params = new URLSearchParams(search)
  const route = routes.find((r) => r.match(parts))
  const ticket = ++rendering
  setKeys(undefined)
  document.body.classList.add("loading")
  try {
    if (route === undefined) {
      mount(app, shell("Not found", h("p", null, "No such page. "), h("a", { href: "#/" }, "Back to the runs")))
      return
    }
    const target = document.createElement("div")
    await route.view(target, params, parts)
    // A later navigation won: drop this one.
    if (ticket !== rendering) return
    mount(app, ...Array.from(target.childNodes))
    document.querySelector<HTMLElement>("main h1")?.setAttribute("tabindex", "-1")
  } catch (e) {
    if (ticket !== rendering) return
    mount(
      app,
      shell(
        "Something went wrong",
        h("p", { class: "error", id: "page-error" }, e instanceof Error ? e.message : String(e)),
        h("a", { href: "#/" }, "Back to the runs")
      )
    )
  } finally {
    if (ticket === rendering) document.body.classList.remove("loading")
  }
}

installKeys()
window.addEventListener("hashchange", () => void render())
void render()
