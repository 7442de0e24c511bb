/**
 * The labels file: whole lines appended and fsynced, a torn last line tolerated on read and cut off
 * before the next append, a damaged line skipped with its number, the latest label of a target
 * winning, appends seen by a later read, a replaced file read again — and a `rag-eval ui` killed
 * with SIGKILL while two clients label loses no label it acknowledged.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { type Label, labelKey } from "../../src/domain/Label.js"
import { makeLabelLog } from "../../src/ui/LabelLog.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"
import { buildFixtures, runIdOf } from "./Fixtures.js"
import { post, raw } from "./Server.js"

const label = (caseId: string, grade: number, at = "2026-11-28T10:00:00.000Z"): Label => ({
  runId: "r1",
  caseId,
  target: { kind: "grade", criterion: "rag-answers/clarity" },
  label: { grade },
  judged: 2,
  by: "ann",
  at
})

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

describe("labels.jsonl", () => {
  it("appends whole lines; the latest label of a target wins, in its first position", async () => {
    const dir = tempDir()
    const log = makeLabelLog(dir)
    await run(log.append(label("c1", 1)))
    await run(log.append(label("c2", 3)))
    const state = await run(log.append(label("c1", 2, "2026-11-28T11:00:00.000Z")))
    expect(state.lines).toBe(3)
    expect([...state.latest.values()].map((l) => [l.caseId, "grade" in l.label ? l.label.grade : null])).toEqual([
      ["c1", 2],
      ["c2", 3]
    ])
    const text = fs.readFileSync(Path.join(dir, "labels.jsonl"), "utf8")
    expect(text.split("\n")).toHaveLength(4)
    expect(text.endsWith("\n")).toBe(true)
  })

  it("a torn last line (a crash mid-write) is left out on read and cut off before the next append", async () => {
    const dir = tempDir()
    const file = Path.join(dir, "labels.jsonl")
    fs.writeFileSync(file, JSON.stringify(label("c1", 1)) + "\n" + JSON.stringify(label("c2", 2)).slice(0, 40))
    const log = makeLabelLog(dir)
    const before = await run(log.read)
    expect(before.torn).toBe(true)
    expect(before.lines).toBe(1)
    expect(before.latest.size).toBe(1)
    const after = await run(log.append(label("c3", 3)))
    expect(after.torn).toBe(false)
    expect(after.skipped).toEqual([])
    const lines = fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "")
    expect(lines.map((l) => JSON.parse(l).caseId)).toEqual(["c1", "c3"])
  })

  it("a damaged line in the middle is skipped with its line number, the rest read", async () => {
    const dir = tempDir()
    const file = Path.join(dir, "labels.jsonl")
    fs.writeFileSync(
      file,
      [
        JSON.stringify(label("c1", 1)),
        "{ not json",
        JSON.stringify({ caseId: "c2" }),
        JSON.stringify(label("c3", 0)),
        ""
      ]
        .join("\n")
    )
    const state = await run(makeLabelLog(dir).read)
    expect(state.latest.size).toBe(2)
    expect(state.skipped.map((s) => s.line)).toEqual([2, 3])
    expect(state.skipped[1]!.problem).toContain("not a label")
  })

  it("reads what another writer appended since, and a replaced file from its start", async () => {
    const dir = tempDir()
    const file = Path.join(dir, "labels.jsonl")
    const log = makeLabelLog(dir)
    expect((await run(log.read)).latest.size).toBe(0)
    fs.appendFileSync(file, JSON.stringify(label("c1", 1)) + "\n")
    expect((await run(log.read)).latest.size).toBe(1)
    fs.appendFileSync(file, JSON.stringify(label("c2", 1)) + "\n")
    expect((await run(log.read)).latest.size).toBe(2)
    // Replaced (a new inode), shorter: read again from the start.
    fs.writeFileSync(`${file}.new`, JSON.stringify(label("c9", 0)) + "\n")
    fs.renameSync(`${file}.new`, file)
    const state = await run(log.read)
    expect([...state.latest.values()].map((l) => l.caseId)).toEqual(["c9"])
  })

  it("a label refused by the disk leaves the file at its last whole line", async () => {
    const dir = tempDir()
    const log = makeLabelLog(dir)
    await run(log.append(label("c1", 1)))
    fs.chmodSync(dir, 0o500)
    fs.chmodSync(Path.join(dir, "labels.jsonl"), 0o400)
    try {
      const exit = await Effect.runPromiseExit(log.append(label("c2", 2)))
      // Root may write anyway; otherwise the append fails with the file named.
      if (exit._tag === "Failure") expect(String(exit.cause)).toContain("labels.jsonl")
    } finally {
      fs.chmodSync(dir, 0o700)
      fs.chmodSync(Path.join(dir, "labels.jsonl"), 0o600)
    }
    const lines = fs.readFileSync(Path.join(dir, "labels.jsonl"), "utf8").split("\n").filter((l) => l !== "")
    expect(lines.every((l) => JSON.parse(l).caseId !== undefined)).toBe(true)
  })

  it("rag-eval ui killed with SIGKILL while two clients label: every acknowledged label is in the file, whole", async () => {
    const fx = await buildFixtures()
    const id = runIdOf(fx.search)
    const child = spawn(process.execPath, [
      Path.join(repoRoot, "dist", "bin.js"),
      "ui",
      "--out",
      fx.out,
      "--listen",
      "127.0.0.1:0"
    ], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = ""
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString()
          const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)
          if (m !== null) resolve(Number(m[1]))
        })
        child.on("exit", (code) => reject(new Error(`rag-eval ui exited with ${code}`)))
      })
      const rows = (await raw(port, `/api/runs/${id}/cases?limit=500`)).json().rows as Array<{ caseId: string }>
      const targets: Array<{ caseId: string; hitId: string }> = []
      for (const row of rows) {
        const c = (await raw(port, `/api/runs/${id}/cases/${encodeURIComponent(row.caseId)}`)).json()
        for (const t of c.targets) {
          if (t.target.kind === "hit") targets.push({ caseId: row.caseId, hitId: t.target.hitId })
        }
      }
      const acknowledged: Array<Label> = []
      let killed = false
      // Two "tabs", each labelling its half in turn; the server is killed after the 15th answer.
      const tab = async (mine: ReadonlyArray<{ caseId: string; hitId: string }>) => {
        for (const t of mine) {
          if (killed) return
          const r = await post(port, `/api/runs/${id}/labels`, {
            caseId: t.caseId,
            target: { kind: "hit", hitId: t.hitId },
            label: { grade: 1 }
          }).catch(() => undefined)
          if (r?.status === 201) {
            acknowledged.push(r.json().label)
            if (acknowledged.length === 15 && !killed) {
              killed = true
              child.kill("SIGKILL")
            }
          }
        }
      }
      await Promise.all([tab(targets.filter((_, i) => i % 2 === 0)), tab(targets.filter((_, i) => i % 2 === 1))])
      expect(killed).toBe(true)
      await new Promise((
        resolve
      ) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.on("exit", resolve)))
      const state = await run(makeLabelLog(fx.search).read)
      expect(state.skipped).toEqual([])
      for (const l of acknowledged) expect(state.latest.get(labelKey(l))).toEqual(l)
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    }
  })
})
