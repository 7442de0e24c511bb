/**
 * The heuristic judge's claim rubrics (`heuristic` field of a rubric): the lexical claim extractor
 * and checker of this folder behind the same task → verdict contract as every other rubric, so a
 * claim pipeline runs offline exactly as it runs on an LLM.
 *
 * - `claims/extract` (a `claims` rubric): the claims of `vars.text`, as the verdict's value.
 * - `claims/check` (listwise, scale 0 contradicted · 1 neutral · 2 entailed): each item's
 *   `vars.claim` against `vars.text`, with the sentence that decides it as evidence.
 * - `claims/nugget` (listwise, scale 0 not supported · 1 partly · 2 supported): AutoNuggetizer's
 *   grade of each item's `vars.claim` (a nugget) against `vars.text`.
 *
 * A check weighs the claim's terms by the case's texts: the task's `pool` (every text of the case)
 * and `vars.question`, read once per case (the pool array is shared by a case's checks). An answer's
 * claim checked against a retrieved passage (its item target, `Targets.ts`) is a grounding check; a
 * reference's claim or a nugget is a gold claim.
 */
import { type JudgeTask, type ListJudgeTask, noUsage, type Verdict } from "../../domain/Judgment.js"
import {
  type CaseTexts,
  checkClaims,
  type CheckOptions,
  type ClaimCheck,
  DEFAULT_MODEL,
  nuggetAssignment
} from "./Check.js"
import { extractClaims } from "./Extract.js"
import { isGoldTarget, isGroundingTarget } from "./Targets.js"

/** Scores of the check rubrics' scales. */
export const CHECK_SCORE = { contradicted: 0, neutral: 1, entailed: 2 } as const
export const NUGGET_SCORE = { not_support: 0, partial_support: 1, support: 2 } as const

const caseTexts = new WeakMap<ReadonlyArray<string>, Map<string, CaseTexts>>()

/** The case's texts as the checker weighs them: one object per (pool, question), so its statistics are computed once. */
const textsOf = (question: string, pool: ReadonlyArray<string> | undefined): CaseTexts | undefined => {
  if (pool === undefined) return question === "" ? undefined : { question }
  let byQuestion = caseTexts.get(pool)
  if (byQuestion === undefined) caseTexts.set(pool, byQuestion = new Map())
  let texts = byQuestion.get(question)
  if (texts === undefined) byQuestion.set(question, texts = { question, contexts: pool })
  return texts
}

/** How an item is checked, from its target (`Targets.ts`): a grounding check, a gold claim's, or neither. */
const optionsOf = (target: string): CheckOptions =>
  isGroundingTarget(target) ? GROUNDING : isGoldTarget(target) ? GOLD : PLAIN
const GROUNDING: CheckOptions = { grounding: true }
const GOLD: CheckOptions = { gold: true }
const PLAIN: CheckOptions = {}

/**
 * The checks of a task's items, each with its options. One call may carry several kinds (a passage
 * is checked against the answer's claims and the reference's), so each kind is checked apart and
 * put back in order.
 */
const checksOf = (task: ListJudgeTask): ReadonlyArray<ClaimCheck> => {
  const text = task.vars["text"] ?? ""
  const texts = textsOf(task.vars["question"] ?? "", task.pool)
  const options = task.items.map((i) => optionsOf(i.target))
  const out: Array<ClaimCheck> = new Array(task.items.length)
  for (const kind of new Set(options)) {
    const at = options.flatMap((o, i) => (o === kind ? [i] : []))
    const checks = checkClaims(at.map((i) => task.items[i]!.vars["claim"] ?? ""), text, texts, DEFAULT_MODEL, kind)
    at.forEach((i, k) => (out[i] = checks[k]!))
  }
  return out
}

const checkReason = (c: ClaimCheck) =>
  `${c.verdict} (support ${c.support.toFixed(2)})${
    c.evidence === null ? "; no sentence of the text shares a term with it" : ""
  }`

const verdict = (score: number, reason: string, evidence: string | null): Verdict => ({
  status: "ok",
  score,
  reason,
  ...(evidence === null ? {} : { evidence }),
  usage: noUsage,
  attempts: 0
})

export const extract = (task: JudgeTask): Verdict => {
  const claims = extractClaims(task.vars["text"] ?? "")
  return {
    status: "ok",
    score: claims.length,
    reason: `${claims.length} claim${claims.length === 1 ? "" : "s"} (sentences and clauses)`,
    value: claims,
    usage: noUsage,
    attempts: 0
  }
}

export const check = (task: ListJudgeTask): ReadonlyArray<Verdict> =>
  checksOf(task).map((c) => verdict(CHECK_SCORE[c.verdict], checkReason(c), c.evidence))

export const nugget = (task: ListJudgeTask): ReadonlyArray<Verdict> =>
  checksOf(task).map((c) => {
    const grade = nuggetAssignment(c)
    return verdict(NUGGET_SCORE[grade], `${grade.replace("_", " ")}: ${checkReason(c)}`, c.evidence)
  })

/** By a rubric's `heuristic` field: pointwise and listwise claim heuristics. */
export const pointHeuristics: Readonly<Record<string, (task: JudgeTask) => Verdict>> = { "claims/extract": extract }
export const listHeuristics: Readonly<Record<string, (task: ListJudgeTask) => ReadonlyArray<Verdict>>> = {
  "claims/check": check,
  "claims/nugget": nugget
}
