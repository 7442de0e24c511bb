import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import type { Judgment } from "../../src/domain/Judgment.js"
import { JudgmentJournal, layerFile, readJournal } from "../../src/store/JudgmentJournal.js"

const judgment = (key: string, status: "ok" | "failed" = "ok"): Judgment => ({
  key, caseId: "1", ordinal: 0, iteration: 1, criterion: "c", target: "answer", status,
  score: status === "ok" ? 2 : null, reason: "r", usage: { inputTokens: 10, outputTokens: 2 }, attempts: 1,
  latencyMs: 3, provider: "p", model: "m"
})

const tmp = () => fs.mkdtempSync(Path.join(os.tmpdir(), "journal-"))

describe("JudgmentJournal (file)", () => {
  it.effect("appends one line per judgment and reads them back", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const journals = yield* JudgmentJournal
      const j = yield* journals.open(dir, { fresh: false })
      yield* j.append([judgment("a")])
      yield* j.append([judgment("b"), judgment("c", "failed")])
      const text = fs.readFileSync(Path.join(dir, "judgments.jsonl"), "utf8")
      expect(text.trim().split("\n")).toHaveLength(3)
      const back = yield* readJournal(Path.join(dir, "judgments.jsonl"))
      expect([...back.done.keys()]).toEqual(["a", "b", "c"])
      expect(back.done.get("c")?.score).toBeNull()
    }).pipe(Effect.provide(layerFile)))

  it.effect("drops a torn last line and truncates it before appending", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const path = Path.join(dir, "judgments.jsonl")
      fs.writeFileSync(path, JSON.stringify(judgment("a")) + "\n" + JSON.stringify(judgment("b")).slice(0, 40))
      const journals = yield* JudgmentJournal
      const j = yield* journals.open(dir, { fresh: false })
      expect(j.tornLines).toBe(1)
      expect([...j.done.keys()]).toEqual(["a"])
      yield* j.append([judgment("b")])
      const back = yield* readJournal(path)
      expect(back.tornLines).toBe(0)
      expect([...back.done.keys()]).toEqual(["a", "b"])
    }).pipe(Effect.provide(layerFile)))

  it.effect("a damaged line in the middle is an error naming the line", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const path = Path.join(dir, "judgments.jsonl")
      fs.writeFileSync(path, JSON.stringify(judgment("a")) + "\nnot json\n" + JSON.stringify(judgment("b")) + "\n")
      const error = yield* Effect.flip(readJournal(path))
      expect(error._tag).toBe("InputError")
      expect(error.line).toBe(2)
    }))

  it.effect("fresh discards what the journal held", () =>
    Effect.gen(function*() {
      const dir = tmp()
      fs.writeFileSync(Path.join(dir, "judgments.jsonl"), JSON.stringify(judgment("a")) + "\n")
      const journals = yield* JudgmentJournal
      const j = yield* journals.open(dir, { fresh: true })
      expect(j.done.size).toBe(0)
      yield* j.append([judgment("z")])
      expect(fs.readFileSync(Path.join(dir, "judgments.jsonl"), "utf8").trim().split("\n")).toHaveLength(1)
    }).pipe(Effect.provide(layerFile)))

  it.effect("a run directory in use by another live process is refused; a stale lock is taken over", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const journals = yield* JudgmentJournal
      fs.writeFileSync(Path.join(dir, ".lock"), String(process.ppid))
      const error = yield* Effect.flip(Effect.scoped(journals.open(dir, { fresh: false })))
      expect(error._tag).toBe("OutputError")
      expect(error.message).toContain(`in use by process ${process.ppid}`)
      fs.writeFileSync(Path.join(dir, ".lock"), "999999999")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* journals.open(dir, { fresh: false })
        expect(fs.readFileSync(Path.join(dir, ".lock"), "utf8")).toBe(String(process.pid))
      }))
    }).pipe(Effect.provide(layerFile)))
})
