/**
 * Command-line mistakes as one line a user can act on: `error: `, the flag, what is wrong with it,
 * the nearest flag when one is misspelt (`--concurency` → did you mean `--concurrency`?), exit 2.
 *
 * The parser's own errors (@effect/cli 0.77) name no flag (`'abc' is not a integer`, `Received
 * unknown argument: '--concurency'`), and the error value carries only that text. So when parsing
 * fails, the arguments are read again against the command's declared flags — taken from the
 * library (`CommandDescriptor.getUsage`), values checked with the library's own `Primitive.validate`
 * — to find the first argument at fault and say what it is. When that finds nothing (a check of our
 * own already names its flag, a missing argument…), the parser's message is kept, prefixed.
 */
import * as CliConfig from "@effect/cli/CliConfig"
import * as Primitive from "@effect/cli/Primitive"
import type * as ValidationError from "@effect/cli/ValidationError"
import type { FileSystem } from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { nearest } from "../domain/Nearest.js"
import { type CommandNode, type Flag, helpDocText, usageParts } from "./Help.js"

/** Flags every command takes (the library's built-ins). */
const BUILT_IN: ReadonlyArray<Flag> = [
  { names: ["--help", "-h"], value: undefined, required: false },
  { names: ["--version"], value: undefined, required: false },
  { names: ["--wizard"], value: undefined, required: false },
  { names: ["--completions"], value: "sh | bash | fish | zsh", required: false },
  { names: ["--log-level"], value: "all | trace | debug | info | warning | error | fatal | none", required: false }
]

const suggestion = (word: string, names: ReadonlyArray<string>) => {
  const near = nearest(word, names)
  return near.length === 0 ? "" : `; did you mean ${near.join(" or ")}?`
}

const choicesOf = (value: string) => value.split(" | ")

/** The library's primitive for a flag's placeholder, to check a value exactly as the parser does. */
const primitiveOf = (value: string): Primitive.Primitive<unknown> | undefined =>
  value === "integer"
    ? Primitive.integer
    : value === "float"
    ? Primitive.float
    : value.includes(" | ")
    ? Primitive.choice(choicesOf(value).map((c) => [c, c] as [string, unknown]))
    : undefined

const kindOf = (value: string) =>
  value === "integer"
    ? "a whole number"
    : value === "float"
    ? "a number"
    : value.includes(" | ")
    ? `one of ${choicesOf(value).join(", ")}`
    : "a value"

/** What is wrong with a flag's value, if anything (the value as the parser would check it). */
const valueProblem = (
  flag: string,
  value: string,
  placeholder: string
): Effect.Effect<string | undefined, never, FileSystem> => {
  const primitive = primitiveOf(placeholder)
  if (primitive === undefined) return Effect.succeed(undefined)
  return Primitive.validate(primitive, Option.some(value), CliConfig.defaultConfig).pipe(
    Effect.either,
    Effect.map((r) =>
      Either.isRight(r)
        ? undefined
        : `${flag} takes ${kindOf(placeholder)}, not "${value}"${
          placeholder.includes(" | ") ? suggestion(value, choicesOf(placeholder)) : ""
        }`
    )
  )
}

/**
 * The first argument at fault, read against the flags of `node` (the command the arguments name):
 * an unknown flag, a flag without its value, a value the flag's type refuses, a flag given twice, a
 * positional argument too many. Undefined when every argument is well-formed.
 */
export const findProblem = (
  node: CommandNode,
  args: ReadonlyArray<string>
): Effect.Effect<string | undefined, never, FileSystem> =>
  Effect.gen(function*() {
    const command = ["rag-eval", ...node.path].join(" ")
    const { args: positional, flags: own } = usageParts(node.descriptor)
    const flags = [...own, ...BUILT_IN]
    const byName = new Map(flags.flatMap((f) => f.names.map((n) => [n, f] as const)))
    const rest = args.slice(node.path.length)
    if (node.children.length > 0) {
      const first = rest.find((a) => !a.startsWith("-"))
      if (first !== undefined) {
        const names = node.children.map((c) => c.path.at(-1)!)
        return `unknown command "${first}" for ${command}${suggestion(first, names)} (commands: ${names.join(", ")})`
      }
    }
    const seen = new Set<Flag>()
    let positionals = 0
    const maxPositionals = positional.some((a) => a.repeated) ? Infinity : positional.length
    for (let i = 0; i < rest.length; i++) {
      const arg = rest[i]!
      if (arg === "--") break
      if (arg.startsWith("-") && arg !== "-") {
        const eq = arg.indexOf("=")
        const name = eq === -1 ? arg : arg.slice(0, eq)
        const flag = byName.get(name)
        if (flag === undefined) {
          return `unknown flag ${name} for ${command}${
            suggestion(name, flags.flatMap((f) => f.names.filter((n) => n.startsWith("--"))))
          } (${command} --help lists its flags)`
        }
        if (seen.has(flag)) return `${name} is given twice`
        seen.add(flag)
        if (flag.value === undefined) {
          // A boolean flag may be followed by its value, as the parser reads it: `--listwise false`.
          if (eq === -1 && (rest[i + 1] === "true" || rest[i + 1] === "false")) i++
          continue
        }
        const value = eq === -1 ? rest[i + 1] : arg.slice(eq + 1)
        if (eq === -1) i++
        if (value === undefined) return `${name} needs ${kindOf(flag.value)}`
        const problem = yield* valueProblem(name, value, flag.value)
        if (problem !== undefined) return problem
        continue
      }
      positionals++
      if (
        positionals > maxPositionals
      ) return `unexpected argument "${arg}" for ${command} (${command} --help shows its usage)`
    }
    const missingFlag = own.find((f) => f.required && !seen.has(f))
    if (missingFlag !== undefined) {
      return `${command} needs ${missingFlag.names.find((n) => n.startsWith("--"))}${
        missingFlag.value === undefined ? "" : ` ${missingFlag.value}`
      }`
    }
    const missingArg = positional.filter((a) => a.required)[positionals]
    if (missingArg !== undefined) return `${command} needs ${missingArg.name} (${command} --help shows its usage)`
    return undefined
  })

/** The message for a failed parse: the argument at fault, else the parser's own words. */
export const parseErrorMessage = (
  node: CommandNode,
  args: ReadonlyArray<string>,
  error: ValidationError.ValidationError | undefined
): Effect.Effect<string, never, FileSystem> =>
  Effect.map(findProblem(node, args), (problem) => {
    if (problem !== undefined) return `error: ${problem}`
    const text = error === undefined ? "" : helpDocText(error.error).trim()
    return `error: ${text === "" ? `cannot read the command line (rag-eval ${[...node.path].join(" ")} --help)` : text}`
  })
