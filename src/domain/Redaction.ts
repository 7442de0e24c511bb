/**
 * The one rule for secrets in what rag-eval writes: a secret rag-eval itself sends — an API key,
 * a header value (`--target-header`, `--search-token`), the credentials in a URL, the
 * `Authorization: Basic …` header built from them — never reaches a journal, a record, a report, a
 * cache entry, a log line, an error message or a span, in any of the forms a server may echo it in:
 * as sent, base64 (padded or not, and base64url — the Basic header's own form), percent-encoded,
 * JSON-escaped. Each becomes `<redacted>`.
 *
 * Where it is applied: a `Redactor` is built from the run's known secrets (each kept `Redacted`
 * until the redactor is built) and every text rag-eval *receives* from a server it sent a secret
 * to passes through it before any other code sees it — a judge's reply and error body (the
 * provider, `providers/OpenAiProvider.ts`; the Batch API, `providers/BatchApi.ts`), the live
 * system's answer and error body (`target/TargetClient.ts`), a search endpoint's hits and error body
 * (`retrieval/HttpRetriever.ts`). What the run writes is made from those texts, so every write —
 * the journals, the cache, the records and reports, the manifest, progress and error lines — holds
 * them already redacted, by construction, on every path (a resume, `report`, `--batch`, a cache
 * hit). What rag-eval writes from its own settings is masked where it is recorded (`Secrets.ts`:
 * command lines, URLs, the target's description).
 *
 * The run's redactor is the `Redaction` reference: the CLI provides it, built from every secret of
 * the command (`runSecrets` in `cli/RunAction.ts`); without it (a library user) each client still
 * adds the secrets it sends itself (`Redactor.with`), so its own are never echoed.
 *
 * A "secret" shorter than 4 characters is not redacted (it would mask ordinary words), nor is a URL's
 * user name when a password goes with it (a name, not the secret).
 */
import * as Context from "effect/Context"
import * as Redacted from "effect/Redacted"
import { MASK } from "./Secrets.js"

/** Below this length a "secret" would mask ordinary words. */
const MIN_SECRET = 4

/** Query / fragment parameter names whose value is a secret (as `Secrets.maskUrl` masks them). */
const SECRET_PARAM = /key|token|secret|passw|pwd|auth|sig|credential|session|cookie/i

export interface Redactor {
  /** Whether there is anything to redact (otherwise `text` and `value` give back what they are given). */
  readonly active: boolean
  /** The text with every form of every secret replaced by `<redacted>`. */
  readonly text: (text: string) => string
  /** A JSON-like value with every string in it (keys too) redacted; the same value when nothing changed. */
  readonly value: <A>(value: A) => A
  /** This redactor and more secrets (a client adds the ones it sends itself). */
  readonly with: (secrets: ReadonlyArray<Redacted.Redacted<string>>) => Redactor
}

const base64 = (text: string) => Buffer.from(text, "utf8").toString("base64")
const base64Url = (text: string) => Buffer.from(text, "utf8").toString("base64url")

/** Every form a server may echo a secret in (see the module comment). */
const formsOf = (secret: string): Array<string> => {
  const forms = [secret]
  const b64 = base64(secret)
  forms.push(b64, b64.replace(/=+$/, ""), base64Url(secret))
  const percent = encodeURIComponent(secret)
  if (percent !== secret) forms.push(percent)
  const json = JSON.stringify(secret).slice(1, -1)
  if (json !== secret) forms.push(json)
  return forms
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** A redactor for these secret texts (each at least `MIN_SECRET` characters). */
const build = (secrets: ReadonlySet<string>): Redactor => {
  const forms = [...new Set([...secrets].flatMap(formsOf))].filter((f) => f.length >= MIN_SECRET)
  if (forms.length === 0) return inactive(secrets)
  // Longest first: a value is masked whole before any part of it.
  forms.sort((a, b) => b.length - a.length)
  const source = forms.map(escapeRegExp).join("|")
  const found = new RegExp(source)
  const every = new RegExp(source, "g")
  const text = (s: string): string => found.test(s) ? s.replace(every, MASK) : s
  const value = <A>(v: A): A => redactValue(v, text) as A
  return {
    active: true,
    text,
    value,
    with: (more) => build(new Set([...secrets, ...plain(more)]))
  }
}

const inactive = (secrets: ReadonlySet<string>): Redactor => ({
  active: false,
  text: (s) => s,
  value: (v) => v,
  with: (more) => build(new Set([...secrets, ...plain(more)]))
})

const plain = (secrets: ReadonlyArray<Redacted.Redacted<string>>): Array<string> =>
  secrets.map(Redacted.value).filter((s) => s.length >= MIN_SECRET)

/** Every string of a JSON-like value (keys too) through `text`; a container is copied only when something in it changed. */
const redactValue = (v: unknown, text: (s: string) => string): unknown => {
  if (typeof v === "string") return text(v)
  if (typeof v !== "object" || v === null) return v
  if (Array.isArray(v)) {
    let out: Array<unknown> | undefined
    for (let i = 0; i < v.length; i++) {
      const item = redactValue(v[i], text)
      if (item !== v[i]) (out ??= v.slice())[i] = item
    }
    return out ?? v
  }
  const record = v as Record<string, unknown>
  const keys = Object.keys(record)
  let out: Record<string, unknown> | undefined
  const put = (key: string, item: unknown) =>
    Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    const item = record[key]
    const k = text(key)
    const next = redactValue(item, text)
    if (out === undefined && (k !== key || next !== item)) {
      out = {}
      // The entries before this one, as they were.
      for (let j = 0; j < i; j++) put(keys[j]!, record[keys[j]!])
    }
    if (out !== undefined) put(k, next)
  }
  return out ?? v
}

/** A redactor for these secrets. */
export const make = (secrets: ReadonlyArray<Redacted.Redacted<string>>): Redactor => build(new Set(plain(secrets)))

/** Redacts nothing (no secret known). */
export const none: Redactor = inactive(new Set())

// ---------------------------------------------------------------------------------------------
// The secrets in a setting

const decode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * The secrets a URL carries: its password — or, with no password, the user name (a bare key, as in
 * `http://KEY@host`) — raw and percent-decoded; `user:password`, the credentials of the Basic header
 * rag-eval builds from them, and that header's value; and the values of its secret-looking query and
 * fragment parameters (`?api_key=…`, `#access_token=…`). None for text that is not a URL.
 */
export const urlSecrets = (url: string | Redacted.Redacted<string>): Array<Redacted.Redacted<string>> => {
  let u: URL
  try {
    u = new URL(typeof url === "string" ? url : Redacted.value(url))
  } catch {
    return []
  }
  const found = new Set<string>()
  if (u.password !== "") {
    for (const form of [u.password, decode(u.password)]) found.add(form)
    found.add(`${u.username}:${u.password}`)
  } else if (u.username !== "") {
    found.add(u.username)
    found.add(decode(u.username))
  }
  if (u.username !== "" || u.password !== "") {
    // What the Basic header is built from, and the header itself (`Endpoint.splitCredentials`).
    const credentials = `${decode(u.username)}:${decode(u.password)}`
    found.add(credentials)
    found.add(`Basic ${base64(credentials)}`)
  }
  for (const params of [u.searchParams, new URLSearchParams(u.hash.replace(/^#/, ""))]) {
    for (const [name, value] of params) if (SECRET_PARAM.test(name) && value !== "") found.add(value)
  }
  return [...found].map((s) => Redacted.make(s))
}

/**
 * The secrets of a header value: the value, and the credentials of a `Scheme credentials` value
 * (`Bearer <token>`, `Basic <base64>` — whose decoded `user:password` is a secret too).
 */
export const headerSecrets = (value: string | Redacted.Redacted<string>): Array<Redacted.Redacted<string>> => {
  const text = typeof value === "string" ? value : Redacted.value(value)
  const found = new Set([text])
  const space = text.indexOf(" ")
  if (space !== -1) {
    const credentials = text.slice(space + 1).trim()
    found.add(credentials)
    if (/^basic$/i.test(text.slice(0, space))) {
      const decoded = Buffer.from(credentials, "base64").toString("utf8")
      if (decoded.includes(":") && base64(decoded).replace(/=+$/, "") === credentials.replace(/=+$/, "")) {
        found.add(decoded)
        const password = decoded.slice(decoded.indexOf(":") + 1)
        if (password !== "") found.add(password)
      }
    }
  }
  return [...found].map((s) => Redacted.make(s))
}

// ---------------------------------------------------------------------------------------------
// The run's redactor

/** The run's redactor (see the module comment); `none` unless the CLI provides one. */
export class Redaction extends Context.Reference<Redaction>()("rag-eval/Redaction", {
  defaultValue: (): Redactor => none
}) {}
