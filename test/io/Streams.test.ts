import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { runWhile, runWhileSync } from "../../src/io/Streams.js"

/** 0 … n − 1 in chunks of `size`, counting what is pulled. */
const numbers = (n: number, size: number, pulled: { n: number }) =>
  Stream.fromChunks(
    ...Array.from(
      { length: Math.ceil(n / size) },
      (_, c) => Chunk.unsafeFromArray(Array.from({ length: Math.min(size, n - c * size) }, (_, i) => c * size + i))
    )
  ).pipe(Stream.tap(() => Effect.sync(() => void pulled.n++)))

describe("runWhile (Stream.runForEachWhile, a chunk at a time)", () => {
  it.effect("runWhileSync: the same with a plain function — that element seen, none after it, nothing pulled past its chunk", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const pulled = { n: 0 }
      yield* runWhileSync(numbers(10_000, 100, pulled), (i) => (seen.push(i), i < 4_321))
      expect(seen).toEqual(Array.from({ length: 4_322 }, (_, i) => i))
      expect(pulled.n).toBeLessThanOrEqual(4_400)
      const all: Array<number> = []
      yield* runWhileSync(numbers(250, 7, { n: 0 }), (i) => (all.push(i), true))
      expect(all).toHaveLength(250)
      const fromStream = yield* Effect.flip(
        runWhileSync(Stream.concat(Stream.make(1, 2), Stream.fail("s")), () => true)
      )
      expect(fromStream).toBe("s")
    }))

  it.effect("f on each element in order until it answers false: that element seen, none after it", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const pulled = { n: 0 }
      yield* runWhile(numbers(10_000, 100, pulled), (i) => Effect.sync(() => (seen.push(i), i < 4_321)))
      expect(seen).toEqual(Array.from({ length: 4_322 }, (_, i) => i))
      // Nothing is pulled past the chunk that held the stop.
      expect(pulled.n).toBeLessThanOrEqual(4_400)
      // To the end when f never stops it; an empty stream calls nothing.
      const all: Array<number> = []
      yield* runWhile(numbers(250, 7, { n: 0 }), (i) => Effect.sync(() => (all.push(i), true)))
      expect(all).toHaveLength(250)
      yield* runWhile(Stream.empty, () => Effect.die("called"))
    }))

  it.effect("a failure of f or of the stream is the result's", () =>
    Effect.gen(function*() {
      const fromF = yield* Effect.flip(
        runWhile(numbers(10, 3, { n: 0 }), (i) => i === 5 ? Effect.fail("f") : Effect.succeed(true))
      )
      expect(fromF).toBe("f")
      const fromStream = yield* Effect.flip(
        runWhile(Stream.concat(Stream.make(1, 2), Stream.fail("s")), () => Effect.succeed(true))
      )
      expect(fromStream).toBe("s")
    }))
})
