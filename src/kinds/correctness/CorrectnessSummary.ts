/**
 * What answer-correctness folds of its own, beside the engine's fold (each claim metric's mean and
 * interval, the lowest and failed cases, the failures and counts — `engine/CaseFold.ts`): the claims
 * counted over the run, by side and verdict.
 */
import type { AggregateStage } from "../../engine/Pipeline.js"
import type { ClaimList } from "./Claims.js"
import type { CorrectnessRecord } from "./CorrectnessScore.js"

type Counts = { entailed: number; neutral: number; contradicted: number }

/** Claims counted over the run, by side and verdict. */
export interface ClaimCounts {
  readonly answerClaims: number
  readonly referenceClaims: number
  /** Answer claims against the reference. */
  readonly answerVsReference: Readonly<Counts>
  /** Reference claims against the answer. */
  readonly referenceVsAnswer: Readonly<Counts>
  /** Answer claims no context entails (with contexts). */
  readonly unsupportedByContexts: number
}

/** The summary part of answer-correctness' own fold (`RunSummary.extra`). */
export interface CorrectnessSummary {
  readonly claims: ClaimCounts
}

const countVerdicts = (counts: Counts, list: ClaimList | undefined) => {
  if (list === undefined || list.status !== "ok") return
  for (const c of list.claims) {
    const v = c.against?.verdict
    if (v !== undefined && v !== null) counts[v]++
  }
}

export const correctnessSummary = (): AggregateStage<CorrectnessRecord, CorrectnessSummary> => ({
  start: () => {
    const answerVsReference: Counts = { entailed: 0, neutral: 0, contradicted: 0 }
    const referenceVsAnswer: Counts = { entailed: 0, neutral: 0, contradicted: 0 }
    let answerClaims = 0
    let referenceClaims = 0
    let unsupportedByContexts = 0
    return {
      add: (r) => {
        const { answer, reference } = r.claims
        if (answer.status === "ok") {
          answerClaims += answer.claims.length
          for (const c of answer.claims) {
            if (c.contexts.length > 0 && c.contexts.every((k) => k.verdict !== null && k.verdict !== "entailed")) {
              unsupportedByContexts++
            }
          }
        }
        if (reference?.status === "ok") referenceClaims += reference.claims.length
        countVerdicts(answerVsReference, answer)
        countVerdicts(referenceVsAnswer, reference)
      },
      finish: () => ({
        claims: { answerClaims, referenceClaims, answerVsReference, referenceVsAnswer, unsupportedByContexts }
      })
    }
  }
})
