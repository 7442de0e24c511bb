/**
 * `--config FILE`: flags from a JSON or YAML file whose keys are the long flag names
 * (`{ "provider": "openai", "top-k": 5, "listwise": true }`). The file's flags are added to the
 * command line before it is parsed, so they are checked exactly as typed flags are; a flag on the
 * command line wins over the file. Secrets are refused in the file: they come from the environment
 * or the command line only. YAML is read with the `yaml` package (eemeli/yaml, maintained, YAML 1.2).
 */
import * as Effect from "effect/Effect"
import { isRecord } from "effect/Predicate"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import type * as Yaml from "yaml"
import { UsageError } from "../domain/Errors.js"
import { flagDescriptors, isSecretFlag } from "../domain/Secrets.js"
import { fileReadProblem } from "../io/Files.js"

/** A value from the file as flag text: lists comma-separated, `{ a: "b" }` as `a=b` (--columns; `{ composite: 0.7 }` for --fail-under). */
const flagValue = (value: unknown): string | undefined => {
  if (typeof value === "string") return value
  if (typeof value === "number" && Number.isFinite(value)) return String(value)
  if (Array.isArray(value) && value.every((v) => typeof v === "string" || typeof v === "number")) return value.join(",")
  if (
    isRecord(value) &&
    Object.values(value).every((v) => typeof v === "string" || (typeof v === "number" && Number.isFinite(v)))
  ) {
    return Object.entries(value).map(([k, v]) => `${k}=${v}`).join(",")
  }
  return undefined
}

/** The `target` object's keys and the flags they stand for. */
const TARGET_KEYS: Readonly<Record<string, string>> = {
  url: "target",
  preset: "target-preset",
  body: "target-body",
  headers: "target-header",
  answer: "target-answer",
  contexts: "target-contexts",
  delta: "target-delta",
  model: "target-model",
  timeoutMs: "target-timeout",
  rpm: "target-rpm",
  concurrency: "target-concurrency",
  regenerate: "regenerate"
}

/** A header value that holds a credential as text rather than a `${NAME}` read from the environment. */
const literalCredential = (name: string, value: string) =>
  /authorization|token|key|secret|cookie|password/i.test(name) && !/\$\{[A-Za-z_][A-Za-z0-9_]*\}/.test(value)

/**
 * A config file's `target` object as flags (`{ url, preset, body, headers, answer, contexts, delta,
 * model, timeoutMs, rpm, concurrency, regenerate }`; `body` may be a JSON object, `headers` a list
 * of "Name: value" or an object). A credential header must read its value from the environment
 * (`"Authorization": "Bearer ${RAG_TOKEN}"`): a config file is not the place for a secret.
 */
const targetFlags = (
  file: string,
  target: Readonly<Record<string, unknown>>,
  argv: ReadonlyArray<string>
): Effect.Effect<Array<string>, UsageError> =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const bad = (problem: string) => new UsageError({ problem: `--config ${file}: target.${problem}` })
    if (given(argv, "target")) return out
    for (const [key, value] of Object.entries(target)) {
      const flag = TARGET_KEYS[key]
      if (flag === undefined) {
        return yield* bad(`${key} is not a target setting (${Object.keys(TARGET_KEYS).join(", ")})`)
      }
      if (key === "regenerate") {
        if (typeof value !== "boolean") return yield* bad(`regenerate must be true or false`)
        if (value && !given(argv, flag)) out.push(`--${flag}`)
        continue
      }
      if (key === "headers") {
        const pairs = Array.isArray(value)
          ? value.map((h) => typeof h === "string" ? h : undefined)
          : isRecord(value)
          ? Object.entries(value).map(([n, v]) => typeof v === "string" ? `${n}: ${v}` : undefined)
          : [undefined]
        for (const h of pairs) {
          if (h === undefined) return yield* bad(`headers must be a list of "Name: value" or an object of texts`)
          const colon = h.indexOf(":")
          if (colon > 0 && literalCredential(h.slice(0, colon), h.slice(colon + 1))) {
            return yield* bad(
              `headers: ${
                h.slice(0, colon).trim()
              } holds a credential as text; read it from the environment instead, e.g. "${
                h.slice(0, colon).trim()
              }: Bearer \${RAG_TOKEN}"`
            )
          }
          if (!given(argv, flag)) out.push(`--${flag}`, h)
        }
        continue
      }
      if (given(argv, flag)) continue
      const text = key === "body" && isRecord(value)
        ? JSON.stringify(value)
        : typeof value === "string"
        ? value
        : typeof value === "number" && Number.isFinite(value)
        ? String(value)
        : undefined
      if (text === undefined) {
        return yield* bad(
          `${key} must be ${key === "body" ? "a JSON template (text) or an object" : "text or a number"} (got ${
            JSON.stringify(value)
          })`
        )
      }
      out.push(`--${flag}`, text)
    }
    return out
  })

/**
 * A YAML error at the line to fix. The parser reports where it noticed the problem; for a flow list
 * or map left unclosed (`fields: [a, b`) that is the next key's line, so the line where the bracket
 * was opened is named instead.
 */
const yamlProblem = (e: Yaml.YAMLParseError, text: string): string => {
  const what = e.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")
  if (/^Flow (sequence|mapping)/.test(what)) {
    const open = unclosedBracket(text.slice(0, e.pos[0]))
    if (open !== undefined) {
      return `line ${open.line}: this ${open.char === "[" ? "[ list" : "{ map"} is not closed with ${
        open.char === "[" ? "]" : "}"
      } (${what})`
    }
  }
  const at = e.linePos?.[0]
  return at === undefined ? what : `line ${at.line}, column ${at.col}: ${what}`
}

/** The outermost bracket opened and not closed in `text` (quotes and comments skipped), with its line. */
const unclosedBracket = (text: string): { readonly char: string; readonly line: number } | undefined => {
  const stack: Array<{ char: string; line: number }> = []
  let line = 1
  let quote: string | undefined
  let comment = false
  /** The last character, and the last one that is not white space on this line. */
  let last = "\n"
  let prev: string | undefined
  for (const ch of text) {
    if (ch === "\n") {
      line++
      comment = false
      prev = undefined
      last = ch
      continue
    }
    if (comment) continue
    if (quote !== undefined) {
      if (ch === quote) quote = undefined
      continue
    }
    // A quote starts a quoted scalar only where a value starts (`don't` in plain text is no quote).
    if ((ch === "\"" || ch === "'") && (prev === undefined || ":[{,-".includes(prev))) quote = ch
    else if (ch === "#" && (prev === undefined || /\s/.test(last))) comment = true
    else if (ch === "[" || ch === "{") stack.push({ char: ch, line })
    else if (ch === "]" || ch === "}") stack.pop()
    last = ch
    if (!/\s/.test(ch)) prev = ch
  }
  return stack[0]
}

const given = (argv: ReadonlyArray<string>, name: string) =>
  argv.some((a) => a === `--${name}` || a.startsWith(`--${name}=`))

/**
 * The arguments with a `--config FILE`'s flags added (those not already given). `argv` is the
 * command's own arguments (after `run` or `serve`); `config` its @effect/cli options.
 */
export const withConfigFile = (
  argv: ReadonlyArray<string>,
  config: unknown
): Effect.Effect<ReadonlyArray<string>, UsageError> =>
  Effect.gen(function*() {
    const at = argv.findIndex((a) => a === "--config" || a.startsWith("--config="))
    if (at === -1) return argv
    const file = argv[at]!.startsWith("--config=") ? argv[at]!.slice("--config=".length) : argv[at + 1]
    if (file === undefined || file === "") {
      return yield* new UsageError({ problem: "--config needs a file: --config rag-eval.json (or .yaml)" })
    }
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (e) => new UsageError({ problem: `--config ${file}: ${fileReadProblem(e)}` })
    })
    const yaml = /\.ya?ml$/i.test(file)
    // The YAML parser is required for a YAML file only, from node_modules: bundled, its ~270 KB were
    // compiled at every `run`. (Not `import("yaml")`: in the split bundle a CommonJS package's
    // chunk exports only a default, where Node's own import gives the named exports too.)
    const parser = yaml ? createRequire(import.meta.url)("yaml") as typeof Yaml : undefined
    const parsed = yield* Effect.try({
      try: () => (parser !== undefined
        ? parser.parse(text, { prettyErrors: true }) as unknown
        : JSON.parse(text) as unknown),
      catch: (e) =>
        new UsageError({
          problem: `--config ${file}: not valid ${yaml ? "YAML" : "JSON"}: ${
            parser !== undefined && e instanceof parser.YAMLParseError
              ? yamlProblem(e, text)
              : (e as Error).message.split("\n")[0]
          }`
        })
    })
    if (!isRecord(parsed)) {
      return yield* new UsageError({
        problem: `--config ${file}: expected an object whose keys are long flag names, e.g. { "provider": "openai" }`
      })
    }
    const shapes = new Map(
      flagDescriptors(config).map((f) => [f.name, { boolean: f.primitive === "Bool", secret: isSecretFlag(f) }])
    )
    const added: Array<string> = []
    for (const [key, value] of Object.entries(parsed)) {
      const name = key.replace(/^--/, "")
      if (name === "target" && isRecord(value) && shapes.has("target")) {
        added.push(...yield* targetFlags(file, value, argv))
        continue
      }
      const shape = shapes.get(name)
      if (shape === undefined || name === "config") {
        return yield* new UsageError({
          problem:
            `--config ${file}: unknown key "${key}" (keys are the long flag names of this command, e.g. provider, model, top-k; see --help)`
        })
      }
      if (shape.secret) {
        return yield* new UsageError({
          problem:
            `--config ${file}: "${key}" is a secret and is not accepted in a config file; give it with --${name} or its environment variable`
        })
      }
      if (given(argv, name)) continue
      if (shape.boolean) {
        if (typeof value !== "boolean") {
          return yield* new UsageError({
            problem: `--config ${file}: "${key}" must be true or false (got ${JSON.stringify(value)})`
          })
        }
        if (value) added.push(`--${name}`)
        continue
      }
      const text = typeof value === "boolean" ? String(value) : flagValue(value)
      if (text === undefined) {
        return yield* new UsageError({
          problem: `--config ${file}: "${key}" must be a string, a number or a list (got ${JSON.stringify(value)})`
        })
      }
      added.push(`--${name}`, text)
    }
    const rest = [...argv.slice(0, at), ...argv.slice(argv[at]!.startsWith("--config=") ? at + 1 : at + 2)]
    return [...rest, ...added]
  })
