/**
 * Bench [15]: what the size bounds (`src/domain/Limits.ts`) hold a run to, through the installed CLI
 * (`node dist/bin.js run answer-correctness …` under GNU time):
 *
 * - a JSONL test set whose second answer is 50 MB: refused (exit 2) — wall time and peak RSS
 *   (before the bound: 176 s, 2.7 GB and a crash, on the 2-core machine of docs/long-runs.md);
 * - a judge (the fake OpenAI server, in this process) whose every extraction lists 100,000 claims,
 *   over the 8-case sample: the run finishes with those judgments failed — wall time, peak RSS and
 *   the judge calls paid (before: 600,000 paid checks for the first case, 950 MB, a crash).
 *
 * `npx tsx bench/bounds.ts` runs it alone.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as FakeOpenAi from "../test/support/FakeOpenAi.js"
import { consolePrinter, isMain, type Printer } from "./timed.js"

const repo = fileURLToPath(new URL("..", import.meta.url))

export const TARGETS = {
  /** Refusing a 50 MB field costs about what reading the file does. */
  refusedPeakMB: 150,
  /** A judge flooding claims: the sample's run stays as small as an ordinary one. */
  floodPeakMB: 300
}

interface CliFigures {
  readonly status: number | null
  readonly peakMB: number
  readonly seconds: number
  readonly stderr: string
}

/** The CLI under GNU time, asynchronously (the fake judge answers from this process meanwhile). */
const timedCli = (args: ReadonlyArray<string>, cwd: string): Promise<CliFigures> =>
  new Promise((resolve, reject) => {
    const child = spawn(
      "/usr/bin/time",
      ["-f", "%M %e", process.execPath, Path.join(repo, "dist", "bin.js"), ...args],
      {
        cwd,
        stdio: ["ignore", "ignore", "pipe"]
      }
    )
    let stderr = ""
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
    child.on(
      "error",
      (e) => reject(new Error(`cannot run /usr/bin/time (GNU time is needed for peak RSS): ${e.message}`))
    )
    child.on("close", () => {
      const [kb, seconds] = (stderr.trim().split("\n").at(-1) ?? "").split(" ")
      const status = /exited with non-zero status (\d+)/.exec(stderr)
      resolve({
        status: status === null ? 0 : Number(status[1]),
        peakMB: Number(kb) / 1024,
        seconds: Number(seconds),
        stderr
      })
    })
  })

export const printBoundsFigures = async (printer: Printer) => {
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-bounds-"))
  try {
    const input = Path.join(dir, "huge.jsonl")
    const answer = "The tower is tall. ".repeat(Math.ceil(50_000_000 / 19)).slice(0, 50_000_000)
    fs.writeFileSync(
      input,
      [
        JSON.stringify({ id: "q1", question: "How tall is it?", answer: "330 m.", reference: "330 m." }),
        JSON.stringify({ id: "q2", question: "How tall is it?", answer, reference: "330 m." })
      ].join("\n") + "\n"
    )
    const refused = await timedCli(["run", "answer-correctness", "--input", input, "--quiet"], dir)
    printer.figure(
      "a 50 MB answer in a JSONL test set, refused",
      `exit ${refused.status} in ${refused.seconds.toFixed(1)} s, peak RSS ${refused.peakMB.toFixed(0)} MB`,
      `exit 2, ≤ ${TARGETS.refusedPeakMB} MB`,
      refused.status === 2 && refused.peakMB <= TARGETS.refusedPeakMB
    )

    const claims = JSON.stringify({ claims: Array.from({ length: 100_000 }, (_, i) => `c${i}`) })
    const fake = await FakeOpenAi.start({
      record: false,
      answer: (request) => {
        const schema = request.body.response_format?.json_schema?.schema as
          | { properties?: Record<string, unknown> }
          | undefined
        return schema?.properties?.claims !== undefined ? claims : FakeOpenAi.defaultAnswer(request)
      }
    })
    try {
      const flood = await timedCli([
        "run",
        "answer-correctness",
        "--input",
        Path.join(repo, "test-sets", "answer-correctness", "sample.jsonl"),
        "--out",
        Path.join(dir, "out"),
        "--provider",
        "openai-compatible",
        "--model",
        "fake",
        "--base-url",
        fake.url,
        "--max-failures",
        "1000"
      ], dir)
      printer.figure(
        "a judge listing 100,000 claims per extraction, the 8-case sample",
        `exit ${flood.status} in ${flood.seconds.toFixed(1)} s, peak RSS ${
          flood.peakMB.toFixed(0)
        } MB, ${fake.paidJudgeCalls} judge calls paid`,
        `exit 0, ≤ ${TARGETS.floodPeakMB} MB, no claim of theirs checked`,
        flood.status === 0 && flood.peakMB <= TARGETS.floodPeakMB && fake.paidJudgeCalls < 100
      )
    } finally {
      await fake.close()
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (isMain(import.meta.url)) void printBoundsFigures(consolePrinter)
