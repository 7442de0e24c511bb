/**
 * `--cluster` in one process: a coordinator and in-memory runners (@effect/cluster's TestRunner, a
 * memory store) whose judge is the OpenAI-compatible server at `baseUrl`. `effect` runs with the
 * coordinator as its ClusterJudging, so every call it judges goes through the runners.
 */
import * as TestRunner from "@effect/cluster/TestRunner"
import { Effect, Layer } from "effect"
import * as Coordinator from "../../src/cluster/Coordinator.js"
import * as RunnerHost from "../../src/cluster/RunnerHost.js"
import { ClusterJudging } from "../../src/engine/RemoteJudging.js"

export const onInMemoryCluster = <A, E, R>(baseUrl: string, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const remote = yield* Coordinator.make({
      judge: {
        provider: "openai-compatible",
        model: "fake",
        baseUrl,
        timeoutMs: 5_000,
        maxRetries: 1,
        maxWaitMs: 60_000,
        retryFailed: false
      },
      batchSize: 5,
      batchesInFlight: 2
    })
    return yield* effect.pipe(Effect.provideService(ClusterJudging, remote))
  }).pipe(
    Effect.provide(
      RunnerHost.layerEntities({ concurrency: 4, preflight: false }).pipe(
        Layer.provideMerge(RunnerHost.layerMemoryStore),
        Layer.provideMerge(TestRunner.layer)
      )
    )
  )
