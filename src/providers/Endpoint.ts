/**
 * Base URLs as the CLI checks and records them: an absolute http(s) URL, never shown or stored with
 * its credentials (`http://user:key@host` → `http://host`). Cheap to load: `--help` uses it.
 */
import { maskUrl } from "../domain/Secrets.js"

/**
 * A URL without credentials (user:password@) or a trailing slash, and secret query or fragment
 * parameters masked (`?api_key=<redacted>`): what may be shown, recorded, and be a judge's identity.
 */
export const withoutCredentials = (url: string): string => {
  let plain: string
  try {
    const u = new URL(url)
    u.username = ""
    u.password = ""
    plain = u.toString().replace(/\/+$/, "")
  } catch {
    plain = url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/i, "$1")
  }
  return maskUrl(plain)
}

/** `host[:port]` of a URL, for messages; the URL without credentials when it is no URL. */
export const hostOf = (url: string): string => {
  try {
    return new URL(url).host
  } catch {
    return withoutCredentials(url)
  }
}

/** Why `--base-url` cannot be used, or undefined: it must be an absolute http(s) URL. */
export const baseUrlProblem = (url: string): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `--base-url must be an absolute http(s) URL such as http://127.0.0.1:8000/v1 (got "${
      withoutCredentials(url)
    }")`
  }
  return parsed.protocol === "http:" || parsed.protocol === "https:"
    ? undefined
    : `--base-url must be an http or https URL (got "${withoutCredentials(url)}")`
}

/**
 * The URL to request and the Basic authorization its userinfo stands for: fetch refuses a URL with
 * credentials, so `http://user:pass@host/s` is sent to `http://host/s` with
 * `Authorization: Basic base64(user:pass)` (RFC 7617; the userinfo is percent-decoded first).
 */
export const splitCredentials = (url: string): { readonly url: string; readonly authorization?: string } => {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return { url }
  }
  if (u.username === "" && u.password === "") return { url }
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s)
    } catch {
      return s
    }
  }
  const credentials = `${decode(u.username)}:${decode(u.password)}`
  u.username = ""
  u.password = ""
  return { url: u.toString(), authorization: `Basic ${Buffer.from(credentials, "utf8").toString("base64")}` }
}
