/**
 * What was computed for the last few keys (compared with `===`: objects by identity, strings by
 * value): the heuristic judges' per-case statistics and readings (a case's texts read once for all
 * its checks).
 *
 * In place of a `WeakMap` that lives for the whole run, or a `Map` replaced when full. Such a table
 * is soon in V8's old generation, and a young collection (scavenge) treats what an old object points
 * to as alive: a WeakMap's values (it cannot tell whether a key is dead), and every entry of a Map
 * until it is replaced — and after, until a full collection finds the dead Map. So every case's
 * readings were promoted, then freed by full collections. A ring of a few slots overwrites what the
 * cases before held, and a key met again after that is computed again (the same value: every use
 * here is deterministic). Measured on 10,000 heuristic answer-correctness cases (`node
 * --trace-gc-nvp`): 447–469 MB promoted and 29–30 full collections with the WeakMaps, 293–316 MB
 * and 21–22 with rings for the case statistics (and smaller caches in `Terms.ts`, `Extract.ts`), and
 * 279–286 MB with the checker's texts and claims in rings of 32 instead of Maps replaced at 64.
 */
export interface Recent<K, V> {
  /** The value kept for `key`, or `make(key)` kept in the oldest slot. */
  readonly get: (key: K, make: (key: K) => V) => V
}

export const recent = <K, V>(slots: number): Recent<K, V> => {
  const keys: Array<K | undefined> = new Array(slots).fill(undefined)
  const values: Array<V | undefined> = new Array(slots).fill(undefined)
  let next = 0
  return {
    get: (key, make) => {
      for (let i = 0; i < slots; i++) if (keys[i] === key) return values[i] as V
      const value = make(key)
      keys[next] = key
      values[next] = value
      next = (next + 1) % slots
      return value
    }
  }
}
