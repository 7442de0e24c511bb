/**
 * The cluster's wiring on PostgreSQL and TCP sockets: a runner (`rag-eval runner`) hosts entities
 * and listens; a coordinator (`run … --cluster`) is a client-only member. Both keep messages,
 * replies and runners in the store (`SqlMessageStorage`, `SqlRunnerStorage`, tables `cluster_*`),
 * created by `rag-eval store migrate` only.
 *
 * Composed here rather than through `NodeClusterSocket.layer`, which reads its settings from the
 * environment: ours arrive as options. The failover settings are the ones measured to take a dead
 * runner's shards over in ~4–5 s (the library's defaults took ~32 s).
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as Runners from "@effect/cluster/Runners"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SocketRunner from "@effect/cluster/SocketRunner"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import { layerClientProtocol, layerSocketServer } from "@effect/platform-node/NodeClusterSocket"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { UsageError } from "../domain/Errors.js"
import { appendRows, TABLE } from "../store/PostgresStore.js"
import { JudgeShard, StoreFailed } from "./Protocol.js"
import { RunnerStore } from "./RunnerHost.js"

/** Failover settings measured on loopback: a killed runner's batches resume elsewhere in ~4–5 s. */
export const failover: Partial<ShardingConfig.ShardingConfig["Type"]> = {
  shardLockExpiration: "12 seconds",
  shardLockRefreshInterval: "2 seconds",
  runnerHealthCheckInterval: "5 seconds",
  refreshAssignmentsInterval: "2 seconds",
  entityMessagePollInterval: "2 seconds",
  entityReplyPollInterval: "150 millis",
  sendRetryInterval: "200 millis"
}

export interface HostPort {
  readonly host: string
  readonly port: number
}

/** `host:port` (IPv6 in brackets), or a problem naming the flag. */
export const parseHostPort = (flag: string, value: string): HostPort | UsageError => {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value.trim())
  const port = m === null ? NaN : Number(m[3])
  if (m === null || !(port > 0 && port < 65536)) {
    return new UsageError({
      problem: `${flag} must be host:port (for example 0.0.0.0:34431), not ${JSON.stringify(value)}`
    })
  }
  return { host: m[1] ?? m[2]!, port }
}

/** The store tables a runner and a coordinator need (created by `store migrate`). */
export const storageLayers = Layer.mergeAll(Layer.orDie(SqlMessageStorage.layer), Layer.orDie(SqlRunnerStorage.layer))
  .pipe(Layer.provide(ShardingConfig.layer(failover)))

/** A runner: listens on `listen`, tells the others to reach it at `advertise`. Needs the store's SqlClient. */
export const runnerLayer = (options: { readonly listen: HostPort; readonly advertise: HostPort }) => {
  const config = ShardingConfig.layer({
    ...failover,
    runnerAddress: Option.some(RunnerAddress.make(options.advertise.host, options.advertise.port)),
    runnerListenAddress: Option.some(RunnerAddress.make(options.listen.host, options.listen.port))
  })
  return SocketRunner.layer.pipe(
    Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(layerClientProtocol))),
    Layer.provide([layerSocketServer, layerClientProtocol]),
    Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
    Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
    Layer.provide(config),
    Layer.provide(RpcSerialization.layerMsgPack),
    Layer.provideMerge(config)
  )
}

/** A coordinator: a client-only member (it hosts no entity). Needs the store's SqlClient. */
export const clientLayer = SocketRunner.layerClientOnly.pipe(
  Layer.provide(layerClientProtocol),
  Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
  Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
  Layer.provide(ShardingConfig.layer({ ...failover, runnerAddress: Option.none() })),
  Layer.provide(RpcSerialization.layerMsgPack)
)

type Rows = ReadonlyArray<{ readonly key: string; readonly status: string; readonly body: string }>

/**
 * Appends as group commits: while one INSERT is under way the next ones gather, and go together in
 * one statement per run (measured: one INSERT per judgment was ~a quarter of a runner's CPU, most
 * of it socket writes). Each append still returns only once its rows are committed.
 */
const groupCommit = (write: (runId: string, rows: Rows) => Effect.Effect<void, StoreFailed>) => {
  let pending: Array<
    { readonly runId: string; readonly rows: Rows; readonly done: Deferred.Deferred<void, StoreFailed> }
  > = []
  let writing = false
  const flush: Effect.Effect<void> = Effect.suspend(() => {
    if (pending.length === 0) {
      writing = false
      return Effect.void
    }
    const batch = pending
    pending = []
    const byRun = new Map<string, Array<(typeof batch)[number]>>()
    for (const item of batch) {
      const list = byRun.get(item.runId)
      if (list === undefined) byRun.set(item.runId, [item])
      else list.push(item)
    }
    return Effect.forEach(byRun, ([runId, items]) =>
      write(runId, items.flatMap((i) => i.rows)).pipe(
        Effect.exit,
        Effect.flatMap((exit) => Effect.forEach(items, (i) => Deferred.done(i.done, exit), { discard: true }))
      ), { discard: true }).pipe(Effect.zipRight(flush))
  })
  return (runId: string, rows: Rows) =>
    Effect.gen(function*() {
      const done = yield* Deferred.make<void, StoreFailed>()
      pending.push({ runId, rows, done })
      if (!writing) {
        writing = true
        yield* Effect.forkDaemon(flush)
      }
      return yield* Deferred.await(done)
    })
}

/** Runners read and write the run's journal rows in the store. */
export const layerPostgresRunnerStore = Layer.effect(
  RunnerStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const failed = (e: { readonly message: string }) => new StoreFailed({ problem: e.message })
    const append = groupCommit((runId, rows) =>
      appendRows(runId, rows).pipe(Effect.mapError(failed), Effect.provideService(SqlClient.SqlClient, sql))
    )
    return {
      rows: (runId, keys) =>
        keys.length === 0 ?
          Effect.succeed(new Map()) :
          sql<{ key: string; status: string; body: string }>`SELECT key, status, body FROM ${
            sql(TABLE)
          } WHERE run_id = ${runId} AND ${sql.in("key", keys)}`.pipe(
            Effect.map((rows) => new Map(rows.map((r) => [r.key, { status: r.status, body: r.body }]))),
            Effect.mapError(failed)
          ),
      append
    }
  })
)

const runMessages = (runKey: string) =>
  Effect.map(
    SqlClient.SqlClient,
    (sql) => sql`entity_type = ${JudgeShard.type} AND left(entity_id, ${runKey.length + 1}) = ${`${runKey}#`}`
  )

/** Batches of a run a coordinator sent that no runner has finished yet (a killed coordinator's). */
export const unfinishedBatches = (runKey: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = yield* runMessages(runKey)
    const rows = yield* sql<
      { n: string }
    >`SELECT count(*) AS n FROM cluster_messages WHERE ${where} AND processed = FALSE`
    return Number(rows[0]?.n ?? 0)
  })

/** `store prune`: a finished run's cluster messages and replies (its journal rows stay). */
export const pruneRun = (runKey: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = yield* runMessages(runKey)
    return yield* Effect.gen(function*() {
      yield* sql`DELETE FROM cluster_replies WHERE request_id IN (SELECT request_id FROM cluster_messages WHERE ${where})`
      const deleted = yield* sql<
        { n: string }
      >`WITH d AS (DELETE FROM cluster_messages WHERE ${where} RETURNING 1) SELECT count(*) AS n FROM d`
      return Number(deleted[0]?.n ?? 0)
    }).pipe(sql.withTransaction)
  })

/** `store migrate`: the journal's schema and the cluster's tables, in one step before any runner starts. */
export const migrateCluster = Effect.gen(function*() {
  // Building the storage layers creates their tables (IF NOT EXISTS), once, here.
  yield* Effect.scoped(Layer.build(storageLayers))
})
