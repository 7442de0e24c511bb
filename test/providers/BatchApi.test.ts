/**
 * The Batch API request lines (OpenAI and Mistral shapes), the prompt-cache key on the hosted APIs
 * only, and the batch / cached prices.
 */
import { Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { cost, priceFor, usdOf } from "../../src/pricing/Prices.js"
import * as BatchApi from "../../src/providers/BatchApi.js"
import { body } from "../../src/providers/OpenAiProvider.js"

const request = { system: "S", user: "U", schema: { name: "x", schema: { type: "object" } }, cacheKey: "rag-eval/r@1" }

describe("Batch API request lines", () => {
  it("OpenAI: method, url and the whole body; Mistral: the body without the model (the job names it)", () => {
    const b = body("openai", "gpt-4o-mini", { seed: 3 }, request) as unknown as Record<string, unknown>
    const openai = BatchApi.make({ flavour: "openai", baseURL: "http://x/v1", model: "gpt-4o-mini" })
    expect(JSON.parse(openai.requestLine("k1", b))).toEqual({
      custom_id: "k1",
      method: "POST",
      url: "/v1/chat/completions",
      body: b
    })
    const mistral = BatchApi.make({
      flavour: "mistral",
      baseURL: "http://x/v1",
      apiKey: Redacted.make("secret-key"),
      model: "mistral-small-latest"
    })
    const line = JSON.parse(
      mistral.requestLine(
        "k2",
        body("mistral", "mistral-small-latest", { seed: 3 }, request) as unknown as Record<string, unknown>
      )
    )
    expect(line.custom_id).toBe("k2")
    expect(line.body.model).toBeUndefined()
    expect(line.body.random_seed).toBe(3)
    expect(line.body.messages).toEqual([{ role: "system", content: "S" }, { role: "user", content: "U" }])
  })

  it("prompt_cache_key goes to OpenAI and Mistral only (a compatible server may refuse an unknown field)", () => {
    expect(body("openai", "m", {}, request).prompt_cache_key).toBe("rag-eval/r@1")
    expect(body("mistral", "m", {}, request).prompt_cache_key).toBe("rag-eval/r@1")
    expect(body("openai-compatible", "m", {}, request).prompt_cache_key).toBeUndefined()
    expect(body("ollama", "m", {}, request).prompt_cache_key).toBeUndefined()
  })
})

describe("batch and cached prices", () => {
  it("built-in OpenAI and Mistral models: the Batch API at half the list price; cached input as published", () => {
    expect(priceFor("openai", "gpt-4o-mini")).toEqual({
      input: 0.15,
      output: 0.6,
      batchInput: 0.075,
      batchOutput: 0.3,
      cachedInput: 0.075
    })
    expect(priceFor("mistral", "mistral-small-latest")).toMatchObject({
      batchInput: 0.05,
      batchOutput: 0.15,
      cachedInput: 0.01
    })
    // An unknown model priced by flags: no discount assumed.
    expect(priceFor("openai-compatible", "fake", { flag: { input: 2, output: 8 } })).toEqual({ input: 2, output: 8 })
    // A flag on a known model keeps the discounts' ratios.
    expect(priceFor("openai", "gpt-4o-mini", { flag: { input: 0.3 } })).toMatchObject({
      input: 0.3,
      batchInput: 0.15,
      cachedInput: 0.15,
      batchOutput: 0.3
    })
  })

  it("synchronous, batch and cached tokens each at their price; the saving against the list price", () => {
    const price = { input: 2, output: 8, batchInput: 1, batchOutput: 4, cachedInput: 0.5 }
    // 1M in (400k of it cached, 300k of those through a batch) / 1M out; 600k in and 500k out through batches.
    const tokens = {
      input: 1e6,
      output: 1e6,
      cachedInput: 4e5,
      batchInput: 6e5,
      batchOutput: 5e5,
      batchCachedInput: 3e5
    }
    // sync: 300k uncached × 2 + 100k cached × 0.5 + 500k out × 8; batch: 300k × 1 + 300k cached × 0.25 + 500k out × 4
    expect(usdOf(tokens, price)).toBeCloseTo(0.6 + 0.05 + 4 + 0.3 + 0.075 + 2, 12)
    const c = cost(tokens, price)
    expect(c.listUsd).toBeCloseTo(10, 12)
    expect(c.savingUsd).toBeCloseTo(10 - 7.025, 12)
    expect(cost({ input: 10, output: 10 }, price)).toEqual({ inputTokens: 10, outputTokens: 10, usd: 0.0001, price })
  })
})
