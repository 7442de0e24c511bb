/**
 * Words, terms and sentences: the tokenisation the heuristic judge (`Heuristic.ts`), its relevance
 * model and the claim model (`claims/`) share, so a word means the same thing to each of them.
 *
 * Vocabulary:
 * - **word**: a run of Unicode letters, marks and digits (apostrophe contractions kept together).
 * - **term**: a lower-cased word that is not a stopword, light-stemmed (plural `-s/-es/-ies`, `-ing`,
 *   `-ed`, final `-e`, doubled final consonant) when it is plain ASCII; words with digits are kept
 *   whole (numbers matter for facts); one-letter words are dropped.
 * - **match**: two terms match when equal, or when (both ≥ 6 letters, no digits) they share a prefix
 *   of at least 6 letters covering ≥ 80% of the shorter one ("benefit" ~ "beneficial",
 *   "digestive" ~ "digestion", but not "internet" ~ "international").
 * - **sentence**: text up to . ! ? (or CJK equivalents) followed by white space, or up to a line
 *   break — but not after a single-letter abbreviation ("U.S.", "e.g.") or a common title ("Dr.").
 */

export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a about above after again against all also am an and any are aren't as at be because been before being below " +
    "between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few " +
    "for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him " +
    "himself his how how's i i'd i'll i'm i've if in into is isn't it it'd it'll it's its itself let's me more most " +
    "mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she " +
    "she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then there " +
    "there's these they they'd they'll they're they've this those through to too under until up very was wasn't we " +
    "we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's " +
    "with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves " +
    // modal verbs, hedges and intensifiers: they carry no topic
    "will shall may might must just often usually typically generally mainly primarily sometimes really quite " +
    "extremely highly simply basically actually rather much many etc eg ie us " +
    // request wording: "explain / tell me / please" is how something is asked, not what
    "please tell explain describe give show let yes ok okay sure well"
  ).split(" ")
)

const WORD = /[\p{L}\p{M}\p{N}]+(?:'[\p{L}\p{M}]+)*/gu
const HAS_DIGIT = /\p{N}/u
/** Does a term (or word) hold a digit? Such terms are kept whole: numbers matter for facts. */
export const hasDigit = (t: string): boolean => HAS_DIGIT.test(t)
const ASCII_WORD = /^[a-z]+$/
const VOWEL = /[aeiouy]/

const undouble = (w: string): string => {
  const n = w.length
  if (n >= 4 && w.charCodeAt(n - 1) === w.charCodeAt(n - 2)) {
    const c = w[n - 1]
    if (c !== "l" && c !== "s" && c !== "z" && !VOWEL.test(c ?? "")) return w.slice(0, -1)
  }
  return w
}

/** Light suffix stemming for plain ASCII words (see the module comment). Idempotent on its output's family. */
export const stem = (word: string): string => {
  let w = word
  if (w.length <= 3 || !ASCII_WORD.test(w)) return w
  if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`
  else if (w.endsWith("sses")) w = w.slice(0, -2)
  else if (w.endsWith("s") && !w.endsWith("ss") && !w.endsWith("us") && !w.endsWith("is")) w = w.slice(0, -1)
  if (w.endsWith("ing") && w.length >= 6 && VOWEL.test(w.slice(0, -3))) w = undouble(w.slice(0, -3))
  else if (w.endsWith("ied") && w.length > 4) w = `${w.slice(0, -3)}y`
  else if (w.endsWith("ed") && w.length >= 5 && VOWEL.test(w.slice(0, -2))) w = undouble(w.slice(0, -2))
  if (w.endsWith("e") && w.length > 3) w = w.slice(0, -1)
  return w
}

/**
 * Caches here are replaced when full, never `clear()`ed: V8 links a cleared Map's old table to its
 * new one, so a table that had reached the old generation kept every later table and its entries
 * alive through young collections — a heuristic run promoted a fifth of all it allocated that way.
 * The caches of a case's pieces and texts are sized for the reuse inside one case, not across cases:
 * once a table is old, every entry put in it is promoted by the young collections, so a large one
 * promoted the data of the last few dozen cases (with the rings of `Recent.ts`, 10,000 heuristic
 * answer-correctness cases promoted 450 MB with 512 pieces and 64 texts, 293–316 MB with 128 and 16).
 */
let stemCache = new Map<string, string | null>()
const STEM_CACHE_LIMIT = 50_000

/** The term for one lower-cased word, or null when it carries no topic. */
const termOf = (word: string): string | null => {
  const cached = stemCache.get(word)
  if (cached !== undefined) return cached
  let w = word
  let result: string | null
  if (STOPWORDS.has(w)) result = null
  else {
    if (w.endsWith("'s")) w = w.slice(0, -2)
    else if (w.includes("'")) w = w.slice(0, w.indexOf("'"))
    if (w.length === 0 || STOPWORDS.has(w)) result = null
    else if (HAS_DIGIT.test(w)) result = w
    else if (w.length < 2) result = null
    else result = stem(w)
  }
  if (stemCache.size >= STEM_CACHE_LIMIT) stemCache = new Map()
  stemCache.set(word, result)
  return result
}

export interface Tokens {
  /** All words, stopwords included. */
  readonly words: number
  /** Content terms in order, repeats kept. */
  readonly terms: ReadonlyArray<string>
}

export const tokensOf = (lower: string): Tokens => {
  const found = lower.match(WORD)
  if (found === null) return { words: 0, terms: [] }
  const terms: Array<string> = []
  for (const w of found) {
    const t = termOf(w)
    if (t !== null) terms.push(t)
  }
  return { words: found.length, terms }
}

let recentPieces = new Map<string, Tokens>()
const RECENT_PIECES = 128

/**
 * `tokensOf` for short pieces of text that are tokenised twice — a claim's terms are counted by the
 * claim extractor and read again by the claim checker: the extractor `rememberTokens` what it
 * counted, and the checker finds it here. A small cache, replaced when full (see `stemCache`).
 */
export const tokensOfPiece = (lower: string): Tokens => {
  let tokens = recentPieces.get(lower)
  if (tokens === undefined) rememberTokens(lower, tokens = tokensOf(lower))
  return tokens
}

/** `tokensOf`, from the pieces remembered if it is one of them (without remembering it otherwise). */
export const rememberedTokens = (lower: string): Tokens => recentPieces.get(lower) ?? tokensOf(lower)

/** Remember the tokens of a lower-cased piece (they must be `tokensOf(lower)`), for `tokensOfPiece`. */
export const rememberTokens = (lower: string, tokens: Tokens): void => {
  if (recentPieces.size >= RECENT_PIECES) recentPieces = new Map()
  recentPieces.set(lower, tokens)
}

/** Content terms of a text (lower-cased, stopwords removed, light-stemmed), in order. */
export const terms = (text: string): ReadonlyArray<string> => tokensOf(normalise(text).toLowerCase()).terms

/** Letters two terms must share at the start to match softly (see `termsMatch`). */
export const SOFT_MATCH_PREFIX = 6
const PREFIX = SOFT_MATCH_PREFIX

const sharesStem = (a: string, b: string): boolean => {
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++
  return i >= PREFIX && i >= 0.8 * n
}

/** Do two terms match (equal, or the shared-stem rule of the module comment)? Symmetric; `TermBag.has` agrees. */
export const termsMatch = (a: string, b: string): boolean =>
  a === b ||
  (a.length >= PREFIX && b.length >= PREFIX && a.charCodeAt(0) === b.charCodeAt(0) && ASCII_WORD.test(a) &&
    ASCII_WORD.test(b) && sharesStem(a, b))

/** A set of terms with the soft (shared-stem) match described in the module comment. */
export class TermBag {
  readonly set: ReadonlySet<string>
  private index: Map<string, Array<string>> | undefined
  constructor(terms: Iterable<string>) {
    this.set = new Set(terms)
  }
  get size(): number {
    return this.set.size
  }
  has(term: string): boolean {
    if (this.set.has(term)) return true
    if (term.length < PREFIX) return false
    if (this.index === undefined) {
      const index = new Map<string, Array<string>>()
      for (const t of this.set) {
        if (t.length < PREFIX || !ASCII_WORD.test(t)) continue
        const key = t.slice(0, PREFIX)
        const list = index.get(key)
        if (list === undefined) index.set(key, [t])
        else list.push(t)
      }
      this.index = index
    }
    const candidates = this.index.get(term.slice(0, PREFIX))
    // The ASCII test after the prefix lookup: most terms share no prefix, and the test is the dearer.
    if (candidates === undefined || !ASCII_WORD.test(term)) return false
    for (const c of candidates) if (sharesStem(term, c)) return true
    return false
  }
}

export const EMPTY_BAG = new TermBag([])

/** Titles and abbreviations after whose dot a sentence does not end (`SENTENCE_BREAK` and `TITLE`). */
const ABBREVIATIONS = "mr|mrs|ms|dr|vs|st|prof|fig|approx|no|al|cf|jr|sr"

/**
 * A sentence ends at . ! ? (or CJK equivalents), with any closing quotes or brackets after it,
 * followed by white space, or at a line break — but not after a single-letter abbreviation ("U.S.",
 * "e.g.") or a common title or abbreviation ("Dr.", "vs.", "et al.", "cf."). This regular expression
 * states the rule; `splitSentences` applies it (looking only at the white space that can end a sentence: the
 * expression's variable lookbehind, tried at every position, cost a sixth of the claim checker's time).
 */
export const SENTENCE_BREAK = new RegExp(
  `(?<=[.!?。！？]["'”’)\\]]*)(?<!(?:^|[\\s.])\\p{L}\\.)(?<!\\b(?:${ABBREVIATIONS})\\.)\\s+|\\n+`,
  "iu"
)

/** JavaScript's `\s`, by character code. */
export const isSpace = (c: number): boolean =>
  c === 32 || (c >= 9 && c <= 13) ||
  (c > 127 &&
    (c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f ||
      c === 0x205f || c === 0x3000 || c === 0xfeff))
/** The length of the code point at `i`, in code units (a surrogate pair is one, as the `u` flag reads it). */
export const codePointLength = (text: string, i: number): number => {
  const c = text.charCodeAt(i)
  if (c < 0xd800 || c > 0xdbff) return 1
  const d = text.charCodeAt(i + 1)
  return d >= 0xdc00 && d <= 0xdfff ? 2 : 1
}
/** `["'”’)\]]`: what may close a sentence after its final mark, by character code (tested at every space). */
const isCloser = (c: number): boolean => c === 34 || c === 39 || c === 41 || c === 93 || c === 0x201d || c === 0x2019
/** `[.!?。！？]`, by character code. */
const isTerminal = (c: number): boolean =>
  c === 46 || c === 33 || c === 63 || c === 0x3002 || c === 0xff01 || c === 0xff1f
const LETTER = /\p{L}/u
const TITLE = new RegExp(`(?:^|[^A-Za-z0-9_])(?:${ABBREVIATIONS})$`, "i")

/** Does a sentence end right before position `p` (the start of a run of white space)? See `SENTENCE_BREAK`. */
const endsSentence = (text: string, p: number): boolean => {
  let i = p - 1
  while (i >= 0 && isCloser(text.charCodeAt(i))) i--
  if (i < 0 || !isTerminal(text.charCodeAt(i))) return false
  if (text.charCodeAt(p - 1) !== 46) return true
  // A single letter before the final dot ("e.g.", "U.S."), or a title ("Dr.").
  if (
    p >= 2 && LETTER.test(text[p - 2]!) && (p === 2 || isSpace(text.charCodeAt(p - 3)) || text.charCodeAt(p - 3) === 46)
  ) return false
  return !TITLE.test(text.slice(Math.max(0, p - 8), p - 1))
}

/**
 * Where a run of white space can end a sentence: right after a final mark and its closing quotes
 * or brackets, or at a line break. Other runs (between the words of a sentence: nearly all of them)
 * never do, so only these are looked at.
 */
const BREAK_CANDIDATE = /[.!?。！？]["'”’)\]]*\s|\n/g

/**
 * The sentences of a text by `SENTENCE_BREAK`: the same pieces as `text.split(SENTENCE_BREAK)`,
 * but for white space around line breaks (kept at a piece's edges, where callers trim it). Each run
 * of white space is a break when it holds a line break or follows the end of a sentence; the runs
 * that can be are found by `BREAK_CANDIDATE` (the engine's scan for it is several times faster than
 * testing every character here), each examined whole, once.
 */
export const splitSentences = (text: string): Array<string> => {
  const out: Array<string> = []
  let start = 0
  const n = text.length
  BREAK_CANDIDATE.lastIndex = 0
  for (let m = BREAK_CANDIDATE.exec(text); m !== null; m = BREAK_CANDIDATE.exec(text)) {
    // The run of white space the candidate ends in: from its first character (a line break may
    // follow others) to its end.
    let p = m.index + m[0].length - 1
    while (p > 0 && isSpace(text.charCodeAt(p - 1))) p--
    let i = p
    let newline = false
    while (i < n && isSpace(text.charCodeAt(i))) {
      if (text.charCodeAt(i) === 10) newline = true
      i++
    }
    if (newline || endsSentence(text, p)) {
      out.push(text.slice(start, p))
      start = i
    }
    BREAK_CANDIDATE.lastIndex = i
  }
  out.push(text.slice(start))
  return out
}

const ESCAPED_BREAK = /\\r\\n|\\n|\\r/g
const CURLY_APOSTROPHE = /[\u2018\u2019\u02bc]/g
const PLACEHOLDER = /^\s*\((?:no|none)\b[^)]*\)\s*$/i

/**
 * Text as the heuristics read it: literal `\n` escapes become line breaks, curly apostrophes straight
 * ones, and placeholder text such as "(no previous conversation)" nothing.
 */
export function normalise(text: string): string {
  let t = text
  if (t.includes("\\")) t = t.replace(ESCAPED_BREAK, "\n")
  if (t.includes("\u2019") || t.includes("\u2018") || t.includes("\u02bc")) t = t.replace(CURLY_APOSTROPHE, "'")
  return PLACEHOLDER.test(t) ? "" : t
}
