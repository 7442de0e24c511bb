import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { CaseIds } from "../../src/engine/CaseIds.js"
import type { Pipeline } from "../../src/engine/Pipeline.js"
import { HeuristicJudge } from "../../src/index.js"
import { loadPipelineModule, runWith, tempDir } from "../support/RunPipeline.js"

describe("CaseIds", () => {
  it("finds a repeated id, whichever kind came first", () => {
    const ids = new CaseIds()
    expect(ids.add("a", 0, 2)).toBeUndefined()
    expect(ids.add("2", 1, 3)).toBeUndefined() // its row's number
    expect(ids.add("7", 2, 4)).toBeUndefined() // a number, not its row's
    expect(ids.add("a", 3, 9)).toEqual({ line: 2 })
    expect(ids.add("2", 4, 10)).toEqual({ ordinal: 1 })
    expect(ids.add("7", 6, 12)).toEqual({ line: 4 }) // its row's number now, but "7" was taken
    expect(ids.add("02", 7, 13)).toBeUndefined() // not the number 2 written canonically: another id
    expect(ids.add("8", 7, 14)).toBeUndefined()
  })

  it("keeps nothing per case for ids that are their row numbers", () => {
    const ids = new CaseIds()
    let duplicates = 0
    for (let o = 0; o < 200_000; o++) if (ids.add(String(o + 1), o, o + 2) !== undefined) duplicates++
    expect(duplicates).toBe(0)
    expect(ids.add("150000", 200_000, 200_002)).toEqual({ ordinal: 149_999 })
    expect((ids as unknown as { others: Map<string, number> }).others.size).toBe(0)
  })
})

describe("a run refuses duplicate case ids before judging", () => {
  const run = (rows: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const dir = tempDir()
      const input = Path.join(dir, "in.csv")
      fs.writeFileSync(
        input,
        ["id,Current User Question,Conversation History,Fragment Texts,Assistant Answer", ...rows].join("\n")
      )
      const pipeline = (yield* Effect.promise(() => loadPipelineModule("rag-answers"))) as Pipeline<unknown, unknown>
      return yield* Effect.flip(
        runWith(pipeline, HeuristicJudge.layer, { input, outRoot: Path.join(dir, "out"), columns: { id: "id" } })
      )
    })

  it.effect("names the line of both cases, also when a multi-line field shifts the lines", () =>
    Effect.gen(function*() {
      const error = yield* run(["x,\"Q1\nsecond line?\",,1. a,A", "2,Q2?,,1. b,A", "y,Q3?,,1. c,A", "2,Q4?,,1. d,A"])
      expect(error).toMatchObject({
        _tag: "InputError",
        line: 6,
        field: "id",
        problem: "duplicate case id \"2\" (first on line 4)"
      })
      const other = yield* run(["x,Q1?,,1. a,A", "y,Q2?,,1. b,A", "x,Q3?,,1. c,A"])
      expect(other).toMatchObject({ _tag: "InputError", line: 4, problem: "duplicate case id \"x\" (first on line 2)" })
    }))
})
