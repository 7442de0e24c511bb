/**
 * The offline judge's synthesis rubrics (`heuristic` fields `synthesize/generate`,
 * `synthesize/answerable`, `synthesize/closed-book`): lexical proxies, deterministic, labelled as the
 * heuristic judge's in every output.
 *
 * - **generate**: the extractive generator (`Extractive.ts`); its item is the judgment's value.
 * - **answerable** (0 not answerable · 1 partly · 2 answerable from the passages): every figure of the
 *   question is in the passages, and the share of the question's terms the passages hold (≥ 0.6:
 *   answerable, < 0.4 or a missing figure: not); with an answer, also the share of the reference's
 *   terms they hold (≥ 0.8). Words found, not meaning understood.
 * - **closed-book** (0 general knowledge · 1 needs the documents): the reference states a figure or a
 *   name the question does not — something a reader could not know without the documents.
 */
import { type JudgeTask, noUsage, type Verdict } from "../../domain/Judgment.js"
import { hasDigit, terms } from "../Terms.js"
import { ABSTENTION, writeQuestion } from "./Extractive.js"

const ok = (score: number, reason: string, value?: unknown): Verdict => ({
  status: "ok",
  score,
  reason,
  ...(value === undefined ? {} : { value }),
  usage: noUsage,
  attempts: 0
})

const failed = (reason: string): Verdict => ({
  status: "failed",
  failure: "judge",
  score: null,
  reason,
  usage: noUsage,
  attempts: 0
})

/** `synthesize/generate`: the extractive generator on the task's passages. */
export const generate = (task: JudgeTask): Verdict => {
  const v = task.vars
  const passages = [v.passage_1, v.passage_2].filter((p): p is string => p !== undefined && p !== "")
  const nearby = (v.nearby ?? "").split("\n\n").filter((p) => p.trim() !== "")
  const out = writeQuestion(v.type ?? "", passages, nearby)
  return "problem" in out
    ? failed(`offline generator: ${out.problem}`)
    : ok(1, `offline generator (extractive): ${out.note}`, out.item)
}

const share = (wanted: ReadonlyArray<string>, have: ReadonlySet<string>) =>
  wanted.length === 0 ? 1 : wanted.filter((t) => have.has(t)).length / wanted.length

/** `synthesize/answerable`: see the module comment. */
export const answerable = (task: JudgeTask): Verdict => {
  const v = task.vars
  const have = new Set(terms(v.passages ?? ""))
  const question = [...new Set(terms(`${v.history ?? ""} ${v.question ?? ""}`))]
  const figures = question.filter(hasDigit)
  const missing = figures.filter((f) => !have.has(f))
  const q = share(question, have)
  const abstains = (v.reference ?? "").trim() === ABSTENTION
  const r = abstains ? 1 : share([...new Set(terms(v.reference ?? ""))], have)
  const found = `question terms found ${(q * 100).toFixed(0)}%${
    abstains ? "" : `, reference terms ${(r * 100).toFixed(0)}%`
  }`
  if (missing.length > 0) return ok(0, `the passages never state ${missing.join(", ")} (${found})`)
  if (q < 0.4) return ok(0, `the passages hold few of the question's terms (${found})`)
  if (q >= 0.6 && r >= 0.8) return ok(2, `the passages hold the question's figures and terms (${found})`)
  return ok(1, `the passages hold part of what is asked (${found})`)
}

const NAME = /(?<=\S\s+)[A-Z][\p{L}]+/gu

/** `synthesize/closed-book`: see the module comment. */
export const closedBook = (task: JudgeTask): Verdict => {
  const v = task.vars
  const asked = new Set(terms(`${v.history ?? ""} ${v.question ?? ""}`))
  const reference = v.reference ?? ""
  const figures = terms(reference).filter((t) => hasDigit(t) && !asked.has(t))
  const names = [...reference.matchAll(NAME)].map((m) => m[0]).filter((n) => !asked.has(terms(n)[0] ?? ""))
  if (figures.length + names.length > 0) {
    return ok(1, `the answer rests on ${[...figures, ...names].slice(0, 3).join(", ")}, which only the documents give`)
  }
  return ok(0, "the answer states no figure or name beyond the question: general knowledge may answer it")
}

/** The synthesis heuristics, by a rubric's `heuristic` field. */
export const synthesizeHeuristics: Readonly<Record<string, (task: JudgeTask) => Verdict>> = {
  "synthesize/generate": generate,
  "synthesize/answerable": answerable,
  "synthesize/closed-book": closedBook
}
