import { describe, expect, it } from "vitest"
import { thousands } from "../../src/domain/Numbers.js"

describe("thousands", () => {
  it("writes numbers as toLocaleString(\"en-US\") does", () => {
    const values = [
      0,
      1,
      12,
      999,
      1000,
      1001,
      12_345,
      999_999,
      1_000_000,
      47_088,
      1_234_567_890,
      -1,
      -1234,
      -1_000_000,
      1234.5,
      0.125,
      1234.5678,
      -0.0001,
      -0,
      2 ** 40
    ]
    for (const n of values) expect(thousands(n), String(n)).toBe(n.toLocaleString("en-US"))
  })
})
