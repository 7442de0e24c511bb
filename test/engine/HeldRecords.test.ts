/**
 * `HeldRecords.keepHeld` on files a crash could leave: the kept prefix is the cases whole in all three
 * files, up to the first case that cannot be kept; torn lines are cut off; another guard keeps nothing.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import type { Judgment } from "../../src/domain/Judgment.js"
import { firstHeldRecord, headerLine, keepHeld, keptPartial, resumeLine } from "../../src/engine/HeldRecords.js"
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
      judgments: 1 + 2 + 3 + 4
    })
    expect(folded.map((r) => (r as { caseId: string }).caseId)).toEqual(["c0", "c1", "c2", "c3"])
    expect(fs.readFileSync(files.records, "utf8")).toBe(lines(4, rec))
    expect(fs.readFileSync(files.cases, "utf8")).toBe(lines(4, (i) => `{"caseId":"c${i}"}`))
    expect(fs.readFileSync(files.resume, "utf8")).toBe(header + lines(4, (i) => String(i + 1)))
  })

  it("stops at the first case that cannot be kept (a failed judgment: `-`)", async () => {
    const files = filesWith(lines(5, rec), lines(5, (i) => `{"c":${i}}`), header + "3\n3\n-\n3\n3\n")
    const folded: Array<unknown> = []
    expect(await Effect.runPromise(keepHeld(files, GUARD, (r) => folded.push(r)))).toEqual({ cases: 2, judgments: 6 })
    expect(folded).toHaveLength(2)
  })

  it("keeps nothing under another guard, or with no resume file, and leaves the files alone", async () => {
    const files = filesWith(lines(3, rec), lines(3, () => "{}"), headerLine("h".repeat(64)) + "\n1\n1\n1\n")
    expect(await Effect.runPromise(keepHeld(files, GUARD, () => expect.unreachable()))).toEqual({
      cases: 0,
      judgments: 0
    })
    expect(await Effect.runPromise(firstHeldRecord(files, GUARD))).toBeUndefined()
    expect(fs.readFileSync(files.records, "utf8")).toBe(lines(3, rec))
    fs.rmSync(files.resume)
    expect(await Effect.runPromise(keepHeld(files, GUARD, () => expect.unreachable()))).toEqual({
      cases: 0,
      judgments: 0
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
    expect(await Effect.runPromise(keepHeld(files, GUARD, () => undefined))).toEqual({ cases: 2, judgments: 2 })
    expect(fs.readFileSync(files.records, "utf8")).toBe(big + "\n" + rec(1) + "\n")
  })
})

describe("keepHeld, stopped", () => {
  it("Ctrl+C while the records are read: what was read is kept, and the files are cut to it", async () => {
    const big = (i: number) => JSON.stringify({ caseId: `c${i}`, text: "z".repeat(600_000) })
    const files = filesWith(lines(3, big), lines(3, () => "{}"), header + "2\n2\n2\n")
    let asked = 0
    const kept = await Effect.runPromise(keepHeld(files, GUARD, () => undefined, () => ++asked >= 1))
    expect(kept).toEqual({ cases: 1, judgments: 2 })
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
    expect(keptPartial("report.md.partial")).toBe(false)
    expect(keptPartial("records-iteration-1.jsonl")).toBe(false)
  })
})
