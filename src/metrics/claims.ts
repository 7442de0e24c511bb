/**
 * Claim-level answer metrics, per case, from claim verdicts — the definitions of RAGChecker (Ru et al.,
 * "RAGChecker: A Fine-grained Framework for Diagnosing Retrieval-Augmented Generation", NeurIPS 2024
 * Datasets and Benchmarks; as computed by its reference code, `ragchecker/computation.py`) and the
 * nugget scores of the TREC 2024 RAG Track's AutoNuggetizer (Pradeep et al., 2024; `nuggetizer`'s
 * `calculate_nugget_scores`).
 *
 * The input is verdicts, not texts: which claim is entailed by which text, as an LLM judge or the
 * heuristic claim checker (`judges/claims/`) decided. Only "entailed" counts as support: "neutral"
 * and "contradicted" both count as not entailed, as in RAGChecker.
 *
 * Notation for one case: the answer's claims a_1…a_n, the reference's claims r_1…r_m, the
 * retrieved contexts c_1…c_k, and E(x, T) = claim x is entailed by text T. Derived sets:
 *
 * - correct(a_i) = E(a_i, reference)
 * - faithful(a_i) = ∃ c: E(a_i, c)
 * - relevant(c) = ∃ j: E(r_j, c) (a context is relevant when it entails a reference claim)
 * - recalled(r_j) = ∃ c: E(r_j, c)
 *
 * **Null, never 0, for what a case cannot have.** RAGChecker's code writes 0 when a denominator is
 * empty; here a metric is `null` when its inputs are missing (no reference, no contexts, no
 * nuggets) or its denominator is empty (no answer claims, no reference claims, no recalled claim,
 * no vital nugget), so an average over cases is not pulled down by cases that say nothing. One
 * exception, deliberate: F1 is 0 when precision or recall is 0, even if the other is null (it is 0
 * for every value the other could take). Each function's comment lists its null cases;
 * `claimMetrics` computes them all.
 */

import type { ClaimVerdict, NuggetSupport } from "../domain/Label.js"

/** RAGChecker's three verdicts of a claim checked against a text (the scale is stated in `domain/Label.ts`). */
export type { ClaimVerdict }

/** A nugget's grade (AutoNuggetizer): full support, partial support (counts ½ in the partial scores), none. */
export type NuggetAssignment = NuggetSupport

export interface NuggetVerdict {
  /** "vital" or "okay"; undefined when the nugget came without one (a plain string). */
  readonly importance?: "vital" | "okay" | undefined
  readonly assignment: NuggetAssignment
}

/**
 * The verdicts of one case. Arrays of contexts are context-major — one verdict array per context,
 * one verdict per claim, in claim order — as one check of a list of claims against one text yields
 * them; that also keeps the number of contexts when a side has no claims.
 */
export interface CaseVerdicts {
  /** Each answer claim checked against the reference (RAGChecker's answer2response); absent without a reference. */
  readonly answerVsReference?: ReadonlyArray<ClaimVerdict> | undefined
  /** Each reference claim checked against the answer (response2answer); absent without a reference. */
  readonly referenceVsAnswer?: ReadonlyArray<ClaimVerdict> | undefined
  /** Per context, each answer claim checked against it (retrieved2response); absent or empty without contexts. */
  readonly answerVsContexts?: ReadonlyArray<ReadonlyArray<ClaimVerdict>> | undefined
  /**
   * The same checks' support in [0, 1], where the judge grades one (the heuristic judge's weighted
   * share of the claim's words found); absent: entailed counts 1, another verdict 0.
   */
  readonly answerSupportVsContexts?: ReadonlyArray<ReadonlyArray<number>> | undefined
  /** Per context, each reference claim checked against it (retrieved2answer); absent without a reference or contexts. */
  readonly referenceVsContexts?: ReadonlyArray<ReadonlyArray<ClaimVerdict>> | undefined
  /** Each nugget's assignment against the answer; absent without nuggets. */
  readonly nuggets?: ReadonlyArray<NuggetVerdict> | undefined
}

const entailed = (v: ClaimVerdict | undefined): boolean => v === "entailed"

/** Share of true flags; null for none. */
const share = (flags: ReadonlyArray<boolean>): number | null => {
  if (flags.length === 0) return null
  let n = 0
  for (const f of flags) if (f) n++
  return n / flags.length
}

/** Per claim i, is it entailed by some context? `rows` is context-major; `claims` the claim count. */
const anyContext = (rows: ReadonlyArray<ReadonlyArray<ClaimVerdict>>, claims: number): Array<boolean> =>
  Array.from({ length: claims }, (_, i) => rows.some((row) => entailed(row[i])))

/** The contexts, or undefined when there are none. */
const contextsOf = (
  rows: ReadonlyArray<ReadonlyArray<ClaimVerdict>> | undefined
): ReadonlyArray<ReadonlyArray<ClaimVerdict>> | undefined => rows === undefined || rows.length === 0 ? undefined : rows

/**
 * **Precision** = |{i : correct(a_i)}| / n — the share of the answer's claims the reference entails.
 * Null without a reference, or when the answer has no claims (n = 0: nothing was said, so nothing
 * was said wrongly or rightly).
 */
export const claimPrecision = (v: CaseVerdicts): number | null =>
  v.answerVsReference === undefined ? null : share(v.answerVsReference.map(entailed))

/**
 * **Recall** = |{j : E(r_j, answer)}| / m — the share of the reference's claims the answer entails.
 * Null without a reference or when the reference has no claims (m = 0). An answer without claims
 * has recall 0 when the reference has some.
 */
export const claimRecall = (v: CaseVerdicts): number | null =>
  v.referenceVsAnswer === undefined ? null : share(v.referenceVsAnswer.map(entailed))

/**
 * **F1** = 2·P·R / (P + R); 0 when P + R = 0. When either is 0, F1 is 0 whatever the other is —
 * so also when the other is null: an answer without claims that recalls none of the reference's
 * claims (an empty answer, a restated question) has F1 0, not null. Otherwise null when P or R is
 * null.
 */
export const claimF1 = (v: CaseVerdicts): number | null => f1Of(claimPrecision(v), claimRecall(v))

const f1Of = (p: number | null, r: number | null): number | null => {
  if (p === 0 || r === 0) return 0
  if (p === null || r === null) return null
  return (2 * p * r) / (p + r)
}

/**
 * **Faithfulness** = |{i : faithful(a_i)}| / n — the share of the answer's claims some context
 * entails. Null without contexts or when the answer has no claims.
 */
export const faithfulness = (v: CaseVerdicts): number | null => {
  const rows = contextsOf(v.answerVsContexts)
  if (rows === undefined) return null
  return share(anyContext(rows, rows[0]!.length))
}

/**
 * **Ungrounded** = mean over i of (1 − max over c of support(a_i, c)) — how far the answer's claims
 * are from being found in the contexts, graded: the judge's support of each check where it gives one
 * (`answerSupportVsContexts`), else 1 for entailed and 0 otherwise (then it is 1 − faithfulness).
 * The hallucination score of a case without a reference (docs/judge-quality.md). Null as
 * faithfulness.
 */
export const ungrounded = (v: CaseVerdicts): number | null => {
  const rows = contextsOf(v.answerVsContexts)
  if (rows === undefined || rows[0]!.length === 0) return null
  const support = v.answerSupportVsContexts ?? rows.map((row) => row.map((x) => (entailed(x) ? 1 : 0)))
  let sum = 0
  for (let i = 0; i < rows[0]!.length; i++) sum += 1 - Math.max(...support.map((row) => row[i] ?? 0))
  return sum / rows[0]!.length
}

/**
 * **Context recall** (RAGChecker's claim recall) = |{j : recalled(r_j)}| / m — the share of the
 * reference's claims some context entails. Null without a reference, without contexts, or when the
 * reference has no claims.
 */
export const contextRecall = (v: CaseVerdicts): number | null => {
  const rows = contextsOf(v.referenceVsContexts)
  if (rows === undefined) return null
  return share(anyContext(rows, rows[0]!.length))
}

/**
 * **Context precision** = |{c : relevant(c)}| / k — the share of contexts that entail at least one
 * reference claim. Null without a reference, without contexts, or when the reference has no claims
 * (then no context can be shown relevant or irrelevant).
 */
export const contextPrecision = (v: CaseVerdicts): number | null => {
  const rows = contextsOf(v.referenceVsContexts)
  if (rows === undefined || rows[0]!.length === 0) return null
  return share(rows.map((row) => row.some(entailed)))
}

/**
 * **Context utilization** = |{j : recalled(r_j) ∧ E(r_j, answer)}| / |{j : recalled(r_j)}| — of the
 * reference claims the contexts held, the share the answer used. Null without a reference or
 * contexts, or when no reference claim is recalled (the contexts held nothing to use).
 */
export const contextUtilization = (v: CaseVerdicts): number | null => {
  const rows = contextsOf(v.referenceVsContexts)
  if (rows === undefined || v.referenceVsAnswer === undefined) return null
  const recalled = anyContext(rows, v.referenceVsAnswer.length)
  let held = 0
  let used = 0
  recalled.forEach((r, j) => {
    if (!r) return
    held++
    if (entailed(v.referenceVsAnswer![j])) used++
  })
  return held === 0 ? null : used / held
}

/** Per answer claim: correct, faithful, and entailed by a relevant / only by irrelevant contexts. */
interface AnswerClaimRoles {
  readonly correct: ReadonlyArray<boolean>
  readonly faithful: ReadonlyArray<boolean>
  readonly byRelevant: ReadonlyArray<boolean>
  readonly onlyByIrrelevant: ReadonlyArray<boolean>
}

/** The roles of the answer's claims; undefined without a reference or contexts (or contexts for the reference claims). */
const answerClaimRoles = (v: CaseVerdicts): AnswerClaimRoles | undefined => {
  const answerRows = contextsOf(v.answerVsContexts)
  const referenceRows = contextsOf(v.referenceVsContexts)
  if (v.answerVsReference === undefined || answerRows === undefined || referenceRows === undefined) return undefined
  const n = v.answerVsReference.length
  const relevant = referenceRows.map((row) => row.some(entailed))
  const byRelevant = Array.from(
    { length: n },
    (_, i) => answerRows.some((row, c) => relevant[c] === true && entailed(row[i]))
  )
  const byIrrelevant = Array.from(
    { length: n },
    (_, i) => answerRows.some((row, c) => relevant[c] !== true && entailed(row[i]))
  )
  return {
    correct: v.answerVsReference.map(entailed),
    faithful: anyContext(answerRows, n),
    byRelevant,
    onlyByIrrelevant: byIrrelevant.map((b, i) => b && !byRelevant[i])
  }
}

const shareOfRoles = (
  roles: AnswerClaimRoles | undefined,
  pick: (roles: AnswerClaimRoles, i: number) => boolean
): number | null => {
  if (roles === undefined) return null
  return share(roles.correct.map((_, i) => pick(roles, i)))
}

const shareOfAnswer = (v: CaseVerdicts, pick: (roles: AnswerClaimRoles, i: number) => boolean): number | null =>
  shareOfRoles(answerClaimRoles(v), pick)

const isHallucinated = (r: AnswerClaimRoles, i: number) => !r.faithful[i] && !r.correct[i]
const isSelfKnown = (r: AnswerClaimRoles, i: number) => !r.faithful[i] && r.correct[i]!
const isNoiseFromRelevant = (r: AnswerClaimRoles, i: number) => !r.correct[i] && r.byRelevant[i]!
const isNoiseFromIrrelevant = (r: AnswerClaimRoles, i: number) => !r.correct[i] && r.onlyByIrrelevant[i]!

/**
 * **Hallucination** = |{i : ¬faithful(a_i) ∧ ¬correct(a_i)}| / n — answer claims that are wrong and
 * come from no context. Null without a reference or contexts, or when the answer has no claims.
 */
export const hallucination = (v: CaseVerdicts): number | null => shareOfAnswer(v, isHallucinated)

/**
 * **Unsupported claims** = |{i : no text the case has entails a_i}| — the count beside the ratios,
 * so one invented step among twenty copied ones stays visible: the answer claims that neither the
 * reference (when there is one) nor any context (when there are some) entails. With both it is
 * hallucination's numerator. Null without a reference and without contexts, or when a verdict it
 * needs is missing; 0 when the answer has no claims.
 */
export const unsupportedClaims = (v: CaseVerdicts): number | null => {
  const byReference = v.answerVsReference
  const rows = contextsOf(v.answerVsContexts)
  if (byReference === undefined && rows === undefined) return null
  const n = byReference?.length ?? rows![0]!.length
  const faithful = rows === undefined ? undefined : anyContext(rows, n)
  let count = 0
  for (let i = 0; i < n; i++) if (!entailed(byReference?.[i]) && faithful?.[i] !== true) count++
  return count
}

/**
 * **Self-knowledge** = |{i : ¬faithful(a_i) ∧ correct(a_i)}| / n — answer claims that are right
 * although no context holds them (the model knew them). Null as for hallucination.
 */
export const selfKnowledge = (v: CaseVerdicts): number | null => shareOfAnswer(v, isSelfKnown)

/**
 * **Noise sensitivity (relevant)** = |{i : ¬correct(a_i) ∧ ∃ c relevant: E(a_i, c)}| / n — wrong
 * answer claims taken from relevant contexts. Null as for hallucination.
 */
export const noiseSensitivityRelevant = (v: CaseVerdicts): number | null => shareOfAnswer(v, isNoiseFromRelevant)

/**
 * **Noise sensitivity (irrelevant)** = |{i : ¬correct(a_i) ∧ ∃ c irrelevant: E(a_i, c) ∧ ¬∃ c
 * relevant: E(a_i, c)}| / n — wrong answer claims taken only from irrelevant contexts (a claim
 * entailed by both kinds counts as relevant, as in RAGChecker, so the two never overlap). Null as
 * for hallucination.
 */
export const noiseSensitivityIrrelevant = (v: CaseVerdicts): number | null => shareOfAnswer(v, isNoiseFromIrrelevant)

/** AutoNuggetizer's credit for one nugget: strict counts full support only; partial adds ½ for partial support. */
const credit = (
  a: NuggetAssignment,
  strict: boolean
): number => (a === "support" ? 1 : a === "partial_support" && !strict ? 0.5 : 0)

const nuggetScore = (v: CaseVerdicts, vitalOnly: boolean, strict: boolean): number | null => {
  const nuggets = v.nuggets === undefined
    ? []
    : vitalOnly
    ? v.nuggets.filter((n) => n.importance === "vital")
    : v.nuggets
  if (nuggets.length === 0) return null
  let sum = 0
  for (const n of nuggets) sum += credit(n.assignment, strict)
  return sum / nuggets.length
}

/**
 * **Nugget recall, all, strict** = |{nuggets with support}| / |nuggets| (AutoNuggetizer's
 * `strict_all_score`). Null without nuggets.
 */
export const nuggetRecallStrict = (v: CaseVerdicts): number | null => nuggetScore(v, false, true)

/**
 * **Nugget recall, all, partial** = (|support| + ½·|partial_support|) / |nuggets| (`all_score`).
 * Null without nuggets.
 */
export const nuggetRecallPartial = (v: CaseVerdicts): number | null => nuggetScore(v, false, false)

/**
 * **Vital nugget recall, strict** = |{vital nuggets with support}| / |vital nuggets|
 * (`strict_vital_score`, the TREC 2024 RAG Track's primary measure). Null when no nugget is marked
 * vital — nuggets given as plain strings have no importance, and none is assumed.
 */
export const vitalNuggetRecallStrict = (v: CaseVerdicts): number | null => nuggetScore(v, true, true)

/**
 * **Vital nugget recall, partial** = (|vital with support| + ½·|vital with partial_support|) /
 * |vital nuggets| (`vital_score`). Null when no nugget is marked vital.
 */
export const vitalNuggetRecallPartial = (v: CaseVerdicts): number | null => nuggetScore(v, true, false)

/** Every claim metric of one case, by its report name; null where the case cannot have it. */
export interface ClaimMetrics {
  readonly precision: number | null
  readonly recall: number | null
  readonly f1: number | null
  readonly faithfulness: number | null
  readonly ungrounded: number | null
  readonly contextRecall: number | null
  readonly contextPrecision: number | null
  readonly contextUtilization: number | null
  readonly hallucination: number | null
  readonly unsupportedClaims: number | null
  readonly selfKnowledge: number | null
  readonly noiseSensitivityRelevant: number | null
  readonly noiseSensitivityIrrelevant: number | null
  readonly nuggetRecall: number | null
  readonly nuggetRecallPartial: number | null
  readonly vitalNuggetRecall: number | null
  readonly vitalNuggetRecallPartial: number | null
}

/**
 * All the metrics of one case (see each function for its formula and null cases). Precision and
 * recall are computed once for F1, the answer claims' roles once for the four metrics that share them.
 */
export const claimMetrics = (v: CaseVerdicts): ClaimMetrics => {
  const precision = claimPrecision(v)
  const recall = claimRecall(v)
  const roles = answerClaimRoles(v)
  return {
    precision,
    recall,
    f1: f1Of(precision, recall),
    faithfulness: faithfulness(v),
    ungrounded: ungrounded(v),
    contextRecall: contextRecall(v),
    contextPrecision: contextPrecision(v),
    contextUtilization: contextUtilization(v),
    hallucination: shareOfRoles(roles, isHallucinated),
    unsupportedClaims: unsupportedClaims(v),
    selfKnowledge: shareOfRoles(roles, isSelfKnown),
    noiseSensitivityRelevant: shareOfRoles(roles, isNoiseFromRelevant),
    noiseSensitivityIrrelevant: shareOfRoles(roles, isNoiseFromIrrelevant),
    nuggetRecall: nuggetRecallStrict(v),
    nuggetRecallPartial: nuggetRecallPartial(v),
    vitalNuggetRecall: vitalNuggetRecallStrict(v),
    vitalNuggetRecallPartial: vitalNuggetRecallPartial(v)
  }
}
