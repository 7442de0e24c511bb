/**
 * The corpus: every document chunked and written to `corpus.jsonl` (one chunk `{ id, text, document,
 * title?, url?, position }` a line, readable by the bm25 retriever and evidence-retrieval as their
 * passage collection), streamed — no document's text and no chunk's is held after it is written.
 * What the choice of chunks needs is kept per chunk in a few numbers: its document, a fingerprint of
 * its text and why it is not asked about (boilerplate, a duplicate), ≈ 30 bytes a chunk.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { InputError, OutputError } from "../domain/Errors.js"
import { Growing, i32, u32, u8 } from "../domain/Growing.js"
import { readJsonLines, writeAtomic } from "../io/Files.js"
import { boilerplateOf, type Chunk, chunkDocument, fingerprint } from "./Chunks.js"
import { DocumentProblem, documentsOf, findFiles, isSkipped, type Skipped } from "./Documents.js"

/** Why a chunk is not asked about (0: it may be). */
export const Exclusion = {
  none: 0,
  boilerplate: 1,
  duplicate: 2,
  repeated: 3
} as const

export const EXCLUSION_WORDS: Readonly<Record<number, string>> = {
  1: "boilerplate (licence, contents, navigation) or too short",
  2: "duplicate of an earlier chunk",
  3: "repeated in 3 or more documents (a page's chrome)"
}

/** What choosing chunks needs to know of the corpus, without its text. */
export interface CorpusIndex {
  /** The chunks file written (a temporary or final path). */
  readonly file: string
  readonly sha256: string
  readonly documents: ReadonlyArray<string>
  /** Per chunk (in file order): its document's index, its exclusion (`Exclusion`). */
  readonly documentOf: Int32Array
  readonly exclusion: Uint8Array
  readonly chunks: number
  readonly skipped: ReadonlyArray<Skipped>
  /** Chunks not asked about, by reason. */
  readonly excluded: Readonly<Record<string, number>>
}

const inputError = (e: DocumentProblem) =>
  new InputError({
    file: e.file,
    problem: e.problem,
    ...(e.line === undefined ? {} : { line: e.line }),
    ...(e.field === undefined ? {} : { field: e.field })
  })

/**
 * Chunk the documents `specs` names into `file` (written atomically: complete or absent), keeping
 * what choosing chunks needs. `onProgress` hears of each file as it is done.
 */
export const buildCorpus = (
  specs: ReadonlyArray<string>,
  file: string,
  chunkTokens: number,
  onProgress?: (filesDone: number, files: number, chunks: number) => void
): Effect.Effect<CorpusIndex, InputError | OutputError> =>
  Effect.gen(function*() {
    const found = yield* Effect.promise(() => findFiles(specs))
    if (found instanceof DocumentProblem) return yield* inputError(found)
    if (found.files.length === 0) {
      return yield* new InputError({
        file: specs.join(", "),
        problem: `no documents found (read: .md, .txt, .html, .jsonl, .pdf)${
          found.skipped.length > 0 ? `; ${found.skipped.length} other file(s) skipped` : ""
        }`
      })
    }
    const skipped: Array<Skipped> = [...found.skipped]
    const documents: Array<string> = []
    const documentOf = new Growing(i32(1024), i32)
    const prints = new Growing(u32(1024), u32)
    const exclusion = new Growing(u8(1024), u8)
    const hash = createHash("sha256")
    const files = found.files
    async function* lines(): AsyncGenerator<string> {
      let done = 0
      for (const f of files) {
        for await (const d of documentsOf(f)) {
          if (d instanceof DocumentProblem) throw d
          if (isSkipped(d)) {
            skipped.push(d)
            continue
          }
          const index = documents.length
          documents.push(d.path)
          for await (const chunk of chunkDocument(d, chunkTokens)) {
            documentOf.push(index)
            prints.push(fingerprint(chunk.text))
            exclusion.push(boilerplateOf(chunk.text) === undefined ? Exclusion.none : Exclusion.boilerplate)
            const line = JSON.stringify(chunk satisfies Chunk) + "\n"
            hash.update(line)
            yield line
          }
        }
        onProgress?.(++done, files.length, documentOf.length)
      }
    }
    yield* writeAtomic(
      file,
      Stream.fromAsyncIterable(lines(), (e) =>
        e instanceof DocumentProblem
          ? inputError(e)
          : new OutputError({ path: file, problem: `cannot chunk the documents: ${(e as Error).message}` }))
    )
    const n = documentOf.length
    if (n === 0) {
      fs.rmSync(file, { force: true })
      return yield* new InputError({
        file: specs.join(", "),
        problem: `no text found in the documents${skipped.length > 0 ? ` (${skipped.length} file(s) skipped)` : ""}`
      })
    }
    // A text seen before is a duplicate; one seen in 3 or more documents is a page's chrome (a footer).
    const seen = new Map<number, { first: number; documents: number; last: number }>()
    for (let i = 0; i < n; i++) {
      const p = prints.get(i)
      const d = documentOf.get(i)
      const s = seen.get(p)
      if (s === undefined) seen.set(p, { first: i, documents: 1, last: d })
      else {
        if (s.last !== d) {
          s.documents++
          s.last = d
        }
        if (exclusion.get(i) === Exclusion.none) exclusion.set(i, Exclusion.duplicate)
      }
    }
    for (let i = 0; i < n; i++) {
      const s = seen.get(prints.get(i))!
      if (s.documents >= 3) exclusion.set(i, Exclusion.repeated)
    }
    const excluded: Record<string, number> = {}
    const ex = exclusion.done()
    for (const e of ex) {
      if (e !== Exclusion.none) excluded[EXCLUSION_WORDS[e]!] = (excluded[EXCLUSION_WORDS[e]!] ?? 0) + 1
    }
    return {
      file,
      sha256: hash.digest("hex"),
      documents,
      documentOf: documentOf.done(),
      exclusion: ex,
      chunks: n,
      skipped,
      excluded
    } satisfies CorpusIndex
  })

/** The chunks at the given positions of the corpus file (one streaming pass), by position. */
export const readChunks = (
  file: string,
  positions: ReadonlySet<number>
): Effect.Effect<Map<number, Chunk>, OutputError> =>
  Effect.gen(function*() {
    const out = new Map<number, Chunk>()
    if (positions.size === 0) return out
    let i = 0
    yield* readJsonLines<Chunk>(file).pipe(
      Stream.takeWhile(() => out.size < positions.size),
      Stream.runForEach((chunk) =>
        Effect.sync(() => {
          if (positions.has(i)) out.set(i, chunk)
          i++
        })
      )
    )
    return out
  })
