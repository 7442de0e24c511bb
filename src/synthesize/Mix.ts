/**
 * Question types, the mix of them a test set asks for (`--mix`), and personas (`--personas FILE`).
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, UsageError } from "../domain/Errors.js"

export const QUESTION_TYPES = [
  "single-hop",
  "multi-hop",
  "comparison",
  "procedure",
  "unanswerable",
  "conversational"
] as const
export type QuestionType = (typeof QUESTION_TYPES)[number]

/** What each type is, for help and reports. */
export const TYPE_WORDS: Readonly<Record<QuestionType, string>> = {
  "single-hop": "a fact one passage states",
  "multi-hop": "needs two related passages together",
  comparison: "compares two things the passages describe",
  procedure: "how to do something the passage explains step by step",
  unanswerable: "a plausible question the documents do not answer; the reference is an abstention",
  conversational: "a follow-up that needs a short conversation before it (rag-answers' history format)"
}

/** Passages a candidate of the type is written from. */
export const passagesOf = (type: QuestionType): 1 | 2 => type === "multi-hop" || type === "comparison" ? 2 : 1

/** The default mix with an LLM generator (shares of the set). */
export const DEFAULT_MIX: Readonly<Record<QuestionType, number>> = {
  "single-hop": 0.35,
  "multi-hop": 0.2,
  comparison: 0.1,
  procedure: 0.1,
  unanswerable: 0.15,
  conversational: 0.1
}

/** The default mix with the offline generator. */
export const DEFAULT_HEURISTIC_MIX: Readonly<Record<QuestionType, number>> = {
  "single-hop": 0.6,
  "multi-hop": 0.15,
  comparison: 0,
  procedure: 0.05,
  unanswerable: 0.1,
  conversational: 0.1
}

export type Mix = Readonly<Record<QuestionType, number>>

export const mixText = (mix: Mix): string =>
  QUESTION_TYPES.filter((t) => mix[t] > 0).map((t) => `${t}=${Math.round(mix[t] * 100)}%`).join(", ")

/**
 * `--mix single-hop=50,multi-hop=30,unanswerable=20` (weights, normalised to shares; a type left out
 * gets none), or a single type name (`--mix procedure`).
 */
export const parseMix = (text: string, heuristic: boolean): Effect.Effect<Mix, UsageError> =>
  Effect.gen(function*() {
    const mix: Record<QuestionType, number> = Object.fromEntries(QUESTION_TYPES.map((t) => [t, 0])) as Record<
      QuestionType,
      number
    >
    const bad = (problem: string) => new UsageError({ problem: `--mix: ${problem}` })
    for (const part of text.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
      const [name, weight] = part.includes("=") ? part.split("=", 2).map((s) => s.trim()) : [part, "1"]
      if (!(QUESTION_TYPES as ReadonlyArray<string>).includes(name!)) {
        return yield* bad(`unknown question type "${name}" (types: ${QUESTION_TYPES.join(", ")})`)
      }
      const w = Number(weight!.replace(/%$/, ""))
      if (!Number.isFinite(w) || w < 0) {
        return yield* bad(`the weight of ${name} must be a number ≥ 0 (got "${weight}")`)
      }
      mix[name as QuestionType] = w
    }
    const total = QUESTION_TYPES.reduce((s, t) => s + mix[t], 0)
    if (total <= 0) return yield* bad(`give at least one type with a weight > 0, e.g. single-hop=60,multi-hop=40`)
    if (heuristic && mix.comparison > 0) {
      return yield* bad(
        "the offline (heuristic) generator cannot write comparison questions: choose an LLM --provider, or leave comparison out"
      )
    }
    for (const t of QUESTION_TYPES) mix[t] = mix[t] / total
    return mix
  })

/**
 * Items per type for a set of `size`: the largest-remainder split of `size` by the mix, so the
 * counts add up to `size` exactly (ties go to the type listed first).
 */
export const countsFor = (mix: Mix, size: number): Record<QuestionType, number> => {
  const exact = QUESTION_TYPES.map((t) => ({ t, x: mix[t] * size }))
  const counts = Object.fromEntries(exact.map(({ t, x }) => [t, Math.floor(x)])) as Record<QuestionType, number>
  let left = size - QUESTION_TYPES.reduce((s, t) => s + counts[t], 0)
  const byRemainder = [...exact].sort((a, b) => (b.x - Math.floor(b.x)) - (a.x - Math.floor(a.x)))
  for (const { t } of byRemainder) {
    if (left <= 0) break
    if (mix[t] <= 0) continue
    counts[t]++
    left--
  }
  return counts
}

/**
 * `--personas FILE`: who asks — `.json` (a list of texts, or of `{ "name", "description" }`) or a text
 * file (one persona a line). Each candidate is written for one of them, in turn (seeded).
 */
export const loadPersonas = (file: string): Effect.Effect<ReadonlyArray<string>, InputError> =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (e) =>
        new InputError({
          file,
          problem: (e as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : (e as Error).message
        })
    })
    let personas: Array<string>
    if (Path.extname(file).toLowerCase() === ".json") {
      const value = yield* Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (e) => new InputError({ file, problem: `not valid JSON: ${(e as Error).message}` })
      })
      if (!Array.isArray(value)) {
        return yield* new InputError({ file, problem: "expected a list of personas (texts, or { name, description })" })
      }
      personas = []
      for (const [i, p] of value.entries()) {
        if (typeof p === "string" && p.trim() !== "") personas.push(p.trim())
        else if (
          typeof p === "object" && p !== null && typeof (p as { name?: unknown }).name === "string"
        ) {
          const o = p as { name: string; description?: unknown }
          personas.push(
            typeof o.description === "string" && o.description.trim() !== ""
              ? `${o.name.trim()}: ${o.description.trim()}`
              : o.name.trim()
          )
        } else {
          return yield* new InputError({
            file,
            field: `[${i}]`,
            problem: "expected a persona: text, or { \"name\", \"description\" }"
          })
        }
      }
    } else {
      personas = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))
    }
    if (personas.length === 0) return yield* new InputError({ file, problem: "no personas in the file" })
    return personas
  })

/** Who asks when no personas are given. */
export const DEFAULT_PERSONA = "a user of these documents who wants a precise answer"
