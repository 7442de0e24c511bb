/**
 * The judgments of a case read from the PostgreSQL store (`rag-eval ui --store URL`), for runs made
 * with `--store`: their journal is the store's `rag_eval_judgments` rows under the run's key
 * (`<pipeline>/<run-id>`, `store/PostgresStore.ts`), while their other files are in the run
 * directory. Read only; attempts (replies awaiting repair) are left out, as the file journal's
 * readers leave them.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { InputError, UsageError } from "../domain/Errors.js"
import { checkSchema, displayStore, parseStoreUrl, runKeyOf, sqlLayer, TABLE } from "../store/PostgresStore.js"

export interface StoreJournal {
  /** The store, as it may be shown (credentials masked). */
  readonly display: string
  /** The raw journal lines (the rows' bodies) of a case in one iteration, in the order they were written. */
  readonly caseLines: (
    runDir: string,
    caseId: string,
    iteration: number
  ) => Effect.Effect<ReadonlyArray<string>, InputError>
}

export const open = (store: string): Effect.Effect<StoreJournal, UsageError, Scope.Scope> =>
  Effect.gen(function*() {
    const url = parseStoreUrl(store)
    if (url instanceof UsageError) return yield* url
    const display = displayStore(url)
    const context = yield* Layer.build(sqlLayer(url, { maxConnections: 4 })).pipe(
      Effect.mapError((e) => new UsageError({ problem: `--store ${display}: ${e.message}` }))
    )
    yield* checkSchema(url).pipe(
      Effect.provide(context),
      Effect.mapError((e) => new UsageError({ problem: e.message }))
    )
    return {
      display,
      caseLines: (runDir, caseId, iteration) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ body: string }>`SELECT body FROM ${sql(TABLE)}
            WHERE run_id = ${runKeyOf(runDir)} AND status <> 'attempt'
              AND (body::jsonb)->>'caseId' = ${caseId} AND ((body::jsonb)->>'iteration')::int = ${iteration}
            ORDER BY seq`
          return rows.map((r) => r.body)
        }).pipe(
          Effect.provide(context),
          Effect.mapError((e) => new InputError({ file: display, problem: `cannot read the journal: ${e.message}` }))
        )
    }
  })
