/**
 * The offline claim extractor: a text → its claims, spans of the text itself (a report can point at
 * them), cut where its author put the joints: fenced code, citation markers (`Figures.CITATION`),
 * markdown and list markers removed; then lines (a short lead-in line ending in ":" claims nothing),
 * sentences (questions and abstentions claim nothing), and clauses (`CLAUSE_BREAK`, where RAGChecker's
 * extractor splits, each side keeping `MIN_CLAUSE_TERMS` content terms). A text with words but no
 * content term ("Yes.") is one claim. The steps and their measured worth: docs/judge-quality.md.
 */
import { normalise, rememberTokens, splitSentences, type Tokens, tokensOf } from "../Terms.js"
import { removeCitations } from "./Figures.js"

/** A line of at most this many words that ends in ":" introduces a list: it claims nothing. */
export const LEAD_IN_WORDS = 12
/** Each side of a clause cut keeps at least this many content terms. */
export const MIN_CLAUSE_TERMS = 3

const CODE_FENCE = /```[\s\S]*?(?:```|$)/g
/**
 * A sentence that abstains: it says the answer is not known or not in the passages ("I don't know",
 * "The passages do not say…", "I am unable to answer based on…", "There is no information about…").
 * It states nothing about the question's subject, so it is not a claim; an answer of such sentences
 * only has no claims, and the kind marks it abstained (`kinds/correctness`).
 */
export const ABSTENTION = new RegExp(
  [
    "\\bi (?:do not|don't|dont) know\\b",
    "\\b(?:i am|i'm|we are|we're) (?:not sure|unsure|unable to|not able to)\\b",
    "\\b(?:i|we) (?:cannot|can't|can not|could not|couldn't) (?:answer|find|determine|tell|say|provide|confirm|know)\\b",
    "\\b(?:unable|not able) to (?:answer|find|determine|tell|say|provide|confirm)\\b",
    "\\b(?:the )?(?:provided |given |retrieved |available )?(?:passages?|context|documents?|sources?|texts?|fragments?|information|excerpts?)(?: provided| given)? (?:do(?:es)? not|don't|doesn't|did not|didn't) (?:say|state|mention|contain|include|specify|provide|cover|address|answer|tell)\\b",
    "\\bthere (?:is|was) (?:no|not enough|insufficient) (?:information|mention|data|detail|details|evidence)\\b",
    "\\b(?:no|not enough|insufficient) information (?:is |was )?(?:available|provided|given)\\b",
    "\\bnot (?:mentioned|stated|specified|covered|provided) in the (?:passages?|context|documents?|sources?|texts?)\\b"
  ].join("|"),
  "iu"
)

/** Words every abstention holds one of: tested first, as most sentences hold none. */
const ABSTENTION_HINT =
  /know|unable|able to|cannot|can not|couldn|unsure|not sure|(?:do|does|did|n[’']t) (?:not )?(?:say|state|mention|contain|include|specify|provide|cover|address|answer|tell)|information|insufficient|not enough|not (?:mentioned|stated|specified|covered|provided) in/i

/** Does the sentence abstain (see `ABSTENTION`)? */
export const abstains = (sentence: string): boolean =>
  ABSTENTION_HINT.test(sentence) && ABSTENTION.test(sentence.replace(/[’‘]/g, "'"))
const EMPHASIS = /\*\*|__/g
const HEADING = /^[ \t]*#{1,6}[ \t]+/
const LIST_MARKER = /^[ \t]*(?:[-*•·‣◦]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z][.)](?=\s))[ \t]+/u
const LOWER_START = /^\p{Ll}/u
/**
 * Where a clause may end: ";" or ":" inside a sentence, a comma, or before a conjunction or relative
 * word — but not before "and" or "or" followed by a number, which join two figures of one quantity
 * ("8 minutes and 20 seconds", "between 5 and 10").
 */
const CLAUSE_BREAK = /\s*[;:]\s+|,\s+|\s+(?=(?:and|or)\s+(?!\d)|(?:but|while|whereas|which|because|since)\s)/gu
const HAS_WORD = /[\p{L}\p{N}]/u

const NO_TOKENS: Tokens = { words: 0, terms: [] }
/** Content terms of a piece of text. */
const tokensOfText = (text: string): Tokens => tokensOf(text.toLowerCase())
/** The tokens of two pieces of text joined by white space or punctuation (no word is cut). */
const joined = (a: Tokens, b: Tokens): Tokens => ({ words: a.words + b.words, terms: [...a.terms, ...b.terms] })

/** A line's sentences, lower-case starts merged back into the sentence before. */
const sentencesOf = (line: string): Array<string> => {
  const out: Array<string> = []
  for (const raw of splitSentences(line)) {
    const piece = raw.trim()
    if (piece.length === 0) continue
    if (out.length > 0 && LOWER_START.test(piece)) out[out.length - 1] = `${out[out.length - 1]} ${piece}`
    else out.push(piece)
  }
  return out
}

/**
 * A sentence's clauses: cut at every `CLAUSE_BREAK`; then a piece with fewer than
 * `MIN_CLAUSE_TERMS` content terms joins the piece before it (the first piece joins the next). Joined
 * pieces are the original text between them, separators included.
 */
interface Piece {
  readonly text: string
  readonly tokens: Tokens
}

const clausesOf = (sentence: string): Array<Piece> => {
  const spans: Array<{ from: number; to: number; tokens: Tokens }> = []
  let last = 0
  const add = (from: number, to: number) => spans.push({ from, to, tokens: tokensOfText(sentence.slice(from, to)) })
  // `exec` on the shared expression, not `matchAll` (which copies the expression at every call);
  // no match is empty, so the loop always advances.
  CLAUSE_BREAK.lastIndex = 0
  for (let m = CLAUSE_BREAK.exec(sentence); m !== null; m = CLAUSE_BREAK.exec(sentence)) {
    if (m.index > last) add(last, m.index)
    last = m.index + m[0].length
  }
  if (spans.length === 0) return [{ text: sentence, tokens: tokensOfText(sentence) }]
  if (last < sentence.length) add(last, sentence.length)
  const merged: typeof spans = []
  for (const span of spans) {
    const prev = merged[merged.length - 1]
    if (
      prev !== undefined && (span.tokens.terms.length < MIN_CLAUSE_TERMS || prev.tokens.terms.length < MIN_CLAUSE_TERMS)
    ) {
      prev.to = span.to
      prev.tokens = joined(prev.tokens, span.tokens)
    } else merged.push({ ...span })
  }
  return merged.map((m) => ({ text: sentence.slice(m.from, m.to).trim(), tokens: m.tokens }))
}

/** For the ablation in `bench/`: `clauses: false` leaves each sentence one claim (no step 4). */
export interface ExtractOptions {
  readonly clauses?: boolean
}

/**
 * The claims of a text (see the module comment): its sentences and clauses, citation markers
 * removed, in text order. Deterministic; a text without words, or of questions only, has none.
 */
export const extractClaims = (text: string, options: ExtractOptions = {}): ReadonlyArray<string> => {
  if (options.clauses === false) return claimsOf(text, false)
  // A case's texts are extracted more than once (its planned rounds count its checks, then the
  // judge extracts them): the last texts' claims are kept (the list is shared: read-only).
  let claims = recentClaims.get(text)
  if (claims === undefined) {
    if (recentClaims.size >= RECENT_TEXTS) recentClaims = new Map()
    recentClaims.set(text, claims = claimsOf(text, true))
  }
  return claims
}

/** Replaced when full, never cleared (see `Terms.ts`). */
let recentClaims = new Map<string, ReadonlyArray<string>>()
const RECENT_TEXTS = 16

const claimsOf = (text: string, clauses: boolean): ReadonlyArray<string> => {
  let clean = normalise(text)
  if (clean.includes("```")) clean = clean.replace(CODE_FENCE, "\n")
  clean = removeCitations(clean)
  if (clean.includes("**") || clean.includes("__")) clean = clean.replace(EMPHASIS, "")
  const claims: Array<string> = []
  for (const rawLine of clean.split(/\r?\n/)) {
    const line = rawLine.replace(HEADING, "").replace(LIST_MARKER, "").trim()
    if (line.length === 0 || (line.endsWith(":") && line.split(/\s+/).length <= LEAD_IN_WORDS)) continue
    for (const sentence of sentencesOf(line)) {
      // A question asks; an abstention says nothing is known: neither claims anything.
      if (sentence.endsWith("?") || abstains(sentence)) continue
      const pieces = clauses ? clausesOf(sentence) : [{ text: sentence, tokens: tokensOfText(sentence) }]
      // The checker reads the text's sentences again (their terms are the pieces' terms, in order:
      // a clause break holds no word): it finds them remembered.
      rememberTokens(
        sentence.toLowerCase(),
        pieces.length === 1 ? pieces[0]!.tokens : pieces.reduce((all: Tokens, p) => joined(all, p.tokens), NO_TOKENS)
      )
      for (const clause of pieces) {
        if (clause.tokens.terms.length === 0) continue
        // The checker reads each claim's terms again: it finds them remembered.
        rememberTokens(clause.text.toLowerCase(), clause.tokens)
        claims.push(clause.text)
      }
    }
  }
  if (claims.length > 0) return claims
  // Words but no content term ("Yes.", "No, it is not."): the whole text is the one claim.
  const whole = clean.replace(/\s+/g, " ").trim()
  return HAS_WORD.test(whole) && !whole.endsWith("?") && !abstains(whole) ? [whole] : []
}
