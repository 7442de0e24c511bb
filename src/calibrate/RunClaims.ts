/**
 * A run's claim judgments as `calibrate` pairs them with people's claim and nugget labels: per case,
 * the claims each side's extraction gave (the answer's, the reference's), every check's verdict and
 * every nugget's grade, with the journal line each came from.
 *
 * The targets are the ones `src/judges/claims/Targets.ts` writes (`claims:answer`,
 * `<text>/<side>:<n>`, `answer/nugget:<n>`): parsed here, and a test builds them with that module's
 * functions, so a change of format there fails here. Scores are the check rubric's and the nugget
 * rubric's scales (0 · 1 · 2, `domain/Label.ts`): contradicted · neutral · entailed, and
 * not_support · partial_support · support.
 */
import type { ClaimAgainst, ClaimVerdict, NuggetSupport } from "../domain/Label.js"

/** The verdicts in score order (0, 1, 2): the check rubric's scale. */
export const VERDICTS: ReadonlyArray<ClaimVerdict> = ["contradicted", "neutral", "entailed"]
/** The nugget grades in score order (0, 1, 2). */
export const SUPPORTS: ReadonlyArray<NuggetSupport> = ["not_support", "partial_support", "support"]

export type Side = "answer" | "reference"

/** What a judgment's target says it judged, when it is a claim judgment. */
export type ClaimTarget =
  | { readonly kind: "extraction"; readonly side: Side }
  | { readonly kind: "check"; readonly side: Side; readonly index: number; readonly against: string }
  | { readonly kind: "nugget"; readonly index: number }

const EXTRACTION = /^claims:(answer|reference)$/
const CHECK = /^(reference|answer|context:[1-9]\d*)\/(answer|reference):([1-9]\d*)$/
const NUGGET = /^answer\/nugget:([1-9]\d*)$/

/** The claim judgment a target names, or undefined for any other target (`answer`, `hit:…`). */
export const parseClaimTarget = (target: string): ClaimTarget | undefined => {
  const e = EXTRACTION.exec(target)
  if (e !== null) return { kind: "extraction", side: e[1] as Side }
  const c = CHECK.exec(target)
  if (c !== null) return { kind: "check", side: c[2] as Side, index: Number(c[3]), against: c[1]! }
  const n = NUGGET.exec(target)
  if (n !== null) return { kind: "nugget", index: Number(n[1]) }
  return undefined
}

/** A claim label's `against` as the text part of a check target (`context:3`); `contexts` has none. */
export const againstText = (against: ClaimAgainst): string | undefined =>
  typeof against === "string" ? (against === "contexts" ? undefined : against) : `context:${against.context}`

/** One verdict or grade as judged: its score (null: the judgment failed) and its journal line. */
export interface Scored {
  readonly score: number | null
  readonly line: number
}

/** A side's claims as extracted, or the failure (no claims to check). */
export type Extraction =
  | { readonly status: "ok"; readonly claims: ReadonlyArray<string>; readonly line: number }
  | { readonly status: "failed"; readonly reason: string; readonly line: number }

export interface CaseClaimJudgments {
  readonly extraction: Map<Side, Extraction>
  /** Check target (`reference/answer:2`) → verdict score. */
  readonly checks: Map<string, Scored>
  /** Nugget number (1-based) → grade. */
  readonly nuggets: Map<number, Scored>
}

/** caseId → its claim judgments (only cases that have any). */
export type RunClaims = Map<string, CaseClaimJudgments>

const caseOf = (claims: RunClaims, caseId: string): CaseClaimJudgments => {
  let c = claims.get(caseId)
  if (c === undefined) claims.set(caseId, c = { extraction: new Map(), checks: new Map(), nuggets: new Map() })
  return c
}

/** Adds one journal judgment of a claim target (the later line for a target wins, as a resume reads it). */
export const addClaimJudgment = (
  claims: RunClaims,
  j: {
    readonly caseId: string
    readonly status: "ok" | "failed"
    readonly score: number | null
    readonly reason: string
    readonly value: unknown
  },
  target: ClaimTarget,
  line: number
): void => {
  const c = caseOf(claims, j.caseId)
  switch (target.kind) {
    case "extraction": {
      const list = j.status === "ok" && Array.isArray(j.value)
        ? j.value.filter((x): x is string => typeof x === "string")
        : undefined
      c.extraction.set(
        target.side,
        list === undefined ? { status: "failed", reason: j.reason, line } : { status: "ok", claims: list, line }
      )
      return
    }
    case "check":
      c.checks.set(`${target.against}/${target.side}:${target.index}`, {
        score: j.status === "ok" ? j.score : null,
        line
      })
      return
    case "nugget":
      c.nuggets.set(target.index, { score: j.status === "ok" ? j.score : null, line })
      return
  }
}

/** Claim text folded for matching a label's text to the judge's claim: case, spacing and end punctuation aside. */
export const foldClaim = (text: string): string =>
  text.normalize("NFKC").toLowerCase().replace(/\s+/g, " ").trim().replace(/[\s.;:,!?]+$/, "")

/**
 * The judge's verdict of a claim against the retrieved contexts together: entailed when some
 * context entails it (faithfulness's reading), else contradicted when some context contradicts it,
 * else neutral; null (failed) when a check failed and no context entails it; undefined when the
 * claim was not checked against any context.
 */
export const contextsVerdict = (c: CaseClaimJudgments, side: Side, index: number): Scored | undefined => {
  const suffix = `/${side}:${index}`
  let best: Scored | undefined
  let failed: Scored | undefined
  for (const [target, scored] of c.checks) {
    if (!target.startsWith("context:") || !target.endsWith(suffix)) continue
    if (scored.score === null) {
      failed ??= scored
      continue
    }
    if (best === undefined || rank(scored.score) > rank(best.score!)) best = scored
  }
  if (best !== undefined && best.score === 2) return best
  if (failed !== undefined) return failed
  return best
}

/** entailed > contradicted > neutral: the order the combined verdict takes them in. */
const rank = (score: number): number => (score === 2 ? 3 : score === 0 ? 2 : 1)
