/**
 * Secrets never reach a file, a log or a report: flag values declared with `Options.redacted`
 * (`--api-key`, `--search-token`…), credentials in a URL's userinfo (`http://user:key@host`) and
 * secret-looking query or fragment parameters (`?api_key=…`, `&token=…`) are masked wherever a
 * command line, a URL or a recorded setting is written or printed.
 *
 * The secret flags are found by walking the flags' own descriptors (`secretFlagNames`), so a flag
 * declared later with `Options.redacted` is masked without another list to keep in step.
 */

import { isRecord } from "effect/Predicate"

/** What a masked value becomes. */
export const MASK = "<redacted>"

/**
 * Query / fragment parameter names whose value is a secret: any name containing one of these words
 * (`api_key`, `apikey`, `x-api-key`, `access_token`, `client_secret`, `password`, `sig`…).
 */
const SECRET_PARAM = /key|token|secret|passw|pwd|auth|sig|credential|session|cookie/i

/** `scheme://` at the start of a URL. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//

const decodeName = (name: string): string => {
  try {
    return decodeURIComponent(name.replace(/\+/g, " "))
  } catch {
    return name
  }
}

/** `a=1&api_key=s` → `a=1&api_key=<redacted>`; separators `&` and `;`, everything else kept verbatim. */
const maskParams = (params: string): string =>
  params.split(/([&;])/).map((part) => {
    if (part === "&" || part === ";") return part
    const eq = part.indexOf("=")
    if (eq === -1) return part
    return SECRET_PARAM.test(decodeName(part.slice(0, eq))) ? `${part.slice(0, eq + 1)}${MASK}` : part
  }).join("")

/**
 * A URL with its secrets masked and everything else verbatim: the userinfo (`user:pass@`, or a bare
 * `key@`) becomes `<redacted>@`, and the value of every query or fragment parameter whose name looks
 * like a secret becomes `<redacted>`. Text that is not a `scheme://` URL is returned unchanged.
 *
 * The authority ends at the first `/`, `?` or `#`, and its userinfo at the authority's last `@`
 * (RFC 3986 §3.2), so `http://a@b:c@host` masks `a@b:c`.
 */
export const maskUrl = (url: string): string => {
  const scheme = SCHEME.exec(url)
  if (scheme === null) return url
  const rest = url.slice(scheme[0].length)
  const authorityEnd = rest.search(/[/?#]/)
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd)
  let tail = authorityEnd === -1 ? "" : rest.slice(authorityEnd)
  const at = authority.lastIndexOf("@")
  const host = at === -1 ? authority : `${MASK}@${authority.slice(at + 1)}`
  const hash = tail.indexOf("#")
  const fragment = hash === -1 ? "" : tail.slice(hash + 1)
  if (hash !== -1) tail = tail.slice(0, hash)
  const question = tail.indexOf("?")
  const path = question === -1 ? tail : tail.slice(0, question)
  const query = question === -1 ? undefined : tail.slice(question + 1)
  return `${scheme[0]}${host}${path}${query === undefined ? "" : `?${maskParams(query)}`}${
    hash === -1 ? "" : `#${maskParams(fragment)}`
  }`
}

/** A URL inside free text: from its scheme to the next whitespace, quote, bracket or parenthesis. */
const URL_IN_TEXT = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>`()]+/g

/** Every `scheme://…` URL inside `text` masked with `maskUrl`; the rest of the text verbatim. */
export const maskUrlsIn = (text: string): string =>
  text.includes("://") ? text.replace(URL_IN_TEXT, (url) => maskUrl(url)) : text

/**
 * A command line with its secrets masked: the value of every secret flag, as `--flag value` or
 * `--flag=value`, becomes `<redacted>`, and every URL anywhere in it goes through `maskUrl`.
 * `secretFlags` are full names with dashes (`--api-key`, `-k`).
 */
export const redactArgv = (argv: ReadonlyArray<string>, secretFlags: ReadonlyArray<string>): Array<string> => {
  const secret = new Set(secretFlags)
  return argv.map((arg, i) => {
    if (i > 0 && secret.has(argv[i - 1]!)) return MASK
    const eq = arg.indexOf("=")
    if (arg.startsWith("-") && eq !== -1 && secret.has(arg.slice(0, eq))) return `${arg.slice(0, eq + 1)}${MASK}`
    return maskUrlsIn(arg)
  })
}

// ---------------------------------------------------------------------------------------------
// The secret flags, from the flag descriptors

const fullName = (name: string) => (name.length === 1 ? `-${name}` : `--${name}`)

/** Primitive types of @effect/cli whose value is a secret: `Options.redacted` and the older `Options.secret`. */
const SECRET_PRIMITIVES: ReadonlySet<string> = new Set(["Redacted", "Secret"])

/** One flag as @effect/cli declares it: its name, aliases and primitive type's tag (`Bool`, `Redacted`, `Text`…). */
export interface FlagDescriptor {
  readonly name: string
  readonly aliases: ReadonlyArray<string>
  readonly primitive: string | undefined
}

/**
 * Every single flag among `configs`: each value is an @effect/cli `Options` (or a record of them,
 * as a command's config), walked through its combinators (optional, withDefault, map, both,
 * orElse…) down to the single flags. The walk reads the descriptors' data fields (`_tag`, `name`,
 * `aliases`, `primitiveType`); `test/domain/Secrets.test.ts` checks that it finds every
 * `Options.redacted` declared in `src/`, so a change of that shape cannot go unnoticed.
 */
export const flagDescriptors = (...configs: ReadonlyArray<unknown>): Array<FlagDescriptor> => {
  const found: Array<FlagDescriptor> = []
  const seen = new Set<unknown>()
  const walk = (node: unknown): void => {
    if (seen.has(node)) return
    if (Array.isArray(node)) {
      seen.add(node)
      for (const value of node) walk(value)
      return
    }
    if (!isRecord(node)) return
    seen.add(node)
    if (node._tag === "Single") {
      const primitive = node.primitiveType
      if (typeof node.name === "string") {
        found.push({
          name: node.name,
          aliases: Array.isArray(node.aliases) ? node.aliases.filter((a): a is string => typeof a === "string") : [],
          primitive: isRecord(primitive) && typeof primitive._tag === "string" ? primitive._tag : undefined
        })
      }
      return
    }
    if (typeof node._tag === "string") {
      for (const key of ["options", "left", "right", "argumentOption"]) walk(node[key])
      return
    }
    // A command config: a record of options.
    for (const value of Object.values(node)) walk(value)
  }
  for (const config of configs) walk(config)
  return found
}

/** Whether a flag's value is a secret: declared with `Options.redacted` (or the older `Options.secret`). */
export const isSecretFlag = (flag: FlagDescriptor): boolean =>
  flag.primitive !== undefined && SECRET_PRIMITIVES.has(flag.primitive)

/** The full names (and aliases) of every secret flag among `configs` (see `flagDescriptors`). */
export const secretFlagNames = (...configs: ReadonlyArray<unknown>): Array<string> =>
  [...new Set(flagDescriptors(...configs).filter(isSecretFlag).flatMap((f) => [f.name, ...f.aliases].map(fullName)))]
    .sort()
