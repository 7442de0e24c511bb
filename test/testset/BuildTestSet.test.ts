/**
 * The answer-synthesis test-set builder: query-log JSONL → versioned, de-duplicated test set, written
 * atomically, never over an existing file unless asked.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { loadTestSet } from "../../src/kinds/synthesis/AnswerSynthesis.js"
import { buildTestSet, defaultOutput, queryLogHash, testSetFileName } from "../../src/testset/BuildTestSet.js"

const sampleLogs = fileURLToPath(new URL("../../test-sets/answer-synthesis/query-logs.jsonl", import.meta.url))
const sha256 = (text: string | Buffer) => createHash("sha256").update(text).digest("hex")

/** The build's failure, required to be the `tag` error. */
const failsWith =
  <T extends "InputError" | "UsageError">(tag: T) =>
  <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
    Effect.flip(effect).pipe(
      Effect.filterOrDieMessage((e): e is Extract<E, { readonly _tag: T }> => e._tag === tag, `expected ${tag}`)
    )

const dir = () => fs.mkdtempSync(Path.join(os.tmpdir(), "testset-"))
const logFile = (lines: ReadonlyArray<unknown>) => {
  const path = Path.join(dir(), "logs.jsonl")
  fs.writeFileSync(path, lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n")
  return path
}
const log = (queryLogId: unknown, extra: Record<string, unknown> = {}) => ({
  queryLogId,
  question: `Question ${String(queryLogId)}?`,
  answer: "An answer.",
  context: [{ name: "C", code: "C1" }],
  ...extra
})

describe("buildTestSet", () => {
  it.effect("turns the sample query log into a versioned test set, dropping the duplicate queryLogId", () =>
    Effect.gen(function*() {
      const out = Path.join(dir(), "nested", "logs-v1.json")
      const result = yield* buildTestSet({ logs: sampleLogs, name: "logs", version: "1", out })
      expect(result).toMatchObject({ read: 6, duplicates: 1, written: out })
      const t = result.testSet
      expect(t).toMatchObject({
        version: "1",
        name: "logs",
        createdFrom: { file: sampleLogs, sha256: sha256(fs.readFileSync(sampleLogs)) }
      })
      expect(t.description).toMatch(/5 unique queries \(1 duplicate log line dropped\)/)
      // First-seen order; ql-102 keeps its place but takes the later line (v2 prompt).
      expect(t.cases.map((c) => c.queryLogId)).toEqual(["ql-101", "ql-102", "ql-103", "ql-104", "ql-105"])
      const ql102 = t.cases[1]!
      expect(ql102).toMatchObject({
        hash: queryLogHash("ql-102"),
        timestamp: "2025-07-02T08:30:00Z",
        systemPromptVersion: "v2"
      })
      expect(ql102.hash).toBe(sha256("ql-102"))
      expect(Object.keys(t.cases[0]!).slice(0, 6)).toEqual([
        "queryLogId",
        "hash",
        "question",
        "answer",
        "context",
        "timestamp"
      ])
      // Written atomically as the same JSON, and it loads as an answer-synthesis test set.
      expect(JSON.parse(fs.readFileSync(out, "utf8"))).toEqual(t)
      expect(fs.readdirSync(Path.dirname(out))).toEqual(["logs-v1.json"])
      const cases = yield* Stream.runCollect(loadTestSet().cases({ file: out })).pipe(Effect.map(Chunk.toReadonlyArray))
      expect(cases.map((c) => c.id)).toEqual(t.cases.map((c) => c.queryLogId))
    }))

  it.effect("keeps the latest line by timestamp when both have one, else the first", () =>
    Effect.gen(function*() {
      const logs = logFile([
        log("a", { answer: "a-first", timestamp: "2025-01-02T00:00:00Z" }),
        log("b", { answer: "b-first" }),
        log(7, { answer: "7-first", timestamp: 1_000 }),
        log("a", { answer: "a-older", timestamp: "2025-01-01T00:00:00Z" }),
        log("b", { answer: "b-second", timestamp: "2025-01-03T00:00:00Z" }),
        log("7", { answer: "7-newer", timestamp: 2_000 }),
        log("a", { answer: "a-newest", timestamp: "2025-01-05T00:00:00+02:00" })
      ])
      const { testSet, duplicates } = yield* buildTestSet({
        logs,
        name: "t",
        version: "2",
        out: Path.join(dir(), "t.json")
      })
      expect(duplicates).toBe(4)
      expect(testSet.cases.map((c) => [c.queryLogId, c.answer])).toEqual([["a", "a-newest"], ["b", "b-first"], [
        "7",
        "7-newer"
      ]])
    }))

  it.effect("the same log gives a byte-identical test set", () =>
    Effect.gen(function*() {
      const d = dir()
      yield* buildTestSet({ logs: sampleLogs, name: "x", version: "1", out: Path.join(d, "a.json") })
      yield* buildTestSet({ logs: sampleLogs, name: "x", version: "1", out: Path.join(d, "b.json") })
      expect(fs.readFileSync(Path.join(d, "a.json"), "utf8")).toBe(fs.readFileSync(Path.join(d, "b.json"), "utf8"))
    }))

  it.effect("refuses to overwrite an existing test set unless overwrite is set", () =>
    Effect.gen(function*() {
      const out = Path.join(dir(), "t.json")
      fs.writeFileSync(out, "{\"keep\": true}\n")
      const error = yield* failsWith("UsageError")(buildTestSet({ logs: sampleLogs, name: "t", version: "1", out }))
      expect(error._tag).toBe("UsageError")
      expect(error.problem).toMatch(/already exists.*--overwrite/)
      expect(fs.readFileSync(out, "utf8")).toBe("{\"keep\": true}\n")
      yield* buildTestSet({ logs: sampleLogs, name: "t", version: "1", out, overwrite: true })
      expect(JSON.parse(fs.readFileSync(out, "utf8")).cases).toHaveLength(5)
    }))

  it.effect("a bad log line fails with its line number and writes nothing", () =>
    Effect.gen(function*() {
      const out = Path.join(dir(), "never.json")
      const check = (lines: ReadonlyArray<unknown>) =>
        failsWith("InputError")(buildTestSet({ logs: logFile(lines), name: "t", version: "1", out }))
      const json = yield* check([log("a"), log("b"), "{ not json"])
      expect(json).toMatchObject({ _tag: "InputError", line: 3 })
      expect(json.problem).toMatch(/invalid JSON/)
      expect(yield* check([log("a"), { question: "q?", answer: "a", context: [] }])).toMatchObject({
        line: 2,
        field: "queryLogId"
      })
      expect(yield* check([log("a", { context: "CS101" })])).toMatchObject({ line: 1, field: "context" })
      expect(yield* check([log("a"), log("b", { question: "" })])).toMatchObject({ line: 2, field: "question" })
      expect(yield* check([log("a", { timestamp: "yesterday" })])).toMatchObject({ line: 1, field: "timestamp" })
      expect(fs.existsSync(out)).toBe(false)
    }))

  it.effect("names and versions must be usable in a file name", () =>
    Effect.gen(function*() {
      const bad = yield* failsWith("UsageError")(buildTestSet({ logs: sampleLogs, name: "../escape", version: "1" }))
      expect(bad.problem).toMatch(/test-set name/)
      expect(
        (yield* failsWith("UsageError")(buildTestSet({ logs: sampleLogs, name: "ok", version: "1 beta" }))).problem
      ).toMatch(/test-set version/)
    }))

  it("defaults to test-sets/answer-synthesis/<name>-v<version>.json", () => {
    expect(defaultOutput("courses", "3")).toBe(Path.join("test-sets", "answer-synthesis", "courses-v3.json"))
    expect(testSetFileName("courses", "v3")).toBe("courses-v3.json")
    expect(testSetFileName("courses", "2.1")).toBe("courses-v2.1.json")
  })
})
