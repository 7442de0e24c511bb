/**
 * The offline claim checker: is a claim entailed by a text, contradicted by it, or neither
 * (RAGChecker's three verdicts), with its support s ∈ [0, 1] and what decided it (`Finding`, named for
 * what it measures)? Lexical and deterministic. Support: the weighted share of the claim's terms in
 * the best sentence (`sentenceShare`) and in the whole text, terms weighted by their rarity among
 * the case's sentences (question terms ½, figures 2); in a grounding check (an answer's claim against
 * a passage) blended with the share of its adjacent term pairs the passage has (`phraseShare`).
 * Figures must agree, polarity too; a claim naming two things needs a sentence naming both. The model,
 * each rule's measured worth (leave one dataset out) and what it cannot see: docs/judge-quality.md.
 */
import type { ClaimVerdict, NuggetAssignment } from "../../metrics/claims.js"
import { recent } from "../Recent.js"
import {
  codePointLength,
  hasDigit,
  isSpace,
  normalise,
  rememberedTokens,
  SOFT_MATCH_PREFIX,
  splitSentences,
  termsMatch,
  type Tokens,
  tokensOf,
  tokensOfPiece
} from "../Terms.js"
import { readFigures } from "./Figures.js"

export type { ClaimVerdict, NuggetAssignment }

export interface ClaimCheck {
  readonly verdict: ClaimVerdict
  /** s, 0..1: the claim's weighted share found in the text (see the module comment). */
  readonly support: number
  /** The sentence of the text that best supports (or contradicts) the claim; null when no sentence shares a term with it. */
  readonly evidence: string | null
  /** What decided the verdict, in the words a report shows (see `Finding`). */
  readonly finding: Finding
}

/** What decided a check, named for what the checker measures (words, not meaning — so not "entailed"); reports show it. */
export type Finding =
  | "words and figures found"
  | "figure conflict"
  | "negation conflict"
  | "figure not found"
  | "name not found"
  | "too few words found"

/** The texts of the claim's case, whose sentences weigh its terms; one object per case (its statistics are kept on it). */
export interface CaseTexts {
  readonly question?: string | undefined
  readonly answer?: string | undefined
  readonly reference?: string | undefined
  readonly contexts?: ReadonlyArray<string> | undefined
  readonly nuggets?: ReadonlyArray<string> | undefined
}

/** Support at or above which a claim can be entailed (or contradicted). */
export const ENTAIL_AT = 0.4
/** Share of the claim's weight the evidence sentence must hold for a negation to contradict. */
const NEGATION_OVERLAP = 0.7
/** Weight factor of a term with a digit. */
const NUMBER_WEIGHT = 2

/** The model: its constants, and the rules `bench/claims-lodo.ts` switches off to measure them. */
export interface ClaimModel {
  readonly entailAt: number
  /** Weight of the best sentence in the support; the rest is the whole text's. */
  readonly sentenceShare: number
  /** Weight factor of a term the question holds. */
  readonly questionWeight: number
  /** In a grounding check (an answer's claim against a retrieved passage), the phrase share's part of the support. */
  readonly phraseShare: number
  /** Weigh terms by their rarity among the case's sentences (else 1). */
  readonly caseWeights: boolean
  /** A gold claim (a reference's or a nugget, checked for recall) weighs its terms 1: the answer repeating them makes them common. */
  readonly goldAlike: boolean
  readonly numbers: boolean
  readonly negation: boolean
  /** A universal quantity ("every day") against a figure stated in its unit ("three days a week") conflicts. */
  readonly universals: boolean
  /**
   * An answer's claim naming two things or more needs one sentence of the reference naming them all
   * (not in grounding checks, where the phrase share relates the claim's words, nor for gold claims).
   */
  readonly namesTogether: boolean
}

export const DEFAULT_MODEL: ClaimModel = {
  entailAt: ENTAIL_AT,
  sentenceShare: 0.3,
  questionWeight: 0.5,
  phraseShare: 0.75,
  caseWeights: true,
  goldAlike: true,
  numbers: true,
  negation: true,
  universals: true,
  namesTogether: true
}

// ---------------------------------------------------------------------------------------------
// Reading texts

const NUMBER = /(?<![\p{L}\p{N}.,])\d+(?:[.,]\d+)*/gu
const THOUSANDS = /^\d{1,3}(?:,\d{3})+(?:\.\d+)?$/
const NEGATION = /\b(?:not|no|never|none|neither|nor|cannot|without)\b|n't\b/
const NOT_NEGATION =
  /\b(?:not only|not just|no longer|whether or not|no matter|no doubt|not necessarily|no less than|no more than)\b/g
/** A web address: it names a page, it states nothing (a context that is only a URL has no text to entail a claim). */
const WEB_ADDRESS = /\b(?:https?|ftp):\/\/\S+|\bwww\.\S+/gi

/** A text as its sentences are cut and quoted: escapes and apostrophes normalised, web addresses removed. */
const displayText = (text: string): string => {
  const t = normalise(text)
  return t.includes("://") || t.includes("www.") ? t.replace(WEB_ADDRESS, " ") : t
}

/** "7,000" → "7000", "3.5" and "3,5" → "3.5", "007" → "7". */
const numberOf = (raw: string): string => {
  // Digits only (most numbers): no separator to read.
  const n = !raw.includes(",") && !raw.includes(".")
    ? Number(raw)
    : THOUSANDS.test(raw)
    ? Number(raw.replace(/,/g, ""))
    : Number(raw.replace(",", "."))
  return Number.isFinite(n) ? String(n) : raw
}

/** A digit as `NUMBER` reads one (`\d`: ASCII): a text without any states no number. */
const ASCII_DIGIT = /\d/

const numbersOf = (text: string): ReadonlySet<string> => {
  if (!ASCII_DIGIT.test(text)) return EMPTY_SET
  let out: Set<string> | undefined
  // A match of `NUMBER` ends with a digit: no trailing separator to strip.
  NUMBER.lastIndex = 0
  for (let m = NUMBER.exec(text); m !== null; m = NUMBER.exec(text)) (out ??= new Set()).add(numberOf(m[0]))
  return out ?? EMPTY_SET
}
const EMPTY_SET: ReadonlySet<string> = new Set()

/**
 * A universal quantity over a unit ("every day", "each week"; "always", "never" over time): it conflicts
 * only with a figure stated in that unit ("three days per week", "twice a month"), not "every laptop …
 * after 5 minutes".
 */
const UNIVERSAL_OVER = /\b(?:every|each|all)\s+([a-z]+)/g
const ALWAYS = /\b(?:always|never)\b/
const TIME_UNITS: ReadonlyArray<string> = ["time", "day", "week", "month", "year", "hour", "minute"]

/** The units a claim's universal quantities are over (empty: it states none, or states a figure itself). */
const universalUnitsOf = (lower: string, hasFigure: boolean): ReadonlyArray<string> => {
  if (hasFigure) return []
  const units = new Set<string>()
  UNIVERSAL_OVER.lastIndex = 0
  for (let m = UNIVERSAL_OVER.exec(lower); m !== null; m = UNIVERSAL_OVER.exec(lower)) {
    units.add(m[1]!.replace(/s$/, ""))
  }
  if (ALWAYS.test(lower)) { for (const u of TIME_UNITS) units.add(u) }
  return [...units]
}

/** Does the sentence (as read: figures in digits) count one of `units` ("3 days", "2 times a month")? */
const countsIn = (read: string, units: ReadonlyArray<string>): boolean =>
  new RegExp(`\\b\\d+(?:[.,]\\d+)?\\s+(?:${units.map((u) => u.replace(/[^a-z]/g, "")).join("|")})s?\\b`, "i")
    .test(read) || (units.includes("time") && /\b(?:once|twice|thrice)\b/i.test(read))

const WORD_RUN = /[\p{L}\p{N}'-]+/gu
/** A capital (`\p{Lu}`) at `lastIndex`: asked only of characters beyond ASCII. */
const CAPITAL_AT = /\p{Lu}/uy
const UPPER_START = /^\p{Lu}/u
const INSIDE_SENTENCE = /[\p{L}\p{N},;:)'"”’]\s+$/u

/** The capitals of a word (`\p{Lu}`, by code point), counted up to 2: none, one, or more. */
const capitalsOf = (word: string): number => {
  let n = 0
  for (let i = 0; i < word.length && n < 2;) {
    const c = word.charCodeAt(i)
    if (c < 128) {
      if (c >= 65 && c <= 90) n++
      i++
    } else {
      CAPITAL_AT.lastIndex = i
      if (CAPITAL_AT.test(word)) {
        n++
        i = CAPITAL_AT.lastIndex
      } else i += codePointLength(word, i)
    }
  }
  return n
}

/**
 * Does `INSIDE_SENTENCE` hold of the text before `at`? Only its last characters can tell: the white
 * space before `at`, and the character before that (read with the one before it, a surrogate pair's
 * first half) — not the whole text before every capitalised word.
 */
const insideSentence = (text: string, at: number): boolean => {
  let p = at
  while (p > 0 && isSpace(text.charCodeAt(p - 1))) p--
  return p < at && p > 0 && INSIDE_SENTENCE.test(text.slice(Math.max(0, p - 2), at))
}

/**
 * The names of a claim, as terms: a word with two capitals ("FICA", "GPT-3"), or a capitalised word
 * inside a sentence — after white space that follows a letter, a digit, ",", ";", ":" or a closing
 * quote or bracket (a capital at the start, or after ". " or "(", only opens a sentence).
 */
export const namesOf = (text: string): ReadonlyArray<string> => {
  const names = new Set<string>()
  // `exec` on the shared expression, not `matchAll` (which copies it at every call).
  WORD_RUN.lastIndex = 0
  for (let m = WORD_RUN.exec(text); m !== null; m = WORD_RUN.exec(text)) {
    const word = m[0]
    const capitals = capitalsOf(word)
    if (capitals >= 2 || (capitals === 1 && UPPER_START.test(word) && insideSentence(text, m.index))) {
      for (const t of tokensOf(word.toLowerCase()).terms) names.add(t)
    }
  }
  return [...names]
}

const DIGITS = /^\p{N}+$/u
const ANY_DIGIT = /\p{N}/u
const PLAIN_WORD = /[\p{L}\p{N}]+/gu

/** The terms of a piece of text, its digit runs replaced by its numbers as values ("7,000" → "7000"; "1st" stays). */
const termsOf = (
  text: string,
  lower: string,
  tokens: Tokens = tokensOf(lower)
): { readonly terms: Array<string>; readonly words: number; readonly numbers: ReadonlySet<string> } => {
  // No digit at all: no number either (`numbersOf` reads ASCII digits, a subset).
  if (!ANY_DIGIT.test(text)) return { terms: tokens.terms as Array<string>, words: tokens.words, numbers: EMPTY_SET }
  const terms = tokens.terms.filter((t) => !DIGITS.test(t))
  const numbers = numbersOf(text)
  for (const n of numbers) terms.push(n)
  return { terms, words: tokens.words, numbers }
}

/** Where a negation's reach ends in a sentence; not at "and" or "or" ("does not sink or float"). */
const NEGATION_SCOPE = /\s*[;:]\s+|,\s+|\s+(?=(?:but|while|whereas|although|though|because|since|which)\s)/
const isNegated = (lower: string): boolean =>
  NEGATION.test(lower.includes("no") ? lower.replace(NOT_NEGATION, " ") : lower)

/** A sentence of a text, with its numbers (read with its terms). */
class Sentence {
  /** `text`: the sentence as written (the evidence quoted); `read`: as the checker reads it. */
  constructor(readonly text: string, readonly read: string, readonly numbers: ReadonlySet<string>) {}

  /** Is a clause of the sentence holding a claim term negated ("…; the U.S. does not" says nothing of another clause)? */
  negatedFor(terms: ReadonlyArray<string>): boolean {
    const lower = this.read.toLowerCase()
    if (!isNegated(lower)) return false
    const parts = lower.split(NEGATION_SCOPE)
    if (parts.length === 1) return true
    for (const part of parts) {
      if (!isNegated(part)) continue
      const held = tokensOf(part).terms
      if (terms.some((t) => held.some((h) => termsMatch(t, h)))) return true
    }
    return false
  }
}

/** The sentences holding a term: one index (most terms), else the ascending list — a list only for repeated terms. */
type Postings = number | Array<number>

const union = (a: Postings, b: Postings): Postings => {
  const all = new Set<number>(typeof a === "number" ? [a] : a)
  if (typeof b === "number") all.add(b)
  else for (const i of b) all.add(i)
  return [...all].sort((x, y) => x - y)
}

/** Adds sentence `index` to `term`'s postings (sentences are read in order). */
const post = (postings: Map<string, Postings>, term: string, index: number): void => {
  const held = postings.get(term)
  if (held === undefined) postings.set(term, index)
  else if (typeof held === "number") {
    if (held !== index) postings.set(term, [held, index])
  } else if (held[held.length - 1] !== index) held.push(index)
}

/** A text read once: its sentences, and each term's postings (a claim is checked against all sentences at once). */
class Reading {
  readonly sentences: ReadonlyArray<Sentence>
  /** Every number the text states. */
  readonly numbers = new Set<string>()
  /** Exact term → the sentences holding it (see `Postings`). */
  private readonly postings: Map<string, Postings>
  /** A prefix → the text's terms with it (candidates of the soft match). */
  private prefixes: Map<string, Array<string>> | undefined
  /** Every word → the sentences holding it; built only for a claim without content terms. */
  private wordPostings: Map<string, Postings> | undefined
  /** Claim term → the sentences holding a term it matches (soft match), or null: none. */
  private found: Map<string, Postings | null> | undefined
  /** Each sentence's terms in order, for `pairsAmong`. */
  private readonly sequences: Array<ReadonlyArray<string>> = []

  constructor(raw: string) {
    const sentences: Array<Sentence> = []
    const postings = new Map<string, Postings>()
    for (const part of splitSentences(displayText(raw))) {
      const shown = part.trim()
      // Read with figures and citations as `Figures.ts` reads them; quoted as written.
      const t = readFigures(shown).trim()
      if (t.length === 0) continue
      // The claim extractor remembers the sentences of the answer and the reference it cut.
      const lower = t.toLowerCase()
      const raw = rememberedTokens(lower)
      const tokens = termsOf(t, lower, raw)
      if (tokens.words === 0) continue
      for (const term of tokens.terms) post(postings, term, sentences.length)
      sentences.push(new Sentence(shown, t, tokens.numbers))
      for (const n of tokens.numbers) this.numbers.add(n)
      // In the order written, numbers where they stand (`termsOf` moves them to the end).
      this.sequences.push(raw.terms)
    }
    this.sentences = sentences
    this.postings = postings
  }

  /**
   * The text's adjacent term pairs ("a b") whose two terms are both in `wanted` (the terms of the
   * claims being checked): one pass over the text per check, and a set no larger than the claims'
   * pairs — a long passage's every pair is never held.
   */
  pairsAmong(wanted: ReadonlySet<string>): Set<string> {
    const pairs = new Set<string>()
    for (const seq of this.sequences) {
      let before = false
      for (let i = 0; i < seq.length; i++) {
        const here = wanted.has(seq[i]!)
        if (here && before) pairs.add(seq[i - 1] + " " + seq[i])
        before = here
      }
    }
    return pairs
  }

  /** How many sentences hold `term` (exact match). */
  sentencesHolding(term: string): number {
    const held = this.postings.get(term)
    return held === undefined ? 0 : typeof held === "number" ? 1 : held.length
  }

  /** The sentences holding a word (stopwords included, exact), for claims without content terms; null when none. */
  sentencesWithWord(word: string): Postings | null {
    if (this.wordPostings === undefined) {
      const postings = this.wordPostings = new Map()
      this.sentences.forEach((s, i) => {
        for (const w of s.text.toLowerCase().match(PLAIN_WORD) ?? []) post(postings, w, i)
      })
    }
    return this.wordPostings.get(word) ?? null
  }

  /** The sentences holding a term that matches `term` (soft match); null when none. */
  sentencesWith(term: string): Postings | null {
    const exact = this.postings.get(term) ?? null
    // A term shorter than the soft-match prefix matches only itself.
    if (term.length < SOFT_MATCH_PREFIX) return exact
    const candidates = this.prefixIndex().get(term.slice(0, SOFT_MATCH_PREFIX))
    // No other term of the text shares the prefix (most terms): the exact postings, nothing to remember.
    if (candidates === undefined || (candidates.length === 1 && candidates[0] === term)) return exact
    const found = (this.found ??= new Map())
    const memo = found.get(term)
    if (memo !== undefined) return memo
    let result: Postings | null = exact
    for (const c of candidates) {
      if (c === term || !termsMatch(term, c)) continue
      const more = this.postings.get(c)!
      result = result === null ? more : union(result, more)
    }
    found.set(term, result)
    return result
  }

  /** The text's terms by their first `SOFT_MATCH_PREFIX` characters (the candidates of the soft match), built when first needed. */
  private prefixIndex(): Map<string, Array<string>> {
    if (this.prefixes === undefined) {
      const prefixes = new Map<string, Array<string>>()
      for (const t of this.postings.keys()) {
        if (t.length < SOFT_MATCH_PREFIX) continue
        const key = t.slice(0, SOFT_MATCH_PREFIX)
        const list = prefixes.get(key)
        if (list === undefined) prefixes.set(key, [t])
        else list.push(t)
      }
      this.prefixes = prefixes
    }
    return this.prefixes
  }
}

/** A claim read once: its distinct terms, numbers, names (as terms) and polarity. */
interface ClaimReading {
  readonly terms: ReadonlyArray<string>
  /** Its terms in order, repeats included. */
  readonly sequence: ReadonlyArray<string>
  /** The claim has no content term: `terms` are its plain words, matched against the text's words. */
  readonly plain: boolean
  readonly numbers: ReadonlySet<string>
  readonly names: ReadonlyArray<string>
  readonly negated: boolean
  /** The units its universal quantities are over ("every day" → day), when it states no figure. */
  readonly universal: ReadonlyArray<string>
  /** Its terms' weights in the case last checked (`weightsOf`: that case's cache). */
  weightsOf?: Map<string, number> | undefined
  weights?: ReadonlyArray<number> | undefined
}

/** Texts and claims kept: a case with many passages and claims is read once. */
const SLOTS = 32

/**
 * The last texts and claims read: a case's texts are checked back to back (its claims against the
 * reference, the answer, each context), so reuse is local — rings, not tables (`Recent.ts`).
 */
const cachedBy = <A>(slots: number, read: (raw: string) => A): (raw: string) => A => {
  const cache = recent<string, A>(slots)
  return (raw) => cache.get(raw, read)
}

const readText = cachedBy(SLOTS, (raw) => new Reading(raw))

const readClaim = cachedBy(SLOTS, (raw): ClaimReading => {
  // Read as a text's sentences are: citations, opening numbers, number words and units (`Figures.ts`).
  const text = readFigures(displayText(raw)).trim()
  const lower = text.toLowerCase()
  const tokens = tokensOfPiece(lower)
  // Its terms in the order written, numbers where they stand, for the phrase share; `termsOf` reads the numbers as values.
  const sequence = tokens.terms
  const read = termsOf(text, lower, tokens)
  let terms = [...new Set(read.terms)]
  // A claim of stopwords only ("Yes.", "No, it is not.") is checked on its words.
  const plain = terms.length === 0
  if (plain) terms = [...new Set(lower.match(PLAIN_WORD) ?? [])]
  return {
    terms,
    sequence,
    plain,
    // `numbersOf(text)`, as `termsOf` read them.
    numbers: read.numbers,
    names: plain ? [] : namesOf(text),
    negated: isNegated(lower),
    universal: universalUnitsOf(lower, ASCII_DIGIT.test(text)),
    weightsOf: undefined,
    weights: undefined
  }
})

// ---------------------------------------------------------------------------------------------
// The case's term statistics

/** A case's texts read, N (its sentences), and its term weights, one cache per model. */
interface CaseStats {
  readonly weights: WeakMap<ClaimModel, Map<string, number>>
  readonly question: Reading
  readonly texts: ReadonlyArray<Reading>
  readonly sentences: number
}

/** The last cases' statistics (a case's checks run back to back; see `Recent.ts` for why not a WeakMap). */
const caseStats = recent<CaseTexts, CaseStats>(2)

const readStats = (texts: CaseTexts): CaseStats => {
  const raw = [texts.question, texts.answer, texts.reference, ...(texts.contexts ?? []), ...(texts.nuggets ?? [])]
  const readings = raw.filter((t): t is string => t !== undefined).map(readText)
  let sentences = 0
  for (const r of readings) sentences += r.sentences.length
  return { weights: new WeakMap(), question: readText(texts.question ?? ""), texts: readings, sentences }
}

const statsOf = (texts: CaseTexts): CaseStats => caseStats.get(texts, readStats)

/** The weights of a claim's terms in a case (see the module comment), kept on the claim for the case's next checks. */
const claimWeights = (claim: ClaimReading, stats: CaseStats | undefined, model: ClaimModel): ReadonlyArray<number> => {
  if (stats === undefined) return claim.terms.map((t) => (hasDigit(t) ? NUMBER_WEIGHT : 1))
  let cache = stats.weights.get(model)
  if (cache === undefined) stats.weights.set(model, cache = new Map())
  if (claim.weightsOf === cache) return claim.weights!
  const weights = claim.terms.map((term) => {
    let w = cache.get(term)
    if (w === undefined) {
      let df = 0
      for (const r of stats.texts) df += r.sentencesHolding(term)
      w = (model.caseWeights ? Math.log(1 + (stats.sentences + 1) / (df + 1)) : 1) *
        (stats.question.sentencesWith(term) === null ? 1 : model.questionWeight) *
        (hasDigit(term) ? NUMBER_WEIGHT : 1)
      cache.set(term, w)
    }
    return w
  })
  claim.weightsOf = cache
  claim.weights = weights
  return weights
}

/** Per-sentence weights of one check: one buffer, zeroed for each check (checks allocate nothing per sentence). */
let scratch = new Float64Array(64)
const heldBuffer = (n: number): Float64Array => {
  if (scratch.length < n) scratch = new Float64Array(Math.max(n, 2 * scratch.length))
  scratch.fill(0, 0, n)
  return scratch
}

/** The share of the claim's adjacent term pairs that are adjacent in a sentence of the text (`pairs`: `Reading.pairsAmong`). */
const phraseShareOf = (sequence: ReadonlyArray<string>, pairs: ReadonlySet<string>): number => {
  let found = 0
  for (let i = 1; i < sequence.length; i++) if (pairs.has(sequence[i - 1] + " " + sequence[i])) found++
  return found / (sequence.length - 1)
}

/** Does one sentence of the text hold every one of `names` (soft match)? */
const namedTogether = (names: ReadonlyArray<string>, text: Reading): boolean => {
  let common: ReadonlyArray<number> | undefined
  for (const name of names) {
    const where = text.sentencesWith(name)
    const list = where === null ? [] : typeof where === "number" ? [where] : where
    common = common === undefined ? list : common.filter((i) => list.includes(i))
    if (common.length === 0) return false
  }
  return true
}

const checkOne = (
  claim: ClaimReading,
  text: Reading,
  stats: CaseStats | undefined,
  model: ClaimModel,
  /** In a grounding check, the text's pairs among the claims' terms; else undefined. */
  pairs: ReadonlySet<string> | undefined,
  /** Names together applies (see `ClaimModel.namesTogether`). */
  names: boolean
): ClaimCheck => {
  const { terms } = claim
  const weights = claimWeights(claim, stats, model)
  const held = heldBuffer(text.sentences.length)
  let total = 0
  let inText = 0
  for (let k = 0; k < terms.length; k++) {
    const term = terms[k]!
    const w = weights[k]!
    total += w
    const where = claim.plain ? text.sentencesWithWord(term) : text.sentencesWith(term)
    if (where === null) continue
    inText += w
    if (typeof where === "number") held[where]! += w
    else for (const i of where) held[i]! += w
  }
  if (total === 0) return { verdict: "neutral", support: 0, evidence: null, finding: "too few words found" }
  let best: Sentence | undefined
  let bestHeld = 0
  for (let i = 0; i < text.sentences.length; i++) {
    if (held[i]! > bestHeld) {
      bestHeld = held[i]!
      best = text.sentences[i]
    }
  }
  const bestShare = bestHeld / total
  let support = model.sentenceShare * bestShare + (1 - model.sentenceShare) * (inText / total)
  if (pairs !== undefined && !claim.plain && claim.sequence.length >= 2) {
    support = (1 - model.phraseShare) * support + model.phraseShare * phraseShareOf(claim.sequence, pairs)
  }

  let missing = false
  if (model.numbers) { for (const n of claim.numbers) if (!text.numbers.has(n)) missing = true }
  // A figure the text lacks while the sentence holding the claim states others; or "every day" against
  // "three days per week" (the quantity the sentence states as a figure, in its unit).
  const figureConflict = best !== undefined && best.numbers.size > 0 &&
    (missing || (model.universals && claim.universal.length > 0 && countsIn(best.read, claim.universal)))
  const finding: Finding = support < model.entailAt
    ? "too few words found"
    : figureConflict
    ? "figure conflict"
    : model.negation && best !== undefined && bestShare >= NEGATION_OVERLAP && claim.negated !== best.negatedFor(terms)
    ? "negation conflict"
    : missing
    ? "figure not found"
    : names && claim.names.length >= 2 && !namedTogether(claim.names, text)
    ? "name not found"
    : "words and figures found"
  const verdict = finding === "words and figures found"
    ? "entailed"
    : finding.endsWith("conflict")
    ? "contradicted"
    : "neutral"
  return { verdict, support, evidence: best?.text ?? null, finding }
}

/** How a check reads its text: `grounding`, an answer's claims against a passage retrieved for it (phrases count); `gold`, a reference's claims or nuggets. */
export interface CheckOptions {
  readonly grounding?: boolean | undefined
  readonly gold?: boolean | undefined
}

/** The model a gold claim is weighed by, one object per model (the case's weight caches are per model). */
const goldModels = new WeakMap<ClaimModel, ClaimModel>()
const goldModelOf = (model: ClaimModel): ClaimModel => {
  let gold = goldModels.get(model)
  if (gold === undefined) goldModels.set(model, gold = { ...model, caseWeights: false })
  return gold
}

/**
 * Check each claim against `text` (see the module comment): its verdict, its support and the
 * sentence of the text that decides it. `context`: the case's texts, which weigh the claims' terms;
 * without it every term weighs alike. Deterministic: the same input gives the same checks.
 */
export const checkClaims = (
  claims: ReadonlyArray<string>,
  text: string,
  context?: CaseTexts,
  base: ClaimModel = DEFAULT_MODEL,
  options: CheckOptions = {}
): ReadonlyArray<ClaimCheck> => {
  const model = options.gold === true && base.goldAlike ? goldModelOf(base) : base
  const reading = readText(text)
  const stats = context === undefined ? undefined : statsOf(context)
  const read = claims.map(readClaim)
  let pairs: Set<string> | undefined
  if (options.grounding === true && model.phraseShare > 0) {
    const wanted = new Set<string>()
    for (const c of read) for (const t of c.sequence) wanted.add(t)
    pairs = reading.pairsAmong(wanted)
  }
  const names = model.namesTogether && options.grounding !== true && options.gold !== true
  return read.map((claim) => checkOne(claim, reading, stats, model, pairs, names))
}

/** Support at or above which a nugget the answer does not entail is partly supported: half the entailment threshold. */
export const PARTIAL_AT = ENTAIL_AT / 2

/**
 * A nugget's AutoNuggetizer assignment from its check against the answer: entailed → support;
 * neutral with support ≥ `PARTIAL_AT` (part of its weight found, or all of it but a number or name
 * missing) → partial_support; contradicted, or less support → not_support.
 */
export const nuggetAssignment = (check: ClaimCheck): NuggetAssignment =>
  check.verdict === "entailed"
    ? "support"
    : check.verdict === "neutral" && check.support >= PARTIAL_AT
    ? "partial_support"
    : "not_support"
