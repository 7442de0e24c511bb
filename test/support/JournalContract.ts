/**
 * The journal's contract, one suite run against every layer (as Effect's KeyValueStore tests run
 * `testLayer(layer)` per layer): the file store and the memory layer (`test/store/JudgmentJournal.test.ts`)
 * and PostgreSQL (`test/store/PostgresStore.test.ts`, with its private server; skipped visibly
 * without PostgreSQL binaries). What a resume relies on: judgments read back whole by key after a
 * reopen, a failure replaced by a later success, a paid reply awaiting repair, `fresh`.
 *
 * Not in the contract, and tested per store: which of two *successes* wins (the file's latest line,
 * PostgreSQL's first success), torn lines (files only), the lock between processes.
 */
import { Effect, type Layer, type Scope } from "effect"
import { expect, it } from "vitest"
import type { Judgment } from "../../src/domain/Judgment.js"
import { JudgmentJournal, type PendingRepair, State } from "../../src/store/JudgmentJournal.js"

export const judgment = (
  key: string,
  status: "ok" | "failed" = "ok",
  failure?: "transport" | "judge",
  reason = "r"
): Judgment => ({
  key,
  caseId: "1",
  ordinal: 0,
  iteration: 1,
  criterion: "c",
  target: "answer",
  status,
  ...(failure === undefined ? {} : { failure }),
  score: status === "ok" ? 2 : null,
  reason,
  usage: { inputTokens: 10, outputTokens: 2 },
  attempts: 1,
  latencyMs: 3,
  provider: "p",
  model: "m"
})

const pending: PendingRepair = {
  text: "{\"score\": ",
  problem: "no JSON object",
  usage: { inputTokens: 300, outputTokens: 9 },
  asks: 1,
  attempts: 1
}

export const journalContract = (
  /** The layer under test (built per test: PostgreSQL's URL is known only once its server runs). */
  layer: () => Layer.Layer<JudgmentJournal, unknown>,
  /** A fresh run directory (the key of a run in every store). */
  runDir: () => string
) => {
  const run = <A, E>(effect: Effect.Effect<A, E, JudgmentJournal | Scope.Scope>) =>
    Effect.runPromise(Effect.scoped(effect).pipe(Effect.provide(layer())) as Effect.Effect<A, unknown>)
  /** Open the run's journal in a scope of its own (closed, and its lock given up, before the next). */
  const opened = <A, E>(
    dir: string,
    fresh: boolean,
    use: (j: Effect.Effect.Success<ReturnType<JudgmentJournal["Type"]["open"]>>) => Effect.Effect<A, E>
  ) => Effect.scoped(Effect.flatMap(JudgmentJournal, (journals) => Effect.flatMap(journals.open(dir, { fresh }), use)))

  it("judgments read back whole by key after a reopen; states and counts by outcome; an unknown key has none", async () => {
    const dir = runDir()
    const odd = judgment("c", "failed", "judge", "quote \" backslash \\ newline \n é ✓ 🚀 \u2028")
    await run(opened(dir, false, (j) =>
      Effect.gen(function*() {
        expect(j.stats).toMatchObject({ ok: 0, judgeFailed: 0, transportFailed: 0, attempts: 0 })
        yield* j.append([judgment("a"), judgment("b", "failed", "transport")])
        yield* j.append([odd])
        yield* j.append([])
      })))
    await run(opened(dir, false, (j) =>
      Effect.sync(() => {
        expect(j.stats).toMatchObject({ ok: 1, judgeFailed: 1, transportFailed: 1, attempts: 0 })
        expect([j.state("a"), j.state("b"), j.state("c"), j.state("d")]).toEqual([
          State.ok,
          State.transportFailed,
          State.judgeFailed,
          undefined
        ])
        expect(j.judgment("a")).toEqual(judgment("a"))
        expect(j.judgment("c")).toEqual(odd)
        expect(j.judgment("d")).toBeUndefined()
        expect(j.pendingRepair("a")).toBeUndefined()
      })))
  })

  it("a failure is replaced by a later success of its key (a resume, --retry-failed)", async () => {
    const dir = runDir()
    await run(
      opened(dir, false, (j) => j.append([judgment("a", "failed", "transport"), judgment("b", "failed", "judge")]))
    )
    await run(opened(dir, false, (j) => j.append([judgment("a"), judgment("b")])))
    await run(opened(dir, false, (j) =>
      Effect.sync(() => {
        expect(j.stats).toMatchObject({ ok: 2, judgeFailed: 0, transportFailed: 0 })
        expect(j.judgment("b")).toEqual(judgment("b"))
      })))
  })

  it("a paid reply awaiting repair is kept as an attempt until a judgment of its key replaces it", async () => {
    const dir = runDir()
    await run(opened(dir, false, (j) =>
      Effect.gen(function*() {
        yield* j.appendAttempt("k1", pending)
        yield* j.appendAttempt("k2", pending)
        yield* j.append([judgment("k2")])
      })))
    await run(opened(dir, false, (j) =>
      Effect.sync(() => {
        expect(j.stats).toMatchObject({ ok: 1, attempts: 1 })
        expect(j.state("k1")).toBe(State.attempt)
        expect(j.pendingRepair("k1")).toEqual(pending)
        expect(j.judgment("k1")).toBeUndefined()
        expect(j.state("k2")).toBe(State.ok)
        expect(j.pendingRepair("k2")).toBeUndefined()
      })))
  })

  it("fresh discards what the run's journal held; another run's journal is untouched", async () => {
    const dir = runDir()
    const other = runDir()
    await run(opened(dir, false, (j) => j.append([judgment("a")])))
    await run(opened(other, false, (j) => j.append([judgment("z")])))
    await run(opened(dir, true, (j) =>
      Effect.sync(() => {
        expect(j.stats).toMatchObject({ ok: 0 })
        expect(j.state("a")).toBeUndefined()
      })))
    await run(opened(other, false, (j) => Effect.sync(() => expect(j.judgment("z")).toEqual(judgment("z")))))
  })
}
