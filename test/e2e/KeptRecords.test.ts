/**
 * A resumed local-judge run keeps the records a killed (or stopped) run wrote (`engine/HeldRecords.ts`):
 * `kill -9` and SIGINT in the middle of a heuristic answer-correctness run of the built CLI (a child
 * process), then the same command. The resume says how many cases it kept, and every file it ends with is
 * byte for byte what an uninterrupted run writes. What a resume must not keep — records made by
 * another command, or records the journal no longer gives — is made again. The runs that are not
 * killed (the uninterrupted reference, the resumes) run in-process (`runCli`): their subject is the
 * files, not the process; a resume in-process reads what the bundle's killed run wrote.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { writeCases } from "../../bench/correctness.js"
import { start, waitFor } from "../support/ChildCli.js"
import { runCli } from "../support/InProcessCli.js"
import { runDirIn, tempDir } from "../support/RunPipeline.js"

/**
 * Enough cases that a run stopped at 200–400 KB of records (26–53 cases of ~7.6 KB) has most of its
 * work still ahead — ~700 cases, about half a second of CPU, seconds of wall time on a loaded machine
 * — when the test's 5 ms poll sees the size; a run that ends first fails the test by name ("the run
 * finished before it was stopped"). 3,000 until 2026-11-30, then 1,500: the same assertions, the
 * runs after a kill (each judges what is left) costing CPU in proportion; green three times in a row
 * beside four CPU burners at 750.
 */
const CASES = 750

const input = (() => {
  let file: string | undefined
  return () => {
    if (file === undefined) {
      file = Path.join(tempDir(), "cases.jsonl")
      writeCases(file, CASES)
    }
    return file
  }
})()

const args = (out: string, ...more: Array<string>) => [
  "run",
  "answer-correctness",
  "--input",
  input(),
  "--out",
  out,
  "--format",
  "markdown,csv",
  ...more
]

/** The files every run writes whole, compared byte for byte (the manifest and the journal hold times). */
const OUTPUTS = [
  "records-iteration-1.jsonl",
  "case-metrics-iteration-1.jsonl",
  "metrics-iteration-1.json",
  "low-scores-iteration-1.json",
  "final-metrics.json",
  "report.md",
  "report.csv"
]

/** An uninterrupted run's files, made once. */
const clean = (() => {
  let dir: Promise<string> | undefined
  return () =>
    dir ??= (async () => {
      const out = tempDir()
      const r = await runCli(args(out))
      expect(r.code, r.stderr).toBe(0)
      return runDirIn(out, "answer-correctness")
    })()
})()

const expectSameOutputs = async (runDir: string) => {
  const reference = await clean()
  for (const name of OUTPUTS) {
    const a = fs.readFileSync(Path.join(reference, name))
    const b = fs.readFileSync(Path.join(runDir, name))
    expect(b.equals(a), `${name} differs from an uninterrupted run's`).toBe(true)
  }
  const left = fs.readdirSync(runDir).filter((n) =>
    n.endsWith(".partial") || n.startsWith("resume-") || n.includes(".tmp-")
  )
  expect(left).toEqual([])
}

/** Start a run and stop it with `signal` once `bytes` of its records are written. */
const interrupted = async (
  out: string,
  signal: NodeJS.Signals,
  bytes = 200_000,
  env: Readonly<Record<string, string>> = {}
) => {
  const first = start(args(out), { env })
  const partial = () => {
    try {
      return fs.statSync(Path.join(runDirIn(out, "answer-correctness"), "records-iteration-1.jsonl.partial")).size
    } catch {
      return 0
    }
  }
  await waitFor("records written", () => partial() >= bytes || first.exited())
  first.child.kill(signal)
  const result = await first.result
  expect(result.code === 0, `the run finished before it was stopped: ${result.stderr}`).toBe(false)
  return runDirIn(out, "answer-correctness")
}

/** Snapshots of the fold every 10 cases (20,000 in a run), so that a kill after ~25 cases finds some. */
const OFTEN = { RAG_EVAL_SNAPSHOT_EVERY: "10" }

/** "the fold of the first N from its snapshot": N, or 0 when every kept record was folded again. */
const fromSnapshotOf = (stderr: string) => {
  const m = /the fold of the first ([\d,]+) from its snapshot/.exec(stderr)
  return m === null ? 0 : Number(m[1]!.replace(/,/g, ""))
}

const keptOf = (stderr: string) => {
  const m = /kept the records of ([\d,]+) cases? a killed run wrote/.exec(stderr)
  return m === null ? 0 : Number(m[1]!.replace(/,/g, ""))
}

describe.concurrent("a resume keeps the records a killed run wrote", { timeout: 120_000 }, () => {
  it("kill -9, then the same command: the records on disk are kept, the rest judged, the files as an uninterrupted run's", async () => {
    const out = tempDir()
    const runDir = await interrupted(out, "SIGKILL")
    const written = fs.readFileSync(Path.join(runDir, "records-iteration-1.jsonl.partial"), "utf8").split("\n")
      .length - 1
    const again = await runCli(args(out))
    expect(again.code, again.stderr).toBe(0)
    const kept = keptOf(again.stderr)
    // Every complete record line is kept (the resume file and the case metrics are written in step).
    expect(kept).toBeGreaterThan(0)
    expect(kept).toBeLessThanOrEqual(written)
    expect(written - kept).toBeLessThan(64)
    expect(again.stderr).toMatch(/\d[\d,]* judgments: [\d,]+ ok, 0 failed/)
    await expectSameOutputs(runDir)
  })

  it("kill -9 with the fold's snapshots taken: the resume starts from the last one, and the files are still an uninterrupted run's", async () => {
    const out = tempDir()
    const runDir = await interrupted(out, "SIGKILL", 400_000, OFTEN)
    const snapshot = Path.join(runDir, "fold-iteration-1.snapshot.partial")
    expect(fs.existsSync(snapshot)).toBe(true)
    const again = await runCli(args(out), { env: OFTEN })
    expect(again.code, again.stderr).toBe(0)
    const kept = keptOf(again.stderr)
    const restored = fromSnapshotOf(again.stderr)
    expect(restored, again.stderr).toBeGreaterThan(0)
    // A snapshot is taken where the three files end together, 10 cases or more after the last.
    expect(restored).toBeLessThanOrEqual(kept)
    expect(kept - restored).toBeLessThan(64 + 10)
    await expectSameOutputs(runDir)
    expect(fs.existsSync(snapshot)).toBe(false)
  })

  it("a snapshot that is not the files' (damaged) is not used: every kept record is folded again, same files", async () => {
    const out = tempDir()
    const runDir = await interrupted(out, "SIGKILL", 400_000, OFTEN)
    const snapshot = Path.join(runDir, "fold-iteration-1.snapshot.partial")
    const bytes = fs.readFileSync(snapshot)
    fs.writeFileSync(snapshot, bytes.subarray(0, bytes.length >> 1))
    const again = await runCli(args(out), { env: OFTEN })
    expect(again.code, again.stderr).toBe(0)
    expect(keptOf(again.stderr)).toBeGreaterThan(0)
    expect(again.stderr).toContain("all folded again")
    await expectSameOutputs(runDir)
  })

  it("RAG_EVAL_SNAPSHOT_EVERY that is not a whole number ≥ 1: exit 2, naming it", async () => {
    const out = tempDir()
    const r = await runCli(args(out), { env: { RAG_EVAL_SNAPSHOT_EVERY: "0" } })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("RAG_EVAL_SNAPSHOT_EVERY: expected a whole number of cases ≥ 1, got \"0\"")
  })

  it("Ctrl+C keeps what was written too, and a second kill during the resume loses nothing", async () => {
    const out = tempDir()
    const runDir = await interrupted(out, "SIGINT")
    const second = start(args(out))
    await waitFor("the resume keeps the records", () => keptOf(second.stderr()) > 0 || second.exited())
    const firstKept = keptOf(second.stderr())
    expect(firstKept, second.stderr()).toBeGreaterThan(0)
    const size = () => fs.statSync(Path.join(runDir, "records-iteration-1.jsonl.partial")).size
    const before = size()
    await waitFor("more records written", () => second.exited() || size() > before + 200_000)
    second.child.kill("SIGKILL")
    expect((await second.result).code === 0).toBe(false)
    const third = await runCli(args(out))
    expect(third.code, third.stderr).toBe(0)
    expect(keptOf(third.stderr)).toBeGreaterThan(firstKept)
    await expectSameOutputs(runDir)
  })

  it("killed under --quiet --concurrency 4 and resumed without them (as CI runs it, then by hand): the records are kept", async () => {
    const out = tempDir()
    const first = start(args(out, "--quiet", "--concurrency", "4"))
    const partial = () => {
      try {
        return fs.statSync(Path.join(runDirIn(out, "answer-correctness"), "records-iteration-1.jsonl.partial")).size
      } catch {
        return 0
      }
    }
    await waitFor("records written", () => partial() >= 200_000 || first.exited())
    first.child.kill("SIGKILL")
    expect((await first.result).code === 0).toBe(false)
    const again = await runCli(args(out))
    expect(again.code, again.stderr).toBe(0)
    expect(keptOf(again.stderr), again.stderr).toBeGreaterThan(0)
    expect(again.stderr).not.toContain("made by another command line")
    await expectSameOutputs(runDirIn(out, "answer-correctness"))
  })

  it("another command (another --details) keeps nothing, and the files are still an uninterrupted run's", async () => {
    const out = tempDir()
    const runDir = await interrupted(out, "SIGKILL")
    const again = await runCli(args(out, "--details", "5"))
    expect(again.code, again.stderr).toBe(0)
    expect(keptOf(again.stderr)).toBe(0)
    expect(again.stderr).toContain("resuming run")
    expect(again.stderr).toContain(
      "the records a killed run wrote were made by another command line or version (a flag other than --quiet or --concurrency changed): they are made again from the journal"
    )
    for (const name of OUTPUTS.filter((n) => n !== "report.md")) {
      expect(fs.readFileSync(Path.join(runDir, name)).equals(fs.readFileSync(Path.join(await clean(), name))), name)
        .toBe(true)
    }
  })

  it("a record that is not what the journal gives now (another version's scoring) keeps nothing", async () => {
    const out = tempDir()
    const runDir = await interrupted(out, "SIGKILL")
    const path = Path.join(runDir, "records-iteration-1.jsonl.partial")
    const text = fs.readFileSync(path, "utf8")
    const end = text.indexOf("\n")
    const first = JSON.parse(text.slice(0, end)) as { metrics: Record<string, unknown> }
    fs.writeFileSync(path, JSON.stringify({ ...first, metrics: { ...first.metrics, f1: 0.123 } }) + text.slice(end))
    const again = await runCli(args(out))
    expect(again.code, again.stderr).toBe(0)
    expect(again.stderr).toContain("differ from what the journal gives now")
    expect(keptOf(again.stderr)).toBe(0)
    await expectSameOutputs(runDir)
  })
})
