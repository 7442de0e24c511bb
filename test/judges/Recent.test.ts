/**
 * The rings of `src/judges/Recent.ts`: the last few keys' values, found with `===`, computed again
 * once the ring has overwritten them.
 */
import { describe, expect, it } from "@effect/vitest"
import { recent } from "../../src/judges/Recent.js"

describe("recent", () => {
  it("keeps the value of each of the last `slots` keys, and makes it once", () => {
    const made: Array<string> = []
    const ring = recent<string, string>(3)
    const get = (k: string) => ring.get(k, (key) => (made.push(key), `${key}!`))
    expect(["a", "b", "c", "a", "b", "c"].map(get)).toEqual(["a!", "b!", "c!", "a!", "b!", "c!"])
    expect(made).toEqual(["a", "b", "c"])
  })

  it("overwrites the oldest slot: a key met again after that is made again", () => {
    const made: Array<string> = []
    const ring = recent<string, number>(2)
    const get = (k: string) => ring.get(k, (key) => (made.push(key), made.length))
    get("a")
    get("b")
    get("c") // takes a's slot
    expect(get("b")).toBe(2)
    expect(get("a")).toBe(4) // made again, in b's slot
    expect(get("c")).toBe(3)
    expect(made).toEqual(["a", "b", "c", "a"])
  })

  it("finds objects by identity, not by their contents", () => {
    const ring = recent<ReadonlyArray<string>, number>(4)
    let n = 0
    const pool = ["x", "y"]
    const same = ring.get(pool, () => ++n)
    expect(ring.get(pool, () => ++n)).toBe(same)
    expect(ring.get(["x", "y"], () => ++n)).not.toBe(same)
    expect(n).toBe(2)
  })

  it("holds no more than `slots` values: the ones overwritten are no longer referenced", () => {
    const ring = recent<number, { readonly n: number }>(2)
    const values = [1, 2, 3, 4].map((k) => ring.get(k, (n) => ({ n })))
    // Keys 1 and 2 were overwritten: asking for them makes new objects.
    expect(ring.get(1, (n) => ({ n }))).not.toBe(values[0])
    expect(ring.get(4, (n) => ({ n }))).toBe(values[3])
  })
})
