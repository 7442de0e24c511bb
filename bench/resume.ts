/**
 * `npm run bench` [7]: resuming a large run. The CLI judges N generated rows with the heuristic
 * judge (6 judgments a row) and is killed (SIGKILL) once its journal holds about half of them; then
 * the same command resumes it, under `/usr/bin/time` for its peak RSS. Figures: the resume's
 * start-up (until it says `resuming run …`: the input hashed, the journal indexed), the time until
 * its first new judgment is journaled (the records the killed run wrote kept, their fold restored from
 * its last snapshot and the records after it folded again, the input read past the kept cases), the
 * whole resume, and its peak RSS.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as Path from "node:path"

export interface ResumeFigures {
  readonly judgments: number
  readonly journaledAtKill: number
  readonly journalBytes: number
  readonly startupMs: number
  readonly firstNewJudgmentMs: number
  readonly totalMs: number
  readonly peakMB: number
  readonly exit: number | null
}

/** Whole lines of a file, counted in 1 MiB reads (a 2 GB journal is no string). */
const countLines = (path: string): number => {
  const fd = fs.openSync(path, "r")
  const buf = Buffer.allocUnsafe(1 << 20)
  let lines = 0
  try {
    for (let n = fs.readSync(fd, buf, 0, buf.length, null); n > 0; n = fs.readSync(fd, buf, 0, buf.length, null)) {
      for (let i = buf.indexOf(10, 0); i !== -1 && i < n; i = buf.indexOf(10, i + 1)) lines++
    }
  } finally {
    fs.closeSync(fd)
  }
  return lines
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The run to kill and resume. */
export interface ResumeRun {
  /** `run …` arguments after `run`, without `--out`. */
  readonly args: ReadonlyArray<string>
  /** The directory under `--out` the run writes to (the pipeline's name). */
  readonly pipeline: string
  readonly judgments: number
  /** About how many bytes a journal line takes: the kill waits for half the judgments by size. */
  readonly lineBytes: number
}

/** Bench [7]: rag-answers on a generated CSV of `rows` rows (6 judgments a row, ~390 bytes a journal line). */
export const ragAnswersRun = (csv: string, rows: number): ResumeRun => ({
  args: ["pipelines/rag-answers.ts", "--csv", csv],
  pipeline: "rag-answers",
  judgments: rows * 6,
  lineBytes: 390
})

/**
 * Bench [7b]: answer-correctness on `cases` cases written by `bench/correctness.ts writeCases` (their
 * three shapes: 68 judgments every 3 cases; ~485 bytes a journal line).
 */
export const correctnessRun = (input: string, cases: number): ResumeRun => ({
  args: ["answer-correctness", "--input", input],
  pipeline: "answer-correctness",
  judgments: Math.round(cases * 68 / 3),
  lineBytes: 485
})

export const resumeFigures = async (
  options: { readonly repo: string; readonly out: string; readonly run: ResumeRun }
): Promise<ResumeFigures> => {
  const run = options.run
  const args = [Path.join(options.repo, "dist", "bin.js"), "run", ...run.args, "--out", options.out]
  const total = run.judgments
  // 1. Run until the journal holds about half the judgments, then kill -9.
  const first = spawn(process.execPath, args, { cwd: options.repo, stdio: "ignore" })
  const root = Path.join(options.out, run.pipeline)
  let journal: string | undefined
  const half = total / 2
  // Watch the journal's size rather than count its lines.
  for (;;) {
    await sleep(200)
    if (journal === undefined && fs.existsSync(root)) {
      const ids = fs.readdirSync(root)
      if (ids.length > 0) journal = Path.join(root, ids[0]!, "judgments.jsonl")
    }
    if (journal !== undefined && fs.existsSync(journal) && fs.statSync(journal).size > half * run.lineBytes) break
    if (first.exitCode !== null) throw new Error("the run ended before it could be killed")
  }
  first.kill("SIGKILL")
  await new Promise((resolve) => first.once("close", resolve))
  const journalBytes = fs.statSync(journal!).size
  const journaledAtKill = countLines(journal!)

  // 2. The same command, timed from outside: stderr for the resume line, the journal's size for the
  //    first new judgment.
  const started = performance.now()
  const second = spawn("/usr/bin/time", ["-f", "%M", process.execPath, ...args], {
    cwd: options.repo,
    stdio: ["ignore", "ignore", "pipe"]
  })
  let stderr = ""
  let startupMs = Number.NaN
  let firstNewJudgmentMs = Number.NaN
  second.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString()
    if (Number.isNaN(startupMs) && stderr.includes("resuming run")) startupMs = performance.now() - started
  })
  const done = new Promise<number | null>((resolve) => second.once("close", resolve))
  let exited = false
  void done.then(() => (exited = true))
  while (!exited) {
    if (Number.isNaN(firstNewJudgmentMs) && fs.statSync(journal!).size > journalBytes) {
      firstNewJudgmentMs = performance.now() - started
    }
    await sleep(20)
  }
  const exit = await done
  const totalMs = performance.now() - started
  const kb = Number(stderr.trim().split("\n").at(-1))
  return {
    judgments: total,
    journaledAtKill,
    journalBytes,
    startupMs,
    firstNewJudgmentMs,
    totalMs,
    peakMB: kb / 1024,
    exit
  }
}
