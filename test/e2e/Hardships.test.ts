/**
 * Durable under hardship, tested as a user meets it — the run that meets it is `node dist/bin.js` in
 * a child process (a file-size limit, a full tmpfs, kill -9, a lock race); the reference runs and the
 * runs after it (the resume) in-process through `main` (`runCli`, without a Node start-up each):
 *
 * - a disk that fills up mid-run (a file-size limit: writes come back short, then fail; and, where
 *   this machine lets a test mount one, a real 64 KiB tmpfs): exit 2 with "disk full while writing
 *   …", the journal holding whole lines only; space freed, the same command ends with the results of
 *   an uninterrupted run, and no paid judgment is asked twice;
 * - two processes racing for a lock a crashed run left, 20 times: never both running;
 * - `kill -9` while repairs are in flight: at most `--concurrency` paid calls lost, and the resume
 *   continues each journaled repair instead of paying for its first ask again;
 * - temporary files a killed run left are removed when the run starts again.
 */
import * as esbuild from "esbuild"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { writeCsv } from "../../bench/gen.js"
import { cli, start, waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, runDirIn, tempDir } from "../support/RunPipeline.js"

// The built-in pipeline by name: loading a pipeline file is Cli.test.ts's subject, and costs each run an esbuild compile.
const pipeline = "rag-answers"
const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const JUDGMENTS = 72

/** Every journal line is whole JSON; returns the judgments (attempt lines left out). */
const journalOf = (runDir: string) => {
  const text = fs.readFileSync(Path.join(runDir, "judgments.jsonl"), "utf8")
  expect(text === "" || text.endsWith("\n")).toBe(true)
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { key: string; kind?: string }).filter((
    l
  ) => l.kind !== "attempt")
}

const results = (runDir: string) => ({
  records: fs.readFileSync(Path.join(runDir, "records-iteration-1.jsonl"), "utf8"),
  report: fs.readFileSync(Path.join(runDir, "report.csv"), "utf8"),
  metrics: fs.readFileSync(Path.join(runDir, "metrics-iteration-1.json"), "utf8")
})

const llm = (url: string, out: string, ...extra: ReadonlyArray<string>) => [
  "run",
  pipeline,
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
  "--no-cache",
  ...extra
]

/** Can this test mount a tmpfs (root, with the capability)? */
const canMount = (() => {
  if (process.platform !== "linux" || process.getuid?.() !== 0) return false
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-mount-"))
  const ok = spawnSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir]).status === 0
  if (ok) spawnSync("umount", [dir])
  fs.rmSync(dir, { recursive: true, force: true })
  return ok
})()

describe.concurrent("a disk that fills up mid-run", { timeout: 120_000 }, () => {
  it("heuristic judge, a 256 KiB file-size limit: exit 2 naming the journal, whole lines only; then the same command ends as an uninterrupted run", async () => {
    // 300 rows: the heuristic judge journals 32 cases at a time, so the limit falls mid-run.
    const input = Path.join(tempDir(), "rows.csv")
    writeCsv(input, 300)
    const reference = tempDir()
    expect((await runCli(["run", pipeline, "--csv", input, "--out", reference])).code).toBe(0)
    const out = tempDir()
    const args = ["run", pipeline, "--csv", input, "--out", out]
    const full = await cli(args, { shell: "ulimit -f 256" })
    expect(full.code).toBe(2)
    expect(full.stderr).toMatch(
      /disk full while writing \S+judgments\.jsonl: free space and run the same command again/
    )
    expect(full.stderr).not.toMatch(/internal error|\n\s+at /)
    const runDir = runDirIn(out, pipeline)
    const kept = journalOf(runDir)
    expect(kept.length).toBeGreaterThan(0)
    expect(kept.length).toBeLessThan(300 * 6)
    // Whole appends or none: an append is written a chunk at a time (WRITE_CHUNK_CHARS, ~90 lines
    // here) and cut back whole when one of its writes fails, so the journal holds whole batches.
    expect(kept.length % (32 * 6)).toBe(0)
    expect(fs.readdirSync(runDir).filter((f) => /\.tmp-\d+$|\.partial$/.test(f))).toEqual([])
    const again = await runCli(args)
    expect(again.code).toBe(0)
    expect(again.stderr).toContain(
      `resuming run ${Path.basename(runDir)}: ${kept.length.toLocaleString("en-US")} of 1,800 judgments done`
    )
    expect(results(runDir)).toEqual(results(runDirIn(reference, pipeline)))
  })

  it("LLM judge: no paid judgment is lost or asked twice across the full disk and the resume", async () => {
    const server = await FakeOpenAi.start({ latencyMs: 5 })
    try {
      const reference = tempDir()
      expect((await runCli(llm(server.url, reference))).code).toBe(0)
      server.reset()
      const out = tempDir()
      const full = await cli(llm(server.url, out), { shell: "ulimit -f 12" })
      expect(full.code).toBe(2)
      expect(full.stderr).toMatch(/disk full while writing \S+judgments\.jsonl/)
      const runDir = runDirIn(out, pipeline)
      const kept = journalOf(runDir)
      const paid = server.judgeCalls
      // At most the calls in flight when the disk filled (--concurrency 8) were paid and not kept.
      expect(paid - kept.length).toBeLessThanOrEqual(8)
      const again = await runCli(llm(server.url, out))
      expect(again.code).toBe(0)
      expect(server.judgeCalls - paid).toBe(JUDGMENTS - kept.length)
      expect(new Set(journalOf(runDir).map((j) => j.key)).size).toBe(JUDGMENTS)
      expect(results(runDir)).toEqual(results(runDirIn(reference, pipeline)))
    } finally {
      await server.close()
    }
  })

  it.skipIf(!canMount)(
    "a real 64 KiB tmpfs (ENOSPC), then space freed: the same results as an uninterrupted run",
    async () => {
      const reference = tempDir()
      expect((await runCli(["run", pipeline, "--csv", sample, "--out", reference])).code).toBe(0)
      const mountPoint = tempDir("rag-eval-tmpfs-")
      expect(spawnSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", mountPoint]).status).toBe(0)
      try {
        const args = ["run", pipeline, "--csv", sample, "--out", mountPoint]
        const full = await cli(args)
        expect(full.code).toBe(2)
        expect(full.stderr).toContain("disk full while writing")
        expect(full.stderr).toContain("free space and run the same command again")
        expect(spawnSync("mount", ["-o", "remount,size=16m", mountPoint]).status).toBe(0)
        const again = await runCli(args)
        expect(again.code).toBe(0)
        expect(results(runDirIn(mountPoint, pipeline))).toEqual(results(runDirIn(reference, pipeline)))
      } finally {
        spawnSync("umount", [mountPoint])
      }
    }
  )
})
if (!canMount) {
  console.log("skipped: the tmpfs disk-full test needs root and mount (the file-size-limit tests above run everywhere)")
}

describe("one owner per run", { timeout: 300_000 }, () => {
  it("two processes racing for a crashed run's lock, 20 times: never both running, always one", async () => {
    // The holder bundled once (the built library's RunLock and what it uses of effect, in one file):
    // each of the 40 processes then starts in ~0.13 CPU-s instead of ~0.46 loading effect's modules.
    const holder = Path.join(tempDir("rag-eval-lock-holder-"), "lock-holder.mjs")
    await esbuild.build({
      entryPoints: [Path.join(repoRoot, "test", "support", "lock-holder.mjs")],
      outfile: holder,
      bundle: true,
      platform: "node",
      format: "esm",
      logLevel: "warning"
    })
    const run = (dir: string, log: string) =>
      new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, [holder, dir, log, "150"], { stdio: ["ignore", "ignore", "pipe"] })
        child.on("close", (code) => resolve(code))
      })
    // A pid that has certainly exited: a process we ran and waited for.
    const dead =
      spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout
    for (let round = 0; round < 20; round++) {
      const dir = tempDir("rag-eval-lock-")
      const log = Path.join(dir, "held.log")
      fs.writeFileSync(Path.join(dir, ".lock-7"), `${dead} 12345\n`)
      const codes = await Promise.all([run(dir, log), run(dir, log)])
      expect(codes.filter((c) => c === 0).length).toBeGreaterThanOrEqual(1)
      expect(codes.every((c) => c === 0 || c === 3)).toBe(true)
      const events = fs.readFileSync(log, "utf8").trim().split("\n").map((l) => l.split(" "))
      // Held intervals never overlap: every start is followed by its own end.
      for (let i = 0; i < events.length; i += 2) {
        expect(events[i]![0]).toBe("start")
        expect(events[i + 1]![0]).toBe("end")
        expect(events[i + 1]![1]).toBe(events[i]![1])
      }
      expect(fs.readdirSync(dir).filter((f) => f.startsWith(".lock"))).toEqual([])
    }
  })
})

describe.concurrent("kill -9 and its leftovers", { timeout: 120_000 }, () => {
  it("kill -9 while repairs are in flight (--concurrency 16): at most 16 paid calls lost; the resume continues each journaled repair", async () => {
    // Every first ask gets an unusable reply; its repair (which carries the reply back) is answered.
    const server = await FakeOpenAi.start({
      latencyMs: 60,
      answer: (request) =>
        (request.body.messages?.length ?? 0) > 2 ? FakeOpenAi.defaultAnswer(request) : "Let me think… the answer is {"
    })
    try {
      const out = tempDir()
      const args = llm(server.url, out, "--concurrency", "16")
      const first = start(args)
      await waitFor("repairs under way", () => server.judgeCalls >= 60 || first.exited())
      first.child.kill("SIGKILL")
      expect((await first.result).signal).toBe("SIGKILL")
      const paidBefore = server.judgeCalls
      const second = await runCli(args)
      expect(second.code).toBe(0)
      expect(second.stderr).toContain(`${JUDGMENTS} judgments: ${JUDGMENTS} ok, 0 failed`)
      // Uninterrupted, every judgment costs two calls (an ask and its repair).
      expect(server.judgeCalls - 2 * JUDGMENTS).toBeLessThanOrEqual(16)
      expect(paidBefore).toBeGreaterThan(0)
      // Journaled repairs were continued, not started over: some judgment's first request in the
      // second run was a repair carrying its earlier reply.
      const secondRun = server.judgeRequests.slice(paidBefore)
      expect(
        secondRun.some((r) =>
          (r.body.messages?.length ?? 0) > 2 && String(r.body.messages![2]!.content).includes("Let me think")
        )
      ).toBe(true)
      const firstAsks = server.judgeRequests.filter((r) => (r.body.messages?.length ?? 0) === 2).length
      expect(firstAsks - JUDGMENTS).toBeLessThanOrEqual(16)
    } finally {
      await server.close()
    }
  })

  it("temporary files and unfinished records a killed run left are removed when it starts again", async () => {
    const out = tempDir()
    const args = ["run", pipeline, "--csv", sample, "--out", out]
    expect((await runCli(args)).code).toBe(0)
    const runDir = runDirIn(out, pipeline)
    const dead =
      spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout
    const left = [`report.md.tmp-${dead}`, `summary.json.tmp-${dead}`, "records-iteration-1.jsonl.partial"]
    for (const f of left) fs.writeFileSync(Path.join(runDir, f), "half")
    const again = await runCli(args)
    expect(again.code).toBe(0)
    expect(again.stderr).toContain("removed what a killed run left behind")
    for (const f of left) expect(fs.existsSync(Path.join(runDir, f))).toBe(false)
  })
})
