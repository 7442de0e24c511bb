/**
 * The targets of claim judgments — what each extraction and check judged — in one place. A check's
 * meaning travels typed (`ClaimRef` on the task's item, read by the heuristic checker); its target
 * string, built here from the same `ClaimRef`, names it in keys, the journal and reports, and is the
 * one the kind reads its judgments back by (`kinds/correctness/Claims.ts`). The strings are those of
 * earlier versions, so judgment keys are unchanged:
 *
 * `claims:answer`, `claims:reference` (the extractions); `<text>/<side>:<n>` (claim n of the
 * answer's or the reference's claims, checked against `reference`, `answer` or `context:<k>`);
 * `answer/nugget:<n>`.
 */
import type { ClaimRef } from "../../domain/Judgment.js"
import type { ClaimAgainst } from "../../domain/Label.js"

/** Whose claims: the answer's or the reference's. */
export type Side = "answer" | "reference"

export const ANSWER_CLAIMS = "claims:answer"
export const REFERENCE_CLAIMS = "claims:reference"

/** The extraction of `side`'s claims. */
export const extractionTarget = (side: Side): string => (side === "answer" ? ANSWER_CLAIMS : REFERENCE_CLAIMS)

/** The text a check reads, as its target names it: `reference`, `answer` or `context:<k>`. */
const againstName = (a: ClaimAgainst): string => typeof a === "string" ? a : `context:${a.context}`

/** The target of a claim check (see the module comment). */
export const claimTarget = (ref: ClaimRef): string => `${againstName(ref.against)}/${ref.side}:${ref.index}`

/** Claim i (0-based) of `side`, checked against `against`. */
export const claimRef = (side: Side | "nugget", i: number, against: ClaimAgainst): ClaimRef => ({
  side,
  index: i + 1,
  against
})

/** The k-th retrieved passage (0-based k), as a check's `against`. */
export const contextOf = (k: number): ClaimAgainst => ({ context: k + 1 })

/** Is the check an answer's claim against a retrieved passage (the answer's grounding: faithfulness)? */
export const isGrounding = (ref: ClaimRef): boolean => ref.side === "answer" && typeof ref.against !== "string"

/** Is the check of a gold claim — a reference's claim or a nugget — checked for recall? */
export const isGold = (ref: ClaimRef): boolean => ref.side !== "answer"
