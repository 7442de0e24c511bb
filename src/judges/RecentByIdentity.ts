/**
 * What was computed for the last few key objects, found by identity: the heuristic judges' per-case
 * statistics (a case's texts read once for all its checks).
 *
 * In place of a `WeakMap` that lives for the whole run. Such a table is soon in V8's old generation,
 * and a young collection (scavenge) cannot tell whether a key held there is dead, so it keeps every
 * value alive — every case's readings were promoted, then freed by a full collection. Measured on
 * 10,000 heuristic answer-correctness cases (`node --trace-gc-nvp`): 447–450 MB promoted and 240
 * scavenges taking 712–764 ms with the tables; 340–357 MB and 540–585 ms with this. A ring of a few
 * slots forgets a case as soon as later cases have taken them; a key met again after that is computed
 * again (the same value: every use here is deterministic).
 */
export interface RecentByIdentity<K extends object, V> {
  /** The value kept for `key`, or `make(key)` kept in the oldest slot. */
  readonly get: (key: K, make: (key: K) => V) => V
}

export const recentByIdentity = <K extends object, V>(slots: number): RecentByIdentity<K, V> => {
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
