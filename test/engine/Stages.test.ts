import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { loadRows } from "../../src/engine/Stages.js"
import { ragAnswersColumns } from "../../src/load/CaseMapping.js"

const csv = (rows: ReadonlyArray<string>) => {
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-stages-"))
  const path = Path.join(dir, "in.csv")
  fs.writeFileSync(
    path,
    ["Current User Question,Conversation History,Fragment Texts,Assistant Answer", ...rows].join("\n")
  )
  return path
}

describe("loadRows", () => {
  const stage = loadRows({ columns: ragAnswersColumns })

  it.effect("maps every row to a case, numbering ids and ordinals across reads", () =>
    Effect.gen(function*() {
      // Enough rows for several 64 KiB reads.
      const rows = Array.from(
        { length: 3000 },
        (_, i) => `"Question ${i} ${"x".repeat(40)}?",,"1. a\\n2. b",Answer ${i}`
      )
      const cases = Chunk.toArray(yield* Stream.runCollect(stage.cases({ file: csv(rows) })))
      expect(cases).toHaveLength(3000)
      expect(cases.map((c) => c.ordinal)).toEqual(Array.from({ length: 3000 }, (_, i) => i))
      expect(cases[2999]).toMatchObject({ id: "3000", line: 3001, answer: "Answer 2999" })
      expect(cases[0]!.passages.map((p) => p.text)).toEqual(["a", "b"])
    }))

  it.effect("a bad row fails the stream after the cases before it, naming its line", () =>
    Effect.gen(function*() {
      const path = csv(["Q1?,,1. a,A1", "Q2?,,1. b,A2", "  ,,1. c,A3", "Q4?,,1. d,A4"])
      const seen: Array<string> = []
      const error = yield* Effect.flip(
        Stream.runForEach(stage.cases({ file: path }), (c) => Effect.sync(() => seen.push(c.id)))
      )
      expect(seen).toEqual(["1", "2"])
      expect(error).toMatchObject({ _tag: "InputError", line: 4, field: "Current User Question" })
    }))

  it.effect("a bad row beyond what is taken (--limit) is never reached", () =>
    Effect.gen(function*() {
      const path = csv(["Q1?,,1. a,A1", "Q2?,,1. b,A2", "  ,,1. c,A3"])
      const cases = Chunk.toArray(yield* Stream.runCollect(Stream.take(stage.cases({ file: path }), 2)))
      expect(cases.map((c) => c.id)).toEqual(["1", "2"])
    }))

  it.effect("a bad first row fails at once", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Stream.runCollect(stage.cases({ file: csv([" ,,1. a,A1", "Q2?,,1. b,A2"]) })))
      expect(error).toMatchObject({ _tag: "InputError", line: 2 })
    }))
})
