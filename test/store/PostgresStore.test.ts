/**
 * The PostgreSQL journal, cache and run lock against a private PostgreSQL started by the test
 * (skipped, visibly, where Debian's postgresql binaries are absent).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { JudgmentCache } from "../../src/store/JudgmentCache.js"
import { JudgmentJournal, State } from "../../src/store/JudgmentJournal.js"
import * as PostgresStore from "../../src/store/PostgresStore.js"
import { journalContract, judgment } from "../support/JournalContract.js"
import { postgresAvailable, type PrivatePostgres, startPostgres } from "../support/Postgres.js"

const runDir = (name: string) => Path.join(fs.mkdtempSync(Path.join(os.tmpdir(), "pgstore-")), "rubric-score", name)

describe.skipIf(!postgresAvailable)(
  "PostgreSQL store (needs PostgreSQL binaries in /usr/lib/postgresql: skipped without them)",
  () => {
    let pg: PrivatePostgres
    let url: Redacted.Redacted<string>
    beforeAll(async () => {
      pg = await startPostgres()
      url = Redacted.make(pg.url)
    }, 120_000)
    afterAll(() => pg?.stop())

    const run = <A, E>(
      effect: Effect.Effect<A, E, JudgmentJournal | JudgmentCache | SqlClient.SqlClient>
    ) => Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(PostgresStore.layer(url))) as Effect.Effect<A, E>)

    it("before `store migrate` a run fails with one message naming the command", async () => {
      const exit = await Effect.runPromiseExit(
        Effect.flatMap(JudgmentJournal, (j) => j.open(runDir("r0"), { fresh: false })).pipe(
          Effect.scoped,
          Effect.provide(PostgresStore.layer(url))
        )
      )
      expect(String(exit)).toContain("rag-eval store migrate")
    })

    it("journal: whole judgments, first success wins, failures and attempts replaced, resume by key", async () => {
      await run(PostgresStore.migrateJournal)
      await run(PostgresStore.migrateJournal) // idempotent
      const dir = runDir("r1")
      await run(Effect.gen(function*() {
        const j = yield* (yield* JudgmentJournal).open(dir, { fresh: false })
        yield* j.append([judgment("a"), judgment("b", "failed", "transport"), judgment("c", "failed", "judge")])
        yield* j.append([judgment("b")])
        // A redelivered batch's failure never replaces a success.
        yield* j.append([judgment("a", "failed", "transport")])
        yield* j.appendAttempt("d", {
          text: "{",
          problem: "no JSON",
          usage: { inputTokens: 5, outputTokens: 1 },
          asks: 1,
          attempts: 1
        })
        yield* j.appendAttempt("a", {
          text: "{",
          problem: "no JSON",
          usage: { inputTokens: 5, outputTokens: 1 },
          asks: 1,
          attempts: 1
        })
        expect(j.state("a")).toBe(State.ok)
      }))
      await run(Effect.gen(function*() {
        const j = yield* (yield* JudgmentJournal).open(dir, { fresh: false })
        expect(j.stats).toEqual({
          ok: 2,
          judgeFailed: 1,
          transportFailed: 0,
          attempts: 1,
          damagedLines: 0,
          tornLines: 0
        })
        expect([j.state("a"), j.state("b"), j.state("c"), j.state("d"), j.state("e")]).toEqual([
          State.ok,
          State.ok,
          State.judgeFailed,
          State.attempt,
          undefined
        ])
        expect(j.judgment("a")).toEqual(judgment("a"))
        expect(j.judgment("b")).toEqual(judgment("b"))
        expect(j.pendingRepair("d")?.usage).toEqual({ inputTokens: 5, outputTokens: 1 })
        // --retry-failed: a judge failure is replaced by the new judgment.
        yield* j.append([judgment("c")])
      }))
      await run(Effect.gen(function*() {
        const j = yield* (yield* JudgmentJournal).open(dir, { fresh: false })
        expect(j.state("c")).toBe(State.ok)
        // The cache across runs: a success of any run, never a failure.
        const cache = yield* JudgmentCache
        expect(Option.getOrUndefined(yield* cache.get("c"))?.status).toBe("ok")
        expect(Option.isNone(yield* cache.get("d"))).toBe(true)
      }))
      await run(Effect.gen(function*() {
        const j = yield* (yield* JudgmentJournal).open(dir, { fresh: true })
        expect(j.stats.ok).toBe(0)
      }))
    })

    it("the run lock is an advisory lock: a second open of the same run fails while the first holds it", async () => {
      await run(PostgresStore.migrateJournal)
      const dir = runDir("r2")
      const second = await run(Effect.gen(function*() {
        const journals = yield* JudgmentJournal
        yield* journals.open(dir, { fresh: false })
        const other = yield* Effect.scoped(
          Effect.flatMap(JudgmentJournal, (j) => j.open(dir, { fresh: false })).pipe(
            Effect.provide(PostgresStore.layer(url))
          )
        ).pipe(Effect.either)
        return other
      }))
      expect(second._tag).toBe("Left")
      expect(JSON.stringify(second)).toContain("in use by another process")
      // Released with its scope: a third open succeeds.
      await run(Effect.flatMap(JudgmentJournal, (j) => j.open(dir, { fresh: false })))
    })

    it("calibrate --store: a run's journal exported as journal lines, in the order written, without attempts", async () => {
      await run(PostgresStore.migrateJournal)
      const dir = runDir("r4")
      await run(Effect.gen(function*() {
        const j = yield* (yield* JudgmentJournal).open(dir, { fresh: false })
        yield* j.append([judgment("x"), judgment("y", "failed", "judge")])
        yield* j.appendAttempt("z", {
          text: "{",
          problem: "no JSON",
          usage: { inputTokens: 5, outputTokens: 1 },
          asks: 1,
          attempts: 1
        })
      }))
      const path = await Effect.runPromise(PostgresStore.exportJournal(pg.url, dir))
      expect(fs.readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l).key)).toEqual(["x", "y"])
      const none = await Effect.runPromiseExit(PostgresStore.exportJournal(pg.url, runDir("never")))
      expect(JSON.stringify(none)).toContain("has no judgments in the store")
    })

    it("a URL's credentials never appear in a message", async () => {
      const secret = Redacted.make(`postgres://rag:hunter2@127.0.0.1:${pg.port}/nosuchdb`)
      const exit = await Effect.runPromiseExit(
        Effect.flatMap(JudgmentJournal, (j) => j.open(runDir("r3"), { fresh: false })).pipe(
          Effect.scoped,
          Effect.provide(PostgresStore.layer(secret))
        )
      )
      expect(exit._tag).toBe("Failure")
      expect(String(JSON.stringify(exit))).not.toContain("hunter2")
      expect(PostgresStore.parseStoreUrl("mysql://a:b@c")).toHaveProperty("problem")
    })

    // After the tests above: the first of them needs a database not migrated yet.
    describe("the journal's contract (test/support/JournalContract.ts)", () => {
      beforeAll(() => Effect.runPromise(PostgresStore.migrateJournal.pipe(Effect.provide(PostgresStore.sqlLayer(url)))))
      journalContract(() => PostgresStore.layer(url), () => runDir(`contract-${Math.random().toString(36).slice(2)}`))
    })
  }
)
