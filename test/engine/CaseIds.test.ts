import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { EvalCase } from "../../src/domain/Case.js"
import { CaseIds } from "../../src/engine/CaseIds.js"
import type { Pipeline } from "../../src/engine/Pipeline.js"
import { firstWithId } from "../../src/engine/Validate.js"
import { HeuristicJudge } from "../../src/index.js"
import { loadPipelineModule, runWith, tempDir } from "../support/RunPipeline.js"

describe("CaseIds", () => {
  it("finds a repeated id, whichever kind came first", () => {
    const ids = new CaseIds()
    expect(ids.add("a", 0)).toBeUndefined()
    expect(ids.add("2", 1)).toBeUndefined() // its row's number
    expect(ids.add("7", 2)).toBeUndefined() // a number, not its row's
    expect(ids.add("a", 3)).toEqual({ suspect: true })
    expect(ids.add("2", 4)).toEqual({ ordinal: 1 })
    expect(ids.add("7", 6)).toEqual({ suspect: true }) // its row's number now, but "7" was taken
    expect(ids.add("02", 7)).toBeUndefined() // not the number 2 written canonically: another id
    expect(ids.add("8", 7)).toBeUndefined()
  })

  it("learns the prefix of numbered ids from the first one", () => {
    const ids = new CaseIds()
    expect(ids.add("x", 0)).toBeUndefined()
    expect(ids.add("case-2", 1)).toBeUndefined() // numbered after "case-"
    expect(ids.add("2", 2)).toBeUndefined() // another prefix: an id like any other
    expect(ids.add("case-9", 3)).toBeUndefined() // the prefix, not its row's number
    expect(ids.add("case-2", 4)).toEqual({ ordinal: 1 })
    expect(ids.add("case-02", 5)).toBeUndefined()
    expect(ids.add("case-9", 8)).toEqual({ suspect: true }) // its row's number now, but taken
    expect(ids.add("2", 9)).toEqual({ suspect: true })
    expect(ids.hashed).toBe(4) // "x", "2", "case-9", "case-02"
  })

  it("keeps nothing per case for ids that are their row numbers after a prefix", () => {
    for (const prefix of ["", "c", "q-"]) {
      const ids = new CaseIds()
      let duplicates = 0
      for (let o = 0; o < 200_000; o++) if (ids.add(`${prefix}${o + 1}`, o) !== undefined) duplicates++
      expect(duplicates).toBe(0)
      expect(ids.add(`${prefix}150000`, 200_000)).toEqual({ ordinal: 149_999 })
      expect(ids.hashed).toBe(0)
    }
  })

  it("holds other ids as hashes and finds every repeat among 300,000 of them", () => {
    const ids = new CaseIds()
    const id = (n: number) => `doc-${(n * 2654435761 % 4294967296).toString(36)}-${n % 97}`
    let flagged = 0
    for (let o = 0; o < 300_000; o++) if (ids.add(id(o), o) !== undefined) flagged++
    // A flag on a new id would be a 64-bit collision: re-reading the input then clears it.
    expect(flagged).toBe(0)
    expect(ids.hashed).toBe(300_000)
    for (const n of [0, 1, 77_777, 299_999]) expect(ids.add(id(n), 300_000 + n)).toEqual({ suspect: true })
  })
})

describe("firstWithId", () => {
  const caseAt = (id: string, ordinal: number) => ({ id, ordinal, line: ordinal + 2 }) as unknown as EvalCase
  const input = ["a", "b", "c", "b", "d"].map(caseAt)
  const cases = Stream.fromIterable(input)

  it.effect("tells a repeated id from two ids that share a hash", () =>
    Effect.gen(function*() {
      // Every id hashes alike: each one after the first is a suspect.
      const ids = new CaseIds((_s, out) => {
        out[0] = 7
        out[1] = 7
      })
      const found: Array<Option.Option<number>> = []
      for (const c of input) {
        const earlier = ids.add(c.id, c.ordinal)
        found.push(earlier === undefined ? Option.none() : yield* firstWithId(cases, c, earlier))
      }
      // Only the second "b" has an earlier case with its id (line 3); the collisions are not duplicates.
      expect(found).toEqual([Option.none(), Option.none(), Option.none(), Option.some(3), Option.none()])
    }))

  it.effect("finds the first case of a numbered id by its position", () =>
    Effect.gen(function*() {
      const numbered = ["r1", "r2", "r3", "r2"].map(caseAt)
      const ids = new CaseIds()
      for (const c of numbered.slice(0, 3)) expect(ids.add(c.id, c.ordinal)).toBeUndefined()
      const earlier = ids.add("r2", 3)
      expect(earlier).toEqual({ ordinal: 1 })
      expect(yield* firstWithId(Stream.fromIterable(numbered), numbered[3]!, earlier!)).toEqual(Option.some(3))
    }))
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
      // Ids with a prefix before their row's number ("c1", "c2", …), one of them repeated out of place.
      const prefixed = yield* run(["c1,Q1?,,1. a,A", "c2,Q2?,,1. b,A", "c3,Q3?,,1. c,A", "c2,Q4?,,1. d,A"])
      expect(prefixed).toMatchObject({ line: 5, problem: "duplicate case id \"c2\" (first on line 3)" })
    }))
})
