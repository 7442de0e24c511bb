/**
 * Low-score analysis for answer synthesis (SPEC §2.2): the cases below the pass threshold, grouped by
 * failure type — faithfulness 1 (completely false), 2 (mostly false), 3 (mixed), and completeness
 * 1–3 (no bridging) — each with its count, a few examples with the judge's reasons, and short
 * recommendations for the answering system's prompt.
 *
 * A case is counted in every group it falls in (faithfulness 2 and completeness 3 → both groups).
 * A failed judgment puts its case in no group. `lowScoreFold` is the online form (constant memory:
 * at most `examples` examples per group) used by the summary; `lowScoreAnalysis` runs it over a list,
 * e.g. one iteration's records.
 */
import { oneLine } from "../../domain/Markdown.js"
import type { SynthesisRecord } from "./SynthesisScore.js"

export interface LowScoreExample {
  readonly caseId: string
  readonly line: number
  readonly iteration: number
  readonly question: string
  /** The answer, cut to `ANSWER_EXCERPT` characters. */
  readonly answer: string
  /** The score that put the case in the group. */
  readonly score: number
  readonly faithfulness: number | null
  readonly completeness: number | null
  /** The judge's reason for that score. */
  readonly reason: string
}

export type LowScoreDimension = "faithfulness" | "completeness"

export interface LowScoreGroup {
  /** `faithfulness-1`, `faithfulness-2`, `faithfulness-3`, `completeness-low`. */
  readonly id: string
  readonly dimension: LowScoreDimension
  readonly label: string
  readonly description: string
  /** Cases in the group. */
  readonly count: number
  /** Cases per score value in the group. */
  readonly byScore: Readonly<Record<string, number>>
  /** The first cases met (input order), at most `examples`. */
  readonly examples: ReadonlyArray<LowScoreExample>
  /** What to change in the answering system; empty when the group is empty. */
  readonly recommendations: ReadonlyArray<string>
}

export interface LowScoreAnalysis {
  readonly passAt: number
  /** Records analysed. */
  readonly cases: number
  /** Cases that did not pass (pass = false). */
  readonly failed: number
  /** Cases whose pass could not be decided because a judgment failed. */
  readonly unknown: number
  /** Faithfulness groups by score (lowest first), then the completeness group; empty groups included. */
  readonly groups: ReadonlyArray<LowScoreGroup>
  /** How failures combine, over cases with both scores known. */
  readonly patterns: {
    /** Low faithfulness, good completeness: persuasive but wrong. */
    readonly persuasiveButWrong: number
    /** Good faithfulness, low completeness: accurate but unhelpful. */
    readonly accurateButUnhelpful: number
    /** Both below the threshold. */
    readonly both: number
  }
}

export interface LowScoreOptions {
  readonly passAt?: number | undefined
  /** Examples kept per group (default 3). */
  readonly examples?: number | undefined
}

export const ANSWER_EXCERPT = 300

const FAITHFULNESS: Readonly<
  Record<number, { label: string; description: string; recommendations: ReadonlyArray<string> }>
> = {
  1: {
    label: "Completely false",
    description:
      "The answer contradicts the context or is pure hallucination (courses or outcomes that are not in the context).",
    recommendations: [
      "Tighten the system prompt to answer only from the retrieved courses: never name a course, code or outcome that is not in the context.",
      "Add a refusal path: when no retrieved course matches, say so instead of inventing one.",
      "Check retrieval for these questions: an empty or off-topic context invites the model to fill the gap."
    ]
  },
  2: {
    label: "Mostly false",
    description:
      "Major factual errors or unsupported claims: an invented course, or outcomes credited to the wrong course.",
    recommendations: [
      "Tighten the system prompt to answer only from the retrieved courses; add a refusal when nothing matches.",
      "Ask the model to copy each course's name and code exactly as retrieved and to attribute each learning outcome to its own course.",
      "Lower the generation temperature for recommendation answers."
    ]
  },
  3: {
    label: "Mixed",
    description:
      "Supported facts mixed with hallucinated details (topics, tools, careers or prerequisites the context does not state).",
    recommendations: [
      "Ask the model to describe a course only through its listed learning outcomes, not through general knowledge of the subject.",
      "Add a grounding check after generation that flags course details missing from the context."
    ]
  }
}

const COMPLETENESS = {
  label: "Missing bridging",
  description:
    "The answer lists or describes courses (or says nothing relevant was found) without explaining why each fits the user's goal."
}

/** Recommendations for the completeness group, by the scores present in it. */
const completenessRecommendations = (byScore: ReadonlyMap<number, number>): Array<string> => {
  const has = (s: number) => (byScore.get(s) ?? 0) > 0
  const out = [
    "Ask the model to explain why each course fits the user's goal: link a specific learning outcome to the need stated in the question."
  ]
  if (has(1)) {
    out.push(
      "Never answer \"no relevant courses found\" when courses were retrieved: recommend the closest matches and say how they relate; forbid bare lists of names or codes."
    )
  }
  if (has(2)) out.push("Require at least one sentence per recommended course on what it offers this user.")
  if (has(3)) {
    out.push(
      "Add a few-shot example of bridging (\"X teaches …, which you need for …\") so descriptions become reasons."
    )
  }
  return out
}

interface GroupAcc {
  readonly id: string
  readonly dimension: LowScoreDimension
  readonly score: number | undefined
  count: number
  byScore: Map<number, number>
  examples: Array<LowScoreExample>
}

interface Acc {
  cases: number
  failed: number
  unknown: number
  faithfulness: Map<number, GroupAcc>
  completeness: GroupAcc
  persuasiveButWrong: number
  accurateButUnhelpful: number
  both: number
}

const excerpt = (text: string | undefined): string => oneLine(text ?? "", ANSWER_EXCERPT)

/** The online fold behind `lowScoreAnalysis` (the accumulator is mutated in place). */
export const lowScoreFold = (options?: LowScoreOptions) => {
  const passAt = options?.passAt ?? 4
  const maxExamples = options?.examples ?? 3
  const group = (dimension: LowScoreDimension, score: number | undefined): GroupAcc => ({
    id: score === undefined ? `${dimension}-low` : `${dimension}-${score}`,
    dimension,
    score,
    count: 0,
    byScore: new Map(),
    examples: []
  })
  const enter = (g: GroupAcc, r: SynthesisRecord, score: number, reason: string) => {
    g.count++
    g.byScore.set(score, (g.byScore.get(score) ?? 0) + 1)
    if (g.examples.length < maxExamples) {
      g.examples.push({
        caseId: r.caseId,
        line: r.line,
        iteration: r.iteration,
        question: r.question,
        answer: excerpt(r.answer),
        score,
        faithfulness: r.faithfulness,
        completeness: r.completeness,
        reason
      })
    }
  }
  const finishGroup = (g: GroupAcc): LowScoreGroup => {
    const known = g.score === undefined ? undefined : FAITHFULNESS[g.score]
    const text = g.dimension === "completeness"
      ? { ...COMPLETENESS, label: `${COMPLETENESS.label} (completeness ${lowRange(passAt)})` }
      : known ??
        {
          label: `Faithfulness ${g.score}`,
          description: `Faithfulness ${g.score}, below the pass threshold ${passAt}.`
        }
    const recommendations = g.count === 0
      ? []
      : g.dimension === "completeness"
      ? completenessRecommendations(g.byScore)
      : known?.recommendations ?? FAITHFULNESS[3]!.recommendations
    return {
      id: g.id,
      dimension: g.dimension,
      label: text.label,
      description: text.description,
      count: g.count,
      byScore: Object.fromEntries([...g.byScore].sort((a, b) => a[0] - b[0]).map(([s, n]) => [String(s), n])),
      examples: g.examples,
      recommendations
    }
  }
  return {
    init: (): Acc => {
      const faithfulness = new Map<number, GroupAcc>()
      for (let s = 1; s < passAt; s++) faithfulness.set(s, group("faithfulness", s))
      return {
        cases: 0,
        failed: 0,
        unknown: 0,
        faithfulness,
        completeness: group("completeness", undefined),
        persuasiveButWrong: 0,
        accurateButUnhelpful: 0,
        both: 0
      }
    },
    add: (acc: Acc, r: SynthesisRecord): Acc => {
      acc.cases++
      if (r.pass === false) acc.failed++
      if (r.pass === null) acc.unknown++
      const f = r.faithfulness
      const c = r.completeness
      if (f !== null && f < passAt) {
        let g = acc.faithfulness.get(f)
        if (g === undefined) {
          g = group("faithfulness", f)
          acc.faithfulness.set(f, g)
        }
        enter(g, r, f, r.reasons.faithfulness)
      }
      if (c !== null && c < passAt) enter(acc.completeness, r, c, r.reasons.completeness)
      if (f !== null && c !== null) {
        if (f < passAt && c >= passAt) acc.persuasiveButWrong++
        else if (f >= passAt && c < passAt) acc.accurateButUnhelpful++
        else if (f < passAt && c < passAt) acc.both++
      }
      return acc
    },
    finish: (acc: Acc): LowScoreAnalysis => ({
      passAt,
      cases: acc.cases,
      failed: acc.failed,
      unknown: acc.unknown,
      groups: [...[...acc.faithfulness.values()].sort((a, b) => (a.score ?? 0) - (b.score ?? 0)), acc.completeness].map(
        finishGroup
      ),
      patterns: {
        persuasiveButWrong: acc.persuasiveButWrong,
        accurateButUnhelpful: acc.accurateButUnhelpful,
        both: acc.both
      }
    })
  }
}

const lowRange = (passAt: number) => (passAt <= 2 ? `< ${passAt}` : `1–${passAt - 1}`)

/** Low-score analysis of a list of records (pure; e.g. one iteration's records). */
export const lowScoreAnalysis = (records: Iterable<SynthesisRecord>, options?: LowScoreOptions): LowScoreAnalysis => {
  const fold = lowScoreFold(options)
  let acc = fold.init()
  for (const r of records) acc = fold.add(acc, r)
  return fold.finish(acc)
}
