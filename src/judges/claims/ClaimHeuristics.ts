/**
 * The heuristic judge's claim rubrics (a rubric's `heuristic` field): `claims/extract` (the claims of
 * `vars.text`), `claims/check` (each item's `vars.claim` against `vars.text`, on `domain/Label.ts`'s
 * `ClaimVerdict` scale, the deciding sentence as evidence) and `claims/nugget` (AutoNuggetizer's grade
 * of each nugget) — the same task → verdict contract as an LLM's. A check weighs terms by the case's
 * texts (the task's `pool` and `vars.question`); an answer's claim against a retrieved passage (its
 * `ClaimRef`) is a grounding check, a reference's claim or a nugget a gold one. Text that is not English gets no verdict (`Language.ts`); reasons
 * say what was measured (`Check.Finding`), not "entailed".
 */
import { type JudgeTask, type ListJudgeTask, noUsage, type Verdict } from "../../domain/Judgment.js"
import { claimVerdictScore, nuggetSupportScore } from "../../domain/Label.js"
import { recent } from "../Recent.js"
import {
  type CaseTexts,
  checkClaims,
  type CheckOptions,
  type ClaimCheck,
  DEFAULT_MODEL,
  nuggetAssignment
} from "./Check.js"
import { extractClaims } from "./Extract.js"
import { ENGLISH_ONLY, otherLanguage } from "./Language.js"
import { isGold, isGrounding } from "./Targets.js"

/** The last cases' texts by pool (see `Recent.ts` for why not a WeakMap). */
const caseTexts = recent<ReadonlyArray<string>, Map<string, CaseTexts>>(2)
const newQuestions = () => new Map<string, CaseTexts>()

/** The case's texts as the checker weighs them: one object per (pool, question), so its statistics are computed once. */
const textsOf = (question: string, pool: ReadonlyArray<string> | undefined): CaseTexts | undefined => {
  if (pool === undefined) return question === "" ? undefined : { question }
  const byQuestion = caseTexts.get(pool, newQuestions)
  let texts = byQuestion.get(question)
  if (texts === undefined) byQuestion.set(question, texts = { question, contexts: pool })
  return texts
}

const GROUNDING: CheckOptions = { grounding: true }
const GOLD: CheckOptions = { gold: true }
const PLAIN: CheckOptions = {}

/** How an item is checked, from what it is (its `ClaimRef`): a grounding check, a gold claim's, or neither. */
const optionsOf = (item: ListJudgeTask["items"][number]): CheckOptions =>
  item.claim === undefined ? PLAIN : isGrounding(item.claim) ? GROUNDING : isGold(item.claim) ? GOLD : PLAIN

/**
 * The checks of a task's items, each with its options. One call may carry several kinds (a passage
 * is checked against the answer's claims and the reference's), so each kind is checked apart and
 * put back in order.
 */
const checksOf = (task: ListJudgeTask): ReadonlyArray<ClaimCheck> => {
  const text = task.vars["text"] ?? ""
  const texts = textsOf(task.vars["question"] ?? "", task.pool)
  const items = task.items
  const options = items.map(optionsOf)
  const claimOf = (i: number) => items[i]!.vars["claim"] ?? ""
  // One kind (most calls): the items in order.
  if (options.every((o) => o === options[0])) {
    return checkClaims(items.map((_, i) => claimOf(i)), text, texts, DEFAULT_MODEL, options[0])
  }
  const out: Array<ClaimCheck> = new Array(items.length)
  for (const kind of new Set(options)) {
    const at: Array<number> = []
    for (let i = 0; i < options.length; i++) if (options[i] === kind) at.push(i)
    const checks = checkClaims(at.map(claimOf), text, texts, DEFAULT_MODEL, kind)
    for (let k = 0; k < at.length; k++) out[at[k]!] = checks[k]!
  }
  return out
}

/**
 * "figure conflict: support 71%" — the finding, and the weighted share of the claim's words and
 * figures found in the text (the value's `support`). Short: it is on every check's journal line
 * and in every record (a million cases write ~40 million of them).
 */
const checkReason = (c: ClaimCheck) =>
  c.evidence === null
    ? `${c.finding}: no sentence of the text shares a word with the claim`
    : `${c.finding}: support ${Math.round(c.support * 100)}%`

/** A verdict with its evidence and, as its value, what the checker found (`Check.Finding`) and its support: what reports show for it and `ungrounded` grades by. */
const verdict = (score: number, reason: string, c: ClaimCheck): Verdict => ({
  status: "ok",
  score,
  reason,
  ...(c.evidence === null ? {} : { evidence: c.evidence }),
  value: { finding: c.finding, support: Math.round(c.support * 1e4) / 1e4 },
  usage: noUsage,
  attempts: 0
})

/** No verdict: the text is not English (see the module comment). */
const unread = (language: string): Verdict => ({
  status: "ok",
  score: null,
  reason: `${ENGLISH_ONLY} (this text reads as language "${language}")`,
  usage: noUsage,
  attempts: 0
})

export const extract = (task: JudgeTask): Verdict => {
  const text = task.vars["text"] ?? ""
  const language = otherLanguage(text)
  if (language !== null) return { ...unread(language), value: null }
  const claims = extractClaims(text)
  return {
    status: "ok",
    score: claims.length,
    reason: `${claims.length} claim${claims.length === 1 ? "" : "s"} (sentences and clauses)`,
    value: claims,
    usage: noUsage,
    attempts: 0
  }
}

/** Each item's verdict, or none for every item when the text (or the item's claim) is not English. */
const listOf = (task: ListJudgeTask, each: (c: ClaimCheck) => Verdict): ReadonlyArray<Verdict> => {
  const language = otherLanguage(task.vars["text"] ?? "")
  if (language !== null) return task.items.map(() => unread(language))
  const checks = checksOf(task)
  // A nugget is written by hand, in any language; the other claims come from an English text.
  return task.items.map((item, i) => {
    const other = item.claim?.side === "nugget" ? otherLanguage(item.vars["claim"] ?? "") : null
    return other === null ? each(checks[i]!) : unread(other)
  })
}

export const check = (task: ListJudgeTask): ReadonlyArray<Verdict> =>
  listOf(task, (c) => verdict(claimVerdictScore(c.verdict), checkReason(c), c))

export const nugget = (task: ListJudgeTask): ReadonlyArray<Verdict> =>
  listOf(task, (c) => {
    const grade = nuggetAssignment(c)
    return verdict(nuggetSupportScore(grade), `${grade.replace("_", " ")}: ${checkReason(c)}`, c)
  })

/** By a rubric's `heuristic` field: pointwise and listwise claim heuristics. */
export const pointHeuristics: Readonly<Record<string, (task: JudgeTask) => Verdict>> = { "claims/extract": extract }
export const listHeuristics: Readonly<Record<string, (task: ListJudgeTask) => ReadonlyArray<Verdict>>> = {
  "claims/check": check,
  "claims/nugget": nugget
}
