import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import type { Judgment } from "../../src/domain/Judgment.js"
import { makeFile } from "../../src/store/JudgmentCache.js"

const tempDir = () => fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-cache-"))

const judgment = (key: string, status: "ok" | "failed" = "ok"): Judgment => ({
  key,
  caseId: "1",
  ordinal: 0,
  iteration: 1,
  criterion: "rag-answers/clarity",
  target: "answer",
  status,
  score: status === "ok" ? 3 : null,
  reason: "fine",
  usage: { inputTokens: 10, outputTokens: 2 },
  attempts: 1,
  latencyMs: 5,
  provider: "openai",
  model: "m"
})

const lines = (dir: string) =>
  fs.readdirSync(dir).flatMap((f) => fs.readFileSync(Path.join(dir, f), "utf8").split("\n").filter((l) => l !== ""))

describe("JudgmentCache (file)", () => {
  it.effect("serves what was put at once, and later runs from disk once closed", () =>
    Effect.gen(function*() {
      const dir = Path.join(tempDir(), "judgments")
      const first = makeFile(dir)
      const keys = Array.from({ length: 300 }, (_, i) => `${(i % 256).toString(16).padStart(2, "0")}key${i}`)
      for (const key of keys) yield* first.put(judgment(key))
      // In memory at once (the same process asks again).
      expect(Option.isSome(yield* first.get(keys[0]!))).toBe(true)
      first.close()
      expect(lines(dir)).toHaveLength(300)
      const second = makeFile(dir)
      for (const key of keys) expect(Option.getOrThrow(yield* second.get(key)).key).toBe(key)
      expect(Option.isNone(yield* second.get("ffnot-there"))).toBe(true)
      second.close()
    }))

  it.effect("writes in batches: nothing per put, everything by close", () =>
    Effect.gen(function*() {
      const dir = Path.join(tempDir(), "judgments")
      const cache = makeFile(dir)
      yield* cache.put(judgment("aa1"))
      yield* cache.put(judgment("aa2"))
      expect(fs.existsSync(dir) ? lines(dir) : []).toHaveLength(0)
      cache.close()
      expect(lines(dir)).toHaveLength(2)
    }))

  it.effect("writes each entry at once when not batching (a server's entries are seen by runs at once)", () =>
    Effect.gen(function*() {
      const dir = Path.join(tempDir(), "judgments")
      const cache = makeFile(dir, { batchWrites: false })
      yield* cache.put(judgment("ab1"))
      expect(lines(dir)).toHaveLength(1)
      yield* cache.put(judgment("ab2"))
      expect(lines(dir)).toHaveLength(2)
      cache.close()
    }))

  it.effect("keeps only successful judgments, once each", () =>
    Effect.gen(function*() {
      const dir = Path.join(tempDir(), "judgments")
      const cache = makeFile(dir)
      yield* cache.put(judgment("bb1", "failed"))
      yield* cache.put(judgment("bb2"))
      yield* cache.put(judgment("bb2"))
      expect(Option.isNone(yield* cache.get("bb1"))).toBe(true)
      cache.close()
      expect(lines(dir)).toHaveLength(1)
    }))

  it.effect("starts a new line after a torn shard tail, so the next entry is not glued to it", () =>
    Effect.gen(function*() {
      const dir = Path.join(tempDir(), "judgments")
      fs.mkdirSync(dir, { recursive: true })
      const whole = JSON.stringify(judgment("cc1"))
      fs.writeFileSync(Path.join(dir, "cc.jsonl"), `${whole}\n${whole.slice(0, 40)}`)
      const cache = makeFile(dir)
      expect(Option.isSome(yield* cache.get("cc1"))).toBe(true)
      yield* cache.put(judgment("cc2"))
      cache.close()
      const reread = makeFile(dir)
      expect(Option.isSome(yield* reread.get("cc2"))).toBe(true)
      reread.close()
    }))

  it.effect("a cache that cannot be written still serves the run", () =>
    Effect.gen(function*() {
      const parent = tempDir()
      // A file where the cache directory should be: mkdir fails.
      fs.writeFileSync(Path.join(parent, "judgments"), "")
      const cache = makeFile(Path.join(parent, "judgments"))
      yield* cache.put(judgment("dd1"))
      expect(Option.isSome(yield* cache.get("dd1"))).toBe(true)
      expect(() => cache.close()).not.toThrow()
    }))
})
