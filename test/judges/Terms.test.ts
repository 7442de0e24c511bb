/**
 * The shared tokenisation (src/judges/Terms.ts): the sentence splitter against the rule it applies,
 * and the piece cache the claim extractor and checker share.
 */
import { describe, expect, it } from "@effect/vitest"
import { rememberTokens, SENTENCE_BREAK, splitSentences, tokensOf, tokensOfPiece } from "../../src/judges/Terms.js"
import { makePrng } from "../../src/stats/Paired.js"

const pieces = (xs: ReadonlyArray<string>) => xs.map((x) => x.trim()).filter((x) => x.length > 0)

describe("splitSentences", () => {
  const texts = [
    "The tower opened in 1889. It is 330 metres tall! Is it? Yes.",
    "Fruits, e.g. apples, contain fibre. The U.S. Army is large. Dr. Smith agrees.",
    "He said \"it works.\" Then he left (for good.) Next.",
    "Mr. and Mrs. Jones vs. the city: no. 5 of the list. No. That ends it.",
    "Smith et al. (2021) found it. Cf. Jones. Martin Luther King Jr. spoke. Done.",
    "A line\nanother line\n\n  indented. After a break",
    "e.g.\nfoo bar",
    "Rates rose 3.5 percent.  Two spaces after.\tA tab after.",
    "trailing space after the end. ",
    "",
    "  "
  ]
  it("gives the pieces of SENTENCE_BREAK (edges trimmed)", () => {
    for (const t of texts) expect(pieces(splitSentences(t)), JSON.stringify(t)).toEqual(pieces(t.split(SENTENCE_BREAK)))
  })
  it("does not cut after \"et al.\", \"cf.\", \"Jr.\"", () => {
    expect(pieces(splitSentences("Adapted by Min et al. (2021) for retrieval. Cf. Jones. King Jr. Day is in January.")))
      .toEqual([
        "Adapted by Min et al. (2021) for retrieval.",
        "Cf. Jones.",
        "King Jr. Day is in January."
      ])
  })
  it("cuts after . ! ? and closing quotes, not after abbreviations or inside numbers", () => {
    expect(
      pieces(splitSentences("He said \"it works.\" Then he left. Fruits, e.g. apples, cost 3.5 euros. Dr. Who won."))
    ).toEqual([
      "He said \"it works.\"",
      "Then he left.",
      "Fruits, e.g. apples, cost 3.5 euros.",
      "Dr. Who won."
    ])
  })
})

describe("tokensOfPiece", () => {
  it("is tokensOf, remembered: a piece tokenised by one module is found by another", () => {
    const lower = "freezer bags are thicker than storage bags"
    expect(tokensOfPiece(lower)).toEqual(tokensOf(lower))
    const remembered = tokensOf("hedging offsets losses")
    rememberTokens("hedging offsets losses", remembered)
    expect(tokensOfPiece("hedging offsets losses")).toBe(remembered)
  })
})

describe("splitSentences on generated text", () => {
  // Pieces that exercise every rule: final marks, closers, abbreviations, titles, every kind of white space.
  const parts = [
    "word",
    "Dr",
    "al",
    "e",
    "g",
    "U",
    "S",
    "no",
    "3",
    "5",
    ".",
    ".",
    "!",
    "?",
    "。",
    "\"",
    "'",
    "”",
    "’",
    ")",
    "]",
    " ",
    " ",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u00a0",
    "\u2028",
    "\u3000"
  ]
  it("gives the pieces of SENTENCE_BREAK on 2,000 random texts", () => {
    const random = makePrng(11)
    for (let k = 0; k < 2_000; k++) {
      let t = ""
      const n = random.nextInt(40)
      for (let i = 0; i < n; i++) t += parts[random.nextInt(parts.length)]
      expect(pieces(splitSentences(t)), JSON.stringify(t)).toEqual(pieces(t.split(SENTENCE_BREAK)))
    }
  })
})
