/**
 * How the claim extractor and checker read what is not a word: citation markers, which are neither
 * claims nor figures, and figures, which must agree however they are written. One reading for both
 * sides of every check, so a check is symmetric: "5 terabytes" against "5 TB" and "5 TB" against "5
 * terabytes" read the same.
 *
 * - **Citation markers** (`CITATION`): `[1]`, `[2, 3]`, `[1-3]`, `(Source 2)`, `(passage 3)`,
 *   `[Document 1]`, and a passage, document, source, context or fragment named by number — "passage
 *   3", "according to document 4", "based on source 2" — are removed before anything is read.
 * - **A list number or ordinal at a sentence's start** ("1. Open…", "2) Close…", "(3) …") is
 *   removed: it numbers the sentence, it is not a figure of it.
 * - **Number words** (`zero` … `twenty`, the tens, and compounds "twenty-five") are read as their
 *   figures, so "three days" and "3 days" agree; "one" stays a word (it is as often a pronoun).
 * - **Units** after a figure are read by one name whatever their spelling or abbreviation: TB,
 *   terabyte(s); GB, MB, KB; km, kilometre(s), kilometer(s), and the same for cm, mm and metres
 *   ("m" is left alone: metres or millions); kg, kilos, kilograms; lb, lbs, pounds; mi, miles; ft,
 *   feet; hr, hrs, hours; min, mins, minutes; sec, secs, seconds; %, per cent, percent.
 *
 * These rewrite the text the checker *reads*; the evidence it quotes is the text's own sentence,
 * verbatim ("three days", not "3 days").
 */

/** A digit: every citation marker and figure holds one. */
const DIGIT = /\d/

const CITATION_NOUN =
  "(?:passages?|documents?|docs?|sources?|contexts?|fragments?|excerpts?|snippets?|chunks?|refs?\\.?)"
/**
 * Citation markers with the white space before them: a bracketed number list, a bracketed or
 * parenthesised "Source 2", and a cited passage named by number, with the phrase that cites it
 * ("according to", "based on", "as stated in", "see", "from", "in").
 */
export const CITATION = new RegExp(
  [
    `[ \\t]*\\[\\d+(?:\\s*[-–,;]\\s*\\d+)*\\]`,
    `[ \\t]*[[(]\\s*${CITATION_NOUN}\\s*#?\\d+(?:\\s*[-–,;]\\s*\\d+)*\\s*[\\])]`,
    `(?:(?:according to|based on|as (?:stated|noted|mentioned|described|explained|shown|given) in|see|from|in|per)\\s+)?(?:the\\s+)?${CITATION_NOUN}\\s*#?\\d+(?:\\s*(?:,|and|&)\\s*\\d+)*`
  ].join("|"),
  "giu"
)
/** Where a citation marker can be: a "[", or a citing noun followed by a number (tested first: most texts have neither). */
const CITATION_HINT = new RegExp(`\\[|${CITATION_NOUN}\\s*#?\\d`, "i")

export const removeCitations = (text: string): string =>
  DIGIT.test(text) && CITATION_HINT.test(text) ? text.replace(CITATION, "") : text

/** A list number or ordinal opening a sentence or line: "1.", "2)", "(3)", "4:". */
const OPENING_NUMBER = /^([ \t]*)(?:\d{1,3}[.):]|\(\d{1,3}\))(?:[ \t]+|$)/gm

/** A unit's one name, by its spellings and abbreviations. */
export const UNITS: ReadonlyArray<readonly [RegExp, string]> = Object.entries({
  terabytes: "tb|terabytes?",
  gigabytes: "gb|gigabytes?",
  megabytes: "mb|megabytes?",
  kilobytes: "kb|kilobytes?",
  kilometers: "km|kilomet(?:re|er)s?",
  centimeters: "cm|centimet(?:re|er)s?",
  millimeters: "mm|millimet(?:re|er)s?",
  meters: "met(?:re|er)s?",
  kilograms: "kg|kilos?|kilograms?|kilogrammes?",
  pounds: "lbs?|pounds?",
  miles: "mi|miles?",
  feet: "ft|foot|feet",
  hours: "hr|hrs|hours?",
  minutes: "min|mins|minutes?",
  seconds: "sec|secs|seconds?",
  percent: "%|percent|per cent"
}).map(([name, spellings]) => [new RegExp(`^(?:${spellings})$`), name] as const)
/** Every spelling of a unit written as a word (the table's spellings but "%" and "per cent"). */
const UNIT_WORDS = UNITS.map(([pattern]) => pattern.source.slice(4, -2)).join("|").replace(/%\||\|per cent/g, "")
/**
 * A figure followed by a unit: after white space any unit of the table, written against the figure
 * only "%" and the abbreviations that are written so ("5TB", "10km"; not "1990s"). After white space
 * only the table's words are matched (`[a-z]+\b` matched every word after a figure, "1953 in", and
 * looked each up in the table: a sixth of the checker's reading of a text); the same replacements.
 */
const FIGURE_UNIT = new RegExp(
  `(\\d)(\\s+)(per cent|(?:${UNIT_WORDS})\\b)|(\\d)()(%|(?:tb|gb|mb|kb|km|cm|mm|kg|lbs?|ft)\\b)`,
  "gi"
)

/** Number words by value ("one" is left a word: it is as often a pronoun), and the tens. */
const SMALL =
  "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
    .split(" ")
const TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split(" ")
/** A tens word with its units ("twenty-five", "twenty five"), a tens word, or a number word below twenty. */
const NUMBER_WORD = new RegExp(
  `(?<![\\p{L}-])(?:(${TENS.join("|")})(?:[- ](${SMALL.slice(1, 10).join("|")}))?|(zero|${
    SMALL.slice(2).join("|")
  }))(?![\\p{L}-])`,
  "giu"
)
/** The number words as whole words, without `NUMBER_WORD`'s lookarounds: the cheap test first. */
const NUMBER_WORD_HINT = new RegExp(`\\b(?:zero|${[...SMALL.slice(2), ...TENS].join("|")})\\b`, "i")

/** Number words as figures (see the module comment). */
export const numberWordsAsFigures = (text: string): string =>
  NUMBER_WORD_HINT.test(text)
    ? text.replace(NUMBER_WORD, (_, tens: string | undefined, unit: string | undefined, small: string | undefined) =>
      String(
        tens === undefined
          ? SMALL.indexOf(small!.toLowerCase())
          : 20 + 10 * TENS.indexOf(tens.toLowerCase()) + (unit === undefined ? 0 : SMALL.indexOf(unit.toLowerCase()))
      ))
    : text

/** Units after a figure by their one name (see the module comment). */
export const unitsByName = (text: string): string =>
  text.replace(FIGURE_UNIT, (all, d1?: string, s1?: string, u1?: string, d2?: string, _?: string, u2?: string) => {
    const unit = (u1 ?? u2)!.toLowerCase()
    const name = UNITS.find(([pattern]) => pattern.test(unit))?.[1]
    return name === undefined ? all : `${d1 ?? d2}${s1 ?? " "}${name}`
  })

/**
 * Where `OPENING_NUMBER` can match: a line's start is the text's, or follows a line terminator (the
 * expression's `m` flag); a text with neither a digit or "(" at its start nor a line terminator has
 * none (most sentences: the test is cheaper than the replacement's scan).
 */
const OPENING_HINT = /^[ \t]*[\d(]|[\n\r\u2028\u2029]/

/** A sentence's opening list number or ordinal removed. */
export const withoutOpeningNumber = (text: string): string =>
  OPENING_HINT.test(text) ? text.replace(OPENING_NUMBER, "$1") : text

/** Everything above, in order: the text a check reads. Each step only where it can apply (most sentences need none). */
export const readFigures = (text: string): string => {
  let t = removeCitations(text)
  if (DIGIT.test(t)) t = withoutOpeningNumber(t)
  t = numberWordsAsFigures(t)
  return DIGIT.test(t) ? unitsByName(t) : t
}
