import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { decodeJudgmentJson, decodePendingRepairJson, type Judgment } from "../../src/domain/Judgment.js"

const judgment: Judgment = {
  key: "k1",
  caseId: "c1",
  ordinal: 0,
  iteration: 1,
  criterion: "rag-answers/groundedness",
  target: "",
  status: "ok",
  score: 3,
  reason: "supported",
  usage: { inputTokens: 10, outputTokens: 2 },
  attempts: 1,
  latencyMs: 12,
  provider: "openai",
  model: "m"
}

describe("journal lines are decoded with their Schema", () => {
  it("a judgment's JSON decodes to the judgment; a damaged one to none", () => {
    expect(decodeJudgmentJson(JSON.stringify(judgment))).toEqual(Option.some(judgment))
    expect(Option.isNone(decodeJudgmentJson(JSON.stringify({ ...judgment, score: "3" })))).toBe(true)
    expect(Option.isNone(decodeJudgmentJson(JSON.stringify({ ...judgment, usage: undefined })))).toBe(true)
    expect(Option.isNone(decodeJudgmentJson("{\"key\":\"k1\",\"caseId\""))).toBe(true)
  })

  it("a reply awaiting repair decodes to what the judge continues from; a judgment line is not one", () => {
    const line = {
      key: "k1",
      kind: "attempt",
      text: "{oops",
      problem: "not JSON",
      usage: judgment.usage,
      asks: 2,
      attempts: 3
    }
    expect(decodePendingRepairJson(JSON.stringify(line))).toEqual({
      text: "{oops",
      problem: "not JSON",
      usage: judgment.usage,
      asks: 2,
      attempts: 3
    })
    expect(decodePendingRepairJson(JSON.stringify(judgment))).toBeUndefined()
    expect(decodePendingRepairJson(JSON.stringify({ ...line, asks: null }))).toBeUndefined()
  })
})
