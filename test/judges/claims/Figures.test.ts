/**
 * What the claim judge reads besides words: citation markers (neither claims nor figures), number
 * words and units (one reading on both sides of a check), opening list numbers; the language it reads
 * (English only); the verdict scales stated once and the rubric files that state them to an LLM.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as Path from "node:path"
import {
  ClaimVerdict,
  claimVerdictOf,
  claimVerdictScore,
  NuggetSupport,
  nuggetSupportOf
} from "../../../src/domain/Label.js"
import { readFigures, removeCitations } from "../../../src/judges/claims/Figures.js"
import { otherLanguage } from "../../../src/judges/claims/Language.js"
import { repoRoot } from "../../support/RunPipeline.js"

describe("citation markers", () => {
  it("every common form is removed, with the phrase that cites it", () => {
    expect(removeCitations("It rose [1] and fell [2, 3].")).toBe("It rose and fell.")
    expect(removeCitations("It rose 12% (Source 2).")).toBe("It rose 12%.")
    expect(removeCitations("It rose [Document 1].")).toBe("It rose.")
    expect(removeCitations("Based on passage 3, refunds take 30 days.")).toBe(", refunds take 30 days.")
    expect(removeCitations("According to document 4 the fee is 5 dollars.")).toBe(" the fee is 5 dollars.")
  })
  it("a number that is not a citation stays", () => {
    expect(removeCitations("Form 1040 is due in April (see page 2 of the guide).")).toBe(
      "Form 1040 is due in April (see page 2 of the guide)."
    )
  })
})

describe("figures", () => {
  it("number words read as figures, both ways alike", () => {
    expect(readFigures("three days")).toBe("3 days")
    expect(readFigures("twenty-five people, ninety nine pages, zero errors")).toBe("25 people, 99 pages, 0 errors")
    expect(readFigures("one of them often tends to")).toBe("one of them often tends to")
  })
  it("units by one name, spelled or abbreviated", () => {
    expect(readFigures("5 TB")).toBe(readFigures("5 terabytes"))
    expect(readFigures("5TB")).toBe("5 terabytes")
    expect(readFigures("12 km")).toBe(readFigures("12 kilometres"))
    expect(readFigures("12 kilometers")).toBe(readFigures("12 kilometres"))
    expect(readFigures("5%")).toBe(readFigures("5 percent"))
    expect(readFigures("5 per cent")).toBe("5 percent")
    expect(readFigures("in the 1990s")).toBe("in the 1990s")
  })
  it("a list number or ordinal opening a sentence is not a figure", () => {
    expect(readFigures("1. Open the page")).toBe("Open the page")
    expect(readFigures("(2) Close it")).toBe("Close it")
    expect(readFigures("3.")).toBe("")
    expect(readFigures("It costs 3. dollars")).toBe("It costs 3. dollars")
  })
})

describe("the language the heuristic reads", () => {
  it("German, French, Spanish and Chinese sentences are found; English, names and short texts are read", () => {
    expect(otherLanguage("Die Probezeit beträgt zwölf Monate für alle neuen Mitarbeiter.")).toBe("de")
    expect(otherLanguage("Les employés peuvent travailler à distance jusqu'à trois jours par semaine.")).toBe("fr")
    expect(otherLanguage("Los empleados pueden trabajar de forma remota hasta tres días por semana.")).toBe("es")
    expect(otherLanguage("Employees may work remotely up to three days per week.")).toBeNull()
    expect(otherLanguage("I don't know.")).toBeNull()
    expect(otherLanguage("Ich weiß es nicht.")).toBeNull() // too short to tell: read as English
    expect(otherLanguage("")).toBeNull()
  })
})

describe("the verdict scales, stated once", () => {
  const rubric = (name: string) =>
    JSON.parse(fs.readFileSync(Path.join(repoRoot, "prompts", "answer-correctness", name), "utf8")) as {
      scale: ReadonlyArray<{ score: number; label: string }>
    }
  it("score i of the check rubric is ClaimVerdict.literals[i], and of the nugget rubric NuggetSupport.literals[i]", () => {
    expect(rubric("check.json").scale.map((s) => [s.score, s.label.toLowerCase()])).toEqual(
      ClaimVerdict.literals.map((v, i) => [i, v])
    )
    expect(rubric("nugget.json").scale.map((s) => s.score)).toEqual(NuggetSupport.literals.map((_, i) => i))
    expect(rubric("nugget.json").scale.map((s) => s.label)).toEqual([
      "Not supported",
      "Partially supported",
      "Supported"
    ])
    expect(claimVerdictOf(2)).toBe("entailed")
    expect(claimVerdictOf(3)).toBeNull()
    expect(claimVerdictOf(null)).toBeNull()
    expect(claimVerdictScore("contradicted")).toBe(0)
    expect(nuggetSupportOf(1)).toBe("partial_support")
  })
})
