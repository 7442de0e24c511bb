import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { CaseMetrics } from "../../src/domain/RunFiles.js"

describe("CaseMetrics", () => {
  // The engine writes case-metrics lines as the typed value's JSON (Runner.ts, `caseLine`): right
  // only while the Schema's encoder changes nothing. A transformation added to it fails here.
  it("encodes a value as it is", () => {
    const value: CaseMetrics = {
      caseId: "c1",
      line: 3,
      iteration: 2,
      metrics: { precision: 0.5, recall: null, f1: 0, unsupportedClaims: 3 },
      failed: false
    }
    const encoded = Schema.encodeSync(CaseMetrics)(value)
    expect(JSON.stringify(encoded)).toBe(JSON.stringify(value))
    expect(Schema.decodeUnknownSync(CaseMetrics)(JSON.parse(JSON.stringify(value)))).toEqual(value)
  })
})
