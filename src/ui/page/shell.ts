/** The page frame (header, navigation, message line) and the keyboard: one handler per view. */
import { type Child, h } from "./dom.js"

export type View = (root: HTMLElement, params: URLSearchParams, parts: ReadonlyArray<string>) => Promise<void>

export type KeyHandler = (e: KeyboardEvent) => boolean

let keys: KeyHandler | undefined

/** The current view's keys (undefined: none). A handler returns true when it used the key. */
export const setKeys = (handler: KeyHandler | undefined): void => {
  keys = handler
}

const typing = (target: EventTarget | null): boolean => {
  const el = target as HTMLElement | null
  if (el === null) return false
  const tag = el.tagName
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable
}

export const installKeys = (): void => {
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return
    if (typing(e.target)) {
      if (e.key === "Escape") (e.target as HTMLElement).blur()
      return
    }
    if (e.key === "?") {
      const help = document.getElementById("key-help") as HTMLDetailsElement | null
      if (help !== null) {
        help.open = !help.open
        e.preventDefault()
      }
      return
    }
    if (keys?.(e) === true) e.preventDefault()
  })
}

/** A message in the status line (errors in red); announced to screen readers. */
export const say = (text: string, kind: "info" | "error" = "info"): void => {
  const line = document.getElementById("status-line")
  if (line === null) return
  line.textContent = text
  line.className = kind === "error" ? "status-line error" : "status-line"
}

export const shell = (title: string, ...children: ReadonlyArray<Child>): HTMLElement => {
  document.title = `${title} · rag-eval review`
  return h(
    "div",
    { class: "frame" },
    h(
      "header",
      { class: "top" },
      h("a", { class: "brand", href: "#/" }, "rag-eval review"),
      h("nav", null, h("a", { href: "#/" }, "Runs")),
      h("span", { id: "status-line", class: "status-line", role: "status", "aria-live": "polite" })
    ),
    h("main", null, h("h1", null, title), ...children)
  )
}

/** The keys of a view, listed under "Keyboard" (? toggles it). */
export const keyHelp = (rows: ReadonlyArray<readonly [string, string]>) =>
  h(
    "details",
    { id: "key-help", class: "key-help" },
    h("summary", null, "Keyboard (?)"),
    h("dl", null, rows.map(([k, what]) => [h("dt", null, h("kbd", null, k)), h("dd", null, what)]))
  )
