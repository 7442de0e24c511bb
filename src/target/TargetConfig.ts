/**
 * The user's live RAG service as rag-eval calls it (`--target URL` and its flags, or the `target`
 * object of `--config`): where to POST, the body template, the headers, and where the answer and the
 * retrieved passages are in the response.
 *
 * - `TargetSettings` is what the user writes (plain text: header values may say `${RAG_TOKEN}`);
 *   `resolve` checks it and gives a `TargetConfig`, reading each `${NAME}` from the environment
 *   (through Effect's `Config`, so only the CLI's config layer touches the environment).
 * - In a `TargetConfig` every secret is a `Redacted`: the URL as given (it may carry `user:key@` or
 *   `?api_key=…`) and every header value. `String`, `JSON.stringify` and `util.inspect` of a config
 *   give `describe(config)`, where the URL is masked and header values are `<redacted>`.
 * - `identity(config)` is the canonical text of everything that changes what the service is asked
 *   and how its answer is read — URL without credentials or secret query values, preset, body
 *   template, header *names*, answer / contexts / delta paths — and nothing else (not header values:
 *   a rotated token is the same system; not the timeout). A response is keyed by it, so a changed
 *   template is a new run and a resume never asks the same configuration twice.
 *
 * Presets:
 * - `generic` (default): body `{"question": "{{question}}"}`, answer at `$.answer`.
 * - `openai-chat`: an OpenAI-compatible chat-completions endpoint. Body
 *   `{"model": <model>, "messages": {{messages}}, "stream": true}` (`model` only when `--target-model`
 *   is given; `{{messages}}` is the case's history as chat turns, then the question), answer at
 *   `$.choices[0].message.content` (a JSON reply) or the concatenated `$.choices[0].delta.content`
 *   of a streamed one.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { UsageError } from "../domain/Errors.js"
import { checkJsonTemplate } from "../domain/JsonTemplate.js"
import { headerSecrets, none, type Redactor, urlSecrets } from "../domain/Redaction.js"
import { MASK, maskUrl, maskUrlsIn } from "../domain/Secrets.js"
import { withoutCredentials } from "../providers/Endpoint.js"
import * as JsonPath from "./JsonPath.js"

export const TargetPreset = Schema.Literal("generic", "openai-chat")
export type TargetPreset = typeof TargetPreset.Type

/** The default request timeout: a RAG answer (retrieval + generation) may take a while. */
export const defaultTimeoutMs = 120_000

interface PresetDefaults {
  readonly body: (model: string | undefined) => string
  readonly answer: string
  /** Streamed answers: the path of each event's piece of the answer (undefined: the last event carrying `answer`). */
  readonly delta?: string | undefined
}

export const PRESETS: Readonly<Record<TargetPreset, PresetDefaults>> = {
  generic: {
    body: () => "{\"question\": \"{{question}}\"}",
    answer: "$.answer"
  },
  "openai-chat": {
    body: (model) =>
      `{${model === undefined ? "" : `"model": ${JSON.stringify(model)}, `}"messages": {{messages}}, "stream": true}`,
    answer: "$.choices[0].message.content",
    delta: "$.choices[0].delta.content"
  }
}

// ---------------------------------------------------------------------------------------------
// What the user writes

/** A JSON object as a body in `--config` (read as its JSON text). */
const BodyObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const TargetSettings = Schema.Struct({
  /** `--target`: the URL to POST to. */
  url: Schema.String,
  /** `--target-preset`. Default `generic`. */
  preset: Schema.optional(TargetPreset),
  /** `--target-body`: the JSON body template (in `--config`, also a JSON object). */
  body: Schema.optional(Schema.Union(Schema.String, BodyObject)),
  /** `--target-header "Name: value"` (repeatable; `${NAME}` read from the environment); in `--config` also `{ "Name": "value" }`. */
  headers: Schema.optional(
    Schema.Union(Schema.Array(Schema.String), Schema.Record({ key: Schema.String, value: Schema.String }))
  ),
  /** `--target-answer`: JSON path of the answer. Default by preset. */
  answer: Schema.optional(Schema.String),
  /** `--target-contexts`: JSON path of the retrieved passages (text), e.g. `$.sources[*].text`. */
  contexts: Schema.optional(Schema.String),
  /** `--target-delta`: in a streamed answer, the JSON path of each event's piece. Default by preset. */
  delta: Schema.optional(Schema.String),
  /** `--target-model`: the `model` of the openai-chat preset's body, and `{{model}}` in any template. */
  model: Schema.optional(Schema.String),
  /** `--target-timeout` (ms): for one whole call, the stream read to its end included. */
  timeoutMs: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive()))
})
export type TargetSettings = typeof TargetSettings.Type

// ---------------------------------------------------------------------------------------------
// The resolved configuration

/** An HTTP header name (RFC 9110 token). */
const HeaderName = Schema.String.pipe(Schema.pattern(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/))

export class TargetHeader extends Schema.Class<TargetHeader>("TargetHeader")({
  name: HeaderName,
  value: Schema.RedactedFromSelf(Schema.String)
}) {}

/** A JSON path that parses (kept as its canonical text). */
const JsonPathText = Schema.String.pipe(
  Schema.filter((s) => Either.match(JsonPath.parse(s), { onLeft: (e) => e, onRight: () => true }))
)

const NodeInspect = Symbol.for("nodejs.util.inspect.custom")

export class TargetConfig extends Schema.Class<TargetConfig>("TargetConfig")({
  /** The URL as given: it may hold credentials, so it is only read to send. */
  url: Schema.RedactedFromSelf(Schema.String),
  preset: TargetPreset,
  /** The body template in effect (the preset's, or the user's). */
  body: Schema.String,
  headers: Schema.Array(TargetHeader),
  answer: JsonPathText,
  contexts: Schema.optional(JsonPathText),
  delta: Schema.optional(JsonPathText),
  model: Schema.optional(Schema.String),
  timeoutMs: Schema.Number
}) {
  /** The URL as it may be shown and recorded: credentials and secret query values masked. */
  get endpoint(): string {
    return maskUrl(Redacted.value(this.url))
  }
  toJSON(): unknown {
    return describe(this)
  }
  toString(): string {
    return `TargetConfig(${JSON.stringify(describe(this))})`
  }
  [NodeInspect](): unknown {
    return describe(this)
  }
}

/** The configuration as the manifest records it: URL masked, header values `<redacted>`. */
export const describe = (config: TargetConfig) => ({
  url: config.endpoint,
  preset: config.preset,
  body: config.body,
  headers: Object.fromEntries(config.headers.map((h) => [h.name, MASK])),
  answer: config.answer,
  ...(config.contexts === undefined ? {} : { contexts: config.contexts }),
  ...(config.delta === undefined ? {} : { delta: config.delta }),
  ...(config.model === undefined ? {} : { model: config.model }),
  timeoutMs: config.timeoutMs
})

/**
 * The target's identity (canonical JSON, keys sorted): what a response is keyed by. Header names
 * are lower-cased and sorted; header values, the URL's credentials and secret query values never
 * appear (see the module comment).
 */
export const identity = (config: TargetConfig): string =>
  JSON.stringify({
    answer: config.answer,
    body: config.body,
    contexts: config.contexts ?? null,
    delta: config.delta ?? null,
    headers: [...new Set(config.headers.map((h) => h.name.toLowerCase()))].sort(),
    preset: config.preset,
    url: withoutCredentials(Redacted.value(config.url))
  })

// ---------------------------------------------------------------------------------------------
// Resolving the settings

/** `${NAME}` in a header value. */
const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/** Headers rag-eval sets itself from the request: a user's value would contradict the body sent. */
const RESERVED_HEADERS: ReadonlySet<string> = new Set(["content-length", "host", "transfer-encoding", "connection"])

const usage = (problem: string) => new UsageError({ problem })

/** `"Name: value"` → name and value (the value trimmed; it may be empty). */
const splitHeader = (raw: string): Either.Either<{ readonly name: string; readonly value: string }, string> => {
  const colon = raw.indexOf(":")
  if (colon <= 0) {
    return Either.left(
      `--target-header takes "Name: value" (e.g. "Authorization: Bearer \${RAG_TOKEN}"); got a value without a name`
    )
  }
  return Either.right({ name: raw.slice(0, colon).trim(), value: raw.slice(colon + 1).trim() })
}

/** A header value with each `${NAME}` read from the environment; a missing variable names itself. */
const expandEnv = (name: string, template: string): Effect.Effect<string, UsageError> =>
  Effect.gen(function*() {
    let out = ""
    let last = 0
    for (const m of template.matchAll(ENV_REFERENCE)) {
      const variable = m[1]!
      const value = yield* Config.redacted(variable).pipe(
        Effect.mapError(() => usage(`--target-header ${name}: the environment variable ${variable} is not set`))
      )
      out += template.slice(last, m.index) + Redacted.value(value)
      last = m.index + m[0].length
    }
    return out + template.slice(last)
  })

const header = (raw: { readonly name: string; readonly value: string }): Effect.Effect<TargetHeader, UsageError> =>
  Effect.gen(function*() {
    if (!Schema.is(HeaderName)(raw.name)) {
      return yield* usage(
        `--target-header: "${raw.name}" is not a header name (letters, digits and - only, e.g. Authorization, X-Api-Key)`
      )
    }
    if (RESERVED_HEADERS.has(raw.name.toLowerCase())) {
      return yield* usage(`--target-header: ${raw.name} is set by rag-eval from the request; leave it out`)
    }
    const value = yield* expandEnv(raw.name, raw.value)
    if (/[\r\n\0]/.test(value)) return yield* usage(`--target-header ${raw.name}: the value holds a line break or NUL`)
    return new TargetHeader({ name: raw.name, value: Redacted.make(value) })
  })

const jsonPath = (flag: string, text: string): Either.Either<string, UsageError> =>
  Either.match(JsonPath.parse(text), {
    onLeft: (problem) => Either.left(usage(`${flag}: ${problem}`)),
    onRight: (path) => Either.right(path.text)
  })

/** Why a URL cannot be a target, or undefined: it must be an absolute http(s) URL. */
export const urlProblem = (url: string): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `--target must be an absolute http(s) URL such as http://127.0.0.1:8000/ask (got "${maskUrl(url)}")`
  }
  return parsed.protocol === "http:" || parsed.protocol === "https:"
    ? undefined
    : `--target must be an http or https URL (got "${maskUrl(url)}")`
}

/**
 * Checks the settings and gives the configuration: the URL, the body template (valid JSON with any
 * value in its placeholders), the JSON paths, and the headers with `${NAME}` read from the
 * environment. Every problem is a `UsageError` naming the flag.
 */
export const resolve = (settings: TargetSettings): Effect.Effect<TargetConfig, UsageError> =>
  Effect.gen(function*() {
    const url = settings.url.trim()
    const badUrl = urlProblem(url)
    if (badUrl !== undefined) return yield* usage(badUrl)
    const preset = settings.preset ?? "generic"
    const defaults = PRESETS[preset]
    const body = settings.body === undefined
      ? defaults.body(settings.model)
      : typeof settings.body === "string"
      ? settings.body
      : JSON.stringify(settings.body)
    yield* Either.mapLeft(checkJsonTemplate(body, PRESETS.generic.body(undefined)), (problem) =>
      usage(`--target-body: ${problem}`))
    const answer = yield* jsonPath("--target-answer", settings.answer ?? defaults.answer)
    const contexts = settings.contexts === undefined
      ? undefined
      : yield* jsonPath("--target-contexts", settings.contexts)
    const deltaText = settings.delta ?? defaults.delta
    const delta = deltaText === undefined ? undefined : yield* jsonPath("--target-delta", deltaText)
    const rawHeaders = settings.headers === undefined
      ? []
      : Array.isArray(settings.headers)
      ? yield* Effect.forEach(settings.headers as ReadonlyArray<string>, (h) =>
        Either.mapLeft(splitHeader(h), usage))
      : Object.entries(settings.headers).map(([name, value]) => ({ name: name.trim(), value: value.trim() }))
    const headers = yield* Effect.forEach(rawHeaders, header)
    const seen = new Set<string>()
    for (const h of headers) {
      const lower = h.name.toLowerCase()
      if (seen.has(lower)) return yield* usage(`--target-header: ${h.name} is given twice`)
      seen.add(lower)
    }
    return new TargetConfig({
      url: Redacted.make(url),
      preset,
      body,
      headers,
      answer,
      contexts,
      delta,
      model: settings.model,
      timeoutMs: settings.timeoutMs ?? defaultTimeoutMs
    })
  })

// ---------------------------------------------------------------------------------------------
// Secrets in text

/**
 * Every secret of a configuration, still `Redacted`: each header value (and the credentials of a
 * `Scheme credentials` value), the URL's credentials and the values of its secret-looking query
 * parameters (`domain/Redaction.ts`: `headerSecrets`, `urlSecrets`).
 */
export const secretsOf = (config: TargetConfig): Array<Redacted.Redacted<string>> => [
  ...config.headers.flatMap((h) => headerSecrets(h.value)),
  ...urlSecrets(config.url)
]

/**
 * What a text from the target passes through: the run's redactor with this configuration's secrets
 * added (in every form a server may echo them in), then every URL's secrets masked (`maskUrlsIn`).
 */
export const scrubber = (config: TargetConfig, run: Redactor = none): (text: string) => string => {
  const redact = run.with(secretsOf(config)).text
  return (text) => maskUrlsIn(redact(text))
}
