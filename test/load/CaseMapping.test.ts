import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { UsageError } from "../../src/domain/Errors.js"
import {
  applyColumnMapping,
  checkColumns,
  parseColumnMapping,
  ragAnswersColumns,
  toCase
} from "../../src/load/CaseMapping.js"
import type { Row } from "../../src/load/Rows.js"

const row = (values: Record<string, unknown>, line = 2): Row => ({ line, values })

describe("checkColumns", () => {
  it.effect("passes when every mapped column is there", () =>
    checkColumns("in.csv", Object.values(ragAnswersColumns).concat(["Extra"]), ragAnswersColumns))

  it.effect("lists the missing and the available columns; an optional column of the defaults is not missing", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        checkColumns("in.csv", ["Current User Question", "Fragments", "Answer"], ragAnswersColumns)
      )
      expect(error.file).toBe("in.csv")
      // "Conversation History" is absent too, but optional.
      expect(error.problem).toBe(
        "missing columns \"Assistant Answer\", \"Fragment Texts\"; " +
          "available: \"Current User Question\", \"Fragments\", \"Answer\""
      )
      yield* checkColumns("in.csv", ["Current User Question", "Fragment Texts", "Assistant Answer"], ragAnswersColumns)
      // Named by the user, a history column must be there.
      const named = yield* Effect.flip(
        checkColumns("in.csv", ["Current User Question", "Fragment Texts", "Assistant Answer"], {
          ...ragAnswersColumns,
          history: "Chat"
        })
      )
      expect(named.problem).toContain(`missing column "Chat"`)
    }))
})

describe("toCase", () => {
  it.effect("builds a case from a rag-answers row", () =>
    Effect.gen(function*() {
      const values = {
        "Current User Question": " What is X? ",
        "Conversation History": "User: hi\\nAssistant: hello",
        "Fragment Texts": "1. X is 3.5 units.\\n2. X is blue.",
        "Assistant Answer": "X is a blue thing."
      }
      const evalCase = yield* toCase(row(values, 7), 4, ragAnswersColumns, "in.csv")
      expect(evalCase).toEqual({
        id: "5",
        ordinal: 4,
        line: 7,
        question: "What is X?",
        answer: "X is a blue thing.",
        history: "User: hi\nAssistant: hello",
        passages: [
          { id: "1", rank: 1, text: "X is 3.5 units." },
          { id: "2", rank: 2, text: "X is blue." }
        ],
        source: values
      })
    }))

  it.effect("takes the id from the id column when present, empty history is absent", () =>
    Effect.gen(function*() {
      const mapping = { ...ragAnswersColumns, id: "ID" }
      const base = {
        "Current User Question": "q",
        "Conversation History": "",
        "Fragment Texts": "",
        "Assistant Answer": "a"
      }
      const withId = yield* toCase(row({ ...base, ID: "case-9" }), 0, mapping, "in.csv")
      expect(withId.id).toBe("case-9")
      expect(withId.history).toBeUndefined()
      expect(withId.passages).toEqual([])
      const withoutId = yield* toCase(row({ ...base, ID: "" }), 2, mapping, "in.csv")
      expect(withoutId.id).toBe("3")
    }))

  it.effect("an empty question names the line and field", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        toCase(row({ "Current User Question": "  " }, 12), 0, ragAnswersColumns, "in.csv")
      )
      expect(error).toMatchObject({
        file: "in.csv",
        line: 12,
        field: "Current User Question",
        problem: "the question is empty"
      })
    }))

  it.effect("JSON values: numeric ids, passage lists, non-text questions rejected", () =>
    Effect.gen(function*() {
      const mapping = { question: "question", answer: "answer", fragments: "context", id: "queryLogId" }
      const evalCase = yield* toCase(
        row({ queryLogId: 42, question: "q", answer: "a", context: [{ name: "Course", text: "About it" }, "plain"] }),
        0,
        mapping,
        "in.json"
      )
      expect(evalCase.id).toBe("42")
      expect(evalCase.passages).toEqual([
        { id: "1", rank: 1, text: "About it", fields: { name: "Course", text: "About it" } },
        { id: "2", rank: 2, text: "plain" }
      ])
      const error = yield* Effect.flip(toCase(row({ question: { text: "q" } }, 3), 0, mapping, "in.json"))
      expect(error).toMatchObject({ line: 3, field: "question", problem: "expected text, found an object" })
      const badContext = yield* Effect.flip(toCase(row({ question: "q", context: 5 }, 4), 0, mapping, "in.json"))
      expect(badContext).toMatchObject({
        line: 4,
        field: "context",
        problem: "expected text or a list of passages, found a number"
      })
    }))
})

describe("parseColumnMapping", () => {
  it.effect("parses role=Column pairs, quoted names and unmapping", () =>
    Effect.gen(function*() {
      expect(yield* parseColumnMapping("question=Q,answer=A")).toEqual({ question: "Q", answer: "A" })
      expect(yield* parseColumnMapping(" fragments = \"Texts, retrieved\" , id=Row ID ")).toEqual({
        fragments: "Texts, retrieved",
        id: "Row ID"
      })
      const unmapped = yield* parseColumnMapping("history=")
      expect(unmapped).toEqual({ history: undefined })
      expect(applyColumnMapping(ragAnswersColumns, unmapped)).toEqual({
        question: "Current User Question",
        fragments: "Fragment Texts",
        answer: "Assistant Answer",
        history: undefined,
        optional: ["Conversation History"]
      })
      expect(applyColumnMapping(ragAnswersColumns, { question: "Q" }).question).toBe("Q")
      expect(yield* parseColumnMapping("")).toEqual({})
    }))

  it.effect("rejects unknown roles, missing '=', duplicates and an empty question", () =>
    Effect.gen(function*() {
      const unknown = yield* Effect.flip(parseColumnMapping("question=Q,context=C"))
      expect(unknown).toBeInstanceOf(UsageError)
      expect(unknown.problem).toBe(
        "column mapping: unknown role \"context\"; expected one of question, answer, history, fragments, id, reference, nuggets (contexts = fragments)"
      )
      expect((yield* Effect.flip(parseColumnMapping("question"))).problem).toContain("expected role=Column")
      expect((yield* Effect.flip(parseColumnMapping("id=a,id=b"))).problem).toContain("id is given twice")
      expect((yield* Effect.flip(parseColumnMapping("question="))).problem).toContain("question column cannot be empty")
      expect((yield* Effect.flip(parseColumnMapping("answer=\"A"))).problem).toContain("unbalanced quote")
    }))
})
