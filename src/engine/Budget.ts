/**
 * `--max-cost USD`: a call (or a batch) starts only when what the run has spent — in earlier
 * invocations (its journaled judgments and attempts, its submitted batches at their estimate) and in
 * this one — plus the estimate of every call in flight, plus its own estimate, stays within the cap. The first one that
 * would pass it stops the run as Ctrl+C does (calls in flight finish and are journaled; the same
 * command resumes), and the run ends with `BudgetReached` (exit 1).
 *
 * Estimates are the dry run's (≈ 4 characters a token, `ESTIMATED_OUTPUT_TOKENS` output tokens a
 * judgment); what a call really cost replaces its estimate when it lands.
 */
import type { Usage } from "../domain/Judgment.js"
import { type Price, usdOf } from "../pricing/Prices.js"

/** Output tokens assumed per judgment in estimates (a short reasoning and a score): `--max-cost` and `--dry-run`. */
export const ESTIMATED_OUTPUT_TOKENS = 150

export interface Budget {
  readonly capUsd: number
  /** Reserve `estUsd` for a call about to start; false (and `reached`) when it would pass the cap. */
  readonly admit: (estUsd: number) => boolean
  /** A call landed: its estimate is released and what it really cost counted. */
  readonly settle: (estUsd: number, usage: Usage, via: "batch" | undefined) => void
  readonly reached: () => boolean
  /** Nothing more can start: what the run spent (and reserved) is at the cap already. */
  readonly exhausted: () => boolean
  /** Spent by the run so far, earlier invocations included. */
  readonly spentUsd: () => number
  /** The estimated cost of a call: its prompt's characters and the judgments it makes. */
  readonly estimate: (promptChars: number, judgments: number, via: "batch" | undefined) => number
}

/**
 * `before`: what earlier invocations of the run spent, and the estimates of the batches they left
 * open (reserved like calls in flight, settled when their replies are collected).
 */
export const make = (
  capUsd: number,
  price: Price,
  before: { readonly spentUsd: number; readonly reservedUsd: number } = { spentUsd: 0, reservedUsd: 0 }
): Budget => {
  let spent = before.spentUsd
  let inFlight = before.reservedUsd
  let reached = false
  const usd = (input: number, output: number, cached: number, via: "batch" | undefined) =>
    usdOf(
      via === "batch"
        ? { input, output, cachedInput: cached, batchInput: input, batchOutput: output, batchCachedInput: cached }
        : { input, output, cachedInput: cached },
      price
    )
  return {
    capUsd,
    admit: (est) => {
      if (reached || spent + inFlight + est > capUsd) {
        reached = true
        return false
      }
      inFlight += est
      return true
    },
    settle: (est, usage, via) => {
      inFlight = Math.max(0, inFlight - est)
      spent += usd(usage.inputTokens, usage.outputTokens, usage.cachedInputTokens ?? 0, via)
    },
    reached: () => reached,
    exhausted: () => spent + inFlight >= capUsd,
    spentUsd: () => spent,
    estimate: (chars, judgments, via) => usd(Math.ceil(chars / 4), judgments * ESTIMATED_OUTPUT_TOKENS, 0, via)
  }
}
