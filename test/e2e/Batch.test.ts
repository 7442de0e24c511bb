/**
 * `--batch` as a user runs it: `node dist/bin.js` in a child process against the fake server's
 * Batches endpoints. A run killed (SIGKILL) once its batch is submitted, then the same command:
 * the resumed run polls the same batch, submits nothing twice, and yields the same results as a
 * synchronous run of the same judge. `--detach` exits 0 with how to collect; Ctrl+C while it waits
 * exits 130; `--max-cost` exits 1 with the budget line; `--dry-run` prints both prices. The killed
 * run, its resume (whose output is searched for the key) and the run stopped by Ctrl+C are child
 * processes; the synchronous reference, `--dry-run`, `--detach`, `--max-cost` and the provider
 * without a Batch API run in-process (`runCli`: the same arguments, output and exit code).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { cli, start, waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, runDirIn, tempDir } from "../support/RunPipeline.js"

// The built-in pipeline by name: loading a pipeline file is Cli.test.ts's subject, and costs each run an esbuild compile.
const pipeline = "rag-answers"
const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const JUDGMENTS = 12 * 6

/** A price table for the fake model, with the Batch API at half price (as OpenAI and Mistral publish). */
const prices = Path.join(tempDir(), "prices.json")
fs.writeFileSync(prices, JSON.stringify({ fake: { input: 2, output: 8, batchInput: 1, batchOutput: 4 } }))

const args = (server: FakeOpenAi.FakeOpenAi, out: string, ...extra: ReadonlyArray<string>) => [
  "run",
  pipeline,
  "--csv",
  sample,
  "--out",
  out,
  "--provider",
  "openai-compatible",
  "--base-url",
  server.url,
  "--model",
  "fake",
  "--prices",
  prices,
  ...extra
]

/** Records without token figures: the verdicts, case by case. */
const verdicts = (runDir: string) =>
  fs.readFileSync(Path.join(runDir, "records-iteration-1.jsonl"), "utf8").trim().split("\n").map((l) => {
    const { tokens: _tokens, ...rest } = JSON.parse(l) as { tokens: unknown }
    return rest
  })

describe("rag-eval run --batch (the killed and signalled runs in child processes)", () => {
  it("killed after submission, the same command resumes the same batch: nothing submitted twice, the results of a synchronous run", async () => {
    const key = "sk-batch-SECRET-4711"
    const server = await FakeOpenAi.start({ batch: { hold: true }, apiKey: key })
    try {
      const out = tempDir()
      const first = start(args(server, out, "--batch", "--batch-poll", "0.02"), { env: { OPENAI_API_KEY: key } })
      await waitFor("the batch to be created and journaled", () => {
        if (server.batches.length === 0) return false
        const root = Path.join(out, "rag-answers")
        if (!fs.existsSync(root)) return false
        const ledger = Path.join(root, fs.readdirSync(root)[0] ?? "", "batches.jsonl")
        return fs.existsSync(ledger) && fs.readFileSync(ledger, "utf8").includes("\"kind\":\"batch\"")
      })
      first.child.kill("SIGKILL")
      const killed = await first.result
      expect(killed.signal).toBe("SIGKILL")
      expect(server.batches).toHaveLength(1)

      server.setBehaviour({ batch: { hold: false } })
      const resumed = await cli(args(server, out, "--batch", "--batch-poll", "0.02"), { env: { OPENAI_API_KEY: key } })
      expect(resumed.stderr).toContain(`${JUDGMENTS} judgments: ${JUDGMENTS} ok, 0 failed`)
      expect(resumed.code).toBe(0)
      // One batch, every judgment in it once, no synchronous judge call.
      expect(server.batches).toHaveLength(1)
      expect(server.batchRequests).toBe(JUDGMENTS)
      expect(new Set(server.batchCustomIds).size).toBe(JUDGMENTS)
      expect(server.judgeCalls).toBe(0)
      const runDir = runDirIn(out, pipeline)
      const report = fs.readFileSync(Path.join(runDir, "report.md"), "utf8")
      expect(report).toMatch(/through the Batch API; saved \$/)
      // The key reached the Files and Batches endpoints (the fake refuses requests without it), and no file.
      for (const f of fs.readdirSync(runDir)) expect(fs.readFileSync(Path.join(runDir, f), "utf8")).not.toContain(key)
      expect(resumed.stderr + resumed.stdout).not.toContain(key)

      // The same judge, synchronously, against a fresh fake.
      const sync = await FakeOpenAi.start()
      try {
        const syncOut = tempDir()
        const plain = await runCli(args(sync, syncOut))
        expect(plain.code).toBe(0)
        expect(sync.judgeCalls).toBe(JUDGMENTS)
        expect(verdicts(runDir)).toEqual(verdicts(runDirIn(syncOut, pipeline)))
      } finally {
        await sync.close()
      }
    } finally {
      await server.close()
    }
  })

  it("--detach exits 0 saying how to collect; Ctrl+C while waiting exits 130; --dry-run prints both prices; --max-cost exits 1 with the budget line", async () => {
    const server = await FakeOpenAi.start({ batch: { hold: true } })
    try {
      const out = tempDir()
      const dry = await runCli(args(server, out, "--batch", "--dry-run"))
      expect(dry.code).toBe(0)
      expect(dry.stdout).toMatch(/estimated cost: +\$[\d.]+ \(synchronous\)\n +with --batch: +\$[\d.]+/)
      const detached = await runCli(args(server, out, "--batch", "--detach", "--batch-poll", "0.02"))
      expect(detached.code).toBe(0)
      expect(detached.stdout).toMatch(
        /submitted: 72 judgment call\(s\) in 1 batch\(es\) .*run the same command again to collect them/
      )
      expect(server.batches).toHaveLength(1)

      // Without --detach it waits for the batch; Ctrl+C while it waits: exit 130, resumable, nothing new submitted.
      const waiting = start(args(server, out, "--batch", "--batch-poll", "0.02"))
      await waitFor("the run to be polling", () => waiting.stderr().includes("batches: 1 submitted, 1 in progress"))
      waiting.child.kill("SIGINT")
      const interrupted = await waiting.result
      expect(interrupted.code).toBe(130)
      expect(interrupted.stderr).toContain("run the same command again to resume")
      expect(server.batches).toHaveLength(1)

      const budgetOut = tempDir()
      const capped = await runCli(args(server, budgetOut, "--max-cost", "0.01", "--concurrency", "1"))
      expect(capped.code).toBe(1)
      expect(capped.stderr).toMatch(/error: budget of \$0\.01 reached after \d+ judgments/)
      const noBatchApi = await runCli(args(server, tempDir(), "--provider", "heuristic", "--batch"))
      expect(noBatchApi.code).toBe(2)
    } finally {
      await server.close()
    }
  })
})
