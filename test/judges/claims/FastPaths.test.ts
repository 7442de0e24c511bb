/**
 * The claim judge's hand-written scans and narrowed expressions read what the regular expressions
 * they replace read (they were rewritten for speed, issue #35): each is compared with the original
 * formulation, kept here, on seeded random texts of ASCII, accented, Greek, CJK and astral letters,
 * emoji, lone surrogates, apostrophes, digits, units and every kind of white space.
 */
import { describe, expect, it } from "@effect/vitest"
import { namesOf } from "../../../src/judges/claims/Check.js"
import {
  CITATION,
  removeCitations,
  UNITS,
  unitsByName,
  withoutOpeningNumber
} from "../../../src/judges/claims/Figures.js"
import { functionWordShare, hasEnoughLetters, MIN_LETTERS } from "../../../src/judges/claims/Language.js"
import { STOPWORDS, tokensOf } from "../../../src/judges/Terms.js"

/** A seeded generator (mulberry32). */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const PIECES = [
  "the",
  "The",
  "and",
  "it's",
  "don't",
  "'",
  "''",
  "O'Neil",
  "café",
  "Über",
  "ÄRGER",
  "straße",
  "İstanbul",
  "ΣΟΦΊΑ",
  "λόγος",
  "中文",
  "テスト",
  "😀",
  "𝔘𝔫𝔦",
  "\ud800",
  "\udc00",
  "x\ud83dy",
  "5",
  "1953",
  "7,000",
  "3.5",
  "(3)",
  "12)",
  "4:",
  "TB",
  "tb",
  "terabytes",
  "km",
  "kilometres",
  "per cent",
  "per centimeter",
  "%",
  "mins",
  "MINUTES",
  "hrs",
  "lbs",
  "kg",
  "5TB",
  "10km",
  "1990s",
  "km2",
  "tb_x",
  "Kelvin\u212a",
  "\u017fec",
  "in",
  "of",
  "every",
  "yourselves",
  "ourselves"
]
const SPACES = [" ", " ", " ", "  ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u2028", "\u3000", "", ".", ", ", "; "]

const randomText = (random: () => number): string => {
  const n = Math.floor(random() * 30)
  let text = ""
  for (let i = 0; i < n; i++) {
    text += PIECES[Math.floor(random() * PIECES.length)]! + SPACES[Math.floor(random() * SPACES.length)]!
  }
  return text
}

const texts = (seed: number, n: number): ReadonlyArray<string> => {
  const random = prng(seed)
  return Array.from({ length: n }, () => randomText(random))
}

describe("language detection's counts", () => {
  const LETTER = /\p{L}/gu
  const WORD = /[\p{L}']+/gu
  const shareByMatch = (text: string): number => {
    const words = text.toLowerCase().match(WORD)
    if (words === null) return 0
    let n = 0
    for (const w of words) if (STOPWORDS.has(w)) n++
    return n / words.length
  }
  it("letters and function words are counted as /\\p{L}/gu and /[\\p{L}']+/gu count them", () => {
    for (const text of texts(35, 5_000)) {
      expect(hasEnoughLetters(text), text).toBe((text.match(LETTER)?.length ?? 0) >= MIN_LETTERS)
      expect(functionWordShare(text), text).toBe(shareByMatch(text))
    }
  })
})

describe("figures' narrowed expressions", () => {
  // The table is the module's own (UNITS); the expression before the narrowing is the oracle.
  const FIGURE_UNIT = /(\d)(\s+)(per cent|[a-z]+\b)|(\d)()(%|(?:tb|gb|mb|kb|km|cm|mm|kg|lbs?|ft)\b)/gi
  const unitsByWord = (text: string): string =>
    text.replace(FIGURE_UNIT, (all, d1?: string, s1?: string, u1?: string, d2?: string, _?: string, u2?: string) => {
      const unit = (u1 ?? u2)!.toLowerCase()
      const name = UNITS.find(([pattern]) => pattern.test(unit))?.[1]
      return name === undefined ? all : `${d1 ?? d2}${s1 ?? " "}${name}`
    })
  const OPENING_NUMBER = /^([ \t]*)(?:\d{1,3}[.):]|\(\d{1,3}\))(?:[ \t]+|$)/gm

  it("units after a figure are named as when every word after a figure was looked up", () => {
    for (const text of texts(12, 5_000)) expect(unitsByName(text), text).toBe(unitsByWord(text))
  })
  it("citation markers are removed where the hint finds one", () => {
    const HINT = new RegExp(
      `\\[|(?:passages?|documents?|docs?|sources?|contexts?|fragments?|excerpts?|snippets?|chunks?|refs?\\.?)\\s*#?\\d`,
      "i"
    )
    for (const text of texts(15, 5_000)) {
      expect(removeCitations(text), text).toBe(/\d/.test(text) && HINT.test(text) ? text.replace(CITATION, "") : text)
    }
  })
  it("opening numbers are removed as by the expression alone", () => {
    for (const text of [...texts(13, 5_000), "1. a", " (2) b", "\t3) c", "x\n4: d", "x\r5. e", "x\u20286. f", "(7)"]) {
      expect(withoutOpeningNumber(text), text).toBe(text.replace(OPENING_NUMBER, "$1"))
    }
  })
})

describe("a claim's names", () => {
  const WORD_RUN = /[\p{L}\p{N}'-]+/gu
  const CAPITALS = /\p{Lu}/gu
  const UPPER_START = /^\p{Lu}/u
  const INSIDE_SENTENCE = /[\p{L}\p{N},;:)'"”’]\s+$/u
  const namesByMatch = (text: string): ReadonlyArray<string> => {
    const names = new Set<string>()
    for (const m of text.matchAll(WORD_RUN)) {
      const capitals = m[0].match(CAPITALS)?.length ?? 0
      if (
        capitals >= 2 || (capitals === 1 && UPPER_START.test(m[0]) && INSIDE_SENTENCE.test(text.slice(0, m.index)))
      ) {
        for (const t of tokensOf(m[0].toLowerCase()).terms) names.add(t)
      }
    }
    return [...names]
  }
  it("are the words the expressions find, capitals counted by code point, a sentence's inside by its last characters", () => {
    for (const text of texts(14, 5_000)) expect(namesOf(text), text).toEqual(namesByMatch(text))
  })
})
