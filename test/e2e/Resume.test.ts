/**
 * `rag-eval resume <run-dir>` any number of times (the runs Ctrl+C stops are child processes,
 * `node dist/bin.js`; the rest in-process, `runCli`), against the fake OpenAI-compatible server: a
 * run stopped by Ctrl+C and resumed, stopped and resumed again, three times, asks the server for
 * every judgment exactly once and ends with the records, metrics and reports of a run that was never
 * interrupted; every resume records the original `run` command, never `resume <dir>`, and no secret.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { start, waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, runDirIn, tempDir } from "../support/RunPipeline.js"

const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const JUDGMENTS = 72
const KEY = "sk-resume-test-secret-0123456789"

const runArgs = (url: string, out: string) => [
  "run",
  "rag-answers",
  "--csv",
  sample,
  "--out",
  out,
  "--provider",
  "openai-compatible",
  "--base-url",
  url,
  "--model",
  "fake",
  "--api-key",
  KEY,
  "--concurrency",
  "4",
  "--format",
  "markdown,csv,json"
]

const read = (runDir: string, file: string) => fs.readFileSync(Path.join(runDir, file), "utf8")
const manifestOf = (runDir: string) => JSON.parse(read(runDir, "manifest.json")) as Record<string, any>

/** The journal's judgments without what differs between two runs of the same work (timing), by key. */
const judgmentsOf = (runDir: string) =>
  read(runDir, "judgments.jsonl").split("\n").filter((l) => l !== "").map((l) => {
    const { latencyMs: _latency, attempts: _attempts, ...rest } = JSON.parse(l) as Record<string, unknown>
    return rest
  }).sort((a, b) => String(a.key).localeCompare(String(b.key)))

/** Metrics files without their timing figures. */
const withoutTimes = (text: string) =>
  JSON.stringify(JSON.parse(text), (k, v) => /latency|duration|seconds|At$/i.test(k) ? undefined : v)

describe("rag-eval resume, again and again", { timeout: 180_000 }, () => {
  it("three resumes with Ctrl+C between them: every judgment asked once, the records of an uninterrupted run", async () => {
    // 150 ms a reply at concurrency 4: a run takes about 3 s, so a stop always lands mid-run.
    const server = await FakeOpenAi.start({ latencyMs: 150, answer: FakeOpenAi.variedAnswer, apiKey: KEY })
    try {
      const out = tempDir("rag-eval-resume-")
      const env = { OPENAI_API_KEY: KEY }
      /** Start, wait until this process has had `calls` more judge calls answered, Ctrl+C, expect the stop. */
      const stopAfter = async (args: ReadonlyArray<string>, calls: number) => {
        const before = server.judgeCalls
        const running = start(args, { env, cwd: out })
        await waitFor(`${calls} judge calls`, () => server.judgeCalls >= before + calls || running.exited())
        running.child.kill("SIGINT")
        const r = await running.result
        expect(r.stderr).toContain("stopping: no new judge calls")
        expect(r.code).toBe(130)
        return r
      }

      const first = await stopAfter(runArgs(server.url, out), 8)
      const runDir = runDirIn(out, "rag-answers")
      expect(first.stderr).toContain(`rag-eval resume ${Path.relative(out, runDir)}`)
      const original = manifestOf(runDir).argv as ReadonlyArray<string>
      expect(original[0]).toBe("run")
      expect(original).toContain("<redacted>")

      // Resumed from another directory, by a relative path; stopped twice more.
      for (const calls of [8, 8]) {
        const r = await stopAfter(["resume", runDir], calls)
        expect(r.stderr).toMatch(/resuming run \S+: \d+ of 72 judgments done/)
        const m = manifestOf(runDir)
        expect(m.argv).toEqual(original)
        expect(m.status).toBe("stopped")
      }
      const last = await runCli(["resume", runDir], { env, cwd: tempDir() })
      expect(last.stderr).toContain(`resuming: rag-eval run rag-answers --csv ${sample}`)
      expect(last.stderr).toContain(`${JUDGMENTS} judgments: ${JUDGMENTS} ok, 0 failed`)
      expect(last.code).toBe(0)

      // Nothing judged twice: the server was asked each judgment's prompt once, over four runs (three
      // processes stopped by Ctrl+C, then the last resume in-process).
      const prompts = server.judgeRequests.map((r) => JSON.stringify(r.body.messages))
      expect(prompts).toHaveLength(JUDGMENTS)
      expect(new Set(prompts).size).toBe(JUDGMENTS)
      const m = manifestOf(runDir)
      expect(m.status).toBe("complete")
      expect(m.argv).toEqual(original)
      expect(m.command).toBe(["rag-eval", ...original].join(" "))
      for (const file of ["manifest.json", "judgments.jsonl", "report.md", "report.json"]) {
        expect(read(runDir, file)).not.toContain(KEY)
      }

      // The same command, never interrupted, against the same server: the same results.
      const straightOut = tempDir("rag-eval-straight-")
      const straight = await runCli(runArgs(server.url, straightOut), { env, cwd: straightOut })
      expect(straight.code).toBe(0)
      const straightDir = runDirIn(straightOut, "rag-answers")
      expect(Path.basename(straightDir)).toBe(Path.basename(runDir))
      expect(judgmentsOf(runDir)).toEqual(judgmentsOf(straightDir))
      expect(judgmentsOf(runDir)).toHaveLength(JUDGMENTS)
      expect(read(runDir, "records-iteration-1.jsonl")).toBe(read(straightDir, "records-iteration-1.jsonl"))
      expect(read(runDir, "report.csv")).toBe(read(straightDir, "report.csv"))
      expect(withoutTimes(read(runDir, "final-metrics.json"))).toBe(
        withoutTimes(read(straightDir, "final-metrics.json"))
      )
    } finally {
      await server.close()
    }
  })

  it("a flag given after the run directory replaces the run's own for that resume only; --fresh is never replayed", async () => {
    const cwd = tempDir("rag-eval-resume-flags-")
    const first = await runCli([
      "run",
      "rag-answers",
      "--csv",
      sample,
      "--concurrency",
      "3",
      "--fresh",
      "--run-id",
      "flags"
    ], { cwd })
    expect(first.code).toBe(0)
    const runDir = Path.join(cwd, "out/rag-answers/flags")
    const recorded = manifestOf(runDir).argv
    const again = await runCli(["resume", runDir, "--concurrency", "2"], { cwd: tempDir() })
    expect(again.code).toBe(0)
    expect(again.stderr).toContain(`resuming: rag-eval run rag-answers --csv ${sample} --run-id flags --concurrency 2`)
    // Nothing was discarded: every judgment came from the journal.
    expect(again.stderr).toContain("72 reused from the journal")
    expect(manifestOf(runDir).argv).toEqual(recorded)
    expect(manifestOf(runDir).concurrency).toBe(2)
  })

  it("a URL whose credentials were masked is refused until given again (exit 2, nothing run)", async () => {
    const cwd = tempDir("rag-eval-resume-url-")
    const first = await runCli(["run", "rag-answers", "--csv", sample, "--run-id", "url"], { cwd })
    expect(first.code).toBe(0)
    const runDir = Path.join(cwd, "out/rag-answers/url")
    const manifest = manifestOf(runDir)
    manifest.argv = [...manifest.argv, "--store", "postgres://<redacted>@127.0.0.1:1/db"]
    fs.writeFileSync(Path.join(runDir, "manifest.json"), JSON.stringify(manifest))
    const r = await runCli(["resume", runDir], { cwd })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("error: the run's --store held credentials, which are never recorded")
    expect(r.stderr).toContain("--store …")
  })
})
