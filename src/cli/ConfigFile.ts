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
import { parse as parseYaml, YAMLParseError } from "yaml"
import { UsageError } from "../domain/Errors.js"
import { fileReadProblem } from "../io/Files.js"
import { flagDescriptors, isSecretFlag } from "../domain/Secrets.js"


/** A value from the file as flag text: lists comma-separated, `{ a: "b" }` as `a=b` (--columns; `{ composite: 0.7 }` for --fail-under). */
const flagValue = (value: unknown): string | undefined => {
  if (typeof value === "string") return value
  if (typeof value === "number" && Number.isFinite(value)) return String(value)
  if (Array.isArray(value) && value.every((v) => typeof v === "string" || typeof v === "number")) return value.join(",")
  if (isRecord(value) && Object.values(value).every((v) => typeof v === "string" || (typeof v === "number" && Number.isFinite(v)))) {
    return Object.entries(value).map(([k, v]) => `${k}=${v}`).join(",")
  }
  return undefined
}

/**
 * A YAML error at the line to fix. The parser reports where it noticed the problem; for a flow list
 * or map left unclosed (`fields: [a, b`) that is the next key's line, so the line where the bracket
 * was opened is named instead.
 */
const yamlProblem = (e: YAMLParseError, text: string): string => {
  const what = e.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")
  if (/^Flow (sequence|mapping)/.test(what)) {
    const open = unclosedBracket(text.slice(0, e.pos[0]))
    if (open !== undefined) return `line ${open.line}: this ${open.char === "[" ? "[ list" : "{ map"} is not closed with ${open.char === "[" ? "]" : "}"} (${what})`
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

const given = (argv: ReadonlyArray<string>, name: string) => argv.some((a) => a === `--${name}` || a.startsWith(`--${name}=`))

/**
 * The arguments with a `--config FILE`'s flags added (those not already given). `argv` is the
 * command's own arguments (after `run` or `serve`); `config` its @effect/cli options.
 */
export const withConfigFile = (argv: ReadonlyArray<string>, config: unknown): Effect.Effect<ReadonlyArray<string>, UsageError> =>
  Effect.gen(function*() {
    const at = argv.findIndex((a) => a === "--config" || a.startsWith("--config="))
    if (at === -1) return argv
    const file = argv[at]!.startsWith("--config=") ? argv[at]!.slice("--config=".length) : argv[at + 1]
    if (file === undefined || file === "") return yield* new UsageError({ problem: "--config needs a file: --config rag-eval.json (or .yaml)" })
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (e) => new UsageError({ problem: `--config ${file}: ${fileReadProblem(e)}` })
    })
    const yaml = /\.ya?ml$/i.test(file)
    const parsed = yield* Effect.tryPromise({
      try: async () => (yaml ? parseYaml(text, { prettyErrors: true }) as unknown : JSON.parse(text) as unknown),
      catch: (e) => new UsageError({ problem: `--config ${file}: not valid ${yaml ? "YAML" : "JSON"}: ${e instanceof YAMLParseError ? yamlProblem(e, text) : (e as Error).message.split("\n")[0]}` })
    })
    if (!isRecord(parsed)) return yield* new UsageError({ problem: `--config ${file}: expected an object whose keys are long flag names, e.g. { "provider": "openai" }` })
    const shapes = new Map(flagDescriptors(config).map((f) => [f.name, { boolean: f.primitive === "Bool", secret: isSecretFlag(f) }]))
    const added: Array<string> = []
    for (const [key, value] of Object.entries(parsed)) {
      const name = key.replace(/^--/, "")
      const shape = shapes.get(name)
      if (shape === undefined || name === "config") {
        return yield* new UsageError({ problem: `--config ${file}: unknown key "${key}" (keys are the long flag names of this command, e.g. provider, model, top-k; see --help)` })
      }
      if (shape.secret) {
        return yield* new UsageError({ problem: `--config ${file}: "${key}" is a secret and is not accepted in a config file; give it with --${name} or its environment variable` })
      }
      if (given(argv, name)) continue
      if (shape.boolean) {
        if (typeof value !== "boolean") return yield* new UsageError({ problem: `--config ${file}: "${key}" must be true or false (got ${JSON.stringify(value)})` })
        if (value) added.push(`--${name}`)
        continue
      }
      const text = typeof value === "boolean" ? String(value) : flagValue(value)
      if (text === undefined) return yield* new UsageError({ problem: `--config ${file}: "${key}" must be a string, a number or a list (got ${JSON.stringify(value)})` })
      added.push(`--${name}`, text)
    }
    const rest = [...argv.slice(0, at), ...argv.slice(argv[at]!.startsWith("--config=") ? at + 1 : at + 2)]
    return [...rest, ...added]
  })
