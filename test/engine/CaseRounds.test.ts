/**
 * `CaseRounds.walk` / `walkEffect`: the one rule every path walks a case's rounds by (the sync
 * path, replay, `--dry-run`, `--batch`'s frontier). A two-round stage: round 1 asks "a" and "b";
 * round 2 asks one "check" per judgment of round 1; then none.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { EvalCase } from "../../src/domain/Case.js"
import type { Judgment } from "../../src/domain/Judgment.js"
import { CaseRounds } from "../../src/engine/Judgments.js"
import type { JudgeSpec, JudgeStage } from "../../src/engine/Pipeline.js"

const spec = (target: string): JudgeSpec => ({ rubric: "r", target, vars: {} })
const stage: JudgeStage = {
  rubrics: ["r"],
  tasks: () => [spec("a"), spec("b")],
  next: (_c, earlier) =>
    earlier.some((j) => j.target.startsWith("check")) ? [] : earlier.map((j) => spec(`check:${j.target}`))
}
const c = { id: "c1", ordinal: 0 } as unknown as EvalCase
const judged = (s: JudgeSpec): ReadonlyArray<Judgment> => [{ target: "target" in s ? s.target : "?" } as Judgment]
const targets = (rounds: CaseRounds) => rounds.judgments().map((j) => j.target)

describe("CaseRounds.walk", () => {
  it("walks every round when every spec is judged, in order", () => {
    const rounds = new CaseRounds(stage, c)
    expect(rounds.walk(judged)).toEqual({ complete: true, walked: 4 })
    expect(targets(rounds)).toEqual(["a", "b", "check:a", "check:b"])
    expect(rounds.current()).toEqual([])
  })

  it("an unjudged spec ends the walk after its round: the round's other specs are still asked", () => {
    const asked: Array<string> = []
    const rounds = new CaseRounds(stage, c)
    const walked = rounds.walk((s) => {
      const t = "target" in s ? s.target : "?"
      asked.push(t)
      return t === "a" ? undefined : judged(s)
    })
    expect(walked).toEqual({ complete: false, walked: 2 })
    expect(asked).toEqual(["a", "b"])
    // The round is not advanced: its judgments are not kept, and it is still the round under way.
    expect(targets(rounds)).toEqual([])
    expect(rounds.current().map((s) => "target" in s && s.target)).toEqual(["a", "b"])
  })

  it("null stops at once", () => {
    const asked: Array<string> = []
    const rounds = new CaseRounds(stage, c)
    const walked = rounds.walk((s) => {
      asked.push("target" in s ? s.target : "?")
      return null
    })
    expect(walked.complete).toBe(false)
    expect(asked).toEqual(["a"])
  })

  it.effect("walkEffect follows the same rule", () =>
    Effect.gen(function*() {
      const all = new CaseRounds(stage, c)
      expect(yield* all.walkEffect((s) => Effect.succeed(judged(s)))).toEqual({ complete: true, walked: 4 })
      expect(targets(all)).toEqual(["a", "b", "check:a", "check:b"])
      const second = new CaseRounds(stage, c)
      const walked = yield* second.walkEffect((s) =>
        Effect.succeed("target" in s && s.target === "check:b" ? undefined : judged(s))
      )
      expect(walked).toEqual({ complete: false, walked: 4 })
      expect(targets(second)).toEqual(["a", "b"])
    }))
})
