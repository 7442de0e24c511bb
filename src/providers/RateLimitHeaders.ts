/**
 * The rate-limit state a server reports in its response headers, read in the formats the providers
 * use, so the gate can pause before the server's bucket is empty instead of after a 429:
 *
 * - OpenAI (and vLLM, LiteLLM, most gateways): `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`,
 *   where `limit` is the bucket's capacity, `remaining` what is left and `reset` the time until it is
 *   full again, as a Go-style duration ("20ms", "1.5s", "6m0s");
 * - Azure OpenAI: `x-ratelimit-remaining-{requests,tokens}` only;
 * - Mistral: `x-ratelimitbysize-{limit,remaining}-minute` and `ratelimitbysize-reset` (seconds) for
 *   tokens, beside the OpenAI-style request headers;
 * - the IETF draft's `ratelimit-{limit,remaining,reset}` (reset in seconds), read as requests.
 */

/** One bucket's state as reported; any field may be missing. */
export interface BucketState {
  readonly limit?: number | undefined
  readonly remaining?: number | undefined
  /** Milliseconds until the bucket is full again. */
  readonly resetMs?: number | undefined
}

export interface RateLimitInfo {
  readonly requests?: BucketState | undefined
  readonly tokens?: BucketState | undefined
}

interface HeaderSource {
  readonly get: (name: string) => string | null
}

const UNITS: Readonly<Record<string, number>> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 0.001,
  "µs": 0.001,
  ns: 0.000001
}

/**
 * A duration header in milliseconds: Go-style ("1h2m3.5s", "6m0s", "20ms") as OpenAI sends it, or a
 * bare number of seconds. Undefined when absent or unreadable.
 */
export const parseDuration = (text: string | null): number | undefined => {
  if (text === null) return undefined
  const trimmed = text.trim()
  if (trimmed === "") return undefined
  const bare = Number(trimmed)
  if (Number.isFinite(bare)) return bare >= 0 ? bare * 1000 : undefined
  let total = 0
  let rest = trimmed
  while (rest !== "") {
    const m = /^(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/.exec(rest)
    if (m === null) return undefined
    total += Number(m[1]) * UNITS[m[2]!]!
    rest = rest.slice(m[0].length)
  }
  return total
}

const number = (text: string | null): number | undefined => {
  if (text === null || text.trim() === "") return undefined
  const n = Number(text.trim())
  return Number.isFinite(n) && n >= 0 ? n : undefined
}

const first = (
  headers: HeaderSource,
  names: ReadonlyArray<string>,
  read: (text: string | null) => number | undefined
) => {
  for (const name of names) {
    const value = read(headers.get(name))
    if (value !== undefined) return value
  }
  return undefined
}

const bucket = (
  headers: HeaderSource,
  names: { limit: ReadonlyArray<string>; remaining: ReadonlyArray<string>; reset: ReadonlyArray<string> }
): BucketState | undefined => {
  const limit = first(headers, names.limit, number)
  const remaining = first(headers, names.remaining, number)
  const resetMs = first(headers, names.reset, parseDuration)
  return limit === undefined && remaining === undefined && resetMs === undefined
    ? undefined
    : { limit, remaining, resetMs }
}

/** The rate-limit headers of a response, or undefined when it carries none. */
export const parseRateLimitHeaders = (headers: HeaderSource | undefined): RateLimitInfo | undefined => {
  if (headers === undefined) return undefined
  const requests = bucket(headers, {
    limit: ["x-ratelimit-limit-requests", "ratelimit-limit"],
    remaining: ["x-ratelimit-remaining-requests", "ratelimit-remaining"],
    reset: ["x-ratelimit-reset-requests", "ratelimit-reset"]
  })
  const tokens = bucket(headers, {
    limit: ["x-ratelimit-limit-tokens", "x-ratelimitbysize-limit-minute", "ratelimitbysize-limit"],
    remaining: ["x-ratelimit-remaining-tokens", "x-ratelimitbysize-remaining-minute", "ratelimitbysize-remaining"],
    reset: ["x-ratelimit-reset-tokens", "ratelimitbysize-reset", "x-ratelimitbysize-reset"]
  })
  return requests === undefined && tokens === undefined ? undefined : { requests, tokens }
}
