/**
 * The data of synthesis, as Schemas: a candidate (what one question is written from: a line of a
 * wave's file), the item a generator writes (the JSON the `synthesize/<type>` prompts ask for), and a
 * test-set item (a line of the test set: answer-correctness's input, with gold passages).
 */
import * as Schema from "effect/Schema"
import { QUESTION_TYPES } from "./Mix.js"

export const QuestionTypeSchema = Schema.Literal(...QUESTION_TYPES)

export const CandidatePassage = Schema.Struct({
  id: Schema.String,
  document: Schema.String,
  title: Schema.optional(Schema.String),
  text: Schema.String
})
export type CandidatePassage = typeof CandidatePassage.Type

/** One line of a wave's candidates file: the passages (1 or 2) a question of `type` is written from. */
export const Candidate = Schema.Struct({
  id: Schema.String,
  type: QuestionTypeSchema,
  persona: Schema.String,
  passages: Schema.Array(CandidatePassage),
  /** Unanswerable: the passages nearest to the seed, which must not answer the question either. */
  neighbours: Schema.optional(Schema.Array(CandidatePassage))
})
export type Candidate = typeof Candidate.Type

export const Turn = Schema.Struct({ role: Schema.Literal("user", "assistant"), content: Schema.String })

export const NuggetSchema = Schema.Struct({ text: Schema.String, importance: Schema.Literal("vital", "okay") })

/** What a generator writes (the prompts' JSON schema says the same): spans quote the passages exactly. */
export const GeneratedItem = Schema.Struct({
  question: Schema.String,
  /** Conversational: the turns before the question; empty for the other types. */
  history: Schema.Array(Turn),
  reference: Schema.String,
  nuggets: Schema.Array(NuggetSchema),
  /** The exact sentences or phrases of the passages the reference rests on (passage: 1-based). */
  spans: Schema.Array(Schema.Struct({ passage: Schema.Int, text: Schema.String }))
})
export type GeneratedItem = typeof GeneratedItem.Type

export const GoldPassage = Schema.Struct({
  id: Schema.String,
  document: Schema.String,
  title: Schema.optional(Schema.String),
  text: Schema.String,
  /** Exact spans of the text the reference rests on (empty when the answer is not extractive). */
  spans: Schema.Array(Schema.String)
})

/**
 * One line of the test set: answer-correctness's input (`id`, `question`, `reference`, `nuggets`; the
 * `answer` comes from `--target`), plus the gold passages and spans, the type, the documents, and who
 * wrote it.
 */
export const TestItem = Schema.Struct({
  id: Schema.String,
  question: Schema.String,
  /** Conversational items: the turns before the question, `User: …` / `Assistant: …` lines (rag-answers' format). */
  history: Schema.optional(Schema.String),
  reference: Schema.String,
  nuggets: Schema.Array(NuggetSchema),
  type: QuestionTypeSchema,
  /** Chunk ids of the passages that answer the question, in `corpus.jsonl` (none for unanswerable). */
  goldPassages: Schema.Array(GoldPassage),
  /** Every gold span (evidence-retrieval's `gold`). */
  gold: Schema.Array(Schema.String),
  sourceDocuments: Schema.Array(Schema.String),
  persona: Schema.optional(Schema.String),
  /** The generator: the model, or the offline heuristic generator (labelled as such). */
  generator: Schema.String
})
export type TestItem = typeof TestItem.Type

/** The reference of an unanswerable item says so; a system under test should decline the same way. */
export { ABSTENTION } from "../judges/synthesize/Extractive.js"

/** History turns as rag-answers writes them: `User: …` and `Assistant: …` lines. */
export const historyText = (turns: GeneratedItem["history"]): string =>
  turns.map((t) => `${t.role === "user" ? "User" : "Assistant"}: ${t.content.replace(/\s*\n\s*/g, " ").trim()}`).join(
    "\n"
  )
