/**
 * The offline question generator (`--provider heuristic`): deterministic, extractive, and labelled as
 * such in every output. It never paraphrases; it turns a sentence of a passage carrying a figure, a
 * date or a name into a question by putting a question phrase where that fact was ("The bridge opened
 * in which year?"), and takes the sentence itself as the reference, the vital nugget and the gold span.
 * Good for trying the flow, for tests and for checking a retriever (is the sentence's chunk found?);
 * not a stand-in for an LLM's questions, which ask in other words than the passage's.
 *
 * - single-hop: one fact of the passage;
 * - multi-hop: a fact of each of the two related passages, asked together;
 * - procedure: a passage's list of steps ("What are the steps of …?"), each step a nugget;
 * - unanswerable: a fact's sentence asked about another year — one that neither the passage nor its
 *   neighbours mention — so the documents cannot answer it; the reference is an abstention;
 * - conversational: a first fact asked and answered as the history, a second fact of the same passage
 *   as the follow-up, its name replaced by "it" when the history names it.
 *
 * Comparison questions need an LLM.
 */
import { splitSentences } from "../Terms.js"

/** The reference of an unanswerable item (the heuristic's and the prompts' alike). */
export const ABSTENTION = "The documents do not answer this question."

export interface Span {
  readonly passage: number
  readonly text: string
}

/** What a generator writes: the same shape as the `synthesize/<type>` prompts' JSON schema. */
export interface Written {
  readonly question: string
  readonly history: ReadonlyArray<{ readonly role: "user" | "assistant"; readonly content: string }>
  readonly reference: string
  readonly nuggets: ReadonlyArray<{ readonly text: string; readonly importance: "vital" | "okay" }>
  readonly spans: ReadonlyArray<Span>
}

const MONTH = "January|February|March|April|May|June|July|August|September|October|November|December"
const DATE = new RegExp(`\\b(?:\\d{1,2} )?(?:${MONTH})(?: \\d{1,2})?(?:, \\d{4}| \\d{4})?\\b`)
const YEAR = /(?<![\d.,:/-])\b(1[5-9]\d{2}|20\d{2})\b(?![\d.,:/-]\d)/
const PERCENT = /\b\d+(?:[.,]\d+)?\s?(?:%|percent\b|per cent\b)/
/** A figure with the word after it as its unit ("25 days", "3.5 GB"); a bare number otherwise. */
const FIGURE = /\b\d+(?:[.,]\d+)*(?:\s?([A-Za-z]{2,14}))?\b/
/** A name: capitalised words (or an acronym) not at the start of the sentence. */
const NAME = /(?<=\S\s+)(?:[A-Z][a-z]+|[A-Z]{2,}[a-z]?)(?:\s+(?:[A-Z][a-z]+|[A-Z]{2,}))*/
const COMMON_CAPITALISED = new Set(["The", "A", "An", "This", "That", "These", "Those", "It", "In", "On", "I"])

/** The fact a sentence carries, and the question phrase standing in for it. */
interface Fact {
  readonly kind: "date" | "year" | "figure" | "name"
  readonly span: string
  readonly index: number
  readonly phrase: string
}

const UNIT_WORDS = new Set(["and", "or", "of", "to", "in", "on", "at", "for", "the", "a", "an", "by", "with", "per"])

/** The first fact of a sentence: a date, a year, a percentage or figure, else a name. */
export const factOf = (sentence: string): Fact | undefined => {
  const date = DATE.exec(sentence)
  if (date !== null && /\d/.test(date[0])) {
    return { kind: "date", span: date[0], index: date.index, phrase: "on which date" }
  }
  const year = YEAR.exec(sentence)
  if (year !== null) {
    // "in 1937" → "in which year"
    return { kind: "year", span: year[0], index: year.index, phrase: "which year" }
  }
  const percent = PERCENT.exec(sentence)
  if (percent !== null) return { kind: "figure", span: percent[0], index: percent.index, phrase: "what percentage" }
  const figure = FIGURE.exec(sentence)
  if (figure !== null && !/^\d+[.)]$/.test(figure[0])) {
    const unit = figure[1]
    const withUnit = unit !== undefined && !UNIT_WORDS.has(unit.toLowerCase())
    return {
      kind: "figure",
      span: figure[0],
      index: figure.index,
      phrase: withUnit ? `how many ${unit}` : "what number"
    }
  }
  for (const m of sentence.matchAll(new RegExp(NAME, "g"))) {
    if (COMMON_CAPITALISED.has(m[0])) continue
    return { kind: "name", span: m[0], index: m.index, phrase: "what" }
  }
  return undefined
}

/** Tables, links, addresses, code blocks and tags: not prose to ask about. */
const MARKUP = /[|<>{}\\]|\]\(|https?:|```/
const words = (s: string) => s.split(/\s+/).filter((w) => w !== "").length

/** Sentences of a passage that can be asked about: 6–60 words, ending like a sentence, carrying a fact. */
export const factSentences = (passage: string): Array<{ sentence: string; fact: Fact }> => {
  const out: Array<{ sentence: string; fact: Fact }> = []
  for (const raw of splitSentences(passage)) {
    const sentence = raw.trim()
    const n = words(sentence)
    // Prose only: not a list item, a table row, code, markup or an address.
    if (n < 6 || n > 40 || !/[.!]$/.test(sentence) || !/^["'(]?\p{Lu}/u.test(sentence) || MARKUP.test(sentence)) {
      continue
    }
    const fact = factOf(sentence)
    if (fact !== undefined) out.push({ sentence, fact })
  }
  return out
}

/** The sentence with the fact replaced by its question phrase, as a question. */
export const clozeQuestion = (sentence: string, fact: Fact): string => {
  const before = sentence.slice(0, fact.index)
  const after = sentence.slice(fact.index + fact.span.length)
  // Inline markup (code spans, emphasis) is the passage's, not the question's.
  const body = `${before}${fact.phrase}${after}`.replace(/[.!]\s*$/, "").replace(/`|\*\*|__/g, "").trim()
  return `${body.charAt(0).toUpperCase()}${body.slice(1)}?`
}

const single = (sentence: string, fact: Fact, passage: number) => ({
  question: clozeQuestion(sentence, fact),
  sentence,
  passage
})

export type Outcome = { readonly item: Written; readonly note: string } | { readonly problem: string }

const NO_FACT = "no sentence carrying a figure, a date or a name to ask about"

/** A question of `type` from the passages (1-based numbering in spans), or why there is none. */
export const writeQuestion = (
  type: string,
  passages: ReadonlyArray<string>,
  nearby: ReadonlyArray<string>
): Outcome => {
  const first = factSentences(passages[0] ?? "")
  switch (type) {
    case "single-hop": {
      const f = first[0]
      if (f === undefined) return { problem: NO_FACT }
      const q = single(f.sentence, f.fact, 1)
      return {
        item: {
          question: q.question,
          history: [],
          reference: f.sentence,
          nuggets: [{ text: f.sentence, importance: "vital" }],
          spans: [{ passage: 1, text: f.sentence }]
        },
        note: `the ${f.fact.kind} "${f.fact.span}" of one sentence asked about`
      }
    }
    case "multi-hop":
    case "comparison": {
      if (type === "comparison") return { problem: "the offline generator cannot write comparison questions" }
      const a = first[0]
      const b = factSentences(passages[1] ?? "")[0]
      if (a === undefined || b === undefined) {
        return { problem: `${NO_FACT} in ${a === undefined ? "passage 1" : "passage 2"}` }
      }
      const qa = clozeQuestion(a.sentence, a.fact).replace(/\?$/, "")
      const qb = clozeQuestion(b.sentence, b.fact)
      return {
        item: {
          question: `${qa}, and ${qb.charAt(0).toLowerCase()}${qb.slice(1)}`,
          history: [],
          reference: `${a.sentence} ${b.sentence}`,
          nuggets: [{ text: a.sentence, importance: "vital" }, { text: b.sentence, importance: "vital" }],
          spans: [{ passage: 1, text: a.sentence }, { passage: 2, text: b.sentence }]
        },
        note: "one fact of each passage asked together"
      }
    }
    case "procedure": {
      const text = passages[0] ?? ""
      const steps = text.split("\n").map((l) => /^\s*(?:[-*+•]|\d+[.)]|step \d+[.:]?)\s+(\S.*)$/i.exec(l)?.[1]?.trim())
        .filter((s): s is string => s !== undefined && s !== "")
      if (steps.length < 3) return { problem: "no list of three or more steps in the passage" }
      const heading = text.split("\n")[0]!.replace(/^#+\s*/, "").replace(/[:.]$/, "").trim()
      const topic = heading !== "" && words(heading) <= 12 && !steps.includes(heading) ? heading : "this procedure"
      return {
        item: {
          question: `What are the steps of "${topic}"?`,
          history: [],
          reference: steps.join("; "),
          nuggets: steps.map((s) => ({ text: s, importance: "vital" as const })),
          spans: steps.map((s) => ({ passage: 1, text: s }))
        },
        note: `the ${steps.length} steps of a list`
      }
    }
    case "unanswerable": {
      const all = [passages[0] ?? "", ...nearby].join("\n")
      const mentioned = new Set([...all.matchAll(/\b(1[5-9]\d{2}|20\d{2})\b/g)].map((m) => Number(m[1])))
      for (const f of first) {
        // The sentence's year (alone, or in a date), changed to one no nearby passage mentions.
        const y = YEAR.exec(f.sentence)
        if (y === null) continue
        const year = Number(y[0])
        const other = [year + 7, year - 7, year + 13, year - 13].find((x) => !mentioned.has(x))
        if (other === undefined) continue
        const at = { index: y.index, span: y[0] }
        const changed = f.sentence.slice(0, at.index) + String(other) + f.sentence.slice(at.index + at.span.length)
        // Another fact of the sentence is asked about (the new year masked, so it is not found again).
        const masked = changed.slice(0, at.index) + "####" + changed.slice(at.index + String(other).length)
        const fact = factOf(masked)
        if (fact === undefined) continue
        const question = clozeQuestion(changed, fact)
        return {
          item: { question, history: [], reference: ABSTENTION, nuggets: [], spans: [] },
          note: `a sentence's year changed to ${other}, which no nearby passage mentions`
        }
      }
      return { problem: "no sentence with a year to ask about another year" }
    }
    case "conversational": {
      const [a, b] = first
      if (a === undefined || b === undefined) return { problem: "the passage has fewer than two facts to ask about" }
      const qa = clozeQuestion(a.sentence, a.fact)
      let qb = clozeQuestion(b.sentence, b.fact)
      // A name the history already gave becomes "it": the follow-up then needs the history.
      const shared = [...a.sentence.matchAll(new RegExp(NAME, "g"))].map((m) => m[0]).find((n) =>
        !COMMON_CAPITALISED.has(n) && qb.includes(n)
      )
      if (shared !== undefined) qb = qb.replace(shared, "it")
      return {
        item: {
          question: qb,
          history: [{ role: "user", content: qa }, { role: "assistant", content: a.sentence }],
          reference: b.sentence,
          nuggets: [{ text: b.sentence, importance: "vital" }],
          spans: [{ passage: 1, text: b.sentence }]
        },
        note: shared === undefined ? "a second fact of the passage as the follow-up" : `"${shared}" referred to as "it"`
      }
    }
    default:
      return { problem: `unknown question type "${type}"` }
  }
}
