/**
 * What a failed connection means, for every HTTP client of rag-eval (the judge's provider over
 * `NodeFetch`, the Batch API, the `--target` client): the socket error's `code`, found on the error's
 * `cause` chain, and the connection failures that mean the server cannot be reached at all — refused,
 * a name that does not resolve, a refused TLS certificate, an invalid URL — in the words a message
 * shows. A code not in the table is a call that broke (a reset mid-call): transient, not unreachable.
 */

/** How deep the `cause` chain is followed (the SDK wraps fetch's TypeError, which wraps the socket error). */
const MAX_DEPTH = 8

/** The first `code` on an error's cause chain (node's socket errors: ECONNREFUSED, ENOTFOUND…). */
export const causeCode = (error: unknown): string | undefined => {
  let e: unknown = error
  for (let depth = 0; depth < MAX_DEPTH && typeof e === "object" && e !== null; depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === "string") return code
    e = (e as { cause?: unknown }).cause
  }
  return undefined
}

/** The innermost non-empty message on an error's cause chain ("" when none). */
export const causeMessage = (error: unknown): string => {
  let e: unknown = error
  let last = ""
  for (let depth = 0; depth < MAX_DEPTH && typeof e === "object" && e !== null; depth++) {
    if (e instanceof Error && e.message !== "") last = e.message
    e = (e as { cause?: unknown }).cause
  }
  return last
}

/** Connection failures that mean the server cannot be reached at all (not a call that broke), in words. */
const UNREACHABLE: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "DNS lookup failed: the host name does not resolve",
  EAI_AGAIN: "DNS lookup failed: the host name does not resolve",
  EAI_NONAME: "DNS lookup failed: the host name does not resolve",
  ERR_INVALID_URL: "invalid URL",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  CERT_HAS_EXPIRED: "its TLS certificate has expired",
  DEPTH_ZERO_SELF_SIGNED_CERT: "its TLS certificate is self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "its TLS certificate chain is self-signed",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "its TLS certificate is not trusted",
  ERR_TLS_CERT_ALTNAME_INVALID: "its TLS certificate is for another host"
}

/** Why the server cannot be reached at all, in words, when a connection error says so; else undefined. */
export const unreachable = (error: unknown): string | undefined => {
  const code = causeCode(error)
  return code === undefined ? undefined : UNREACHABLE[code]
}
