/**
 * What answer-correctness folds of its own, beside the engine's fold (each claim metric's mean and
 * interval, the lowest and failed cases, the failures and counts — `engine/CaseFold.ts`): the claims
 * counted over the run, by side and verdict, the answers that abstained and the cases the judge did
 * not read.
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
  /** Answers that abstain (words, no claim). */
  readonly abstained: number
  /** Cases the judge did not read (the heuristic judge reads English only), and the first reason. */
  readonly notJudged: number
  readonly notJudgedReason?: string | undefined
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

interface State {
  readonly answerVsReference: Counts
  readonly referenceVsAnswer: Counts
  answerClaims: number
  referenceClaims: number
  unsupportedByContexts: number
  abstained: number
  notJudged: number
  notJudgedReason: string | undefined
}

const init = (): State => ({
  answerVsReference: { entailed: 0, neutral: 0, contradicted: 0 },
  referenceVsAnswer: { entailed: 0, neutral: 0, contradicted: 0 },
  answerClaims: 0,
  referenceClaims: 0,
  unsupportedByContexts: 0,
  abstained: 0,
  notJudged: 0,
  notJudgedReason: undefined
})

export const correctnessSummary = (): AggregateStage<CorrectnessRecord, CorrectnessSummary> => ({
  start: () => {
    let s = init()
    return {
      add: (r) => {
        const { answer, reference } = r.claims
        if (answer.status === "ok") {
          s.answerClaims += answer.claims.length
          for (const c of answer.claims) {
            if (c.contexts.length > 0 && c.contexts.every((k) => k.verdict !== null && k.verdict !== "entailed")) {
              s.unsupportedByContexts++
            }
          }
        }
        if (reference?.status === "ok") s.referenceClaims += reference.claims.length
        if (r.claims.abstained === true) s.abstained++
        if (r.claims.unread !== undefined) {
          s.notJudged++
          s.notJudgedReason ??= r.claims.unread
        }
        countVerdicts(s.answerVsReference, answer)
        countVerdicts(s.referenceVsAnswer, reference)
      },
      save: () => structuredClone(s),
      restore: (state) => {
        s = structuredClone(state as State)
      },
      finish: () => ({
        claims: {
          answerClaims: s.answerClaims,
          referenceClaims: s.referenceClaims,
          answerVsReference: s.answerVsReference,
          referenceVsAnswer: s.referenceVsAnswer,
          unsupportedByContexts: s.unsupportedByContexts,
          abstained: s.abstained,
          notJudged: s.notJudged,
          ...(s.notJudgedReason === undefined ? {} : { notJudgedReason: s.notJudgedReason })
        }
      })
    }
  }
})
