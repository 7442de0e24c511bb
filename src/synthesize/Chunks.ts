/**
 * Documents cut into chunks — the passages questions are written from, and the passage collection a
 * retriever searches (`corpus.jsonl`).
 *
 * - **Where**: a heading starts a new chunk (its text opens the chunk, and the chunk's title is the
 *   document's title and the headings above it); paragraphs are added until the next one would pass
 *   `--chunk-tokens`; a paragraph longer than that is cut at sentence ends, and a sentence longer
 *   than that at spaces.
 * - **Tokens** are estimated as rag-eval estimates them everywhere: ≈ 4 characters a token.
 * - **Ids are stable**: `<document>#<position>-<hash>` — the document's path (or `file.jsonl:<id>`),
 *   the chunk's 0-based position in it and the first 8 hex digits of the SHA-256 of its text. The same
 *   corpus chunked with the same `--chunk-tokens` gives the same ids; an edited chunk gets a new one.
 */
import { sha256 } from "../judges/Prompt.js"
import { splitSentences } from "../judges/Terms.js"
import type { Block, SourceDocument } from "./Documents.js"

export const CHARS_PER_TOKEN = 4
export const DEFAULT_CHUNK_TOKENS = 300
/** A chunk this short (in words) is not asked about: it holds too little to write a question from. */
export const MIN_WORDS = 12

/** One chunk as written to `corpus.jsonl`. */
export interface Chunk {
  readonly id: string
  readonly text: string
  /** The document's path (or `file.jsonl:<id>`). */
  readonly document: string
  /** The document's title and the headings above the chunk, `›`-separated; absent when there is none. */
  readonly title?: string | undefined
  readonly url?: string | undefined
  /** 0-based position in the document. */
  readonly position: number
}

export const chunkId = (document: string, position: number, text: string): string =>
  `${document}#${position}-${sha256(text).slice(0, 8)}`

/** Pieces of a text of at most `max` characters: whole sentences where they fit, else cut at spaces. */
export const splitLong = (text: string, max: number): Array<string> => {
  if (text.length <= max) return [text]
  const out: Array<string> = []
  let current = ""
  const push = (piece: string) => {
    if (current === "") current = piece
    else if (current.length + 1 + piece.length <= max) current += " " + piece
    else {
      out.push(current)
      current = piece
    }
  }
  for (const sentence of splitSentences(text).map((x) => x.trim()).filter((x) => x !== "")) {
    if (sentence.length <= max) {
      push(sentence)
      continue
    }
    let rest = sentence
    while (rest.length > max) {
      const cut = rest.lastIndexOf(" ", max)
      const at = cut > max / 2 ? cut : max
      push(rest.slice(0, at).trim())
      rest = rest.slice(at).trim()
    }
    if (rest !== "") push(rest)
  }
  if (current !== "") out.push(current)
  return out
}

/** The chunks of one document, as its blocks stream in. */
export async function* chunkDocument(doc: SourceDocument, chunkTokens: number): AsyncGenerator<Chunk> {
  const max = chunkTokens * CHARS_PER_TOKEN
  const headings: Array<{ level: number; text: string }> = []
  let parts: Array<string> = []
  let size = 0
  let position = 0
  let title: string | undefined = doc.title
  const titleNow = () => {
    const path = [...(doc.title === undefined ? [] : [doc.title]), ...headings.map((h) => h.text)]
    // A document whose first heading repeats its title says it once.
    const deduped = path.filter((t, i) => i === 0 || t !== path[i - 1])
    return deduped.length === 0 ? undefined : deduped.join(" › ")
  }
  const emit = (): Chunk | undefined => {
    const text = parts.join("\n\n").trim()
    parts = []
    size = 0
    if (text === "") return undefined
    const chunk: Chunk = {
      id: chunkId(doc.path, position, text),
      text,
      document: doc.path,
      ...(title === undefined ? {} : { title }),
      ...(doc.url === undefined ? {} : { url: doc.url }),
      position
    }
    position++
    return chunk
  }
  /** A chunk holding only headings is not a chunk yet: the section's text joins it. */
  let onlyHeadings = true
  for await (const block of doc.blocks as AsyncIterable<Block>) {
    if (block.kind === "heading") {
      if (!onlyHeadings) {
        const c = emit()
        if (c !== undefined) yield c
        onlyHeadings = true
      }
      while (headings.length > 0 && headings[headings.length - 1]!.level >= block.level) headings.pop()
      headings.push({ level: block.level, text: block.text })
      if (parts.length === 0) title = titleNow()
      parts.push(block.text)
      size += block.text.length + 2
      continue
    }
    for (const piece of splitLong(block.text, max)) {
      if (size > 0 && size + piece.length + 2 > max && !onlyHeadings) {
        const c = emit()
        if (c !== undefined) yield c
        title = titleNow()
      }
      if (parts.length === 0) title = titleNow()
      parts.push(piece)
      size += piece.length + 2
      onlyHeadings = false
    }
  }
  const c = emit()
  if (c !== undefined) yield c
}

// ---------------------------------------------------------------------------------------------
// Boilerplate

/** Licence and copyright text. */
const LICENCE =
  /\b(all rights reserved|licensed under|permission is hereby granted|without warranties or conditions|copyright (?:©|\(c\)|\d{4})|this program is free software|creative commons)\b/i
/** A table of contents or a page's chrome announcing itself. */
const CONTENTS = /^(table of contents|contents|on this page|navigation|menu|skip to (?:main )?content)\b/i
const LINK_LINE = /^\s*(?:[-*+]|\d+\.)?\s*\[[^\]]*\]\([^)]*\)\s*$/

/**
 * Why a chunk is not asked about, by its text alone (undefined: it may be): licence text, a table of
 * contents or navigation (mostly link lines, or many short lines and hardly a sentence), or too short.
 */
export const boilerplateOf = (text: string): string | undefined => {
  if (!hasWords(text, MIN_WORDS)) return "too short"
  if (LICENCE.test(text)) return "licence or copyright text"
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l !== "")
  if (CONTENTS.test(lines[0] ?? "")) return "table of contents or navigation"
  // The line counts only for the chunks of several lines they can judge (most are a paragraph or two).
  if (lines.length < 4) return undefined
  const links = lines.filter((l) => LINK_LINE.test(l)).length
  if (links / lines.length >= 0.6) return "table of contents or navigation"
  if (lines.length < 6) return undefined
  const short = lines.filter((l) => l.split(/\s+/).length <= 4).length
  const sentences = (text.match(/[.!?](\s|$)/g) ?? []).length
  if (short / lines.length >= 0.8 && sentences <= 1) return "table of contents or navigation"
  return undefined
}

/** Whether `text` has at least `n` words (runs of non-space), counted no further than `n`. */
const hasWords = (text: string, n: number): boolean => {
  const word = /\S+/g
  let found = 0
  while (found < n && word.exec(text) !== null) found++
  return found >= n
}

const NON_ASCII = /[^\x00-\x7f]/

/**
 * The text as near-duplicate detection sees it: lower case, letters and digits only, single spaces.
 * ASCII text (most chunks) takes a shorter way to the same string: NFKC leaves it as it is, and its
 * only letters and digits are [a-z0-9] once lower-cased. With `boilerplateOf`'s shortcuts, a 50 MB
 * text file's corpus took 2.6 CPU-s instead of 3.5 (2026-11-30; test/synthesize/Documents.test.ts
 * holds both to the plain versions on generated texts).
 */
export const normalised = (text: string): string =>
  NON_ASCII.test(text)
    ? text.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim()
    : text.toLowerCase().replace(/[^a-z0-9]+/g, " ").trim()

/** A 32-bit FNV-1a hash of the normalised text: equal texts (whitespace, case, punctuation aside) collide. */
export const fingerprint = (text: string): number => {
  const s = normalised(text)
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}
