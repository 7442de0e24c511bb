import { describe, expect, it } from "@effect/vitest"
import { splitFragments, unescapeNewlines } from "../../src/load/Fragments.js"

describe("splitFragments", () => {
  it("splits numbered fragments on real newlines and strips the numbering", () => {
    expect(splitFragments("1. First fact.\n2. Second fact.\n3. Third fact.")).toEqual([
      "First fact.",
      "Second fact.",
      "Third fact."
    ])
  })

  it("splits on the two characters backslash-n, and on CRLF in both forms", () => {
    expect(splitFragments("1. One.\\n2. Two.\\n3. Three.")).toEqual(["One.", "Two.", "Three."])
    expect(splitFragments("1. One.\r\n2. Two.")).toEqual(["One.", "Two."])
    expect(splitFragments("1. One.\\r\\n2. Two.")).toEqual(["One.", "Two."])
  })

  it("keeps numbers inside fragments and at their start when they are not list markers", () => {
    expect(
      splitFragments(
        "1. GDP grew by 3.5 million.\\n2. 3.5 million jobs were created.\\n3. 6CO₂ + 6H₂O → C₆H₁₂O₆ + 6O₂."
      )
    ).toEqual([
      "GDP grew by 3.5 million.",
      "3.5 million jobs were created.",
      "6CO₂ + 6H₂O → C₆H₁₂O₆ + 6O₂."
    ])
    expect(splitFragments("1. Adopted in 1776.\n2. 2025 - 1776 = 249.")).toEqual([
      "Adopted in 1776.",
      "2025 - 1776 = 249."
    ])
  })

  it("only splits at line breaks: list-like text within a line stays in one fragment", () => {
    expect(splitFragments("1. A, see 2. below. 3. more")).toEqual(["A, see 2. below. 3. more"])
  })

  it("accepts N) markers, extra spaces, blank lines and trims", () => {
    expect(splitFragments("  1)  Alpha  \n\n 2.Beta\n\n")).toEqual(["Alpha", "Beta"])
  })

  it("joins unnumbered continuation lines to the fragment before", () => {
    expect(splitFragments("Sources:\n1. Alpha\ncontinued here\n2. Beta")).toEqual([
      "Sources:",
      "Alpha\ncontinued here",
      "Beta"
    ])
  })

  it("without numbering: one fragment per line, or a single fragment", () => {
    expect(splitFragments("Alpha.\\nBeta.\n\nGamma.")).toEqual(["Alpha.", "Beta.", "Gamma."])
    expect(splitFragments("Just one passage, 3.5 million words.")).toEqual(["Just one passage, 3.5 million words."])
    expect(splitFragments("1. Only one numbered fragment.")).toEqual(["Only one numbered fragment."])
  })

  it("empty text has no fragments", () => {
    expect(splitFragments("")).toEqual([])
    expect(splitFragments(" \\n \n")).toEqual([])
  })
})

describe("unescapeNewlines", () => {
  it("turns \\n and \\r\\n escapes into newlines and leaves the rest", () => {
    expect(unescapeNewlines("User: hi\\nAssistant: hello\\r\\nUser: ok")).toBe("User: hi\nAssistant: hello\nUser: ok")
    expect(unescapeNewlines("a\nb \\t c")).toBe("a\nb \\t c")
  })
})
