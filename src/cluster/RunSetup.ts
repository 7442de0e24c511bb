/**
 * What `--store postgres://…` and `--cluster` change in `run` (and `--store` in `report`): the
 * journal and the cache on PostgreSQL instead of files, and — with `--cluster` — judge calls sent to
 * the cluster's runners in batches. Loaded only when `--store` is given.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { UsageError } from "../domain/Errors.js"
import { traitsOfProvider } from "../domain/JudgeTraits.js"
import { thousands } from "../domain/Numbers.js"
import { maskUrl } from "../domain/Secrets.js"
import { ClusterJudging } from "../engine/RemoteJudging.js"
import { defaultModels, type JudgeFlags } from "../judges/JudgeSettings.js"
import * as JudgmentCache from "../store/JudgmentCache.js"
import * as PostgresStore from "../store/PostgresStore.js"
import { clientLayer, unfinishedBatches } from "./ClusterLayers.js"
import * as Coordinator from "./Coordinator.js"
import type { JudgeOptions } from "./Protocol.js"

export interface StoreSetup {
  readonly store: string
  readonly cluster: boolean
  readonly noCache: boolean
  readonly judge: JudgeFlags
  readonly retryFailed: boolean
  readonly stopping: () => boolean
  /** Tasks per batch (default 50) and batches in flight per runner (default 8). */
  readonly batchSize?: number | undefined
  readonly batchesPerRunner?: number | undefined
}

/** Judge calls a runner keeps in flight per batch slot: measured best at 25–50 tasks a batch. */
const BATCH = 50
const PER_RUNNER = 8
/** How long a resumed coordinator waits for the batches a killed one left on the runners. */
const WAIT_FOR_LEFT_BATCHES = Duration.minutes(5)

/** The run's judge options as a runner rebuilds them (no key: runners use their own). */
export const judgeOptionsOf = (judge: JudgeFlags, retryFailed: boolean): JudgeOptions | UsageError => {
  if (traitsOfProvider(judge.provider).runsLocally) {
    return new UsageError({
      problem:
        "--cluster sends LLM judge calls to runners: give --provider (the heuristic judge runs locally, faster than any cluster)"
    })
  }
  if (judge.baseUrl !== undefined && maskUrl(judge.baseUrl) !== judge.baseUrl) {
    return new UsageError({
      problem: `--base-url ${
        maskUrl(judge.baseUrl)
      } carries credentials, which must never travel in a cluster message: give the key to each runner (--api-key or its environment)`
    })
  }
  return {
    provider: judge.provider,
    model: judge.model ?? defaultModels[judge.provider] ?? "default",
    baseUrl: judge.baseUrl,
    temperature: judge.temperature,
    seed: judge.seed,
    timeoutMs: judge.timeoutMs,
    maxRetries: judge.maxRetries,
    maxWaitMs: judge.maxWaitMs ?? 10 * 60_000,
    rpm: judge.rpm,
    tpm: judge.tpm,
    burst: judge.burst,
    adaptive: judge.adaptive,
    retryFailed
  }
}

/** Wait (a bounded time) until no batch a previous coordinator of this run sent is left unfinished. */
const waitForLeftBatches = (sql: SqlClient.SqlClient) => (runId: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + Duration.toMillis(WAIT_FOR_LEFT_BATCHES)
    let noted = false
    for (;;) {
      const left = yield* unfinishedBatches(runId).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.orElseSucceed(() => 0)
      )
      if (left === 0) return
      if (Date.now() > deadline) {
        yield* Console.error(
          `cluster: ${thousands(left)} batch(es) of an earlier coordinator still unfinished after ${
            Duration.format(WAIT_FOR_LEFT_BATCHES)
          }; going on (their judgments may be asked twice)`
        )
        return
      }
      if (!noted) {
        noted = true
        yield* Console.error(
          `cluster: waiting for ${
            thousands(left)
          } batch(es) an earlier coordinator of this run left on the runners (no judgment is asked twice)`
        )
      }
      yield* Effect.sleep("1 second")
    }
  })

/** The journal and cache on the store, and (with `--cluster`) the coordinator's link to the runners. */
export const storeLayers = (setup: StoreSetup) =>
  Effect.gen(function*() {
    const url = PostgresStore.parseStoreUrl(setup.store)
    if (url instanceof UsageError) return yield* url
    const cache = setup.noCache ? JudgmentCache.layerNone : PostgresStore.layerCache
    const stores = Layer.mergeAll(PostgresStore.layerJournal(url), cache)
    if (!setup.cluster) return stores.pipe(Layer.provide(PostgresStore.sqlLayer(url)))
    const judge = judgeOptionsOf(setup.judge, setup.retryFailed)
    if (judge instanceof UsageError) return yield* judge
    const coordinator = Layer.scoped(
      ClusterJudging,
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const healthyRunners = sql<{ n: string }>`SELECT count(*) AS n FROM cluster_runners WHERE healthy = TRUE`.pipe(
          Effect.map((rows) => Number(rows[0]?.n ?? 0)),
          Effect.orElseSucceed(() => 0)
        )
        const perRunner = setup.batchesPerRunner ?? PER_RUNNER
        const runners = yield* healthyRunners
        if (runners === 0) {
          yield* Console.error(
            `cluster: no runner is registered in ${
              PostgresStore.displayStore(url)
            } yet; batches wait until one starts (rag-eval runner --store … --listen host:port)`
          )
        }
        return yield* Coordinator.make({
          judge,
          batchSize: setup.batchSize ?? BATCH,
          batchesInFlight: perRunner * Math.max(1, runners),
          // More batches in flight as runners join (fewer as they leave).
          batchesInFlightNow: Effect.map(healthyRunners, (n) => perRunner * Math.max(1, n)),
          stopping: setup.stopping,
          beforeFirstBatch: waitForLeftBatches(sql)
        })
      })
    ).pipe(Layer.provide(clientLayer))
    return Layer.mergeAll(stores, coordinator).pipe(Layer.provide(PostgresStore.sqlLayer(url)))
  })

/** `report --store …`: the run's journal in the store. */
export const journalLayer = (store: string) =>
  Effect.gen(function*() {
    const url = PostgresStore.parseStoreUrl(store)
    if (url instanceof UsageError) return yield* url
    return PostgresStore.layerJournal(url).pipe(Layer.provide(PostgresStore.sqlLayer(url)))
  })
