/**
 * `rag-eval synthesize` as users run it: killed with SIGKILL part-way against the fake OpenAI server
 * (`node dist/bin.js` in a child process, built by `pretest`), then the same command again — no call
 * paid twice beyond the ones in flight; bad flags and bad files exit 2 naming the problem, with
 * nothing written (in-process, `runCli`: the same arguments, output and exit code).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { cli, start, waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import * as FakeRag from "../support/FakeRag.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

const handbook = Path.join(repoRoot, "test-sets", "synthesize", "handbook")
const CONCURRENCY = 4

const userText = (r: FakeOpenAi.RecordedRequest) =>
  String(r.body.messages?.find((m) => m.role === "user")?.content ?? "")

/** A single-hop item on the first long sentence of passage 1. */
const answer = (r: FakeOpenAi.RecordedRequest) => {
  if (!(r.body.response_format?.json_schema?.name ?? "").startsWith("synthesize_single")) {
    return FakeOpenAi.defaultAnswer(r)
  }
  const passage = /<data name="passage" passage="1">\n([\s\S]*?)\n<\/data>/.exec(userText(r))?.[1] ?? ""
  const sentence = passage.split(/(?<=[.!?])\s+|\n+/).find((s) => s.split(" ").length >= 6) ?? passage
  return JSON.stringify({
    question: `What does the handbook say about ${sentence.split(" ").slice(1, 4).join(" ")}?`,
    history: [],
    reference: sentence,
    nuggets: [{ text: sentence, importance: "vital" }],
    spans: [{ passage: 1, text: sentence }]
  })
}

describe.concurrent("rag-eval synthesize (the killed runs in child processes)", { timeout: 120_000 }, () => {
  it("SIGKILL part-way, then the same command: it finishes, and no call is paid twice beyond those in flight", async () => {
    const server = await FakeOpenAi.start({ latencyMs: 60, answer })
    try {
      const dir = tempDir()
      const args = [
        "synthesize",
        "--docs",
        handbook,
        "--size",
        "6",
        "--mix",
        "single-hop",
        "--chunk-tokens",
        "60",
        "--out",
        Path.join(dir, "set", "testset.jsonl"),
        "--work",
        Path.join(dir, "work"),
        "--provider",
        "openai-compatible",
        "--base-url",
        server.url,
        "--model",
        "fake",
        "--concurrency",
        String(CONCURRENCY),
        "--no-preflight"
      ]
      const first = start(args)
      await waitFor("15 calls", () => server.judgeCalls >= 15 || first.exited())
      first.child.kill("SIGKILL")
      const killed = await first.result
      expect(killed.signal).toBe("SIGKILL")
      expect(fs.existsSync(Path.join(dir, "set", "testset.jsonl"))).toBe(false)
      const before = server.judgeCalls
      const second = await cli([...args, "--json"])
      expect(second.code).toBe(0)
      const summary = JSON.parse(second.stdout) as {
        items: number
        judgments: { total: number; reused: number; failed: number }
      }
      expect(summary.items).toBe(6)
      expect(second.stderr).toMatch(/resuming run [0-9a-f]{12}-wave-1: \d+ of \d+ judgments done/)
      // Everything the killed run journaled was reused; only the calls in flight at the kill were paid twice.
      expect(summary.judgments.reused).toBeGreaterThanOrEqual(before - CONCURRENCY)
      expect(server.judgeCalls).toBeLessThanOrEqual(summary.judgments.total + CONCURRENCY)
      expect(server.judgeCalls - before).toBe(summary.judgments.total - summary.judgments.reused)
      const items = fs.readFileSync(Path.join(dir, "set", "testset.jsonl"), "utf8").trim().split("\n")
      expect(items).toHaveLength(6)
    } finally {
      await server.close()
    }
  })

  it("--batch: every round of a wave goes through the Batch API; no synchronous call is made", async () => {
    const server = await FakeOpenAi.start({ answer })
    try {
      const dir = tempDir()
      const r = await runCli([
        "synthesize",
        "--docs",
        handbook,
        "--size",
        "3",
        "--mix",
        "single-hop",
        "--chunk-tokens",
        "60",
        "--out",
        Path.join(dir, "testset.jsonl"),
        "--work",
        Path.join(dir, "work"),
        "--provider",
        "openai-compatible",
        "--base-url",
        server.url,
        "--model",
        "fake",
        "--batch",
        "--batch-poll",
        "0.02",
        "--no-preflight",
        "--json"
      ])
      expect(r.code, r.stderr).toBe(0)
      const summary = JSON.parse(r.stdout) as { items: number; candidates: number }
      expect(summary.items).toBe(3)
      // Write; then answerable, closed-book and extraction; then the claim checks: three batches.
      expect(server.batches).toHaveLength(3)
      expect(server.batchRequests).toBe(summary.candidates * 5)
      expect(server.judgeCalls).toBe(0)
    } finally {
      await server.close()
    }
  })

  it("the next command: answer-correctness runs the set against a live system (--target), every item asked once", async () => {
    const rag = await FakeRag.start()
    try {
      const dir = tempDir()
      const out = Path.join(dir, "set", "testset.jsonl")
      const made = await runCli([
        "synthesize",
        "--docs",
        handbook,
        "--size",
        "8",
        "--chunk-tokens",
        "60",
        "--out",
        out,
        "--work",
        Path.join(dir, "work"),
        "--quiet"
      ])
      expect(made.code, made.stderr).toBe(0)
      const items = fs.readFileSync(out, "utf8").trim().split("\n").map((l) =>
        JSON.parse(l) as { question: string; history?: string }
      )
      const conversational = items.find((i) => i.history !== undefined)
      expect(conversational).toBeDefined()
      const run = await runCli([
        "run",
        "answer-correctness",
        "--input",
        out,
        "--target",
        rag.chatUrl,
        "--target-preset",
        "openai-chat",
        "--out",
        Path.join(dir, "runs"),
        "--json"
      ])
      expect(run.code, run.stderr).toBe(0)
      const summary = JSON.parse(run.stdout) as { cases: number }
      expect(summary.cases).toBe(items.length)
      for (const item of items) expect(rag.asked.get(item.question)).toBe(1)
      // A conversational item's history goes to the live system as the chat turns before the question.
      const sent = rag.requests.find((r) => r.body.includes(JSON.stringify(conversational!.question).slice(1, -1)))
      const turns = (JSON.parse(sent!.body) as { messages: Array<{ role: string; content: string }> }).messages
      expect(turns.map((t) => t.role)).toEqual(["user", "assistant", "user"])
      expect(conversational!.history).toContain(turns[1]!.content)
    } finally {
      await rag.close()
    }
  })

  it("rag-eval resume <a wave's directory> runs the synthesis's own command again, from where it was made", async () => {
    const dir = tempDir()
    const args = [
      "synthesize",
      "--docs",
      handbook,
      "--size",
      "4",
      "--chunk-tokens",
      "60",
      "--out",
      "set/t.jsonl",
      "--quiet"
    ]
    const made = await runCli(args, { cwd: dir })
    expect(made.code, made.stderr).toBe(0)
    const bytes = fs.readFileSync(Path.join(dir, "set", "t.jsonl"), "utf8")
    const wave = fs.readdirSync(Path.join(dir, "out", "synthesize")).find((d) => d.endsWith("-wave-1"))!
    const resumed = await runCli(["resume", Path.join(dir, "out", "synthesize", wave)])
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stderr).toContain(`resuming: rag-eval ${args.join(" ")}`)
    expect(fs.readFileSync(Path.join(dir, "set", "t.jsonl"), "utf8")).toBe(bytes)
    const extra = await runCli(["resume", Path.join(dir, "out", "synthesize", wave), "--size", "9"])
    expect(extra.code).toBe(2)
    expect(extra.stderr).toMatch(/is a wave of a synthesis: it resumes with its own command/)
  })

  it("bad flags and bad files: exit 2, the problem named, nothing written at --out", async () => {
    const dir = tempDir()
    const out = Path.join(dir, "set", "testset.jsonl")
    const bad = Path.join(dir, "bad.jsonl")
    fs.writeFileSync(bad, "{\"id\": \"a\", \"text\": \"Fine.\"}\nnot json\n")
    const cases: Array<[ReadonlyArray<string>, RegExp]> = [
      [["--docs", handbook, "--mix", "single-hop=1,trivia=2"], /--mix: unknown question type "trivia"/],
      [["--docs", handbook, "--mix", "comparison"], /cannot write comparison questions/],
      [["--docs", handbook, "--as", "excel"], /--as: unknown format "excel"/],
      [["--docs", Path.join(dir, "missing")], /missing: file or folder not found/],
      [["--docs", bad], /bad\.jsonl:2: not valid JSON/],
      [["--docs", handbook, "--size", "0"], /--size must be at least 1/],
      [["--docs", handbook, "--personas", Path.join(dir, "nobody.json")], /nobody\.json: file not found/],
      [[], /give the documents with --docs/]
    ]
    for (const [args, problem] of cases) {
      const r = await runCli(["synthesize", ...args, "--out", out, "--work", Path.join(dir, "work")])
      expect(r.code, r.stderr).toBe(2)
      expect(r.stderr).toMatch(problem)
    }
    expect(fs.existsSync(Path.join(dir, "set"))).toBe(false)
  })
})
