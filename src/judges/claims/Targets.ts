/**
 * The targets of claim judgments — what each extraction and check judged — in one place: the claim
 * pipelines write them (`kinds/correctness/Claims.ts`) and the heuristic checker reads them
 * (`ClaimHeuristics.ts`: an answer's claim checked against a retrieved passage is a grounding check).
 *
 * `claims:answer`, `claims:reference` (the extractions); `<text>/<side>:<n>` (claim n of the
 * answer's or the reference's claims, checked against `reference`, `answer` or `context:<k>`);
 * `answer/nugget:<n>`.
 */

/** Whose claims: the answer's or the reference's. */
export type Side = "answer" | "reference"

export const ANSWER_CLAIMS = "claims:answer"
export const REFERENCE_CLAIMS = "claims:reference"

/** The extraction of `side`'s claims. */
export const extractionTarget = (side: Side): string => (side === "answer" ? ANSWER_CLAIMS : REFERENCE_CLAIMS)

/** The k-th retrieved passage (0-based k), as the text a check reads. */
export const contextTarget = (k: number): string => `context:${k + 1}`

/** Claim i (0-based) of `side`, checked against `text` (`reference`, `answer` or a `contextTarget`). */
export const claimTarget = (text: string, side: Side, i: number): string => `${text}/${side}:${i + 1}`

/** Nugget i (0-based), graded against the answer. */
export const nuggetTarget = (i: number): string => `answer/nugget:${i + 1}`

const ANSWER_AGAINST_CONTEXT = /^context:\d+\/answer:\d+$/
const GOLD = /^[^/]+\/(?:reference|nugget):\d+$/

/** Is the check an answer's claim against a retrieved passage (the answer's grounding: faithfulness)? */
export const isGroundingTarget = (target: string): boolean => ANSWER_AGAINST_CONTEXT.test(target)

/** Is the check of a gold claim — a reference's claim or a nugget — checked for recall? */
export const isGoldTarget = (target: string): boolean => GOLD.test(target)
