/**
 * The heuristic claim extractor (src/judges/claims/Extract.ts): sentences and clauses as claims.
 */
import { describe, expect, it } from "@effect/vitest"
import { extractClaims } from "../../../src/judges/claims/Extract.js"
import { rememberedTokens, rememberTokens, splitSentences, tokensOf } from "../../../src/judges/Terms.js"

describe("extractClaims", () => {
  it("a one-sentence answer is one claim", () => {
    expect(extractClaims("Canberra is the capital of Australia.")).toEqual(["Canberra is the capital of Australia."])
    expect(extractClaims("A wise man who lives according to reason")).toEqual([
      "A wise man who lives according to reason"
    ])
  })

  it("removes citation markers: [1], [2, 3], [1-3], [1][2]", () => {
    expect(extractClaims("The tower opened in 1889 [1]. It is 330 metres tall [2, 3].")).toEqual([
      "The tower opened in 1889.",
      "It is 330 metres tall."
    ])
    expect(extractClaims("Paris hosted the fair [1-3][4].")).toEqual(["Paris hosted the fair."])
  })

  it("does not cut after abbreviations such as e.g., i.e., U.S. or Dr., nor inside decimal numbers", () => {
    expect(
      extractClaims(
        "Many fruits, e.g. apples and pears, contain fibre. Dr. Smith measured 3.5 grams per apple in the U.S. market."
      )
    ).toEqual([
      "Many fruits, e.g. apples and pears, contain fibre.",
      "Dr. Smith measured 3.5 grams per apple in the U.S. market."
    ])
    expect(extractClaims("Inflation reached 2.75 percent in 2023.")).toEqual([
      "Inflation reached 2.75 percent in 2023."
    ])
  })

  it("a sentence that ends inside quotes or brackets still ends there", () => {
    expect(extractClaims("He called it \"a city girl playing finger cymbals.\" The girl was the folk singer Jean Ray."))
      .toEqual([
        "He called it \"a city girl playing finger cymbals.\"",
        "The girl was the folk singer Jean Ray."
      ])
  })

  it("a piece that starts in lower case continues the sentence before it (\"etc. and\")", () => {
    expect(extractClaims("Farms grow wheat, oats etc. for sale.")).toEqual(["Farms grow wheat, oats etc. for sale."])
    expect(extractClaims("Farms grow wheat, barley, oats etc. and sell them at markets in town.", { clauses: false }))
      .toEqual([
        "Farms grow wheat, barley, oats etc. and sell them at markets in town."
      ])
  })

  it("cuts a sentence into clauses at ';', commas and conjunctions when each side keeps three content terms", () => {
    expect(extractClaims("Freezer bags use thicker plastic film; storage bags use thinner plastic film.")).toEqual([
      "Freezer bags use thicker plastic film",
      "storage bags use thinner plastic film."
    ])
    expect(extractClaims("La Niña cools the eastern Pacific surface and shifts tropical cyclone formation westward."))
      .toEqual([
        "La Niña cools the eastern Pacific surface",
        "and shifts tropical cyclone formation westward."
      ])
  })

  it("does not cut before \"and\" or \"or\" joining two figures of one quantity", () => {
    expect(extractClaims("Sunlight takes about 8 minutes and 20 seconds to reach Earth.")).toEqual([
      "Sunlight takes about 8 minutes and 20 seconds to reach Earth."
    ])
    expect(extractClaims("Adult cats usually sleep between 12 and 16 hours every single day.")).toEqual([
      "Adult cats usually sleep between 12 and 16 hours every single day."
    ])
  })

  it("keeps short sides with their neighbour: a list of nouns stays one claim", () => {
    expect(extractClaims("The kit includes gloves, goggles and a lab coat.")).toEqual([
      "The kit includes gloves, goggles and a lab coat."
    ])
  })

  it("an attribution (\"According to X,\") is cut like any clause (keeping it with the next moved no set: docs/judge-quality.md)", () => {
    expect(extractClaims("According to Neil Young, the song was written about a city girl playing finger cymbals."))
      .toEqual(["According to Neil Young", "the song was written about a city girl playing finger cymbals."])
  })

  it("list items are claims; a short lead-in line ending in ':' is not one", () => {
    const text =
      "Benefits of petting chickens include:\n- happier hens laying larger eggs [1]\n* five experience points for farming\n1. stronger friendship with the farmer\n\nChickens need water daily."
    expect(extractClaims(text)).toEqual([
      "happier hens laying larger eggs",
      "five experience points for farming",
      "stronger friendship with the farmer",
      "Chickens need water daily."
    ])
  })

  it("numbered lines lose their numbers, so a list number is never a claimed figure", () => {
    expect(
      extractClaims(
        "1. Continued pretraining on target-language text\n2) Translation language modeling on parallel corpora"
      )
    ).toEqual([
      "Continued pretraining on target-language text",
      "Translation language modeling on parallel corpora"
    ])
  })

  it("strips markdown emphasis and headings, and drops fenced code", () => {
    expect(extractClaims("## Summary\n**Hedging** offsets losses with a second position.\n```\nx = 1\n```")).toEqual([
      "Summary",
      "Hedging offsets losses with a second position."
    ])
  })

  it("questions claim nothing; a text of questions only has no claims", () => {
    expect(extractClaims("Sage Instant Accounts or QuickBooks?")).toEqual([])
    expect(extractClaims("Why does it matter? Because rates rose sharply last year.")).toEqual([
      "Because rates rose sharply last year."
    ])
  })

  it("a text with words but no content term is one claim; an empty text none", () => {
    expect(extractClaims("Yes.")).toEqual(["Yes."])
    expect(extractClaims("No, it is not.")).toEqual(["No, it is not."])
    expect(extractClaims("")).toEqual([])
    expect(extractClaims("  \n [1] ")).toEqual([])
  })

  it("without clause cuts each sentence is one claim", () => {
    expect(
      extractClaims("Freezer bags use thicker plastic film; storage bags use thinner plastic film.", { clauses: false })
    ).toEqual([
      "Freezer bags use thicker plastic film; storage bags use thinner plastic film."
    ])
  })

  it("is deterministic", () => {
    const text = "Hedging offsets losses, while diversification spreads risk across many assets. Both reduce risk [2]."
    expect(extractClaims(text)).toEqual(extractClaims(text))
  })

  it("remembers the terms of each sentence it cuts exactly as tokensOf reads the sentence (the checker reuses them)", () => {
    const texts = [
      "Hedging offsets losses; it costs a premium, and banks sell it while rates rise. ΟΔΟΣ: ΑΒΓ ΔΣ, ΕΖΗ and ΣΟΦΟΣ.",
      "According to the report, exports grew 7,000 tonnes, which doubled since 2019 because demand rose [2].",
      "The benefits include:\n- faster loading of pages and images\n- it's cheaper: don't pay twice, or pay once",
      "Rock'n'roll isn't dead: it's alive, and it's well; O'Brien's band plays while fans sing."
    ]
    // The remembered pieces are a Map replaced when full, and earlier files of this worker may have
    // filled it (a run beside two CPU burners once counted 5): remember throwaway pieces until the
    // first of them is gone, that is, until the Map was just replaced and holds only the last one.
    const first = "\u0000first throwaway piece"
    rememberTokens(first, tokensOf(first))
    for (let i = 0; rememberedTokens(first) === rememberedTokens(first); i++) {
      const piece = `\u0000throwaway piece ${i}`
      rememberTokens(piece, tokensOf(piece))
    }
    let remembered = 0
    for (const text of texts) {
      extractClaims(text)
      for (const line of text.replace(/[ \t]*\[\d+\]/g, "").replace(/^- /gm, "").split("\n")) {
        for (const piece of splitSentences(line)) {
          const lower = piece.trim().toLowerCase()
          expect(rememberedTokens(lower), lower).toEqual(tokensOf(lower))
          // The same object twice: it was remembered, not read again.
          if (rememberedTokens(lower) === rememberedTokens(lower)) remembered++
        }
      }
    }
    expect(remembered).toBe(6)
  })
})
