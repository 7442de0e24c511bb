/**
 * A small JSONPath subset, enough to point at an answer or a list of passages in a response:
 * `$` (the root), `.name`, `['name']` / `["name"]` (any key, quotes escaped with `\`), `[n]` (an
 * index; `[-1]` is the last item), `[*]` and `.*` (every item of a list, or every value of an
 * object). A path written without `$` is read from the root (`answer.text` = `$.answer.text`).
 *
 * Why not a library: the JSONPath packages on npm either evaluate filter expressions with `eval`-like
 * machinery (jsonpath-plus had a remote-code-execution advisory for exactly that, CVE-2024-21534) or
 * are unmaintained (jsonpath), and none says *why* a path found nothing. Selecting a field is all a
 * response mapping needs, and the one thing worth having is the explanation: "the response has no
 * $.answer: it has keys answer_text, sources".
 */
import * as Either from "effect/Either"
import { isRecord } from "effect/Predicate"

export type Step =
  | { readonly _tag: "Key"; readonly name: string }
  | { readonly _tag: "Index"; readonly index: number }
  | { readonly _tag: "Wildcard" }

export interface JsonPath {
  /** The path in canonical form (`$.sources[*].text`): two spellings of one path read the same. */
  readonly text: string
  readonly steps: ReadonlyArray<Step>
  /** Whether the path may select several values (it has a wildcard). */
  readonly many: boolean
}

const SIMPLE_NAME = /^[A-Za-z_$][\w$-]*$/

const formatStep = (step: Step): string =>
  step._tag === "Wildcard"
    ? "[*]"
    : step._tag === "Index"
    ? `[${step.index}]`
    : SIMPLE_NAME.test(step.name)
    ? `.${step.name}`
    : `['${step.name.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}']`

/** The canonical text of a list of steps. */
export const format = (steps: ReadonlyArray<Step>): string => `$${steps.map(formatStep).join("")}`

/** Parses a path; Left(why) names the position of the problem. */
export const parse = (input: string): Either.Either<JsonPath, string> => {
  const text = input.trim()
  if (text === "") return Either.left("a JSON path cannot be empty (e.g. $.answer)")
  const steps: Array<Step> = []
  let i = 0
  if (text[0] === "$") i = 1
  else if (text[0] !== "." && text[0] !== "[") {
    // `answer.text`: read from the root.
    const m = /^[A-Za-z_][\w$-]*/.exec(text)
    if (m === null) return Either.left(`"${input}" is not a JSON path: start with $ (e.g. $.answer)`)
    steps.push({ _tag: "Key", name: m[0] })
    i = m[0].length
  }
  const fail = (what: string) =>
    Either.left(
      `"${input}" is not a JSON path: ${what} at character ${
        i + 1
      } (e.g. $.answer, $.sources[*].text, $['key with spaces'])`
    )
  while (i < text.length) {
    const c = text[i]
    if (c === ".") {
      if (text[i + 1] === "*") {
        steps.push({ _tag: "Wildcard" })
        i += 2
        continue
      }
      const m = /^[A-Za-z_$][\w$-]*/.exec(text.slice(i + 1))
      if (m === null) return fail("expected a name after \".\"")
      steps.push({ _tag: "Key", name: m[0] })
      i += 1 + m[0].length
      continue
    }
    if (c === "[") {
      const rest = text.slice(i + 1)
      if (rest.startsWith("*]")) {
        steps.push({ _tag: "Wildcard" })
        i += 3
        continue
      }
      const index = /^\s*(-?\d+)\s*\]/.exec(rest)
      if (index !== null) {
        steps.push({ _tag: "Index", index: Number(index[1]) })
        i += 1 + index[0].length
        continue
      }
      const quote = rest[0]
      if (quote === "'" || quote === "\"") {
        let name = ""
        let j = 1
        for (; j < rest.length && rest[j] !== quote; j++) {
          if (rest[j] === "\\" && j + 1 < rest.length) j++
          name += rest[j]
        }
        if (j >= rest.length || rest[j + 1] !== "]") return fail(`expected ${quote}] to close the name`)
        steps.push({ _tag: "Key", name })
        i += 1 + j + 2
        continue
      }
      return fail("expected [n], [*] or ['name']")
    }
    return fail(`unexpected "${c}"`)
  }
  return Either.right({ text: format(steps), steps, many: steps.some((s) => s._tag === "Wildcard") })
}

// ---------------------------------------------------------------------------------------------
// Reading

/** What a value is, for messages: "a list of 3", "an object", "a string (\"…\")", "null". */
export const describeValue = (u: unknown): string => {
  if (u === undefined) return "nothing"
  if (u === null) return "null"
  if (Array.isArray(u)) return u.length === 0 ? "an empty list" : `a list of ${u.length}`
  if (typeof u === "object") return "an object"
  if (typeof u === "string") return `a string (${JSON.stringify(u.length > 40 ? `${u.slice(0, 40)}…` : u)})`
  return `a ${typeof u} (${String(u)})`
}

const KEYS_SHOWN = 12

/** `answer_text, sources` (at most a dozen, then how many more). */
const keyList = (o: Readonly<Record<string, unknown>>): string => {
  const keys = Object.keys(o)
  if (keys.length === 0) return "no keys"
  const shown = keys.slice(0, KEYS_SHOWN).join(", ")
  return `${keys.length === 1 ? "key" : "keys"} ${shown}${
    keys.length > KEYS_SHOWN ? ` and ${keys.length - KEYS_SHOWN} more` : ""
  }`
}

/** Where `select` did not get through, and why. */
export interface Miss {
  /** The path up to and including the step that failed (`$.answer`). */
  readonly at: string
  /** Whether the value there is simply absent (a missing key, an index past the end, a null on the way). */
  readonly absent: boolean
  /** One sentence: "the response has no $.answer: it has keys answer_text, sources". */
  readonly reason: string
}

export interface Match {
  readonly value: unknown
  /** The concrete path of the value (`$.sources[2].text`). */
  readonly at: string
}

export interface Selection {
  readonly matches: ReadonlyArray<Match>
  /** Every branch that did not get through (a path without wildcards has at most one). */
  readonly misses: ReadonlyArray<Miss>
}

/**
 * Every value the path selects in `value`, in document order, and where and why branches found
 * nothing. `what` names the root in messages ("the response", "event 3").
 */
export const select = (path: JsonPath, value: unknown, what = "the response"): Selection => {
  const matches: Array<Match> = []
  const misses: Array<Miss> = []
  const walk = (current: unknown, depth: number, at: ReadonlyArray<Step>) => {
    if (depth === path.steps.length) {
      matches.push({ value: current, at: format(at) })
      return
    }
    const step = path.steps[depth]!
    const it = at.length === 0 ? "it" : format(at)
    const target = format([...at, step])
    /** "<what> has no <target>: <it> <problem>" */
    const miss = (absent: boolean, problem: string) => {
      misses.push({ at: target, absent, reason: `${what} has no ${target}: ${it} ${problem}` })
    }
    if (current === null) return miss(true, "is null")
    switch (step._tag) {
      case "Key": {
        if (isRecord(current)) {
          if (Object.hasOwn(current, step.name)) return walk(current[step.name], depth + 1, [...at, step])
          return miss(true, `has ${keyList(current)}`)
        }
        return miss(
          false,
          `is ${describeValue(current)}, not an object${
            Array.isArray(current) ? " (use [0] or [*] for its items)" : ""
          }`
        )
      }
      case "Index": {
        if (Array.isArray(current)) {
          const i = step.index < 0 ? current.length + step.index : step.index
          if (i >= 0 && i < current.length) return walk(current[i], depth + 1, [...at, { _tag: "Index", index: i }])
          return miss(true, `is ${describeValue(current)}`)
        }
        return miss(
          false,
          `is ${describeValue(current)}, not a list${isRecord(current) ? ` (it has ${keyList(current)})` : ""}`
        )
      }
      case "Wildcard": {
        if (Array.isArray(current)) {
          current.forEach((item, i) => walk(item, depth + 1, [...at, { _tag: "Index", index: i }]))
          return
        }
        if (isRecord(current)) {
          for (const [key, item] of Object.entries(current)) walk(item, depth + 1, [...at, { _tag: "Key", name: key }])
          return
        }
        return miss(false, `is ${describeValue(current)}, not a list or an object`)
      }
    }
  }
  walk(value, 0, [])
  return { matches, misses }
}

/** The one value at a path without wildcards, or why there is none. */
export const readOne = (path: JsonPath, value: unknown, what = "the response"): Either.Either<unknown, Miss> => {
  const { matches, misses } = select(path, value, what)
  if (matches.length === 1 && !path.many) return Either.right(matches[0]!.value)
  if (misses.length > 0) return Either.left(misses[0]!)
  return Either.left({
    at: path.text,
    absent: matches.length === 0,
    reason: matches.length === 0
      ? `${what} has nothing at ${path.text}`
      : `${path.text} selects ${matches.length} values in ${what}; it must select one`
  })
}
