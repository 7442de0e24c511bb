/**
 * The page builds its DOM with this one helper: strings become text nodes (`textContent`), never
 * markup, so a case's text — `<script>`, `javascript:` links, HTML comments — is shown as text and
 * nothing in it runs or loads. Attributes are set by name from code, never from data; links are
 * the page's own `#/…` routes, built with `encodeURIComponent`.
 */

export type Child = Node | string | number | null | undefined | false | ReadonlyArray<Child>

export interface Attrs {
  readonly class?: string | undefined
  readonly id?: string | undefined
  readonly title?: string | undefined
  readonly href?: string | undefined
  readonly type?: string | undefined
  readonly value?: string | undefined
  readonly placeholder?: string | undefined
  readonly role?: string | undefined
  readonly tabindex?: number | undefined
  readonly for?: string | undefined
  readonly name?: string | undefined
  readonly checked?: boolean | undefined
  readonly selected?: boolean | undefined
  readonly disabled?: boolean | undefined
  readonly open?: boolean | undefined
  readonly min?: string | undefined
  readonly max?: string | undefined
  readonly step?: string | undefined
  readonly "aria-label"?: string | undefined
  readonly "aria-current"?: string | undefined
  readonly "aria-pressed"?: string | undefined
  readonly "aria-live"?: string | undefined
  readonly "aria-sort"?: string | undefined
  readonly "data-key"?: string | undefined
  readonly "data-case"?: string | undefined
  readonly "data-target"?: string | undefined
  readonly onclick?: ((e: MouseEvent) => void) | undefined
  readonly oninput?: ((e: Event) => void) | undefined
  readonly onchange?: ((e: Event) => void) | undefined
  readonly onsubmit?: ((e: SubmitEvent) => void) | undefined
}

const append = (el: Element, child: Child): void => {
  if (child === null || child === undefined || child === false) return
  if (Array.isArray(child)) {
    for (const c of child as ReadonlyArray<Child>) append(el, c)
    return
  }
  if (typeof child === "string" || typeof child === "number") {
    el.appendChild(document.createTextNode(String(child)))
    return
  }
  el.appendChild(child as Node)
}

/** Only the page's own routes are links. */
const safeHref = (href: string): string => (href.startsWith("#/") || href === "#" ? href : "#")

export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: ReadonlyArray<Child>
): HTMLElementTagNameMap[K] => {
  const el = document.createElement(tag)
  if (attrs !== null) {
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === false) continue
      if (name === "onclick") el.addEventListener("click", value as (e: Event) => void)
      else if (name === "oninput") el.addEventListener("input", value as (e: Event) => void)
      else if (name === "onchange") el.addEventListener("change", value as (e: Event) => void)
      else if (name === "onsubmit") el.addEventListener("submit", value as (e: Event) => void)
      else if (name === "class") el.className = String(value)
      else if (name === "href") el.setAttribute("href", safeHref(String(value)))
      else if (name === "value") (el as HTMLInputElement).value = String(value)
      else if (name === "checked") (el as HTMLInputElement).checked = value === true
      else if (name === "selected") (el as HTMLOptionElement).selected = value === true
      else if (name === "open") (el as HTMLDetailsElement).open = value === true
      else if (value === true) el.setAttribute(name, "")
      else el.setAttribute(name, String(value))
    }
  }
  for (const c of children) append(el, c)
  return el
}

/** Replaces an element's children. */
export const mount = (el: Element, ...children: ReadonlyArray<Child>): void => {
  el.replaceChildren()
  for (const c of children) append(el, c)
}

export const route = (...parts: ReadonlyArray<string>): string => `#/${parts.map(encodeURIComponent).join("/")}`

export const fmt = (x: number | null | undefined, digits = 3): string => {
  if (x === null || x === undefined || !Number.isFinite(x)) return "—"
  if (Number.isInteger(x) && Math.abs(x) < 1e6) return String(x)
  const text = x.toFixed(digits)
  return Number(text) === 0 ? (0).toFixed(digits) : text
}

export const signed = (x: number | null | undefined, digits = 3): string => {
  if (x === null || x === undefined || !Number.isFinite(x)) return "—"
  const text = Math.abs(x).toFixed(digits)
  return Number(text) === 0 ? text : `${x > 0 ? "+" : "−"}${text}`
}

export const pText = (p: number | null | undefined): string =>
  p === null || p === undefined ? "—" : p < 0.001 ? "< 0.001" : p < 0.1 ? p.toFixed(3) : p.toFixed(2)

export const usd = (x: number | null | undefined): string =>
  x === null || x === undefined ? "—" : x === 0 ? "$0" : x < 0.01 ? `$${x.toFixed(4)}` : `$${x.toFixed(2)}`

export const when = (iso: string): string => {
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().replace("T", " ").slice(0, 16)
}
