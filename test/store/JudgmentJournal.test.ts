import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import type { Judgment } from "../../src/domain/Judgment.js"
import { hashKeyBytes, JournalIndex } from "../../src/store/JournalIndex.js"
import { JudgmentJournal, layerFile, layerMemory, readOnly, State } from "../../src/store/JudgmentJournal.js"
import { acquire, release, startTime } from "../../src/store/RunLock.js"
import { journalContract, judgment } from "../support/JournalContract.js"

const tmp = () => fs.mkdtempSync(Path.join(os.tmpdir(), "journal-"))
const line = (j: Judgment) => JSON.stringify(j) + "\n"

describe("JudgmentJournal (file)", () => {
  it.effect("appends whole lines and reads each judgment back from disk by key; the latest line of a key wins", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const journals = yield* JudgmentJournal
      yield* Effect.scoped(Effect.gen(function*() {
        const j = yield* journals.open(dir, { fresh: false })
        yield* j.append([judgment("a")])
        yield* j.append([judgment("b", "failed", "transport"), judgment("c", "failed", "judge")])
        yield* j.append([judgment("b")])
      }))
      expect(fs.readFileSync(Path.join(dir, "judgments.jsonl"), "utf8").trim().split("\n")).toHaveLength(4)
      yield* Effect.scoped(Effect.gen(function*() {
        const j = yield* journals.open(dir, { fresh: false })
        expect(j.stats).toEqual({
          ok: 2,
          judgeFailed: 1,
          transportFailed: 0,
          attempts: 0,
          damagedLines: 0,
          tornLines: 0
        })
        expect([j.state("a"), j.state("b"), j.state("c"), j.state("d")]).toEqual([
          State.ok,
          State.ok,
          State.judgeFailed,
          undefined
        ])
        expect(j.judgment("b")).toEqual(judgment("b"))
        expect(j.judgment("c")?.score).toBeNull()
        expect(j.judgment("d")).toBeUndefined()
      }))
    }).pipe(Effect.provide(layerFile)))

  it.effect("failure classes: a line without one is a transport failure when its reason is a provider error (older journals)", () =>
    Effect.gen(function*() {
      const dir = tmp()
      fs.writeFileSync(
        Path.join(dir, "judgments.jsonl"),
        line(judgment("x", "failed", undefined, "provider error after 4 attempts: server (HTTP 500)")) +
          line(judgment("y", "failed", undefined, "unusable answer after 3 tries"))
      )
      const j = yield* (yield* JudgmentJournal).open(dir, { fresh: false })
      expect([j.state("x"), j.state("y")]).toEqual([State.transportFailed, State.judgeFailed])
    }).pipe(Effect.scoped, Effect.provide(layerFile)))

  it.effect("a paid reply awaiting repair is journaled as an attempt; a later judgment of its key replaces it", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const journals = yield* JudgmentJournal
      const pending = {
        text: "{\"score\": ",
        problem: "no JSON object",
        usage: { inputTokens: 300, outputTokens: 9 },
        asks: 1,
        attempts: 1
      }
      yield* Effect.scoped(Effect.gen(function*() {
        const j = yield* journals.open(dir, { fresh: false })
        yield* j.appendAttempt("k1", pending)
        yield* j.appendAttempt("k2", pending)
        yield* j.append([judgment("k2")])
      }))
      yield* Effect.scoped(Effect.gen(function*() {
        const j = yield* journals.open(dir, { fresh: false })
        expect(j.stats.attempts).toBe(1)
        expect(j.state("k1")).toBe(State.attempt)
        expect(j.pendingRepair("k1")).toEqual(pending)
        expect(j.judgment("k1")).toBeUndefined()
        expect(j.state("k2")).toBe(State.ok)
        expect(j.pendingRepair("k2")).toBeUndefined()
      }))
    }).pipe(Effect.provide(layerFile)))

  it.effect("a torn last line is cut off before the next append; a line torn mid-file (it runs into the next) is skipped and counted", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const path = Path.join(dir, "judgments.jsonl")
      // What an older version left after a full disk: "m" cut short, "b" appended right after it.
      fs.writeFileSync(
        path,
        line(judgment("a")) + line(judgment("m")).slice(0, 30) + line(judgment("b")) + line(judgment("d")) +
          line(judgment("c")).slice(0, 40)
      )
      const journals = yield* JudgmentJournal
      yield* Effect.scoped(Effect.gen(function*() {
        const j = yield* journals.open(dir, { fresh: false })
        expect(j.stats).toMatchObject({ ok: 2, damagedLines: 1, tornLines: 1 })
        for (const lost of ["m", "b", "c"]) expect(j.state(lost)).toBeUndefined()
        expect(j.judgment("d")).toEqual(judgment("d"))
        yield* j.append([judgment("c")])
      }))
      const j = yield* Effect.scoped(journals.open(dir, { fresh: false }))
      expect(j.stats).toMatchObject({ ok: 3, damagedLines: 1, tornLines: 0 })
      expect(fs.readFileSync(path, "utf8").endsWith(line(judgment("d")) + line(judgment("c")))).toBe(true)
    }).pipe(Effect.provide(layerFile)))

  it.effect("fresh discards what the journal held", () =>
    Effect.gen(function*() {
      const dir = tmp()
      fs.writeFileSync(Path.join(dir, "judgments.jsonl"), line(judgment("a")))
      const j = yield* (yield* JudgmentJournal).open(dir, { fresh: true })
      expect(j.stats.ok).toBe(0)
      yield* j.append([judgment("z")])
      expect(fs.readFileSync(Path.join(dir, "judgments.jsonl"), "utf8").trim().split("\n")).toHaveLength(1)
    }).pipe(Effect.scoped, Effect.provide(layerFile)))

  it.effect("a line longer than the read buffer (a 3 MB reply) is indexed and read back whole", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const big = judgment("big", "failed", "judge", "x".repeat(3_000_000))
      fs.writeFileSync(Path.join(dir, "judgments.jsonl"), line(judgment("a")) + line(big) + line(judgment("b")))
      const j = yield* (yield* JudgmentJournal).open(dir, { fresh: false })
      expect(j.stats).toMatchObject({ ok: 2, judgeFailed: 1, damagedLines: 0 })
      expect(j.judgment("big")?.reason.length).toBe(3_000_000)
      expect(j.judgment("b")).toEqual(judgment("b"))
    }).pipe(Effect.scoped, Effect.provide(layerFile)))

  it.effect("readOnly (--dry-run) reads the states and judgments without taking the run's lock, and refuses writes", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const path = Path.join(dir, "judgments.jsonl")
      fs.writeFileSync(path, line(judgment("a")) + line(judgment("b", "failed", "transport")))
      const journals = yield* JudgmentJournal
      yield* journals.open(dir, { fresh: false })
      const view = (yield* readOnly(path))!
      expect([view.state("a"), view.state("b"), view.state("c")]).toEqual([State.ok, State.transportFailed, undefined])
      expect(view.judgment("a")).toEqual(judgment("a"))
      const refused = yield* Effect.exit(view.append([judgment("c")]))
      expect(refused._tag).toBe("Failure")
      expect(fs.readFileSync(path, "utf8")).toBe(line(judgment("a")) + line(judgment("b", "failed", "transport")))
      expect(yield* readOnly(Path.join(dir, "none.jsonl"))).toBeUndefined()
    }).pipe(Effect.scoped, Effect.provide(layerFile)))

  it.effect("a run directory in use by another live process is refused; a stale lock (a crashed run's) is taken over", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const journals = yield* JudgmentJournal
      fs.writeFileSync(Path.join(dir, ".lock-3"), `${process.ppid}\n`)
      const error = yield* Effect.flip(Effect.scoped(journals.open(dir, { fresh: false })))
      expect(error._tag).toBe("OutputError")
      expect(error.message).toContain(`in use by process ${process.ppid}`)
      fs.writeFileSync(Path.join(dir, ".lock-3"), "999999999 1\n")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* journals.open(dir, { fresh: false })
        expect(fs.readdirSync(dir).filter((f) => f.startsWith(".lock"))).toEqual([".lock-4"])
        expect(fs.readFileSync(Path.join(dir, ".lock-4"), "utf8")).toMatch(new RegExp(`^${process.pid} `))
      }))
    }).pipe(Effect.provide(layerFile)))
})

describe("the journal's contract (test/support/JournalContract.ts)", () => {
  describe("file", () => journalContract(() => layerFile, tmp))
  // One journal for the whole suite: the memory layer keeps its runs for the life of its service.
  const memory = Layer.succeed(JudgmentJournal, Effect.runSync(Effect.provide(JudgmentJournal, layerMemory)))
  describe("memory", () => journalContract(() => memory, tmp))
})

describe("RunLock", () => {
  it("a run whose owner was killed (kill -9) and not yet reaped — a zombie — is taken over at once", () => {
    const dir = tmp()
    // A child that holds the lock; the test does not return to the event loop between the kill and
    // the acquire, so Node cannot reap it: it stays a zombie, as a killed run does until its parent waits.
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })
    const pid = child.pid!
    fs.writeFileSync(Path.join(dir, ".lock-1"), `${pid} ${startTime(pid)}\n`)
    const refused = acquire(dir)
    expect(typeof refused === "number" ? refused : refused.message).toContain(`in use by process ${pid}`)
    process.kill(pid, "SIGKILL")
    // Wait for the event (the kernel marks it a zombie), not for a duration.
    const stateOf = () => fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[0]
    while (stateOf() !== "Z") Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5)
    const taken = acquire(dir)
    expect(taken).toBe(2)
    release(dir, taken as number)
    expect(fs.readdirSync(dir).filter((f) => f.startsWith(".lock"))).toEqual([])
  })
})

describe("JournalIndex", () => {
  const hexKey = (i: number) =>
    `${(i * 2654435761 >>> 0).toString(16).padStart(8, "0")}${i.toString(16).padStart(24, "0")}`

  it("finds every key of 200,000 (grown from a small table), with keys read back to confirm fingerprints", () => {
    const keys = Array.from({ length: 200_000 }, (_, i) => i % 7 === 0 ? `not-hex-${i}` : hexKey(i))
    const byOffset = new Map<number, string>()
    const index = new JournalIndex(16, (offset) => byOffset.get(offset))
    keys.forEach((key, i) => {
      byOffset.set(i * 100, key)
      index.set(key, i % 3 === 0 ? State.judgeFailed : State.ok, i * 100)
    })
    expect(index.size).toBe(keys.length)
    expect(index.capacity).toBeGreaterThanOrEqual(keys.length / 0.75)
    for (let i = 0; i < keys.length; i += 97) {
      expect(index.find(keys[i]!)).toEqual({ state: i % 3 === 0 ? State.judgeFailed : State.ok, offset: i * 100 })
    }
    expect(index.find(hexKey(999_999))).toBeUndefined()
    expect(index.counts()).toEqual({
      ok: keys.length - Math.ceil(keys.length / 3),
      judgeFailed: Math.ceil(keys.length / 3),
      transportFailed: 0,
      attempts: 0
    })
  })

  it("keys whose fingerprints collide are told apart by the key on their line", () => {
    // Same first 12 hex digits: same slot hash and same fingerprint.
    const a = "0123456789ab" + "0".repeat(20)
    const b = "0123456789ab" + "1".repeat(20)
    const lines = new Map<number, string>([[0, a], [500, b]])
    const index = new JournalIndex(4, (offset) => lines.get(offset))
    index.set(a, State.ok, 0)
    index.set(b, State.transportFailed, 500)
    expect(index.find(a)).toEqual({ state: State.ok, offset: 0 })
    expect(index.find(b)).toEqual({ state: State.transportFailed, offset: 500 })
    lines.set(900, a)
    index.set(a, State.judgeFailed, 900)
    expect(index.size).toBe(2)
    expect(index.find(a)).toEqual({ state: State.judgeFailed, offset: 900 })
  })

  it("keys hashed from their bytes (the journal's scan) are found by the key as a string, colliding fingerprints told apart", () => {
    const keys = [
      hexKey(1),
      hexKey(2),
      "0123456789ab" + "0".repeat(20),
      "0123456789ab" + "1".repeat(20), // the same slot hash and fingerprint as the one before
      "0123456789AB" + "0".repeat(20), // not lowercase hex: hashed as any other key
      "0123456789a", // 11 characters
      "0123456789ab", // exactly 12
      "not-hex-key",
      "x",
      "caf\u00e9-latin1"
    ]
    const lines = new Map<number, string>()
    const index = new JournalIndex(4, (offset) => lines.get(offset))
    const hashed = new Uint32Array(2)
    const put = (key: string, state: State, offset: number) => {
      lines.set(offset, key)
      const bytes = Buffer.from("{\"key\":\"" + key + "\"", "latin1")
      hashKeyBytes(bytes, 8, bytes.length - 1, hashed)
      index.setHashed(hashed[0]!, hashed[1]!, state, offset)
    }
    keys.forEach((key, i) => put(key, State.ok, i * 10))
    expect(index.size).toBe(keys.length)
    keys.forEach((key, i) => expect(index.find(key), key).toEqual({ state: State.ok, offset: i * 10 }))
    // The same key again: its latest line wins, nothing added.
    put(keys[3]!, State.judgeFailed, 1000)
    expect(index.size).toBe(keys.length)
    expect(index.find(keys[3]!)).toEqual({ state: State.judgeFailed, offset: 1000 })
    expect(index.find(keys[2]!)).toEqual({ state: State.ok, offset: 20 })
  })

  it("offsets beyond 4 GiB are kept exactly", () => {
    const index = new JournalIndex(4, () => "k")
    index.set("k", State.ok, 2 ** 36 + 12345)
    expect(index.find("k")?.offset).toBe(2 ** 36 + 12345)
  })
})
