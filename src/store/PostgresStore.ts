/**
 * The judgment journal, the cache and the run lock on PostgreSQL (`--store postgres://…`), with the
 * file journal's semantics:
 *
 * - one row per (run, key) in `rag_eval_judgments`; an append writes whole judgments (one
 *   statement per batch) and **a success is never overwritten** (`ON CONFLICT … WHERE status <>
 *   'ok'`), so a batch delivered twice to two runners agrees on its results; a failure or a paid
 *   reply awaiting repair (an *attempt*) is replaced by whatever comes later, as the file journal's
 *   latest line wins;
 * - opening a run reads its rows into memory (`state(key)` and `judgment(key)` are synchronous in
 *   the journal interface): about the size of the file journal's text; `fresh` deletes them;
 * - the run lock is a session advisory lock (`pg_try_advisory_lock`) on a connection held for the
 *   life of the run, so two coordinators on two machines cannot run the same run;
 * - the cache across runs is the same table: a lookup of a key with status ok in any run (a `put`
 *   writes nothing more: the judgment's journal row is its cache entry).
 *
 * The run is identified by `<pipeline>/<run-id>` (the last two parts of the run directory), so a
 * coordinator started on another machine with another `--out` finds the same journal.
 *
 * The schema is created by `rag-eval store migrate` only (runners starting together on an empty
 * database raced on `CREATE TABLE IF NOT EXISTS`); opening a store checks it is there.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { InputError, OutputError, UsageError } from "../domain/Errors.js"
import { decodeJudgmentJson, decodePendingRepairJson, type Judgment } from "../domain/Judgment.js"
import { maskUrl, maskUrlsIn } from "../domain/Secrets.js"
import { JudgmentCache } from "./JudgmentCache.js"
import { JudgmentJournal, type OpenedJournal, State } from "./JudgmentJournal.js"

export const TABLE = "rag_eval_judgments"
/** Bumped when the schema changes; `store migrate` brings a database to it. */
export const SCHEMA_VERSION = 1

/** A `--store` value: a PostgreSQL URL (its credentials stay redacted), or a problem. */
export const parseStoreUrl = (value: string): Redacted.Redacted<string> | UsageError => {
  if (!/^postgres(ql)?:\/\//i.test(value)) {
    return new UsageError({
      problem: `--store must be a PostgreSQL URL (postgres://user:password@host:5432/database), not ${
        JSON.stringify(maskUrlsIn(value))
      }`
    })
  }
  try {
    new URL(value)
  } catch {
    return new UsageError({ problem: `--store ${maskUrl(value)} is not a valid URL` })
  }
  return Redacted.make(value)
}

/** The store's URL as it may be shown: credentials masked. */
export const displayStore = (url: Redacted.Redacted<string>) => maskUrl(Redacted.value(url))

/** The key a run's rows (and its cluster messages) are filed under: `<pipeline>/<run-id>`. */
export const runKeyOf = (runDir: string) =>
  `${Path.basename(Path.dirname(Path.resolve(runDir)))}/${Path.basename(Path.resolve(runDir))}`

const problemOf = (e: SqlError | unknown): string => {
  const err = e as { message?: string; cause?: { message?: string } }
  return maskUrlsIn(
    [err.message, err.cause?.message].filter((m) => m !== undefined && m !== "").join(": ") || String(e)
  )
}

const storeError = (url: Redacted.Redacted<string>, what: string) => (e: unknown) =>
  new OutputError({ path: displayStore(url), problem: `${what}: ${problemOf(e)}` })

/** The SQL client of a `--store` URL (a small pool; connections are opened on use). */
export const sqlLayer = (url: Redacted.Redacted<string>, options?: { readonly maxConnections?: number | undefined }) =>
  PgClient.layer({ url, maxConnections: options?.maxConnections ?? 10, applicationName: "rag-eval" }).pipe(
    Layer.mapError((e) =>
      new OutputError({ path: displayStore(url), problem: `cannot connect to the store: ${problemOf(e)}` })
    )
  )

/** The state a judgment's row is filed under. */
const statusOf = (j: Judgment): string => j.status === "ok" ? "ok" : j.failure === "transport" ? "transport" : "judge"
const stateOf = (status: string): State | undefined =>
  status === "ok"
    ? State.ok
    : status === "judge"
    ? State.judgeFailed
    : status === "transport"
    ? State.transportFailed
    : status === "attempt"
    ? State.attempt
    : undefined

/** Create (or bring up to date) the journal's schema; the cluster's tables come from the cluster layers. */
export const migrateJournal = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE IF NOT EXISTS rag_eval_schema (version INTEGER NOT NULL)`
  yield* sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
    run_id TEXT NOT NULL,
    key TEXT NOT NULL,
    seq BIGSERIAL,
    status TEXT NOT NULL,
    body TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, key)
  )`
  yield* sql`CREATE INDEX IF NOT EXISTS rag_eval_judgments_ok_key ON ${sql(TABLE)} (key) WHERE status = 'ok'`
  yield* sql`DELETE FROM rag_eval_schema`
  yield* sql`INSERT INTO rag_eval_schema (version) VALUES (${SCHEMA_VERSION})`
})

/** Fails with a clear message when `store migrate` has not been run on this database. */
export const checkSchema = (url: Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ version: number }>`SELECT version FROM rag_eval_schema`.pipe(
      Effect.catchAll(() => Effect.succeed([]))
    )
    if (rows.length === 0 || rows[0]!.version !== SCHEMA_VERSION) {
      return yield* new UsageError({
        problem: `the store ${
          displayStore(url)
        } has no rag-eval schema (version ${SCHEMA_VERSION}): run \`rag-eval store migrate --store …\` once first`
      })
    }
  })

/**
 * Append judgments (whole rows, one statement) to a run: a success is never overwritten; a failure
 * or an attempt is replaced. Used by the journal and by cluster runners.
 */
export const appendRows = (
  runKey: string,
  rows: ReadonlyArray<{ readonly key: string; readonly status: string; readonly body: string }>
) =>
  Effect.gen(function*() {
    if (rows.length === 0) return
    const sql = yield* SqlClient.SqlClient
    // One row per key in a statement (ON CONFLICT cannot touch a row twice): the last one wins.
    const byKey = new Map<string, { readonly key: string; readonly status: string; readonly body: string }>()
    for (const r of rows) byKey.set(r.key, r)
    yield* sql`INSERT INTO ${sql(TABLE)} ${
      sql.insert([...byKey.values()].map((r) => ({ run_id: runKey, key: r.key, status: r.status, body: r.body })))
    }
      ON CONFLICT (run_id, key) DO UPDATE SET status = EXCLUDED.status, body = EXCLUDED.body, seq = EXCLUDED.seq, updated_at = now()
      WHERE ${sql(TABLE)}.status <> 'ok'`
  })

export const judgmentRows = (judgments: ReadonlyArray<Judgment>) =>
  judgments.map((j) => ({ key: j.key, status: statusOf(j), body: JSON.stringify(j) }))

/** The judgments a run holds for some keys (successes and failures, not attempts). */
export const judgmentsOf = (runKey: string, keys: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (keys.length === 0) return new Map<string, Judgment>()
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ key: string; body: string }>`SELECT key, body FROM ${
      sql(TABLE)
    } WHERE run_id = ${runKey} AND status <> 'attempt' AND ${sql.in("key", keys)}`
    // A row that does not decode is left out: its judgment is made again.
    return new Map(rows.flatMap((r) => Option.toArray(decodeJudgmentJson(r.body)).map((j) => [r.key, j] as const)))
  })

/** A 64-bit advisory lock id for a run. */
const lockSql = (runKey: string) => `rag-eval run ${runKey}`

/**
 * The run's advisory lock on a connection of its own, for the life of the scope (closing the
 * connection — a crash included — releases it).
 */
export const lockRun = (
  url: Redacted.Redacted<string>,
  runKey: string
): Effect.Effect<void, OutputError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const conn = yield* sql.reserve
    const rows = yield* conn.execute("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked", [
      lockSql(runKey)
    ], undefined)
    if ((rows[0] as { locked?: boolean } | undefined)?.locked !== true) {
      return yield* new OutputError({
        path: displayStore(url),
        problem:
          `run ${runKey} is in use by another process (its lock is held in the store); wait for it or stop it first`
      })
    }
    yield* Effect.addFinalizer(() =>
      Effect.ignore(conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [lockSql(runKey)], undefined))
    )
  }).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storeError(url, `cannot lock run ${runKey}`)(e))))

/** Whether a run's lock is free now (`store prune` refuses a run still in progress). */
export const runIsIdle = (runKey: string) =>
  Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const conn = yield* sql.reserve
    const rows = yield* conn.execute("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked", [
      lockSql(runKey)
    ], undefined)
    const locked = (rows[0] as { locked?: boolean } | undefined)?.locked === true
    if (locked) {
      yield* conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [lockSql(runKey)], undefined)
    }
    return locked
  }))

const openPostgres = (url: Redacted.Redacted<string>, runDir: string, options: { readonly fresh: boolean }) =>
  Effect.gen(function*() {
    const runKey = runKeyOf(runDir)
    const fail = storeError(url, `journal of run ${runKey}`)
    yield* checkSchema(url).pipe(
      Effect.catchTag("UsageError", (e) => Effect.fail(new InputError({ file: displayStore(url), problem: e.problem })))
    )
    yield* lockRun(url, runKey)
    const sql = yield* SqlClient.SqlClient
    if (options.fresh) yield* sql`DELETE FROM ${sql(TABLE)} WHERE run_id = ${runKey}`.pipe(Effect.mapError(fail))
    const rows = yield* sql<{ key: string; status: string; body: string }>`SELECT key, status, body FROM ${
      sql(TABLE)
    } WHERE run_id = ${runKey}`.pipe(Effect.mapError(fail))
    const states = new Map<string, State>()
    const bodies = new Map<string, string>()
    let ok = 0, judgeFailed = 0, transportFailed = 0, attempts = 0
    const note = (key: string, state: State, body: string) => {
      states.set(key, state)
      bodies.set(key, body)
    }
    for (const r of rows) {
      const state = stateOf(r.status)
      if (state === undefined) continue
      note(r.key, state, r.body)
      if (state === State.ok) ok++
      else if (state === State.judgeFailed) judgeFailed++
      else if (state === State.transportFailed) transportFailed++
      else attempts++
    }
    const remember = (judgments: ReadonlyArray<Judgment>) => {
      for (const j of judgments) {
        // First success wins, as in the store.
        if (states.get(j.key) === State.ok) continue
        note(j.key, stateOf(statusOf(j))!, JSON.stringify(j))
      }
    }
    const journal: OpenedJournal = {
      stats: { ok, judgeFailed, transportFailed, attempts, damagedLines: 0, tornLines: 0 },
      state: (key) => states.get(key),
      judgment: (key) => {
        const state = states.get(key)
        return state === undefined || state === State.attempt
          ? undefined
          : Option.getOrUndefined(decodeJudgmentJson(bodies.get(key)!))
      },
      pendingRepair: (key) => {
        return states.get(key) === State.attempt ? decodePendingRepairJson(bodies.get(key)!) : undefined
      },
      append: (judgments) =>
        judgments.length === 0 ? Effect.void : appendRows(runKey, judgmentRows(judgments)).pipe(
          Effect.mapError(fail),
          Effect.zipRight(Effect.sync(() => remember(judgments))),
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.withSpan("JudgmentJournal.append", { attributes: { "rag_eval.judgments": judgments.length } })
        ),
      appendAttempt: (key, a) => {
        const body = JSON.stringify({
          key,
          kind: "attempt",
          text: a.text,
          problem: a.problem,
          usage: a.usage,
          asks: a.asks,
          attempts: a.attempts
        })
        return appendRows(runKey, [{ key, status: "attempt", body }]).pipe(
          Effect.mapError(fail),
          Effect.zipRight(Effect.sync(() => {
            if (states.get(key) !== State.ok) note(key, State.attempt, body)
          })),
          Effect.provideService(SqlClient.SqlClient, sql)
        )
      },
      remember,
      path: `${displayStore(url)} (run ${runKey})`
    }
    return journal
  })

/** The journal on PostgreSQL (needs the store's SqlClient). */
export const layerJournal = (url: Redacted.Redacted<string>) =>
  Layer.scoped(
    JudgmentJournal,
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      const sql = yield* SqlClient.SqlClient
      return {
        open: (runDir: string, options: { readonly fresh: boolean }) =>
          Scope.extend(openPostgres(url, runDir, options), scope).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      }
    })
  )

/** The cache across runs: a success with the same key in any run of the store. */
export const layerCache = Layer.effect(
  JudgmentCache,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return {
      get: (key: string) =>
        sql<{ body: string }>`SELECT body FROM ${sql(TABLE)} WHERE key = ${key} AND status = 'ok' LIMIT 1`.pipe(
          Effect.map((rows) => rows.length === 0 ? Option.none<Judgment>() : decodeJudgmentJson(rows[0]!.body)),
          // The cache is an optimisation, never a reason to fail a run.
          Effect.orElseSucceed(() => Option.none<Judgment>())
        ),
      put: () => Effect.void
    }
  })
)

/** Journal + cache on one store (the SQL client is built once). */
export const layer = (url: Redacted.Redacted<string>) =>
  Layer.mergeAll(layerJournal(url), layerCache).pipe(Layer.provideMerge(sqlLayer(url)))

/**
 * `calibrate --store`: a run's journal written out as `judgments.jsonl` lines (in the order they
 * were written; attempts left out) to a temporary file, for the readers of journal files.
 */
export const exportJournal = (store: string, runDir: string): Effect.Effect<string, UsageError | InputError> =>
  Effect.gen(function*() {
    const url = parseStoreUrl(store)
    if (url instanceof UsageError) return yield* url
    const runKey = runKeyOf(runDir)
    const rows = yield* Effect.gen(function*() {
      yield* checkSchema(url)
      const sql = yield* SqlClient.SqlClient
      return yield* sql<{ body: string }>`SELECT body FROM ${
        sql(TABLE)
      } WHERE run_id = ${runKey} AND status <> 'attempt' ORDER BY seq`
    }).pipe(
      Effect.catchTag(
        "SqlError",
        (e) =>
          Effect.fail(
            new InputError({ file: displayStore(url), problem: `cannot read run ${runKey}: ${problemOf(e)}` })
          )
      ),
      Effect.provide(sqlLayer(url, { maxConnections: 1 })),
      Effect.catchTag("OutputError", (e) => Effect.fail(new InputError({ file: e.path, problem: e.problem })))
    )
    if (rows.length === 0) {
      return yield* new InputError({ file: displayStore(url), problem: `run ${runKey} has no judgments in the store` })
    }
    const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-journal-"))
    const path = Path.join(dir, "judgments.jsonl")
    yield* Effect.try({
      try: () => fs.writeFileSync(path, rows.map((r) => r.body).join("\n") + "\n"),
      catch: (e) =>
        new InputError({ file: path, problem: `cannot write the exported journal: ${(e as Error).message}` })
    })
    return path
  })
