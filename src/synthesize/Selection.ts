/**
 * Which chunks questions are written from, wave after wave — deterministic for a `--seed`, so a
 * resumed run replays the same waves.
 *
 * - **Spread over the documents**: the documents in a seeded order, each document's chunks in a
 *   seeded order, taken round by round (one chunk of every document, then a second of every
 *   document…), not the first N chunks of the corpus.
 * - **Skipped**: boilerplate (licences, contents, navigation), texts repeated across documents,
 *   duplicates (`Corpus.ts`), and a chunk that is a near duplicate (word-set Jaccard ≥ 0.8) of one
 *   already chosen. Each chunk is used by one candidate at most.
 * - **Pairs** (multi-hop, comparison): the anchor's partner is the chunk of the wave's pool (the next
 *   unused chunks in that order) sharing the most weight of rare terms with it (idf within the
 *   pool), from another document or a part of the same document that is not next to it.
 * - **Unanswerable**: the seed chunk gives the topic; the 3 chunks of the pool nearest to it (BM25)
 *   are what the check also reads, to make sure they do not answer the question either.
 */
import * as Effect from "effect/Effect"
import type { OutputError } from "../domain/Errors.js"
import { sha256 } from "../judges/Prompt.js"
import { build, searchIndex, tokenize } from "../retrieval/Bm25.js"
import { mulberry32Floats } from "../stats/Paired.js"
import type { Candidate, CandidatePassage } from "./Candidate.js"
import type { Chunk } from "./Chunks.js"
import { type CorpusIndex, Exclusion, readChunks } from "./Corpus.js"
import { passagesOf, QUESTION_TYPES, type QuestionType } from "./Mix.js"

/** Seeded Fisher–Yates shuffle (in place). */
const shuffle = <A>(items: Array<A>, random: () => number): Array<A> => {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const t = items[i]!
    items[i] = items[j]!
    items[j] = t
  }
  return items
}

/** The chunks that may be asked about, spread over the documents (see the module comment). */
export const chunkOrder = (index: CorpusIndex, seed: number): Int32Array => {
  const random = mulberry32Floats(seed)
  const perDocument: Array<Array<number>> = index.documents.map(() => [])
  for (let i = 0; i < index.chunks; i++) {
    if (index.exclusion[i] === Exclusion.none) perDocument[index.documentOf[i]!]!.push(i)
  }
  const documents = shuffle(perDocument.map((_, d) => d), random)
  for (const d of documents) shuffle(perDocument[d]!, random)
  const order: Array<number> = []
  for (let round = 0;; round++) {
    let any = false
    for (const d of documents) {
      const c = perDocument[d]![round]
      if (c !== undefined) {
        order.push(c)
        any = true
      }
    }
    if (!any) break
  }
  return Int32Array.from(order)
}

const CONTENT_TERM = /^(?:\p{L}{4,}|\p{N}+)$/u
const termsOf = (text: string) => new Set(tokenize(text).filter((t) => CONTENT_TERM.test(t)))

const jaccard = (a: ReadonlySet<string>, b: ReadonlySet<string>) => {
  let shared = 0
  for (const t of a) if (b.has(t)) shared++
  const union = a.size + b.size - shared
  return union === 0 ? 0 : shared / union
}

/** A chunk with ≥ 3 list lines or numbered steps: what a procedure question is written from. */
export const hasSteps = (text: string): boolean =>
  text.split("\n").filter((l) => /^\s*(?:[-*+•]|\d+[.)]|step \d+)\s+\S/i.test(l)).length >= 3

const passageOf = (c: Chunk): CandidatePassage => ({
  id: c.id,
  document: c.document,
  ...(c.title === undefined ? {} : { title: c.title }),
  text: c.text
})

const ABBREVIATION: Readonly<Record<QuestionType, string>> = {
  "single-hop": "single",
  "multi-hop": "multi",
  comparison: "compare",
  procedure: "procedure",
  unanswerable: "unanswerable",
  conversational: "conversation"
}

/** A candidate's id: its type and a hash of what it is written from, so the same choice has the same id in any run. */
export const candidateId = (type: QuestionType, passages: ReadonlyArray<string>, persona: string) =>
  `${ABBREVIATION[type]}-${sha256(JSON.stringify([type, passages, persona])).slice(0, 12)}`

/** Chooses the candidates of each wave; `next` must be called for waves 1, 2, … in order. */
export class Chooser {
  private cursor = 0
  private readonly used = new Set<number>()
  private readonly chosenTerms: Array<Set<string>> = []
  private personaTurn = 0
  private readonly personas: ReadonlyArray<string>
  /** Chunks passed over as near duplicates of chosen ones. */
  nearDuplicates = 0

  constructor(
    private readonly index: CorpusIndex,
    private readonly order: Int32Array,
    personas: ReadonlyArray<string>,
    seed: number
  ) {
    this.personas = shuffle([...personas], mulberry32Floats(seed ^ 0x5bd1e995))
  }

  /** Chunks not used yet. */
  remaining(): number {
    return this.order.length - this.used.size
  }

  private persona(): string {
    return this.personas[this.personaTurn++ % this.personas.length]!
  }

  /** The candidates of the next wave: `counts[type]` of each type, as far as the corpus goes. */
  next(counts: Readonly<Record<QuestionType, number>>): Effect.Effect<Array<Candidate>, OutputError> {
    return Effect.gen(this, function*() {
      const wanted = QUESTION_TYPES.reduce((s, t) => s + counts[t] * passagesOf(t), 0)
      if (wanted === 0) return []
      // The pool: the next unused chunks, enough to choose partners and neighbours from.
      const poolPositions: Array<number> = []
      const poolSize = Math.max(64, 3 * wanted + 8)
      for (let i = this.cursor; i < this.order.length && poolPositions.length < poolSize; i++) {
        const p = this.order[i]!
        if (!this.used.has(p)) poolPositions.push(p)
      }
      const texts = yield* readChunks(this.index.file, new Set(poolPositions))
      const pool = poolPositions.map((p) => ({ position: p, chunk: texts.get(p)!, terms: termsOf(texts.get(p)!.text) }))
      // Near duplicates of chunks already chosen are passed over.
      const fresh = (c: (typeof pool)[number]) =>
        !this.used.has(c.position) && this.chosenTerms.every((t) => jaccard(t, c.terms) < 0.8)
      const take = (c: (typeof pool)[number]) => {
        this.used.add(c.position)
        this.chosenTerms.push(c.terms)
      }
      const df = new Map<string, number>()
      for (const c of pool) for (const t of c.terms) df.set(t, (df.get(t) ?? 0) + 1)
      const idf = (t: string) => Math.log(1 + pool.length / (df.get(t) ?? 1))
      const bm25 = build(pool.map((c) => ({ id: String(c.position), text: c.chunk.text })))

      const nextFresh = (prefer?: (c: (typeof pool)[number]) => boolean) => {
        let first: (typeof pool)[number] | undefined
        for (const c of pool) {
          if (this.used.has(c.position)) continue
          if (!fresh(c)) {
            this.used.add(c.position)
            this.nearDuplicates++
            continue
          }
          if (prefer === undefined || prefer(c)) return c
          first ??= c
        }
        return first
      }
      const partnerOf = (anchor: (typeof pool)[number]) => {
        let best: (typeof pool)[number] | undefined
        let bestScore = 0
        for (const c of pool) {
          if (c === anchor || !fresh(c)) continue
          const sameDocument = c.chunk.document === anchor.chunk.document
          if (sameDocument && Math.abs(c.chunk.position - anchor.chunk.position) <= 1) continue
          let score = 0
          for (const t of anchor.terms) if (c.terms.has(t)) score += idf(t)
          if (score > bestScore) {
            best = c
            bestScore = score
          }
        }
        return best
      }

      const out: Array<Candidate> = []
      const left = { ...counts }
      // Types in turn, so each type's candidates are spread over the documents too.
      for (let progress = true; progress;) {
        progress = false
        for (const type of QUESTION_TYPES) {
          if (left[type] <= 0) continue
          const anchor = nextFresh(type === "procedure" ? (c) => hasSteps(c.chunk.text) : undefined)
          if (anchor === undefined) continue
          take(anchor)
          const passages = [anchor]
          if (passagesOf(type) === 2) {
            const partner = partnerOf(anchor)
            if (partner === undefined) {
              progress = true
              continue
            }
            take(partner)
            passages.push(partner)
          }
          const neighbours = type === "unanswerable"
            ? searchIndex(bm25, anchor.chunk.text).filter((d) => Number(d.id) !== anchor.position).slice(0, 3)
              .map((d) => passageOf(texts.get(Number(d.id))!))
            : []
          const persona = this.persona()
          out.push({
            id: candidateId(type, passages.map((p) => p.chunk.id), persona),
            type,
            persona,
            passages: passages.map((p) => passageOf(p.chunk)),
            ...(neighbours.length === 0 ? {} : { neighbours })
          })
          left[type]--
          progress = true
        }
      }
      while (this.cursor < this.order.length && this.used.has(this.order[this.cursor]!)) this.cursor++
      return out
    })
  }
}
