/** What `rag-eval runner` and `rag-eval store migrate|prune` do (see src/cli/ClusterCommands.ts). */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as Path from "node:path"
import { UsageError } from "../domain/Errors.js"
import { Shutdown } from "../engine/Shutdown.js"
import * as PostgresStore from "../store/PostgresStore.js"
import { layerPostgresRunnerStore, migrateCluster, parseHostPort, pruneRun, runnerLayer } from "./ClusterLayers.js"
import { layerEntities } from "./RunnerHost.js"

const storeUrl = (value: string) => {
  const url = PostgresStore.parseStoreUrl(value)
  return url instanceof UsageError ? Effect.fail(url) : Effect.succeed(url)
}

const storeFailed = (url: Redacted.Redacted<string>) => (e: { readonly message: string }) =>
  new UsageError({ problem: `store ${PostgresStore.displayStore(url)}: ${e.message}` })

export const migrateAction = (store: string) =>
  Effect.gen(function*() {
    const url = yield* storeUrl(store)
    yield* Effect.gen(function*() {
      yield* PostgresStore.migrateJournal
      yield* migrateCluster
    }).pipe(Effect.mapError(storeFailed(url)), Effect.provide(PostgresStore.sqlLayer(url, { maxConnections: 2 })))
    yield* Console.log(
      `store ${
        PostgresStore.displayStore(url)
      }: schema version ${PostgresStore.SCHEMA_VERSION} ready (journal, cache, cluster tables)`
    )
  })

export const pruneAction = (store: string, run: string) =>
  Effect.gen(function*() {
    const url = yield* storeUrl(store)
    const parts = run.split(/[\\/]/).filter((p) => p !== "")
    if (parts.length < 2) {
      return yield* new UsageError({
        problem: `--run-id must be <pipeline>/<run-id> or a run directory, not ${JSON.stringify(run)}`
      })
    }
    const runKey = PostgresStore.runKeyOf(Path.join(...parts.slice(-2)))
    const removed = yield* Effect.gen(function*() {
      yield* PostgresStore.checkSchema(url)
      if (!(yield* PostgresStore.runIsIdle(runKey))) {
        return yield* new UsageError({
          problem: `run ${runKey} is in progress (its lock is held); prune it once it has finished`
        })
      }
      return yield* pruneRun(runKey)
    }).pipe(
      Effect.catchTag("SqlError", (e) => Effect.fail(storeFailed(url)(e))),
      Effect.provide(PostgresStore.sqlLayer(url, { maxConnections: 2 }))
    )
    yield* Console.log(
      `store ${
        PostgresStore.displayStore(url)
      }: removed ${removed} cluster message(s) of run ${runKey}; its judgments stay`
    )
  })

export const runnerAction = (flags: {
  readonly store: string
  readonly listen: string
  readonly advertise: string | undefined
  readonly concurrency: number
  readonly apiKey: Redacted.Redacted | undefined
  readonly adaptive: boolean
  readonly preflight: boolean
}) =>
  Effect.gen(function*() {
    const url = yield* storeUrl(flags.store)
    const listen = parseHostPort("--listen", flags.listen)
    if (listen instanceof UsageError) return yield* listen
    const advertise = flags.advertise === undefined ? listen : parseHostPort("--advertise", flags.advertise)
    if (advertise instanceof UsageError) return yield* advertise
    if (flags.concurrency < 1) return yield* new UsageError({ problem: "--concurrency must be at least 1" })
    if (flags.advertise === undefined && (listen.host === "0.0.0.0" || listen.host === "::")) {
      return yield* new UsageError({
        problem:
          `--listen ${flags.listen} is every interface: give --advertise host:port, the address other machines reach this runner at`
      })
    }
    // pg warns that @effect/sql-pg queues queries on a busy client (deprecated in pg 9): nothing a
    // user can act on, printed once per runner otherwise.
    process.noDeprecation = true
    const sql = PostgresStore.sqlLayer(url)
    yield* PostgresStore.checkSchema(url).pipe(Effect.provide(sql))
    const shutdown = yield* Shutdown
    const runner = layerEntities({
      apiKey: flags.apiKey,
      concurrency: flags.concurrency,
      adaptive: flags.adaptive,
      preflight: flags.preflight
    }).pipe(
      Layer.provide(layerPostgresRunnerStore),
      Layer.provideMerge(runnerLayer({ listen, advertise })),
      Layer.provide(sql)
    )
    yield* Console.error(
      `runner: listening on ${listen.host}:${listen.port} (reached at ${advertise.host}:${advertise.port}), store ${
        PostgresStore.displayStore(url)
      }, ${flags.concurrency} calls in flight at most; Ctrl+C stops it (its batches finish on the other runners)`
    )
    // Runs until the first Ctrl+C / SIGTERM; closing the layer hands this runner's shards over.
    yield* Layer.launch(runner).pipe(Effect.raceFirst(shutdown.requested))
  })
