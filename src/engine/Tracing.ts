/**
 * `--trace-otlp URL`: a run as a tree of OpenTelemetry spans, exported over OTLP/HTTP (JSON) to any
 * collector (Jaeger, Tempo, Honeycomb's, an OpenTelemetry Collector…) by `@effect/opentelemetry`'s
 * `OtlpTracer` — Effect's own exporter over `@effect/platform`'s HttpClient, no OpenTelemetry SDK.
 *
 * The spans (see docs/tracing.md): `rag-eval run` → `Runner.validate`, `Judging.iteration` →
 * `Judgments.judge` (pipeline, case id, rubric, judgment key; outcome, tokens, attempts) →
 * `RateGate.wait` (how long the call waited for a slot, the pace or a 429's pause) and
 * `LlmProvider.complete` / `TargetClient.call`; `JudgmentJournal.append`; `Runner.reports`,
 * `Runner.final`.
 *
 * No secret reaches a span: the attributes are ours (no URL, no header), the HTTP client's own
 * spans (which would carry URLs and header values) are off, and every export is scrubbed at its one
 * write boundary — the serialized batch — of each secret the run knows (API keys, header values,
 * URL credentials, and the base64 of each), so an error message that echoes one is masked too.
 *
 * Without the flag, tracing is off (`Effect.withTracerEnabled(false)`): spans are no-ops, this
 * module (and the exporter) is never loaded.
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as Layer from "effect/Layer"
import { MASK } from "../domain/Secrets.js"
import { VERSION } from "../domain/Version.js"

/** Where spans go: the traces endpoint, and the header a URL's credentials become (fetch refuses them in a URL). */
export interface TraceEndpoint {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** The URL's credentials and the header built from them: masked in every span like any secret. */
  readonly secrets: ReadonlyArray<string>
}

/**
 * The collector's traces endpoint from `--trace-otlp`: a base URL (`http://localhost:4318`) gets
 * OTLP/HTTP's `/v1/traces`; a URL with a path is used as it is. A problem for the user otherwise.
 */
export const traceEndpoint = (text: string): TraceEndpoint | string => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return `--trace-otlp must be an http(s) URL of an OTLP/HTTP collector such as http://localhost:4318 (got "${text}")`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return `--trace-otlp must be an http(s) URL of an OTLP/HTTP collector such as http://localhost:4318 (got a ${url.protocol} URL)`
  }
  const secrets: Array<string> = []
  const headers: Record<string, string> = {}
  if (url.username !== "" || url.password !== "") {
    const user = decodeURIComponent(url.username)
    const password = decodeURIComponent(url.password)
    const basic = Buffer.from(`${user}:${password}`).toString("base64")
    headers["authorization"] = `Basic ${basic}`
    secrets.push(password, `${user}:${password}`, basic)
    url.username = ""
    url.password = ""
  }
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/v1/traces"
  return { url: url.toString(), headers, secrets }
}

/** Values that must never leave in a span, from what the run was given: long enough to be told apart from text. */
export const secretValues = (given: {
  /** Values passed as secrets (--api-key, header values after `${NAME}` expansion). */
  readonly values: ReadonlyArray<string>
  /** URLs whose credentials are secrets (--base-url, --target, --store). */
  readonly urls: ReadonlyArray<string>
  /** Variables read from the environment: those named like a credential (…KEY, …TOKEN, …SECRET, …PASSWORD) are secrets. */
  readonly env: Readonly<Record<string, string | undefined>>
}): Array<string> => {
  const out = new Set<string>()
  const add = (value: string | undefined) => {
    if (value === undefined || value.length < 6) return
    out.add(value)
    out.add(Buffer.from(value).toString("base64"))
  }
  for (const value of given.values) add(value)
  for (const [name, value] of Object.entries(given.env)) {
    if (/KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i.test(name)) add(value)
  }
  for (const text of given.urls) {
    try {
      const url = new URL(text)
      if (url.password !== "") {
        const user = decodeURIComponent(url.username)
        const password = decodeURIComponent(url.password)
        add(password)
        add(`${user}:${password}`)
      }
    } catch {
      // Not a URL: nothing to take from it.
    }
  }
  return [...out]
}

/** Mask each secret in a serialized batch (as it appears inside a JSON string). */
export const scrub = (text: string, secrets: ReadonlyArray<string>): string => {
  let out = text
  for (const secret of secrets) {
    const inJson = JSON.stringify(secret).slice(1, -1)
    if (out.includes(inJson)) out = out.split(inJson).join(MASK)
  }
  return out
}

/** OTLP/JSON, scrubbed: the one place spans are written. */
const scrubbedJson = (secrets: ReadonlyArray<string>) =>
  Layer.succeed(OtlpSerialization.OtlpSerialization, {
    traces: (data) => HttpBody.text(scrub(JSON.stringify(data), secrets), "application/json"),
    metrics: (data) => HttpBody.text(scrub(JSON.stringify(data), secrets), "application/json"),
    logs: (data) => HttpBody.text(scrub(JSON.stringify(data), secrets), "application/json")
  })

/**
 * The tracer for a run with `--trace-otlp`: spans batched and sent every second (and the rest when
 * the run ends, within 3 s); a collector that does not answer costs the run nothing but its spans.
 */
export const layerOtlp = (endpoint: TraceEndpoint, secrets: ReadonlyArray<string>): Layer.Layer<never> =>
  Layer.mergeAll(
    OtlpTracer.layer({
      url: endpoint.url,
      headers: endpoint.headers,
      resource: { serviceName: "rag-eval", serviceVersion: VERSION },
      exportInterval: "1 second"
    }).pipe(Layer.provide(Layer.merge(scrubbedJson([...secrets, ...endpoint.secrets]), FetchHttpClient.layer))),
    // The HTTP client's own spans (the target, an HTTP retriever) would carry URLs and header
    // values: off. `TargetClient.call` and the rest say what matters.
    Layer.locallyScoped(HttpClient.currentTracerDisabledWhen, () => true)
  )
