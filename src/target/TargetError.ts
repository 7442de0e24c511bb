/**
 * What went wrong with one call to the user's RAG service (`--target`), classified for the layer that
 * wraps the call (the rate gate and its retries) — the same three ways `ProviderError` sorts a judge
 * call's failures:
 *
 * - **retryable** — `rate_limited` (429; `retryAfterMs` from its Retry-After), `server` (5xx, or an
 *   error event in a stream), `timeout` (no complete answer within the timeout, or 408), `network`
 *   (a connection reset before or during the answer): wait or back off and ask again;
 * - **fatal** for the whole run, since every later call would fail the same way — `unauthorized`
 *   (401/403), `not_found` (404, 405, 410), `moved` (a 3xx redirect: the URL is not the service's),
 *   `unreachable` (connection refused, DNS failure, a TLS certificate refused, a bad URL): the run
 *   stops with one line naming the target and what to fix (`message`);
 * - **this case only**, recorded with its reason and not asked again — `rejected` (another 4xx: the
 *   service refused this request, e.g. too long), `malformed` (a 200 whose body is not JSON, or a
 *   stream that is not SSE), `shape` (JSON without the answer where `--target-answer` points, or
 *   passages that are not text).
 *
 * `target` is the URL as it may be shown (credentials and secret query values masked); `detail`
 * never holds a header value or a URL secret (the client scrubs what the server echoes).
 */
import * as Schema from "effect/Schema"

export const TargetErrorKind = Schema.Literal(
  "rate_limited",
  "server",
  "timeout",
  "network",
  "unauthorized",
  "not_found",
  "moved",
  "unreachable",
  "rejected",
  "malformed",
  "shape"
)
export type TargetErrorKind = typeof TargetErrorKind.Type

const RETRYABLE: ReadonlySet<TargetErrorKind> = new Set(["rate_limited", "server", "timeout", "network"])
const FATAL: ReadonlySet<TargetErrorKind> = new Set(["unauthorized", "not_found", "moved", "unreachable"])

/** What to do about a fatal error, for its one line. */
const FIX: Readonly<Record<string, string>> = {
  unauthorized:
    "check the credentials sent with --target-header (e.g. --target-header \"Authorization: Bearer ${RAG_TOKEN}\" with RAG_TOKEN set)",
  not_found: "check the path in --target",
  moved: "use the URL it redirects to in --target",
  unreachable: "check that the service is running and the host and port in --target"
}

export class TargetError extends Schema.TaggedError<TargetError>()("TargetError", {
  kind: TargetErrorKind,
  /** The target's URL, masked (`Secrets.maskUrl`). */
  target: Schema.String,
  status: Schema.optional(Schema.Number),
  /** From a 429's Retry-After (or retry-after-ms) header. */
  retryAfterMs: Schema.optional(Schema.Number),
  detail: Schema.String
}) {
  /** One line: the target, what happened and, when fatal, what to fix. */
  get message(): string {
    const status = this.status === undefined ? "" : ` (HTTP ${this.status})`
    const fix = FIX[this.kind]
    return `target ${this.target}: ${this.kind.replace("_", " ")}${status}: ${this.detail}${
      fix === undefined ? "" : ` — ${fix}`
    }`
  }
  /** Transient: worth another attempt (a 429 waits, the others back off). */
  get retryable(): boolean {
    return RETRYABLE.has(this.kind)
  }
  /** Every later call would fail the same way: the run stops. */
  get fatal(): boolean {
    return FATAL.has(this.kind)
  }
  /** Final for this case: recorded as its failure, with `message` as the reason. */
  get caseFailure(): boolean {
    return !this.retryable && !this.fatal
  }
}
