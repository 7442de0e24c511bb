/**
 * Claim-level judging of an answer, in two rounds of judgments of one case (a chained judge stage):
 *
 * 1. **Extract**: the answer's claims and the reference's claims (rubric `extract`, output `claims`),
 *    and — needing no extraction — each nugget graded against the answer (`nugget`, listwise).
 * 2. **Check**, built from round 1's claim lists: one listwise call per text, carrying every claim
 *    to check against it (`check`: contradicted 0 · neutral 1 · entailed 2, with the deciding
 *    sentence as evidence) — the answer's claims against the reference, the reference's claims
 *    against the answer, and the answer's and the reference's claims against each context.
 *
 * So a case costs 2 + (reference ? 2 : 0) + contexts calls at most, not one per claim. Every
 * extraction and every check is its own keyed judgment: journaled, cached, resumed, batched and
 * spread over a cluster like any other. Each check item carries what it is, typed (`ClaimRef`: whose
 * claim, which, against which text); its target string is built from it (`judges/claims/Targets.ts`):
 * `claims:answer`, `claims:reference`, `<text>/<side>:<n>` and `answer/nugget:<n>`.
 *
 * `caseClaims` reads a case's judgments back into claims with their verdicts and the
 * `CaseVerdicts` that `metrics/claims.ts` turns into precision, recall, faithfulness… A verdict the
 * judge could not give (a failed judgment) leaves the metrics that need it null, never 0.
 */
import type { EvalCase, Nugget } from "../../domain/Case.js"
import type { Judgment } from "../../domain/Judgment.js"
import { type ClaimAgainst, claimVerdictOf, nuggetSupportOf } from "../../domain/Label.js"
import type { JudgeSpec, ListSpec, TaskSpec } from "../../engine/Pipeline.js"
import { extractClaims } from "../../judges/claims/Extract.js"
import {
  ANSWER_CLAIMS,
  checkTarget,
  claimRef,
  claimTarget,
  contextOf,
  extractionTarget,
  REFERENCE_CLAIMS,
  type Side
} from "../../judges/claims/Targets.js"
import type { CaseVerdicts, ClaimVerdict, NuggetAssignment } from "../../metrics/claims.js"

/** The three rubrics of claim judging, by role. */
export interface ClaimRubrics {
  readonly extract: string
  readonly check: string
  readonly nugget: string
}

export const claimRubrics: ClaimRubrics = {
  extract: "answer-correctness/extract",
  check: "answer-correctness/check",
  nugget: "answer-correctness/nugget"
}

export const rubricIds = (r: ClaimRubrics): ReadonlyArray<string> => [r.extract, r.check, r.nugget]

/** Which of the case's texts the answer is checked against (a pipeline may use fewer than it has). */
export interface ClaimSources {
  /** Check the answer's claims against the contexts (answer-correctness; not rag-answers' fragments). */
  readonly contexts: boolean
  readonly nuggets: boolean
}

export const allSources: ClaimSources = { contexts: true, nuggets: true }

const pools = new WeakMap<EvalCase, ReadonlyArray<string>>()

/**
 * Every text of the case, one array per case (the heuristic checker weighs a claim's terms within
 * the case, and computes the statistics once per array). Not part of any judgment key.
 */
const poolOf = (c: EvalCase): ReadonlyArray<string> => {
  let pool = pools.get(c)
  if (pool === undefined) {
    pool = [
      c.answer ?? "",
      ...(c.reference === undefined ? [] : [c.reference]),
      ...c.passages.map((p) => p.text),
      ...(c.nuggets ?? []).map((n) => n.text)
    ]
    pools.set(c, pool)
  }
  return pool
}

const extractSpec = (c: EvalCase, rubrics: ClaimRubrics, side: Side, text: string): TaskSpec => ({
  rubric: rubrics.extract,
  target: extractionTarget(side),
  vars: { question: c.question, source: side === "answer" ? "answer" : "reference answer", text },
  pool: poolOf(c)
})

/** Round 1: extract the answer's (and the reference's) claims; grade the nuggets against the answer. */
export const extractionRound = (
  c: EvalCase,
  rubrics: ClaimRubrics,
  sources: ClaimSources = allSources
): ReadonlyArray<JudgeSpec> => {
  const specs: Array<JudgeSpec> = [extractSpec(c, rubrics, "answer", c.answer ?? "")]
  if (c.reference !== undefined) specs.push(extractSpec(c, rubrics, "reference", c.reference))
  const nuggets = sources.nuggets ? c.nuggets ?? [] : []
  if (nuggets.length > 0) {
    const items = nuggets.map((n, i) => ["nugget", n.text, i] as const)
    specs.push(listSpec(c, rubrics.nugget, "answer", "answer", c.answer ?? "", items))
  }
  return specs
}

/** One call judging a list of claims (or nuggets), each `[side, text, index]`, against one text. */
const listSpec = (
  c: EvalCase,
  rubric: string,
  against: ClaimAgainst,
  source: string,
  text: string,
  claims: ReadonlyArray<readonly [Side | "nugget", string, number]>
): ListSpec => ({
  rubric,
  vars: { question: c.question, source, text },
  items: claims.map(([side, text, i]) => {
    const claim = claimRef(side, i, against)
    return { target: claimTarget(claim), vars: { claim: text }, claim }
  }),
  pool: poolOf(c)
})

/** Round 2: every claim checked against each text it is compared with; one call per text. */
export const checkRound = (
  c: EvalCase,
  rubrics: ClaimRubrics,
  answerClaims: ReadonlyArray<string>,
  referenceClaims: ReadonlyArray<string>,
  sources: ClaimSources = allSources
): ReadonlyArray<JudgeSpec> => {
  const specs: Array<JudgeSpec> = []
  const a = answerClaims.map((claim, i) => ["answer", claim, i] as const)
  const r = c.reference === undefined ? [] : referenceClaims.map((claim, i) => ["reference", claim, i] as const)
  if (c.reference !== undefined && a.length > 0) {
    specs.push(listSpec(c, rubrics.check, "reference", "reference answer", c.reference, a))
  }
  if (r.length > 0) specs.push(listSpec(c, rubrics.check, "answer", "answer", c.answer ?? "", r))
  if (sources.contexts) {
    c.passages.forEach((p, k) => {
      if (a.length + r.length > 0) {
        specs.push(listSpec(c, rubrics.check, contextOf(k), `retrieved passage ${k + 1}`, p.text, [...a, ...r]))
      }
    })
  }
  return specs
}

/** The claims an extraction judgment gave; undefined when it failed (or is missing). */
export const claimsOf = (j: Judgment | undefined): ReadonlyArray<string> | undefined =>
  j === undefined || j.status !== "ok" || !Array.isArray(j.value)
    ? undefined
    : j.value.filter((x): x is string => typeof x === "string")

/** The next round from the judgments so far: the checks after the extractions, then none. */
export const nextRound = (
  c: EvalCase,
  earlier: ReadonlyArray<Judgment>,
  rubrics: ClaimRubrics,
  sources: ClaimSources = allSources
): ReadonlyArray<JudgeSpec> => {
  if (earlier.some((j) => j.criterion === rubrics.check)) return []
  const answer = claimsOf(earlier.find((j) => j.criterion === rubrics.extract && j.target === ANSWER_CLAIMS)) ?? []
  const reference = claimsOf(earlier.find((j) => j.criterion === rubrics.extract && j.target === REFERENCE_CLAIMS)) ??
    []
  return checkRound(c, rubrics, answer, reference, sources)
}

/**
 * Both rounds with the offline extractor's claims standing in for the judge's: what progress counts
 * and `--dry-run` prices before anything is judged (an LLM may find a few more or fewer claims).
 */
export const plannedRounds = (
  c: EvalCase,
  rubrics: ClaimRubrics,
  sources: ClaimSources = allSources
): ReadonlyArray<JudgeSpec> => [
  ...extractionRound(c, rubrics, sources),
  ...checkRound(
    c,
    rubrics,
    extractClaims(c.answer ?? ""),
    c.reference === undefined ? [] : extractClaims(c.reference),
    sources
  )
]

// ---------------------------------------------------------------------------------------------
// Judgments → claims with verdicts
// ---------------------------------------------------------------------------------------------

/** One claim checked against one text: the verdict (null when the check failed or was not made) and what decided it. */
export interface ClaimCheck {
  readonly verdict: ClaimVerdict | null
  readonly evidence?: string | undefined
  readonly reason: string
  /** What the judge found, when it names it (the heuristic: "figure conflict", "words and figures found"…). */
  readonly finding?: string | undefined
  /** The claim's support in [0, 1], when the judge grades one (the heuristic: its weighted share of the claim's words found). */
  readonly support?: number | undefined
  /** No verdict because the judge did not read the text (the reason says why), not because the check failed. */
  readonly unread?: true | undefined
}

/** One claim of the answer or the reference, with its checks. */
export interface CheckedClaim {
  /** 1-based, in the order the extraction gave. */
  readonly n: number
  readonly text: string
  /** Against the reference (an answer claim) or the answer (a reference claim); absent without a reference. */
  readonly against?: ClaimCheck | undefined
  /** Against each context, in context order (empty when the contexts were not checked). */
  readonly contexts: ReadonlyArray<ClaimCheck>
}

export interface GradedNugget {
  readonly n: number
  readonly text: string
  readonly importance?: "vital" | "okay" | undefined
  /** Null when the grading failed. */
  readonly assignment: NuggetAssignment | null
  readonly evidence?: string | undefined
  readonly reason: string
}

/**
 * A side's claims: the list, or why there is none — its extraction failed, or the judge did not
 * read the text (`unread`: the heuristic judge reads English only).
 */
export type ClaimList =
  | { readonly status: "ok"; readonly claims: ReadonlyArray<CheckedClaim> }
  | { readonly status: "failed"; readonly reason: string; readonly raw?: string | undefined }
  | { readonly status: "unread"; readonly reason: string }

export interface CaseClaims {
  readonly answer: ClaimList
  /** Absent without a reference. */
  readonly reference?: ClaimList | undefined
  /** Absent without nuggets. */
  readonly nuggets?: ReadonlyArray<GradedNugget> | undefined
  /** What `metrics/claims.ts` computes the case's metrics from. */
  readonly verdicts: CaseVerdicts
  /**
   * Why the judge did not judge some of the case's texts (a judgment that is ok but gives no
   * verdict: the heuristic judge reads English only); the metrics needing them are null.
   */
  readonly unread?: string | undefined
  /**
   * The answer abstains: it has words but states no claim ("I don't know.", "The passages do not
   * say."); null when its extraction failed or was not made. Precision and hallucination are then
   * null (no claims), recall and F1 what they are.
   */
  readonly abstained: boolean | null
}

/** A judgment that is ok but gives no verdict: the judge did not read its text. */
const isUnread = (j: Judgment | undefined): boolean =>
  j !== undefined && j.status === "ok" && j.score === null && j.value == null

const missing: ClaimCheck = { verdict: null, reason: "no judgment recorded" }

/**
 * A check as the record shows it; with what the judge found and the support it measured, from the
 * check's value (`{ finding, support }`), when it gives them. Built field by field in the record's
 * order (verdict, reason, evidence, finding, support): one object a check, no spread copies.
 */
const checkOf = (j: Judgment | undefined): ClaimCheck => {
  if (j === undefined) return missing
  if (isUnread(j)) return { verdict: null, reason: j.reason, unread: true }
  if (j.status !== "ok" || j.score === null) return { verdict: null, reason: j.reason }
  const check: { -readonly [K in keyof ClaimCheck]: ClaimCheck[K] } = {
    verdict: claimVerdictOf(j.score),
    reason: j.reason
  }
  if (j.evidence !== undefined && j.evidence !== "") check.evidence = j.evidence
  const v = j.value
  if (typeof v === "object" && v !== null) {
    if ("finding" in v && typeof v.finding === "string") check.finding = v.finding
    if ("support" in v && typeof v.support === "number" && v.support >= 0 && v.support <= 1) check.support = v.support
  }
  return check
}

/** Verdicts, or undefined when one is missing (a failed check: the metrics needing them are null). */
const allKnown = (checks: ReadonlyArray<ClaimCheck>): ReadonlyArray<ClaimVerdict> | undefined => {
  const out: Array<ClaimVerdict> = []
  for (const c of checks) {
    if (c.verdict === null) return undefined
    out.push(c.verdict)
  }
  return out
}

/** A case's judgments read back as claims, verdicts and nugget grades. */
export const caseClaims = (
  c: EvalCase,
  judgments: ReadonlyArray<Judgment>,
  rubrics: ClaimRubrics,
  sources: ClaimSources = allSources
): CaseClaims => {
  // The claim judgments by rubric, then target (the targets the specs were given: `Targets.checkTarget`).
  const byRubric = new Map<string, Map<string, Judgment>>()
  for (const j of judgments) {
    if (j.criterion === rubrics.extract || j.criterion === rubrics.check || j.criterion === rubrics.nugget) {
      let byTarget = byRubric.get(j.criterion)
      if (byTarget === undefined) byRubric.set(j.criterion, byTarget = new Map())
      byTarget.set(j.target, j)
    }
  }
  const checks = byRubric.get(rubrics.check)
  const check = (side: Side, i: number, against: ClaimAgainst) =>
    checkOf(checks?.get(checkTarget(side, i + 1, against)))
  const contexts = sources.contexts ? c.passages.length : 0
  const hasReference = c.reference !== undefined

  const side = (s: Side): ClaimList => {
    const j = byRubric.get(rubrics.extract)?.get(extractionTarget(s))
    if (isUnread(j)) return { status: "unread", reason: j!.reason }
    const texts = claimsOf(j)
    if (texts === undefined) {
      return {
        status: "failed",
        reason: j?.reason ?? "no judgment recorded",
        ...(j?.raw === undefined ? {} : { raw: j.raw })
      }
    }
    const against = s === "answer" ? "reference" : "answer"
    const claims: Array<CheckedClaim> = new Array(texts.length)
    for (let i = 0; i < texts.length; i++) {
      const byContext: Array<ClaimCheck> = new Array(contexts)
      for (let k = 0; k < contexts; k++) byContext[k] = check(s, i, contextOf(k))
      claims[i] = hasReference
        ? { n: i + 1, text: texts[i]!, against: check(s, i, against), contexts: byContext }
        : { n: i + 1, text: texts[i]!, contexts: byContext }
    }
    return { status: "ok", claims }
  }

  const answer = side("answer")
  const reference = hasReference ? side("reference") : undefined
  const nuggets = sources.nuggets && c.nuggets !== undefined && c.nuggets.length > 0
    ? c.nuggets.map((nugget: Nugget, i): GradedNugget => {
      const j = byRubric.get(rubrics.nugget)?.get(checkTarget("nugget", i + 1, "answer"))
      const ok = j !== undefined && j.status === "ok" && j.score !== null
      return {
        n: i + 1,
        text: nugget.text,
        ...(nugget.importance === undefined ? {} : { importance: nugget.importance }),
        assignment: ok ? nuggetSupportOf(j.score) : null,
        ...(j?.evidence === undefined || j.evidence === "" ? {} : { evidence: j.evidence }),
        reason: j?.reason ?? "no judgment recorded"
      }
    })
    : undefined

  const okClaims = (l: ClaimList | undefined) => (l !== undefined && l.status === "ok" ? l.claims : undefined)
  const a = okClaims(answer)
  const r = okClaims(reference)
  const perContext = (claims: ReadonlyArray<CheckedClaim>) => {
    const rows: Array<ReadonlyArray<ClaimVerdict>> = []
    for (let k = 0; k < contexts; k++) {
      const row = allKnown(claims.map((cl) => cl.contexts[k]!))
      if (row === undefined) return undefined
      rows.push(row)
    }
    return rows
  }
  // The answer's support per context, when the judge graded every check of it.
  const supports = a?.every((cl) => cl.contexts.every((k) => k.support !== undefined)) === true
    ? Array.from({ length: contexts }, (_, k) => a.map((cl) => cl.contexts[k]!.support!))
    : undefined
  const verdicts: CaseVerdicts = {
    answerVsReference: hasReference && a !== undefined ? allKnown(a.map((cl) => cl.against!)) : undefined,
    referenceVsAnswer: hasReference && r !== undefined ? allKnown(r.map((cl) => cl.against!)) : undefined,
    answerVsContexts: contexts > 0 && a !== undefined ? perContext(a) : undefined,
    answerSupportVsContexts: contexts > 0 ? supports : undefined,
    referenceVsContexts: contexts > 0 && r !== undefined ? perContext(r) : undefined,
    nuggets: nuggets === undefined || nuggets.some((n) => n.assignment === null)
      ? undefined
      : nuggets.map((n) => ({ importance: n.importance, assignment: n.assignment! }))
  }
  const unread = judgments.find((j) => j.status === "ok" && j.score === null)?.reason
  return {
    answer,
    ...(reference === undefined ? {} : { reference }),
    ...(nuggets === undefined ? {} : { nuggets }),
    verdicts,
    ...(unread === undefined ? {} : { unread }),
    abstained: a === undefined ? null : a.length === 0 && /[\p{L}\p{N}]/u.test(c.answer ?? "")
  }
}
