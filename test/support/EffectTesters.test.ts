import { describe, effect, expect, it, layer } from "@effect/vitest"
import { Clock, Effect, Layer, TestClock } from "effect"
import { restoreTesters, testersReplaced } from "./EffectTesters.js"

// What made kept worker processes unsafe (EffectTesters.ts): a layer() block leaves its own testers,
// with its one TestClock, on vitest's shared `it` — in a kept process, for the files run after it.
describe("@effect/vitest's layer() and vitest's shared it", () => {
  const before = testersReplaced()
  layer(Layer.empty)((inBlock) => {
    inBlock.effect("a layer() block's tests share one TestClock (the first moves it)", () =>
      Effect.gen(function*() {
        expect(yield* Clock.currentTimeMillis).toBe(0)
        yield* TestClock.adjust("1 hour")
      }))
    inBlock.effect("… and the next sees it moved", () =>
      Effect.gen(function*() {
        expect(yield* Clock.currentTimeMillis).toBe(3_600_000)
      }))
  })
  const afterBlock = testersReplaced()
  const blocksEffect = it.effect
  restoreTesters()

  it("layer() replaces the shared it's testers; restoreTesters puts the package's back", () => {
    expect(before).toBe(false)
    expect(afterBlock).toBe(true)
    expect(blocksEffect).not.toBe(effect)
    expect(it.effect).toBe(effect)
    expect(testersReplaced()).toBe(false)
  })

  it.effect("restored, each test has its own TestClock: this one moves it", () =>
    Effect.gen(function*() {
      expect(yield* Clock.currentTimeMillis).toBe(0)
      yield* TestClock.adjust("5 hours")
    }))

  it.effect("… and this one starts at 0 again", () =>
    Effect.gen(function*() {
      expect(yield* Clock.currentTimeMillis).toBe(0)
    }))
})
