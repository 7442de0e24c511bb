/**
 * Which texts the heuristic claim checker can read: English only (its terms, stopwords, number words,
 * negations and abstentions are English; on German it would count "Monate" in "zwölf Monate" against
 * "sechs Monate" as support). A text in another language gets no verdict, with the reason
 * `ENGLISH_ONLY`. A text of fewer than `MIN_LETTERS` letters, or at least `FUNCTION_WORD_SHARE` of whose
 * words are the tokeniser's English stopwords, is English; any other is `eld`'s to decide (Apache-2.0,
 * its "extrasmall" table; only a reliable detection counts). Why eld and these rules, measured against
 * franc-min and tinyld on the development sets: docs/judge-quality.md ("English only").
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { codePointLength, STOPWORDS } from "../Terms.js"

interface Detector {
  readonly detect: (text: string) => { readonly language: string; readonly isReliable: () => boolean }
}

let loaded: Detector | undefined
/**
 * The detector, loaded the first time a text needs it: its n-gram table costs ~90 MB and half a
 * second, which a run that checks no claim (or only English texts that take the fast path) never
 * pays. Loaded synchronously (Node's `require` of an ES module, Node ≥ 20.19), because the heuristic
 * judge answers synchronously.
 */
const detector = (): Detector => {
  if (loaded === undefined) {
    const require = createRequire(import.meta.url)
    // eld exports its tables to `import` only; its entry file is found where Node would resolve the package.
    const entry = (require.resolve.paths("eld") ?? [])
      .map((dir) => Path.join(dir, "eld", "src", "entries", "static.extrasmall.js"))
      .find((file) => fs.existsSync(file))
    loaded = (require(entry ?? "eld/extrasmall") as { readonly eld: Detector }).eld
  }
  return loaded
}

/** The reason a text is not judged. */
export const ENGLISH_ONLY = "the heuristic judge reads English only"

/** Texts with fewer letters are too short to tell (a name, a figure, "Yes."): they are read as English. */
export const MIN_LETTERS = 20
/** The detector reads at most this many characters of a text (its language does not change after them). */
const SAMPLE = 600

/** Texts with at least this share of English function words are read as English without the detector. */
export const FUNCTION_WORD_SHARE = 0.3

/** A letter (`\p{L}`) starting at `lastIndex`: asked only of characters beyond ASCII. */
const LETTER_AT = /\p{L}/uy

/** The length of the letter (one code point: one or two code units) at `i`, 0 when the character there is none. */
const letterAt = (text: string, i: number): number => {
  const c = text.charCodeAt(i)
  if (c < 128) return (c | 32) >= 97 && (c | 32) <= 122 ? 1 : 0
  LETTER_AT.lastIndex = i
  return LETTER_AT.test(text) ? LETTER_AT.lastIndex - i : 0
}

/**
 * Has the text at least `MIN_LETTERS` letters (`\p{L}`, counted by code point as `/\p{L}/gu` counts
 * them)? Counted without the match array of every letter, and only as far as needed.
 */
export const hasEnoughLetters = (text: string): boolean => {
  let n = 0
  for (let i = 0; i < text.length;) {
    const len = letterAt(text, i)
    if (len > 0) {
      if (++n >= MIN_LETTERS) return true
      i += len
    } else i += codePointLength(text, i)
  }
  return false
}

/** The longest stopword: a longer word is none. */
const LONGEST_STOPWORD = Math.max(...[...STOPWORDS].map((w) => w.length))

/**
 * The share of the text's words (runs of letters and apostrophes, `/[\p{L}']+/gu` of the
 * lower-cased text) that are English stopwords; 0 without words. Read by one scan of the text, a
 * word cut out only when it is short enough to be a stopword.
 */
export const functionWordShare = (text: string): number => {
  const lower = text.toLowerCase()
  let words = 0
  let n = 0
  for (let i = 0; i < lower.length;) {
    const start = i
    for (;;) {
      if (i >= lower.length) break
      if (lower.charCodeAt(i) === 39) i++
      else {
        const len = letterAt(lower, i)
        if (len === 0) break
        i += len
      }
    }
    if (i > start) {
      words++
      if (i - start <= LONGEST_STOPWORD && STOPWORDS.has(lower.slice(start, i))) n++
    } else i += codePointLength(lower, i)
  }
  return words === 0 ? 0 : n / words
}
let cache = new Map<string, string | null>()

/**
 * The language of `text` when it is reliably not English (an ISO 639-1 code), else null — English,
 * too short to tell, or unsure. Deterministic.
 */
export const otherLanguage = (text: string): string | null => {
  const sample = text.length > SAMPLE ? text.slice(0, SAMPLE) : text
  const hit = cache.get(sample)
  if (hit !== undefined) return hit
  let result: string | null = null
  if (hasEnoughLetters(sample) && functionWordShare(sample) < FUNCTION_WORD_SHARE) {
    const r = detector().detect(sample)
    if (r.language !== "" && r.language !== "en" && r.isReliable()) result = r.language
  }
  // Replaced when full, never cleared (see `Terms.ts`).
  if (cache.size >= 64) cache = new Map()
  cache.set(sample, result)
  return result
}
