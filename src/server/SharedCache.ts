/**
 * The judgment cache as a long-running server needs it. The file cache (`store/JudgmentCache.ts`)
 * loads a shard once and then serves it from memory, which is right for one run; but the server
 * lives for days while `rag-eval run` appends to the same files. So a miss is checked once more
 * against the shard as it is on disk now (a fresh reader of the same directory): a judgment the CLI
 * paid for after the server started is still reused. Misses are followed by an LLM call, which
 * dwarfs reading one shard (1/256 of the cache). New entries are written at once, not in batches,
 * for the same reason the other way round.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { JudgmentCache, makeFile } from "../store/JudgmentCache.js"

export const make = (dir: string): JudgmentCache["Type"] & { readonly close: () => void } => {
  const cache = makeFile(dir, { batchWrites: false })
  return {
    get: (key) =>
      Effect.flatMap(
        cache.get(key),
        (found) => (Option.isSome(found) ? Effect.succeed(found) : makeFile(dir).get(key))
      ),
    put: cache.put,
    close: cache.close
  }
}

export const layerFile = (dir: string) =>
  Layer.scoped(JudgmentCache, Effect.acquireRelease(Effect.sync(() => make(dir)), (cache) => Effect.sync(cache.close)))
