import { describe, expect, it } from "vitest"
import { csvField, csvLine } from "../../src/report/Csv.js"

describe("CSV output (RFC 4180)", () => {
  it("quotes only fields that need it and doubles quotes", () => {
    expect(csvField("plain")).toBe("plain")
    expect(csvField("a,b")).toBe("\"a,b\"")
    expect(csvField("say \"hi\"")).toBe("\"say \"\"hi\"\"\"")
    expect(csvField("two\nlines")).toBe("\"two\nlines\"")
    expect(csvLine(["a", "b,c", ""])).toBe("a,\"b,c\",\r\n")
  })
})
