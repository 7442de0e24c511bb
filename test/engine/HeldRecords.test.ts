/**
 * `HeldRecords.keepHeld` on files a crash could leave: the kept prefix is the cases whole in all three
 * files, up to the first case that cannot be kept; torn lines are cut off; another guard keeps nothing.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import type { Judgment } from "../../src/domain/Judgment.js"
import {
  firstHeldRecord,
  headerLine,
  type HeldSizes,
  keepHeld,
  keptPartial,
  resumeLine,
  snapshotFile,
  writeSnapshot
} from "../../src/engine/HeldRecords.js"
import { tempDir } from "../support/RunPipeline.js"

const GUARD = "g".repeat(64)

const filesWith = (records: string, cases: string, resume: string) => {
  const dir = tempDir()
  const files = {
    records: Path.join(dir, "records-iteration-1.jsonl.partial"),
    cases: Path.join(dir, "case-metrics-iteration-1.jsonl.partial"),
    resume: Path.join(dir, "resume-iteration-1.jsonl.partial")
  }
  fs.writeFileSync(files.records, records)
  fs.writeFileSync(files.cases, cases)
  fs.writeFileSync(files.resume, resume)
  return files
}

const rec = (i: number) => JSON.stringify({ caseId: `c${i}`, text: "x".repeat(i * 100) })
const lines = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i) + "\n").join("")
const header = headerLine(GUARD) + "\n"

describe("keepHeld", () => {
  it("keeps the cases whole in all three files, folds them in order, and cuts every file to them", async () => {
    const files = filesWith(
      lines(5, rec) + rec(5).slice(0, 30),
      lines(4, (i) => `{"caseId":"c${i}"}`) + `{"case`,
      header + lines(6, (i) => String(i + 1))
    )
    const folded: Array<unknown> = []
    expect(await Effect.runPromise(keepHeld(files, GUARD, (r) => folded.push(r)))).toEqual({
      cases: 4,
      judgments: 1 + 2 + 3 + 4,
      fromSnapshot: 0
    })
    expect(folded.map((r) => (r as { caseId: string }).caseId)).toEqual(["c0", "c1", "c2", "c3"])
    expect(fs.readFileSync(files.records, "utf8")).toBe(lines(4, rec))
    expect(fs.readFileSync(files.cases, "utf8")).toBe(lines(4, (i) => `{"caseId":"c${i}"}`))
    expect(fs.readFileSync(files.resume, "utf8")).toBe(header + lines(4, (i) => String(i + 1)))
  })

  it("stops at the first case that cannot be kept (a failed judgment: `-`)", async () => {
    const files = filesWith(lines(5, rec), lines(5, (i) => `{"c":${i}}`), header + "3\n3\n-\n3\n3\n")
    const folded: Array<unknown> = []
    expect(await Effect.runPromise(keepHeld(files, GUARD, (r) => folded.push(r)))).toEqual({
      cases: 2,
      judgments: 6,
      fromSnapshot: 0
    })
    expect(folded).toHaveLength(2)
  })

  it("keeps nothing under another guard, or with no resume file, and leaves the files alone", async () => {
    const files = filesWith(lines(3, rec), lines(3, () => "{}"), headerLine("h".repeat(64)) + "\n1\n1\n1\n")
    expect(await Effect.runPromise(keepHeld(files, GUARD, () => expect.unreachable()))).toEqual({
      cases: 0,
      judgments: 0,
      fromSnapshot: 0
    })
    expect(await Effect.runPromise(firstHeldRecord(files, GUARD))).toBeUndefined()
    expect(fs.readFileSync(files.records, "utf8")).toBe(lines(3, rec))
    fs.rmSync(files.resume)
    expect(await Effect.runPromise(keepHeld(files, GUARD, () => expect.unreachable()))).toEqual({
      cases: 0,
      judgments: 0,
      fromSnapshot: 0
    })
  })

  it("a record that does not parse ends what is kept; the first record is read whole across pieces", async () => {
    const big = JSON.stringify({ caseId: "c0", text: "y".repeat(3 << 20) })
    const files = filesWith(
      big + "\n" + rec(1) + "\n{torn\n" + rec(3) + "\n",
      lines(4, () => "{}"),
      header + "1\n1\n1\n1\n"
    )
    expect(await Effect.runPromise(firstHeldRecord(files, GUARD))).toBe(big)
    expect(await Effect.runPromise(keepHeld(files, GUARD, () => undefined))).toEqual({
      cases: 2,
      judgments: 2,
      fromSnapshot: 0
    })
    expect(fs.readFileSync(files.records, "utf8")).toBe(big + "\n" + rec(1) + "\n")
  })
})

describe("keepHeld from a snapshot of the fold", () => {
  /** Six cases whole in all three files; a snapshot taken after `at` of them (its state: the cases folded). */
  const withSnapshot = (at: number, edit: (s: { guard: string; sizes: HeldSizes }) => void = () => undefined) => {
    const records = lines(6, rec)
    const cases = lines(6, (i) => `{"caseId":"c${i}"}`)
    const resume = header + lines(6, (i) => String(i + 1))
    const files = filesWith(records, cases, resume)
    const bytes = (text: string, n: number) => Buffer.byteLength(text.split("\n").slice(0, n).join("\n") + "\n")
    const parts = {
      guard: GUARD,
      sizes: {
        records: bytes(records, at),
        cases: bytes(cases, at),
        resume: bytes(resume, at + 1)
      }
    }
    edit(parts)
    const path = Path.join(Path.dirname(files.records), snapshotFile(1))
    Effect.runSync(writeSnapshot(path, { ...parts, cases: at, state: { folded: at } }))
    return { files, path }
  }

  it("restores the state and folds only the records after it; the files end where they did", async () => {
    const { files, path } = withSnapshot(4)
    const restored: Array<unknown> = []
    const folded: Array<unknown> = []
    const kept = await Effect.runPromise(
      keepHeld(files, GUARD, (r) => folded.push(r), undefined, { path, restore: (s) => restored.push(s) })
    )
    expect(kept).toEqual({ cases: 6, judgments: 21, fromSnapshot: 4 })
    expect(restored).toEqual([{ folded: 4 }])
    expect(folded.map((r) => (r as { caseId: string }).caseId)).toEqual(["c4", "c5"])
    expect(fs.readFileSync(files.records, "utf8")).toBe(lines(6, rec))
  })

  it("a snapshot of every kept case folds nothing again; fewer kept cases than it holds: it is not used", async () => {
    const whole = withSnapshot(6)
    let again = 0
    expect(
      await Effect.runPromise(keepHeld(whole.files, GUARD, () => again++, undefined, {
        path: whole.path,
        restore: () => undefined
      }))
    ).toEqual({ cases: 6, judgments: 21, fromSnapshot: 6 })
    expect(again).toBe(0)
    // The sixth record torn by the crash: five are kept, and the snapshot of six is not theirs.
    const torn = withSnapshot(6)
    fs.truncateSync(torn.files.records, fs.statSync(torn.files.records).size - 3)
    const folded: Array<unknown> = []
    let restored = 0
    expect(
      await Effect.runPromise(keepHeld(torn.files, GUARD, (r) => folded.push(r), undefined, {
        path: torn.path,
        restore: () => restored++
      }))
    ).toEqual({ cases: 5, judgments: 15, fromSnapshot: 0 })
    expect(folded).toHaveLength(5)
    expect(restored).toBe(0)
  })

  it("another guard, sizes that do not match the files, an unreadable file or a state that does not restore: every kept record is folded", async () => {
    const cases = [
      withSnapshot(3, (s) => {
        s.guard = "h".repeat(64)
      }),
      withSnapshot(3, (s) => {
        s.sizes = { ...s.sizes, resume: s.sizes.resume + 1 }
      }),
      withSnapshot(3, (s) => {
        s.sizes = { ...s.sizes, records: 1 << 30 }
      }),
      (() => {
        const x = withSnapshot(3)
        fs.writeFileSync(x.path, "not a snapshot")
        return x
      })()
    ]
    for (const { files, path } of cases) {
      const folded: Array<unknown> = []
      let restored = 0
      const kept = await Effect.runPromise(
        keepHeld(files, GUARD, (r) => folded.push(r), undefined, { path, restore: () => restored++ })
      )
      expect(kept).toEqual({ cases: 6, judgments: 21, fromSnapshot: 0 })
      expect(folded).toHaveLength(6)
      expect(restored).toBe(0)
    }
    const refused = withSnapshot(3)
    const folded: Array<unknown> = []
    const kept = await Effect.runPromise(keepHeld(refused.files, GUARD, (r) => folded.push(r), undefined, {
      path: refused.path,
      restore: () => {
        throw new Error("a saved fold of other metrics")
      }
    }))
    expect(kept).toEqual({ cases: 6, judgments: 21, fromSnapshot: 0 })
    expect(folded).toHaveLength(6)
  })
})

describe("keepHeld, stopped", () => {
  it("Ctrl+C while the records are read: what was read is kept, and the files are cut to it", async () => {
    const big = (i: number) => JSON.stringify({ caseId: `c${i}`, text: "z".repeat(600_000) })
    const files = filesWith(lines(3, big), lines(3, () => "{}"), header + "2\n2\n2\n")
    let asked = 0
    const kept = await Effect.runPromise(keepHeld(files, GUARD, () => undefined, () => ++asked >= 1))
    expect(kept).toEqual({ cases: 1, judgments: 2, fromSnapshot: 0 })
    expect(fs.readFileSync(files.records, "utf8")).toBe(lines(1, big))
    expect(fs.readFileSync(files.resume, "utf8")).toBe(header + "2\n")
  })
})

describe("resumeLine and keptPartial", () => {
  const j = (status: "ok" | "failed", inputTokens = 0) =>
    ({ status, usage: { inputTokens, outputTokens: 0 } }) as Judgment
  it("counts a case's judgments when every one is ok and spent nothing; `-` otherwise", () => {
    expect(resumeLine([j("ok"), j("ok")])).toBe("2")
    expect(resumeLine([j("ok"), j("failed")])).toBe("-")
    expect(resumeLine([j("ok", 12)])).toBe("-")
  })
  it("keeps only an iteration's records, case metrics and resume file", () => {
    expect(keptPartial("records-iteration-2.jsonl.partial")).toBe(true)
    expect(keptPartial("case-metrics-iteration-1.jsonl.partial")).toBe(true)
    expect(keptPartial("resume-iteration-1.jsonl.partial")).toBe(true)
    expect(keptPartial("fold-iteration-3.snapshot.partial")).toBe(true)
    expect(keptPartial("fold-iteration-3.snapshot.tmp.partial")).toBe(false)
    expect(keptPartial("report.md.partial")).toBe(false)
    expect(keptPartial("records-iteration-1.jsonl")).toBe(false)
  })
})
