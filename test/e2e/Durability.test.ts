/**
 * Durable, reproducible long runs, tested as a user meets them, against the fake OpenAI-compatible
 * server over real HTTP. The runs that are killed or signalled, the run as another user (a read-only
 * directory) and the fault mix (hanging calls) are `node dist/bin.js` in a child process (built by
 * `pretest`); the rest — the reference run, resumes, the journal, the cache — run in-process
 * (`runCli`: the same arguments, environment, output and exit code).
 *
 * - a crash (SIGKILL) part-way, then the same command again: every case exactly once, and no more
 *   API calls than judgments + concurrency (at most the calls in flight are lost);
 * - Ctrl+C (SIGINT): in-flight calls finish and are journaled, nothing new starts, exit 130 with a
 *   resume hint; the resumed run equals an uninterrupted one, with exactly one call per judgment;
 *   a second Ctrl+C aborts calls that hang; a Ctrl+C while a large input is checked stops at once;
 * - a torn last journal line, a run directory holding another run, a read-only output directory;
 * - `--iterations 3` asks three times; an identical finished run asks nothing; the cache across runs
 *   and run ids, `--fresh`, `--no-cache`, `--retry-failed`;
 * - a fault mix (500s, malformed answers, a 429 burst with Retry-After, hangs): every judgment ends
 *   scored or failed with its reason, once.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { cli, sleep, start, waitFor } from "../support/ChildCli.js"
import { parseCsv } from "../support/Csv.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

// The built-in pipeline by name: loading a pipeline file is Cli.test.ts's subject, and costs each run an esbuild compile.
const pipeline = "rag-answers"
const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const CASES = 12
const DIMENSIONS = 6
const JUDGMENTS = CASES * DIMENSIONS
const CONCURRENCY = 4

/** A run of rag-answers judged by the fake server. */
const llmArgs = (server: FakeOpenAi.FakeOpenAi, input: string, out: string, ...extra: ReadonlyArray<string>) => [
  "run",
  pipeline,
  "--csv",
  input,
  "--out",
  out,
  "--provider",
  "openai-compatible",
  "--base-url",
  server.url,
  "--model",
  "fake",
  "--concurrency",
  String(CONCURRENCY),
  ...extra
]

// ---------------------------------------------------------------------------------------------
// Run directories

/** The single run directory under `<out>/rag-answers/`. */
const onlyRunDir = (out: string) => {
  const root = Path.join(out, "rag-answers")
  const ids = fs.readdirSync(root)
  expect(ids).toHaveLength(1)
  return { id: ids[0]!, dir: Path.join(root, ids[0]!) }
}

interface JournalLine {
  readonly key: string
  readonly caseId: string
  readonly iteration: number
  readonly criterion: string
  readonly status: "ok" | "failed"
  readonly score: number | null
  readonly reason: string
}

/** Complete journal lines (a torn last line, if any, is left out and reported). */
const readJournal = (runDir: string) => {
  const text = fs.readFileSync(Path.join(runDir, "judgments.jsonl"), "utf8")
  const lines = text.split("\n")
  const tail = lines.pop()!
  // Paid replies awaiting repair are journaled too (as attempts): the judgments are the other lines.
  return {
    lines: lines.map((l) => JSON.parse(l) as JournalLine & { kind?: string }).filter((l) => l.kind !== "attempt"),
    torn: tail !== ""
  }
}

interface RecordLine {
  readonly caseId: string
  readonly iteration: number
  readonly dimensions: ReadonlyArray<
    { readonly criterion: string; readonly status: string; readonly score: number | null; readonly reason: string }
  >
}

const readRecords = (runDir: string, iteration = 1) =>
  fs.readFileSync(Path.join(runDir, `records-iteration-${iteration}.jsonl`), "utf8").trim().split("\n").map((l) =>
    JSON.parse(l) as RecordLine
  )

const sampleRows = () => parseCsv(fs.readFileSync(sample, "utf8")).slice(1)
const sampleQuestions = () => sampleRows().map((r) => r[0]!)

/** Every case of the input exactly once, in input order, in records and report.csv. */
const expectEveryCaseOnce = (runDir: string, cases = CASES) => {
  const records = readRecords(runDir)
  expect(records.map((r) => r.caseId)).toEqual(Array.from({ length: cases }, (_, i) => String(i + 1)))
  for (const r of records) expect(r.dimensions).toHaveLength(DIMENSIONS)
  const report = parseCsv(fs.readFileSync(Path.join(runDir, "report.csv"), "utf8"))
  // Columns: case_id, line, then the input columns (the question first).
  expect(report.slice(1).map((r) => r[2])).toEqual(sampleQuestions().slice(0, cases))
}

/** The result files that must not depend on how the run got there (paths and times excluded). */
const results = (runDir: string) => ({
  records: fs.readFileSync(Path.join(runDir, "records-iteration-1.jsonl"), "utf8"),
  report: fs.readFileSync(Path.join(runDir, "report.csv"), "utf8"),
  metrics: fs.readFileSync(Path.join(runDir, "metrics-iteration-1.json"), "utf8")
})

const snapshot = (dir: string) =>
  Object.fromEntries(
    fs.readdirSync(dir).sort().map((f) => {
      const p = Path.join(dir, f)
      return [f, { bytes: fs.readFileSync(p, "utf8"), mtime: fs.statSync(p).mtimeMs }]
    })
  )

const resumeLine = (id: string, done: number, total: number) =>
  `resuming run ${id}: ${done.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} judgments done`

// ---------------------------------------------------------------------------------------------

// Each test has its own fake server and output roots, so they run side by side.
// The timeout is headroom for a loaded machine (each child loads the CLI);
// the whole file takes about 20 s alone on two cores (2026-11-30; 35 s when every run was a child).
describe.concurrent("durable runs (against the fake server)", { timeout: 120_000 }, () => {
  /**
   * An uninterrupted run of the sample: what every interrupted-and-resumed run must equal. Started
   * by the first test that needs it and run alongside it.
   */
  let uninterruptedRun: Promise<{ readonly id: string; readonly results: ReturnType<typeof results> }> | undefined
  const uninterrupted = () => {
    uninterruptedRun ??= (async () => {
      const server = await FakeOpenAi.start()
      try {
        const out = tempDir()
        const r = await runCli(llmArgs(server, sample, out))
        expect(r.stderr).toContain(`${JUDGMENTS} judgments: ${JUDGMENTS} ok, 0 failed`)
        expect(r.code).toBe(0)
        expect(server.judgeCalls).toBe(JUDGMENTS)
        const run = onlyRunDir(out)
        expectEveryCaseOnce(run.dir)
        return { id: run.id, results: results(run.dir) }
      } finally {
        await server.close()
      }
    })()
    // Awaited by the tests; this only keeps an early test failure from leaving it unhandled.
    uninterruptedRun.catch(() => undefined)
    return uninterruptedRun
  }

  /** The sample run against a slow fake server, sent `signal` once 24 calls were made; the server stays open for the resume. */
  const interruptedRun = async (signal: NodeJS.Signals) => {
    const server = await FakeOpenAi.start({ latencyMs: 100 })
    try {
      const out = tempDir()
      const args = llmArgs(server, sample, out)
      const first = start(args)
      await waitFor("24 calls", () => server.judgeCalls >= 24 || first.exited())
      first.child.kill(signal)
      return { server, out, args, interrupted: await first.result }
    } catch (e) {
      await server.close()
      throw e
    }
  }

  it("SIGKILL part-way, then the same command: every case exactly once, at most judgments + concurrency calls", async () => {
    const baseline = uninterrupted()
    const { server, out, args, interrupted: killed } = await interruptedRun("SIGKILL")
    try {
      expect(killed.signal).toBe("SIGKILL")
      const callsBefore = server.judgeCalls
      const run = onlyRunDir(out)
      const journal = readJournal(run.dir)
      expect(journal.lines.length).toBeGreaterThan(0)
      expect(journal.lines.length).toBeLessThan(JUDGMENTS)
      // Journaled as each finished: only the calls still in flight at the kill are missing.
      expect(journal.lines.length).toBeGreaterThanOrEqual(callsBefore - CONCURRENCY)
      expect(fs.existsSync(Path.join(run.dir, "records-iteration-1.jsonl"))).toBe(false)

      const second = await runCli(args)
      expect(second.stderr).toContain(resumeLine(run.id, journal.lines.length, JUDGMENTS))
      expect(second.code).toBe(0)
      // Every journaled judgment was skipped; only the missing ones were asked.
      expect(server.judgeCalls - callsBefore).toBe(JUDGMENTS - journal.lines.length)
      expect(server.judgeCalls).toBeLessThanOrEqual(JUDGMENTS + CONCURRENCY)

      expectEveryCaseOnce(run.dir)
      const after = readJournal(run.dir)
      expect(after.torn).toBe(false)
      expect(new Set(after.lines.map((l) => l.key)).size).toBe(JUDGMENTS)
      expect(after.lines).toHaveLength(JUDGMENTS)
      expect(results(run.dir)).toEqual((await baseline).results)
      const summary = JSON.parse(fs.readFileSync(Path.join(run.dir, "summary.json"), "utf8"))
      expect(summary.judgments).toEqual({ total: JUDGMENTS, ok: JUDGMENTS, failed: 0 })
    } finally {
      await server.close()
    }
  })

  it("SIGINT: in-flight calls finish and are journaled, nothing new starts, exit 130; the resume equals an uninterrupted run", async () => {
    const baseline = uninterrupted()
    const { server, out, args, interrupted: stopped } = await interruptedRun("SIGINT")
    try {
      expect(stopped.stderr).toContain("stopping: no new judge calls")
      expect(stopped.stderr).toContain("run the same command again to resume")
      expect(stopped.code).toBe(130)
      const run = onlyRunDir(out)
      const journal = readJournal(run.dir)
      // Clean stop: every call the server answered is in the journal, none was cut off.
      expect(journal.torn).toBe(false)
      expect(journal.lines).toHaveLength(server.judgeCalls)
      expect(journal.lines.length).toBeLessThan(JUDGMENTS)
      expect(stopped.stderr).toContain(
        `stopped: ${journal.lines.length} of ${JUDGMENTS} judgments are saved in ${run.dir}/judgments.jsonl`
      )
      const manifest = JSON.parse(fs.readFileSync(Path.join(run.dir, "manifest.json"), "utf8"))
      expect(manifest.status).toBe("stopped")
      expect(fs.existsSync(Path.join(run.dir, "records-iteration-1.jsonl"))).toBe(false)
      expect(fs.readdirSync(run.dir).filter((f) => f.endsWith(".partial") || f.endsWith(".tmp"))).toEqual([])

      const second = await runCli(args)
      expect(second.stderr).toContain(resumeLine(run.id, journal.lines.length, JUDGMENTS))
      expect(second.code).toBe(0)
      // Nothing was lost to the stop: exactly one call per judgment over both runs.
      expect(server.judgeCalls).toBe(JUDGMENTS)
      expectEveryCaseOnce(run.dir)
      expect(readJournal(run.dir).lines).toHaveLength(JUDGMENTS)
      expect(results(run.dir)).toEqual((await baseline).results)
      expect(JSON.parse(fs.readFileSync(Path.join(run.dir, "manifest.json"), "utf8")).status).toBe("complete")
    } finally {
      await server.close()
    }
  })

  it("SIGINT while a large input is being checked: the run stops at once, exit 130, nothing written", async () => {
    // 200,000 answer-correctness cases, each its own text: the validation pass takes seconds (about
    // a minute a million cases), and before this stopped only once it had read them all.
    const dir = tempDir()
    const input = Path.join(dir, "cases.jsonl")
    const fd = fs.openSync(input, "w")
    for (let start = 0; start < 200_000; start += 10_000) {
      let chunk = ""
      for (let i = start; i < start + 10_000; i++) {
        chunk += `${
          JSON.stringify({
            id: `c${i}`,
            question: `What happened in year ${i}?`,
            answer: `In ${i} the river rose ${i % 97} metres. The town moved north.`,
            reference: `The river rose ${i % 89} metres in ${i}.`,
            contexts: [`Records of ${i}: the river rose, and the town moved.`]
          })
        }\n`
      }
      fs.writeSync(fd, chunk)
    }
    fs.closeSync(fd)
    const out = Path.join(dir, "out")
    const running = start(["run", "answer-correctness", "--input", input, "--out", out])
    await waitFor("the judge notice", () => running.stderr().includes("no --provider given") || running.exited())
    running.child.kill("SIGINT")
    const stopped = await running.result
    expect(stopped.code, stopped.stderr).toBe(130)
    expect(stopped.stderr).toContain(`stopped while checking ${input}: nothing was judged or written`)
    expect(fs.existsSync(out)).toBe(false)
  })

  it("a second SIGINT aborts calls that hang; the run resumes afterwards", async () => {
    const server = await FakeOpenAi.start({ faults: { hang: 1 } })
    try {
      const out = tempDir()
      // No preflight: it would hang too, and judging waits for it. A 10-minute timeout: a run the
      // second Ctrl+C did not abort would wait past the test's own timeout (no real-clock bound here).
      const args = llmArgs(server, sample, out, "--limit", "2", "--timeout", "600", "--no-preflight")
      const first = start(args)
      await waitFor(`${CONCURRENCY} hanging calls`, () => server.judgeCalls >= CONCURRENCY || first.exited())
      first.child.kill("SIGINT")
      await waitFor("the stop notice", () => first.stderr().includes("stopping:") || first.exited())
      await sleep(600)
      // The first Ctrl+C waits for the calls in flight and starts no new one.
      expect(first.exited()).toBe(false)
      expect(server.judgeCalls).toBe(CONCURRENCY)
      first.child.kill("SIGINT")
      const aborted = await first.result
      expect(aborted.code).toBe(130)
      expect(aborted.stderr).toContain("stopping: no new judge calls")
      expect(aborted.stderr).toContain("run the same command again to resume")
      expect(server.judgeCalls).toBe(CONCURRENCY)
      const run = onlyRunDir(out)
      expect(readJournal(run.dir).lines).toHaveLength(0)

      server.setBehaviour({ faults: {} })
      server.reset()
      const second = await runCli(args)
      expect(second.code).toBe(0)
      expect(server.judgeCalls).toBe(2 * DIMENSIONS)
      expectEveryCaseOnce(run.dir, 2)
    } finally {
      await server.close()
    }
  })

  describe("the journal and the run directory", () => {
    it("a torn last journal line is dropped and that one judgment is asked again", async () => {
      const server = await FakeOpenAi.start()
      try {
        const out = tempDir()
        const first = await runCli(llmArgs(server, sample, out, "--limit", "2"))
        expect(first.code).toBe(0)
        const run = onlyRunDir(out)
        const complete = results(run.dir)
        const path = Path.join(run.dir, "judgments.jsonl")
        const text = fs.readFileSync(path, "utf8")
        const lastStart = text.lastIndexOf("\n", text.length - 2) + 1
        // Cut the last line in the middle, as a crash during the write would leave it.
        fs.writeFileSync(path, text.slice(0, lastStart + Math.floor((text.length - lastStart) / 2)))
        server.reset()

        // --dry-run agrees with the run: the torn judgment is still to be made.
        const dry = await runCli(llmArgs(server, sample, out, "--limit", "2", "--no-cache", "--dry-run"))
        expect(dry.code).toBe(0)
        expect(dry.stdout).toMatch(
          new RegExp(`judge calls: +1 \\(${2 * DIMENSIONS - 1} more already in the journal or cache\\)`)
        )
        expect(server.judgeCalls).toBe(0)

        const second = await runCli(llmArgs(server, sample, out, "--limit", "2", "--no-cache"))
        expect(second.stderr).toContain("journal: dropped a torn last line")
        expect(second.stderr).toContain(resumeLine(run.id, 2 * DIMENSIONS - 1, 2 * DIMENSIONS))
        expect(second.code).toBe(0)
        expect(server.judgeCalls).toBe(1)
        const journal = readJournal(run.dir)
        expect(journal.torn).toBe(false)
        expect(journal.lines).toHaveLength(2 * DIMENSIONS)
        expect(new Set(journal.lines.map((l) => l.key)).size).toBe(2 * DIMENSIONS)
        expectEveryCaseOnce(run.dir, 2)
        expect(results(run.dir)).toEqual(complete)

        // The cache under --out tolerates a torn last line too: a crash mid-append costs that one
        // judgment once, and the judgment asked again is cached for good (never asked a third time).
        const lost = journal.lines.at(-1)!.key
        const shard = Path.join(out, ".cache", "judgments", `${lost.slice(0, 2)}.jsonl`)
        const cached = fs.readFileSync(shard, "utf8")
        const entry = cached.split("\n").findIndex((l) => l.includes(`"key":"${lost}"`))
        expect(entry).toBeGreaterThanOrEqual(0)
        const kept = cached.split("\n").filter((l, i) => l !== "" && i !== entry)
        const torn = cached.split("\n")[entry]!
        fs.writeFileSync(shard, [...kept, torn.slice(0, Math.floor(torn.length / 2))].join("\n"))
        server.reset()
        const other = await runCli(llmArgs(server, sample, out, "--limit", "2", "--run-id", "other"))
        expect(other.code).toBe(0)
        expect(server.judgeCalls).toBe(1)
        // The judgment asked again landed on a line of its own, readable by the next run.
        const lines = fs.readFileSync(shard, "utf8").split("\n")
        expect(lines.at(-1)).toBe("")
        const parsed = lines.flatMap((l) => {
          try {
            return [JSON.parse(l) as { readonly key: string }]
          } catch {
            return []
          }
        })
        expect(parsed.filter((j) => j.key === lost)).toHaveLength(1)
      } finally {
        await server.close()
      }
    })

    it("a run directory holding another run (same --run-id, other input): exit 2, nothing touched", async () => {
      const server = await FakeOpenAi.start()
      try {
        const out = tempDir()
        const first = await runCli(llmArgs(server, sample, out, "--limit", "2", "--run-id", "nightly"))
        expect(first.code).toBe(0)
        const runDir = Path.join(out, "rag-answers", "nightly")
        expect(onlyRunDir(out).dir).toBe(runDir)
        const before = snapshot(runDir)

        const dir = tempDir()
        const other = Path.join(dir, "other.csv")
        const rows = fs.readFileSync(sample, "utf8").split("\n")
        fs.writeFileSync(
          other,
          [rows[0], "What is a heat pump?,,1. A heat pump moves heat.,It moves heat.", ""].join("\n")
        )
        server.reset()
        const second = await runCli(llmArgs(server, other, out, "--run-id", "nightly"))
        expect(second.code).toBe(2)
        expect(second.stderr).toContain(runDir)
        expect(second.stderr).toMatch(/holds a different run/)
        expect(second.stderr).toMatch(/--run-id|--fresh/)
        expect(server.judgeCalls).toBe(0)
        expect(snapshot(runDir)).toEqual(before)
      } finally {
        await server.close()
      }
    })

    it("a read-only output directory: exit 2, a message naming it, nothing written", async () => {
      const parent = tempDir()
      fs.chmodSync(parent, 0o755)
      const out = Path.join(parent, "out")
      fs.mkdirSync(out)
      fs.chmodSync(out, 0o555)
      // root ignores permission bits: run the child as nobody then (the repo and sample are world-readable).
      const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}
      const r = await start(["run", pipeline, "--csv", sample, "--out", out], asNobody).result
      expect(r.code).toBe(2)
      expect(r.stderr).toContain(out)
      expect(r.stderr).toMatch(/not writable/)
      expect(r.stderr).not.toMatch(/internal error|at .*\.js:\d+/)
      expect(fs.readdirSync(out)).toEqual([])
    })
  })

  describe("calls: iterations, identical re-runs, the cache", () => {
    it("--iterations 3 asks three times; an identical finished run asks nothing; the cache spans runs", async () => {
      const server = await FakeOpenAi.start()
      try {
        const limit = ["--limit", "2"]
        const per = 2 * DIMENSIONS

        const out = tempDir()
        const thrice = llmArgs(server, sample, out, ...limit, "--iterations", "3")
        const r3 = await runCli(thrice)
        expect(r3.code).toBe(0)
        expect(server.judgeCalls).toBe(3 * per)
        // Each distinct prompt was really asked three times.
        const asked = new Map<string, number>()
        for (const req of server.judgeRequests) {
          const k = JSON.stringify(req.body.messages)
          asked.set(k, (asked.get(k) ?? 0) + 1)
        }
        expect(asked.size).toBe(per)
        expect([...asked.values()].every((n) => n === 3)).toBe(true)
        const run = onlyRunDir(out)
        for (const i of [1, 2, 3]) expect(readRecords(run.dir, i).map((r) => r.iteration)).toEqual([i, i])
        expect(readJournal(run.dir).lines).toHaveLength(3 * per)

        server.reset()
        const again = await runCli(thrice)
        expect(again.code).toBe(0)
        expect(again.stderr).toContain(resumeLine(run.id, 3 * per, 3 * per))
        expect(server.judgeCalls).toBe(0)
        expect(readJournal(run.dir).lines).toHaveLength(3 * per)

        // --fresh starts the run over; the cache of earlier runs under --out still answers.
        const fresh = await runCli([...thrice, "--fresh"])
        expect(fresh.code).toBe(0)
        expect(fresh.stderr).toContain(`${3 * per} from the cache`)
        expect(fresh.stderr).not.toContain("resuming run")
        expect(server.judgeCalls).toBe(0)
        expect(readJournal(run.dir).lines).toHaveLength(3 * per)

        // --no-cache bypasses it: a fresh run asks everything again.
        const bypass = await runCli([...thrice, "--fresh", "--no-cache"])
        expect(bypass.code).toBe(0)
        expect(server.judgeCalls).toBe(3 * per)
        expect(readJournal(run.dir).lines).toHaveLength(3 * per)
      } finally {
        await server.close()
      }
    })

    it("--retry-failed asks again only the judgments recorded as failed", async () => {
      // Every clarity answer is malformed; the other dimensions answer normally.
      const clarityBroken = (req: FakeOpenAi.RecordedRequest) =>
        req.body.response_format?.json_schema?.name === "rag-answers_clarity"
          ? "I would say it is clear, maybe {"
          : FakeOpenAi.defaultAnswer(req)
      const server = await FakeOpenAi.start({ answer: clarityBroken })
      try {
        const out = tempDir()
        const args = llmArgs(server, sample, out, "--limit", "2", "--max-failures", "100")
        const first = await runCli(args)
        expect(first.code).toBe(0)
        expect(first.stderr).toContain(`${2 * DIMENSIONS} judgments: ${2 * DIMENSIONS - 2} ok, 2 failed`)
        const run = onlyRunDir(out)
        const failed = readJournal(run.dir).lines.filter((l) => l.status === "failed")
        // In the order the calls landed: either case's may come first.
        expect(failed.map((l) => [l.caseId, l.criterion]).sort()).toEqual(
          [["1", "rag-answers/clarity"], ["2", "rag-answers/clarity"]]
        )
        for (const l of failed) {
          expect(l.score).toBeNull()
          expect(l.reason).toMatch(/unusable answer after 3 tries/)
        }

        // A plain resume keeps the recorded failures.
        server.setBehaviour({ answer: FakeOpenAi.defaultAnswer })
        server.reset()
        const plain = await runCli(args)
        expect(plain.code).toBe(0)
        expect(server.judgeCalls).toBe(0)
        expect(plain.stderr).toContain("2 failed")

        const retry = await runCli([...args, "--retry-failed"])
        expect(retry.code).toBe(0)
        expect(server.judgeCalls).toBe(2)
        expect(server.judgeRequests.map((r) => r.body.response_format?.json_schema?.name)).toEqual([
          "rag-answers_clarity",
          "rag-answers_clarity"
        ])
        expect(retry.stderr).toContain(`${2 * DIMENSIONS} judgments: ${2 * DIMENSIONS} ok, 0 failed`)
        for (const r of readRecords(run.dir)) for (const d of r.dimensions) expect(d.status).toBe("ok")
        expectEveryCaseOnce(run.dir, 2)
      } finally {
        await server.close()
      }
    })
  })

  it("a fault mix (500s, malformed, a 429 burst with Retry-After, hangs): every judgment scored or failed with its reason, exactly once", async () => {
    // Every rubric's prompt quotes the answer (not all quote the question).
    const brokenAnswer = sampleRows()[2]![3]!
    const server = await FakeOpenAi.start({
      // A 429 burst early on and two hangs, then 20 % 500s, 10 % malformed and a few more hangs.
      script: [
        "ok",
        "ok",
        "ok",
        "ok",
        "rate_limit",
        "rate_limit",
        "rate_limit",
        "rate_limit",
        "rate_limit",
        "rate_limit",
        "hang",
        "ok",
        "hang"
      ],
      faults: { server_error: 0.2, malformed: 0.1, hang: 0.02 },
      retryAfterSeconds: 1,
      seed: 7,
      // Case 3 always answers in prose: its judgments must end failed, with the reason.
      answer: (req) =>
        (req.body.messages ?? []).some((m) => typeof m.content === "string" && m.content.includes(brokenAnswer))
          ? "No JSON here, sorry."
          : FakeOpenAi.defaultAnswer(req)
    })
    try {
      const out = tempDir()
      const r = await cli(
        llmArgs(server, sample, out, "--timeout", "1", "--max-retries", "2", "--max-failures", "1000")
      )
      expect(r.code).toBe(0)
      expect(server.replies.rate_limit).toBeGreaterThanOrEqual(6)
      expect(server.replies.server_error).toBeGreaterThan(0)
      expect(server.replies.malformed).toBeGreaterThan(0)
      expect(server.replies.hang).toBeGreaterThanOrEqual(2)
      // Every hanging call was given up on (after --timeout), none was left behind.
      await waitFor("the hanging calls to be abandoned", () => server.abandoned === server.replies.hang, 30_000)

      const run = onlyRunDir(out)
      const journal = readJournal(run.dir)
      expect(journal.torn).toBe(false)
      expect(journal.lines).toHaveLength(JUDGMENTS)
      expect(new Set(journal.lines.map((l) => l.key)).size).toBe(JUDGMENTS)
      const ok = journal.lines.filter((l) => l.status === "ok")
      const failed = journal.lines.filter((l) => l.status === "failed")
      for (const l of ok) expect(typeof l.score).toBe("number")
      for (const l of failed) {
        expect(l.score).toBeNull()
        expect(l.reason).toMatch(
          /^(unusable answer after \d tries|provider error after \d+ attempts: (server \(HTTP 500\)|timeout))/
        )
      }
      // The 429 burst was waited out (Retry-After), never turned into failed judgments.
      expect(failed.filter((l) => /rate_limited|HTTP 429/.test(l.reason))).toEqual([])
      expect(failed.filter((l) => l.caseId === "3")).toHaveLength(DIMENSIONS)

      expectEveryCaseOnce(run.dir)
      for (const record of readRecords(run.dir)) {
        for (const d of record.dimensions) {
          if (d.status === "ok") expect(typeof d.score).toBe("number")
          else {
            expect(d.status).toBe("failed")
            expect(d.score).toBeNull()
            expect(d.reason).not.toBe("")
          }
        }
      }
      const summary = JSON.parse(fs.readFileSync(Path.join(run.dir, "summary.json"), "utf8"))
      expect(summary.judgments).toEqual({ total: JUDGMENTS, ok: ok.length, failed: failed.length })
      expect(r.stderr).toContain(`${JUDGMENTS} judgments: ${ok.length} ok, ${failed.length} failed`)
      const manifest = JSON.parse(fs.readFileSync(Path.join(run.dir, "manifest.json"), "utf8"))
      expect(manifest.counts).toMatchObject({
        cases: CASES,
        judgments: JUDGMENTS,
        ok: ok.length,
        failed: failed.length
      })
    } finally {
      await server.close()
    }
  })
})
