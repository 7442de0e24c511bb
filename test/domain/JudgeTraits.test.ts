import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { heuristicTraits, llmTraits, traitsOfProvider } from "../../src/domain/JudgeTraits.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { PROVIDERS } from "../../src/providers/Names.js"

describe("JudgeTraits", () => {
  it.effect("a recorded provider name gives the traits its judge declares", () =>
    Effect.gen(function*() {
      const heuristic = yield* HeuristicJudge.make
      expect(traitsOfProvider(heuristic.provider)).toEqual(heuristic.traits)
      expect(heuristic.traits).toBe(heuristicTraits)
      // Every other provider is an LLM judge over an API (LlmJudge declares llmTraits; LlmJudge.test.ts).
      for (const provider of PROVIDERS.filter((p) => p !== heuristic.provider)) {
        expect(traitsOfProvider(provider)).toEqual(llmTraits)
      }
    }))

  it("the heuristic judge is the local, deterministic, lexical one; an LLM judge is none of these", () => {
    expect(heuristicTraits).toEqual({ runsLocally: true, deterministic: true, languageModel: false })
    expect(llmTraits).toEqual({ runsLocally: false, deterministic: false, languageModel: true })
    // A provider this version does not know (a run recorded by a later one) is taken for an LLM judge.
    expect(traitsOfProvider("some-future-provider")).toEqual(llmTraits)
  })
})
