/**
 * Prompt-cache friendly layout of every shipped rubric: the static part (system text with the
 * rubric, its scale and the output instructions, then the user message's opening line) comes first
 * and is byte-identical for every case; the case data comes last. Providers discount input tokens
 * that repeat a cached prefix (OpenAI from 1,024 tokens, Mistral from 64), so anything that varies
 * per case ahead of the data — a count, a question — would forfeit the discount on the whole prompt.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import * as Path from "node:path"
import { defaultPromptsDir, parseRubric, render } from "../../src/judges/Prompt.js"

const VARIABLE = /\{\{\s*([A-Za-z_][\w-]*)\s*\}\}/g
/** Values the rubric itself supplies; everything else is case data. */
const STATIC = new Set(["scale", "criterion"])

const files = readdirSync(defaultPromptsDir, { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".json"))
  .sort()

const caseVars = (seed: string) => ({
  question: `question ${seed}?`,
  query: `query ${seed}`,
  history: `User: hi ${seed}`,
  passages: `[1] passage ${seed}`,
  passage: `passage ${seed}`,
  answer: `answer ${seed}`,
  context: `[1] course ${seed}`,
  course: `course ${seed}`,
  skill: `skill ${seed}`,
  source: "answer",
  text: `text ${seed}`,
  claim: `claim ${seed}`
})

const commonPrefix = (a: string, b: string) => {
  let i = 0
  while (i < a.length && i < b.length && a.charCodeAt(i) === b.charCodeAt(i)) i++
  return i
}

describe("prompt-cache friendly rubrics", () => {
  it("covers all twenty-three shipped rubrics", () => {
    expect(files.length).toBe(23)
  })

  for (const file of files) {
    describe(file, () => {
      const rubric = Effect.runSync(parseRubric(readFileSync(Path.join(defaultPromptsDir, file), "utf8"), file))
      const itemsFor = (seed: string, n: number) =>
        rubric.item === undefined ? undefined : Array.from({ length: n }, (_, i) => ({ ...caseVars(`${seed}-${i}`) }))

      it("the system text uses no case variable and holds the scale and the output instructions", () => {
        const used = [...rubric.system.join("\n").matchAll(VARIABLE)].map((m) => m[1]!)
        expect(used.filter((v) => !STATIC.has(v))).toEqual([])
        // A claims rubric has no scale: its output instruction is the claim list; an object rubric's, its fields.
        if (rubric.output === "claims") expect(rubric.system.join("\n")).toMatch(/"claims"/)
        else if (rubric.output === "object") expect(rubric.system.join("\n")).toMatch(/"question"/)
        else {
          expect(used).toContain("scale")
          expect(rubric.system.join("\n")).toMatch(/"score"/)
        }
      })

      it("the user text ends with the case data: nothing but data after its first case variable", () => {
        const user = rubric.user
        const first = user.findIndex((l) => [...l.matchAll(VARIABLE)].some((m) => !STATIC.has(m[1]!)))
        expect(first).toBeGreaterThan(0)
        // Before the first case variable: only static text (the opening line, headings).
        // After it: data blocks, their headings and {{items}}; the last line closes a block or is the items.
        expect(["</data>", "{{items}}"]).toContain(user.at(-1))
        expect(user.slice(first).join("\n")).not.toMatch(/\{\{\s*scale\s*\}\}|"score"|reasoning/)
      })

      it("two different cases render the same system text and the same user text up to the first data", () => {
        const a = render(rubric, caseVars("alpha"), itemsFor("alpha", 3))
        const b = render(rubric, caseVars("bravo"), itemsFor("bravo", 5))
        expect(b.system).toBe(a.system)
        const shared = commonPrefix(a.user, b.user)
        const firstData = a.user.indexOf("<data")
        expect(firstData).toBeGreaterThan(0)
        expect(shared).toBeGreaterThan(a.user.lastIndexOf("\n", firstData - 2))
        // The whole static part is most of the prompt for a short case.
        expect(a.system.length + shared).toBeGreaterThan(0.6 * (a.system.length + a.user.length))
      })
    })
  }
})
