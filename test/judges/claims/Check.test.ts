/**
 * The heuristic claim checker (src/judges/claims/Check.ts): support, verdicts, the facts that must
 * agree (numbers, dates, names, negation), the evidence sentence, and the case's term weights.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  type CaseTexts,
  checkClaims,
  type ClaimCheck,
  DEFAULT_MODEL,
  ENTAIL_AT,
  nuggetAssignment,
  PARTIAL_AT
} from "../../../src/judges/claims/Check.js"

const check = (claim: string, text: string, context?: CaseTexts): ClaimCheck => checkClaims([claim], text, context)[0]!

describe("support and verdict", () => {
  it("a claim whose terms the text states in one sentence is entailed with support 1, that sentence its evidence", () => {
    const c = check(
      "The Eiffel Tower stands in Paris.",
      "Tokyo has many towers. The Eiffel Tower stands in Paris, France. It attracts tourists."
    )
    expect(c).toEqual({
      verdict: "entailed",
      support: 1,
      evidence: "The Eiffel Tower stands in Paris, France.",
      finding: "words and figures found"
    })
  })

  it("a claim the text does not speak of is neutral, with no evidence when no sentence shares a term", () => {
    expect(check("Penguins live in Antarctica.", "The stock market rose sharply on Monday.")).toEqual({
      verdict: "neutral",
      support: 0,
      evidence: null,
      finding: "too few words found"
    })
  })

  it("the evidence is the sentence holding most of the claim, not the first that shares a term", () => {
    const text =
      "Hedging uses options. Diversification spreads money across many unrelated assets to lower risk. Hedging is costly."
    const c = check("Diversification spreads risk across unrelated assets.", text)
    expect(c.evidence).toBe("Diversification spreads money across many unrelated assets to lower risk.")
    expect(c.verdict).toBe("entailed")
  })

  it("support blends the best sentence (0.3) and the whole text (0.7): parts stated in two sentences score below one stating all", () => {
    const split = check("Freezer bags are thick and durable.", "Freezer bags are thick. They are also durable.")
    const together = check("Freezer bags are thick and durable.", "Freezer bags are thick and durable.")
    expect(together.support).toBe(1)
    // Terms: freezer, bag, thick, durable (weight 1 each without a case): best sentence 3/4, whole text 4/4.
    expect(split.support).toBeCloseTo(0.3 * 0.75 + 0.7 * 1, 12)
  })

  it("below the entailment threshold a claim is neutral", () => {
    const c = check(
      "Quantum computers factor large primes using entangled qubits at room temperature.",
      "Quantum computers exist."
    )
    expect(c.support).toBeLessThan(ENTAIL_AT)
    expect(c.verdict).toBe("neutral")
  })

  it("citation markers and list numbers in the text are not numbers it states", () => {
    expect(check("The museum holds 4 galleries.", "The museum holds galleries [4].").verdict).toBe("neutral")
    expect(check("The museum holds 2 galleries.", "1. The museum holds galleries.\n2. It opens daily.").verdict).toBe(
      "neutral"
    )
    expect(check("The museum holds galleries.", "The museum holds galleries [4].").verdict).toBe("entailed")
  })

  it("a claim of stopwords only is checked on its words", () => {
    expect(check("Yes.", "Yes, you can use condensed milk.").verdict).toBe("entailed")
    expect(check("Yes.", "Condensed milk works.").verdict).toBe("neutral")
  })

  it("an empty text entails nothing", () => {
    expect(check("The sky is blue.", "")).toEqual({
      verdict: "neutral",
      support: 0,
      evidence: null,
      finding: "too few words found"
    })
  })

  it("a web address states nothing: a context that is only a URL entails no claim, and a URL's words are no support", () => {
    const claim = "The Dietary Supplement Health and Education Act was passed in 1994."
    const urlOnly = "[2] https://www.example.org/the-dietary-supplement-health-and-education-act-passed-1994.html"
    expect(check(claim, urlOnly)).toEqual({
      verdict: "neutral",
      support: 0,
      evidence: null,
      finding: "too few words found"
    })
    expect(check(claim, "www.example.org/dietary-supplement-health-education-act-1994").verdict).toBe("neutral")
    // The passage after the URL is read as usual; the address's words add nothing to it.
    const page = `${urlOnly}\n\nCongress passed the Dietary Supplement Health and Education Act in 1994.`
    expect(check(claim, page)).toEqual({
      verdict: "entailed",
      support: 1,
      evidence: "Congress passed the Dietary Supplement Health and Education Act in 1994.",
      finding: "words and figures found"
    })
    expect(check("Supplements are food.", "See https://example.org/supplements-are-food for more.").verdict).toBe(
      "neutral"
    )
  })
})

describe("numbers, dates and names must agree", () => {
  it("a different number in the evidence sentence contradicts", () => {
    const c = check("The Eiffel Tower is 330 metres tall.", "The Eiffel Tower is 300 metres tall.")
    expect(c.verdict).toBe("contradicted")
    expect(c.evidence).toBe("The Eiffel Tower is 300 metres tall.")
  })

  it("number words are figures: \"three moons\" against \"two moons\" contradicts, \"2 moons\" against \"two moons\" entails; \"one\" and compounds stay words", () => {
    expect(
      check("Mars has three moons, Phobos, Deimos and Ganymede.", "Mars has two moons, Phobos and Deimos.").verdict
    ).toBe("contradicted")
    expect(
      check("Mars has two moons, Phobos and Deimos.", "Mars has three moons, Phobos, Deimos and Ganymede.").verdict
    ).toBe("contradicted")
    expect(check("Mars has 2 moons.", "Mars has two moons, Phobos and Deimos.").verdict).toBe("entailed")
    expect(check("One of the moons is Phobos.", "Phobos is one of the moons of Mars.").verdict).toBe("entailed")
    expect(check("The lease runs twenty-five years.", "The lease runs twenty-five years from signing.").verdict).toBe(
      "entailed"
    )
  })

  it("a claim naming two things needs a sentence naming both: two sentences that never relate them do not entail it", () => {
    const reference = "Canberra is the capital of Australia. Sydney is its largest city."
    const apart = check("The capital of Australia is Sydney.", reference)
    expect(apart.support).toBeGreaterThanOrEqual(ENTAIL_AT)
    expect(apart).toMatchObject({ verdict: "neutral", finding: "name not found" })
    expect(
      checkClaims(["The capital of Australia is Sydney."], reference, undefined, {
        ...DEFAULT_MODEL,
        namesTogether: false
      })[0]!.verdict
    ).toBe("entailed")
    // Named together (soft match: "Australia's"): entailed.
    expect(
      check("Sydney is the largest city of Australia.", "Australia's largest city is Sydney, on the east coast.")
        .verdict
    ).toBe("entailed")
    // A word with two capitals is a name wherever it stands; a capital opening a sentence is not.
    expect(check("FICA taxes fund Medicare benefits.", "FICA is a payroll tax. It funds Medicare.").finding).toBe(
      "name not found"
    )
    expect(check("Sydney is the largest city in Australia.", reference).verdict).toBe("entailed")
  })

  it("a different year contradicts; the same year entails", () => {
    expect(check("The film was released in 2019.", "The film was released in 2021.").verdict).toBe("contradicted")
    expect(check("The film was released in 2021.", "The film was released in 2021 to good reviews.").verdict).toBe(
      "entailed"
    )
  })

  it("a number the text does not state, with no other number there, is not entailed (neutral)", () => {
    expect(check("The tower is 330 metres tall.", "The tower is very tall and made of iron.").verdict).toBe("neutral")
  })

  it("numbers are compared as values: 7,000 = 7000, 30-day = 30 days, 0.50 = 0.5", () => {
    expect(check("The corpus has 7,000 books.", "The corpus contains 7000 unpublished books.").verdict).toBe("entailed")
    expect(check("QuickBooks offers a 30-day free trial.", "QuickBooks has a free trial of 30 days.").verdict).toBe(
      "entailed"
    )
    expect(check("The rate was 0.50 percent.", "The rate was 0.5 percent.").verdict).toBe("entailed")
  })

  it("a figure the text states otherwise, whose own weight pulls the support below the threshold, leaves the claim neutral", () => {
    // The case's texts weigh the terms: "3" is rare in the case (and weighs double), so missing it costs the claim most of its support.
    const context: CaseTexts = {
      question: "How many moons does Mars have?",
      answer: "Mars has three moons, Phobos, Deimos and Ganymede.",
      reference: "Mars has two moons, Phobos and Deimos.",
      contexts: [
        "Mars has two small moons, Phobos and Deimos, discovered by Asaph Hall in 1877.",
        "Ganymede is a moon of Jupiter and the largest moon in the Solar System."
      ]
    }
    const c = check(context.answer!, context.reference!, context)
    expect(c.support).toBeLessThan(ENTAIL_AT)
    expect(c).toMatchObject({ verdict: "neutral", finding: "too few words found" })
    // No figure in the text to disagree with: merely not stated.
    expect(check("Mars has three moons.", "Mars is the fourth planet from the Sun.", context).verdict).toBe("neutral")
  })

  it("a negation reaches its own clause of the sentence, not the claim's clause beside it", () => {
    const text =
      "The World Health Organization urges countries to ban the marketing of formula to consumers; the U.S. does not."
    expect(
      check("The World Health Organization urges countries to ban the marketing of formula to consumers.", text).verdict
    ).toBe("entailed")
    // In the clause that states the claim, it still contradicts.
    expect(
      check("The World Health Organization does not urge countries to ban the marketing of formula.", text).verdict
    ).toBe("contradicted")
    expect(
      check(
        "The World Health Organization urges countries to ban the marketing of formula.",
        "The World Health Organization does not urge countries to ban the marketing of formula, and the U.S. agrees."
      ).verdict
    ).toBe("contradicted")
  })

  it("a negated claim against the same statement affirmed is contradicted, and the reverse", () => {
    expect(check("Vitamin C does not cure the common cold.", "Vitamin C cures the common cold.").verdict).toBe(
      "contradicted"
    )
    expect(check("Vitamin C cures the common cold.", "Vitamin C does not cure the common cold.").verdict).toBe(
      "contradicted"
    )
    expect(check("Vitamin C doesn't cure the common cold.", "Vitamin C never cures the common cold.").verdict).toBe(
      "entailed"
    )
  })

  it("\"not only\", \"no longer\" and \"whether or not\" are not negations", () => {
    expect(check("Vitamin C cures the common cold.", "Vitamin C not only cures the common cold but also flu.").verdict)
      .toBe("entailed")
  })

  it("a negation in a sentence that holds little of the claim decides nothing", () => {
    const c = check(
      "Vitamin C cures the common cold quickly in adults.",
      "Vitamin C is not cheap. It cures the common cold quickly in adults."
    )
    expect(c.verdict).toBe("entailed")
  })
})

describe("term weights within the case", () => {
  it("terms of the question weigh half: a claim that only restates the question gets less support from a text that restates it too", () => {
    const text = "Condensed milk can replace evaporated milk. It is sweeter."
    const claim = "Condensed milk can replace evaporated milk in cakes."
    const alone = check(claim, text)
    const inCase = check(claim, text, {
      question: "Can condensed milk replace evaporated milk?",
      answer: claim,
      reference: text
    })
    expect(inCase.support).toBeLessThan(alone.support)
  })

  it("a term rare in the case weighs more than one every sentence shares", () => {
    const texts: CaseTexts = {
      question: "What do bees make?",
      reference: "Bees make honey. Bees live in hives. Bees pollinate flowers.",
      answer: "Bees make wax."
    }
    // "bee" is in every sentence, "wax" in one: the missing "wax" costs more than half the claim.
    const c = check("Bees make wax.", texts.reference!, texts)
    expect(c.support).toBeLessThan(check("Bees make wax.", texts.reference!).support)
  })

  it("the same case object gives the same checks as an equal new one (statistics are per object, results are not)", () => {
    const texts = { question: "q", reference: "Bees make honey in hives.", answer: "Bees make honey." }
    expect(checkClaims(["Bees make honey."], texts.reference, texts)).toEqual(
      checkClaims(["Bees make honey."], texts.reference, { ...texts })
    )
  })

  it("is deterministic and checks each claim on its own: order and company do not change a verdict", () => {
    const text = "The Eiffel Tower is 300 metres tall. It opened in 1889."
    const claims = ["The Eiffel Tower opened in 1889.", "The Eiffel Tower is 330 metres tall.", "Rome has a colosseum."]
    const forward = checkClaims(claims, text)
    const backward = [...checkClaims([...claims].reverse(), text)].reverse()
    expect(backward).toEqual(forward)
    expect(forward.map((c) => c.verdict)).toEqual(["entailed", "contradicted", "neutral"])
  })

  describe("grounding checks (an answer's claim against a retrieved passage): phrases count", () => {
    const passage = "Interest rates rose while inflation fell."
    const grounded = (claim: string, model = DEFAULT_MODEL) =>
      checkClaims([claim], passage, undefined, model, { grounding: true })[0]!

    it("a claim built from the passage's words but not its phrases is not grounded in it", () => {
      // Every word of the claim is in one sentence of the passage: as a bag of words, entailed.
      expect(check("Inflation rose.", passage).verdict).toBe("entailed")
      const c = grounded("Inflation rose.")
      expect(c.verdict).toBe("neutral")
      expect(c.support).toBeLessThan(ENTAIL_AT)
      // The feature decides it: without the phrase share the grounding check entails too.
      expect(grounded("Inflation rose.", { ...DEFAULT_MODEL, phraseShare: 0 }).verdict).toBe("entailed")
    })

    it("a claim that carries the passage's phrases over is grounded", () => {
      const c = grounded("Interest rates rose.")
      expect(c.verdict).toBe("entailed")
      expect(c.evidence).toBe(passage)
      // Numbers stand where they are written: "rose in 2022" is the passage's phrase "rose 2022".
      const dated = "Interest rates rose in 2022 while inflation fell in 2023."
      expect(checkClaims(["Rates rose in 2022."], dated, undefined, DEFAULT_MODEL, { grounding: true })[0]!.verdict)
        .toBe("entailed")
    })

    it("the other checks (against a reference, or an answer) read no phrases: a paraphrase in other word order is still entailed", () => {
      const reference = "Prices of food fell."
      expect(check("Food prices fell.", reference).verdict).toBe("entailed")
      expect(checkClaims(["Food prices fell."], reference, undefined, DEFAULT_MODEL, { grounding: true })[0]!.verdict)
        .toBe("neutral")
    })

    it("the rules that must agree still apply: a grounding check with the passage's phrases and another figure is contradicted", () => {
      const dated = "Interest rates rose in 2022 while inflation fell in 2023."
      expect(
        checkClaims(["Interest rates rose in 2021."], dated, undefined, DEFAULT_MODEL, { grounding: true })[0]!.verdict
      ).not.toBe("entailed")
    })
  })

  describe("gold claims (a reference's, a nugget) weigh their terms alike: an answer that repeats them covers them", () => {
    const question = "Are solar panels worth it?"
    const answer =
      "Solar panels are popular with homeowners. Solar panels last for decades. Solar panels need little care. Solar panels lower bills."
    const texts = { question, answer, reference: "Solar panels reduce electricity bills. They last 25 years." }
    const claim = "Solar panels reduce electricity bills."

    it("the answer's many sentences on solar panels make those words common in the case; as an answer's claim that would lower their weight", () => {
      const asAnswerClaim = checkClaims([claim], answer, texts)[0]!
      const asGold = checkClaims([claim], answer, texts, DEFAULT_MODEL, { gold: true })[0]!
      expect(asAnswerClaim.verdict).toBe("neutral")
      expect(asGold.verdict).toBe("entailed")
      expect(asGold.support).toBeGreaterThan(asAnswerClaim.support)
      // The feature decides it.
      expect(
        checkClaims([claim], answer, texts, { ...DEFAULT_MODEL, goldAlike: false }, { gold: true })[0]!.verdict
      ).toBe("neutral")
    })

    it("numbers and question terms keep their weights in a gold claim: a figure the answer lacks still keeps it from being entailed", () => {
      expect(checkClaims(["They last 25 years."], answer, texts, DEFAULT_MODEL, { gold: true })[0]!.verdict).toBe(
        "neutral"
      )
    })
  })

  it("DEFAULT_MODEL is the documented constants", () => {
    expect(DEFAULT_MODEL).toEqual({
      entailAt: 0.4,
      sentenceShare: 0.3,
      questionWeight: 0.5,
      phraseShare: 0.75,
      caseWeights: true,
      goldAlike: true,
      numbers: true,
      negation: true,
      universals: true,
      namesTogether: true
    })
  })
})

describe("nugget assignments", () => {
  it("entailed → support; neutral with support ≥ half the threshold → partial_support; else not_support", () => {
    expect(PARTIAL_AT).toBe(ENTAIL_AT / 2)
    expect(nuggetAssignment({ verdict: "entailed", support: 0.9, evidence: "x", finding: "words and figures found" }))
      .toBe("support")
    expect(nuggetAssignment({ verdict: "neutral", support: PARTIAL_AT, evidence: "x", finding: "figure not found" }))
      .toBe("partial_support")
    expect(nuggetAssignment({ verdict: "neutral", support: 0.9, evidence: "x", finding: "words and figures found" }))
      .toBe("partial_support")
    expect(
      nuggetAssignment({
        verdict: "neutral",
        support: PARTIAL_AT - 0.01,
        evidence: "x",
        finding: "too few words found"
      })
    ).toBe("not_support")
    expect(
      nuggetAssignment({ verdict: "contradicted", support: 0.9, evidence: "x", finding: "words and figures found" })
    ).toBe("not_support")
  })
  it("a nugget stated with another figure is not supported; one whose figure the answer lacks partly", () => {
    expect(nuggetAssignment(check("The tower is 330 metres tall.", "The tower is 300 metres tall."))).toBe(
      "not_support"
    )
    expect(nuggetAssignment(check("Relativity was proposed in 1905.", "Relativity was proposed by Albert Einstein.")))
      .toBe("partial_support")
  })
})
