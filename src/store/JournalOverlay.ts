/**
 * An opened journal that also remembers, in memory, what this invocation appended — so a reader in
 * the same run sees it (the journal's index is built once, at open, and the synchronous pass never
 * needs more). Used by `--batch`: the batch phase journals judgments and paid replies awaiting
 * repair, and the normal pass that follows must find them (to reuse, or to continue a repair).
 * Memory grows with what is appended in this invocation (one `Judgment` object each).
 */
import * as Effect from "effect/Effect"
import { failureClass, type Judgment, type PendingRepair } from "../domain/Judgment.js"
import { type OpenedJournal, State } from "./JudgmentJournal.js"

type StateValue = (typeof State)[keyof typeof State]

const stateOf = (j: Judgment): StateValue =>
  j.status === "ok" ? State.ok : failureClass(j) === "transport" ? State.transportFailed : State.judgeFailed

export const withOverlay = (journal: OpenedJournal): OpenedJournal => {
  const states = new Map<string, StateValue>()
  const judgments = new Map<string, Judgment>()
  const attempts = new Map<string, PendingRepair>()
  return {
    stats: journal.stats,
    path: journal.path,
    state: (key) => states.get(key) ?? journal.state(key),
    judgment: (key) => {
      const state = states.get(key)
      if (state === undefined) return journal.judgment(key)
      return state === State.attempt ? undefined : judgments.get(key)
    },
    pendingRepair: (key) => {
      const state = states.get(key)
      if (state === undefined) return journal.pendingRepair(key)
      return state === State.attempt ? attempts.get(key) : undefined
    },
    append: (js) =>
      Effect.tap(journal.append(js), () =>
        Effect.sync(() => {
          for (const j of js) {
            states.set(j.key, stateOf(j))
            judgments.set(j.key, j)
            attempts.delete(j.key)
          }
        })),
    appendAttempt: (key, attempt) =>
      Effect.tap(journal.appendAttempt(key, attempt), () =>
        Effect.sync(() => {
          states.set(key, State.attempt)
          attempts.set(key, attempt)
          judgments.delete(key)
        }))
  }
}
