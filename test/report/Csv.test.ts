import { describe, expect, it } from "vitest"
import { csvField, csvLine, csvMaybeNumber, csvNumber, neutralise } from "../../src/report/Csv.js"

describe("CSV output (RFC 4180)", () => {
  it("quotes only fields that need it and doubles quotes", () => {
    expect(csvField("plain")).toBe("plain")
    expect(csvField("a,b")).toBe("\"a,b\"")
    expect(csvField("say \"hi\"")).toBe("\"say \"\"hi\"\"\"")
    expect(csvField("two\nlines")).toBe("\"two\nlines\"")
    expect(csvLine(["a", "b,c", ""])).toBe("a,\"b,c\",\r\n")
  })
})

describe("CSV injection (OWASP): formula-like text cells are neutralised", () => {
  it("prefixes text cells starting with = + - @ tab or CR with a quote, and nothing else", () => {
    expect(csvLine(["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", "a=1", " =1", "'quoted", ""])).toBe(
      "'=1+1,'+1,'-1,'@SUM(A1),'\t=1,\"'\r=1\",a=1, =1,'quoted,\r\n"
    )
    expect(neutralise("=HYPERLINK(\"http://x\")")).toBe("'=HYPERLINK(\"http://x\")")
  })

  it("numbers the tool computed are written as they are, negative ones too", () => {
    expect(
      csvLine([
        csvNumber(-0.5),
        csvNumber(0.123456, 4),
        csvNumber(-2, 1),
        csvMaybeNumber(null),
        csvNumber(Number.NaN),
        "-0.5"
      ])
    ).toBe(
      "-0.5,0.1235,-2.0,,,'-0.5\r\n"
    )
  })

  it("raw: cells are written as they came", () => {
    expect(csvLine(["=1+1", "-x", csvNumber(-1)], { raw: true })).toBe("=1+1,-x,-1\r\n")
  })
})
