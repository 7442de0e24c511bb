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

/**
 * Checks' targets and refs are built once and kept (a case's score looks up every check by its target:
 * the same string the spec was given is found by identity, its hash already known), in a table of
 * at most `KEPT_INDEXES` claims against `KEPT_CONTEXTS` contexts; others are built each time.
 */
const KEPT_INDEXES = 256
const KEPT_CONTEXTS = 64
const SIDE_SLOT = { answer: 0, reference: 1, nugget: 2 } as const

/** The table's row for (against, side), or undefined beyond the table. */
const slotOf = (side: Side | "nugget", index: number, against: ClaimAgainst): number | undefined => {
  if (!Number.isInteger(index) || index < 0 || index >= KEPT_INDEXES) return undefined
  const a = typeof against === "string"
    ? (against === "reference" ? 0 : against === "answer" ? 1 : 2)
    : Number.isInteger(against.context) && against.context >= 1 && against.context <= KEPT_CONTEXTS
    ? 2 + against.context
    : undefined
  return a === undefined ? undefined : 3 * a + SIDE_SLOT[side]
}

const keptTargets: Array<Array<string>> = []
const keptRefs: Array<Array<ClaimRef>> = []
const keptContexts: Array<ClaimAgainst> = []

/** The target of claim `index` (1-based) of `side` checked against `against` (see the module comment). */
export const checkTarget = (side: Side | "nugget", index: number, against: ClaimAgainst): string => {
  const slot = slotOf(side, index, against)
  if (slot === undefined) return `${againstName(against)}/${side}:${index}`
  const row = (keptTargets[slot] ??= [])
  return (row[index] ??= `${againstName(against)}/${side}:${index}`)
}

/** The target of a claim check (see the module comment). */
export const claimTarget = (ref: ClaimRef): string => checkTarget(ref.side, ref.index, ref.against)

/** Claim i (0-based) of `side`, checked against `against`. */
export const claimRef = (side: Side | "nugget", i: number, against: ClaimAgainst): ClaimRef => {
  const slot = slotOf(side, i + 1, against)
  if (slot === undefined) return { side, index: i + 1, against }
  const row = (keptRefs[slot] ??= [])
  return (row[i + 1] ??= { side, index: i + 1, against })
}

/** The k-th retrieved passage (0-based k), as a check's `against`. */
export const contextOf = (k: number): ClaimAgainst =>
  Number.isInteger(k) && k >= 0 && k < KEPT_CONTEXTS ? (keptContexts[k] ??= { context: k + 1 }) : { context: k + 1 }

/** Is the check an answer's claim against a retrieved passage (the answer's grounding: faithfulness)? */
export const isGrounding = (ref: ClaimRef): boolean => ref.side === "answer" && typeof ref.against !== "string"

/** Is the check of a gold claim — a reference's claim or a nugget — checked for recall? */
export const isGold = (ref: ClaimRef): boolean => ref.side !== "answer"
