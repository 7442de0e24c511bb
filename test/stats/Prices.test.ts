import { describe, expect, it } from "vitest"
import { cost, priceFor } from "../../src/pricing/Prices.js"

describe("prices and cost", () => {
  it("built-in prices per million tokens", () => {
    expect(cost({ input: 1_000_000, output: 500_000 }, priceFor("openai", "gpt-4o-mini")).usd).toBeCloseTo(
      0.15 + 0.3,
      12
    )
  })
  it("local models cost 0; an unknown paid model is unknown, not 0", () => {
    expect(cost({ input: 10, output: 10 }, priceFor("ollama", "llama3.1:8b")).usd).toBe(0)
    expect(cost({ input: 10, output: 10 }, priceFor("heuristic", "lexical-v3")).usd).toBe(0)
    expect(cost({ input: 10, output: 10 }, priceFor("openai-compatible", "my-model")).usd).toBeNull()
  })
  it("a file overrides the table and flags override both", () => {
    const table = { "gpt-4o-mini": { input: 1, output: 2 } }
    expect(priceFor("openai", "gpt-4o-mini", { table })).toEqual({ input: 1, output: 2 })
    expect(priceFor("openai", "gpt-4o-mini", { table, flag: { output: 5 } })).toEqual({ input: 1, output: 5 })
    expect(priceFor("openai-compatible", "x", { flag: { input: 3 } })).toEqual({ input: 3, output: 0 })
  })
})
