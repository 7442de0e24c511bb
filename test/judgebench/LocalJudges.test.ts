/**
 * A judge without an API (docs/providers.md, "A local judge"):
 * - the Ollama recipe against a fake Ollama — the OpenAI-compatible `/v1/chat/completions` as Ollama
 *   serves it, found through `OLLAMA_HOST` given as `host:port` without a scheme, no key (the
 *   provider's placeholder), the model as Ollama names it, nothing priced; a model not pulled stops
 *   the run in one line; an Ollama older than structured outputs (json_object only) still judges;
 * - `examples/not-a-judge-server.mjs`, the offline stand-in for trying the LLM path: its answers
 *   are labelled NOT A JUDGE in the report, priced with --price-in/--price-out, resumed without a
 *   call, batched through the Batch API, and it refuses any other model name.
 */
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { freePort } from "../support/Ports.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

const MODEL = "qwen2.5:7b-instruct"

describe("the Ollama recipe, against a fake Ollama", () => {
  let ollama: FakeOpenAi.FakeOpenAi
  beforeAll(async () => {
    ollama = await FakeOpenAi.start({ models: [MODEL] })
  })
  afterAll(() => ollama.close())
  const env = () => ({ OLLAMA_HOST: ollama.origin.replace(/^http:\/\//, "") })

  it("judge-bench --provider ollama: found through OLLAMA_HOST, no key, the model named, nothing priced", async () => {
    ollama.reset()
    const out = tempDir("ollama-")
    const r = await runCli(
      [
        "judge-bench",
        "--provider",
        "ollama",
        "--model",
        MODEL,
        "--sets",
        "expertqa",
        "--sample",
        "4",
        "--resamples",
        "100",
        "--out",
        out,
        "--format",
        "json"
      ],
      { env: env() }
    )
    expect(r.code).toBe(0)
    const result = JSON.parse(r.stdout) as {
      judge: { provider: string; model: string }
      caveat: unknown
      sets: Array<{ run: { costUsd: number | null; failed: number } }>
    }
    expect(result.judge).toMatchObject({ provider: "ollama", model: MODEL })
    expect(result.caveat).toBeNull()
    expect(result.sets[0]!.run).toMatchObject({ failed: 0, costUsd: 0 })
    expect(ollama.paidJudgeCalls).toBeGreaterThan(0)
    for (const request of ollama.judgeRequests) {
      expect(request.path).toBe("/v1/chat/completions")
      expect(request.body.model).toBe(MODEL)
      expect(request.headers.authorization).toBe("Bearer not-needed")
      expect(request.body.response_format?.type).toBe("json_schema")
    }
  })

  it("a model not pulled stops the run at once (exit 2, one line); an older Ollama answers json_object and still judges", async () => {
    const missing = await runCli(
      [
        "run",
        "answer-correctness",
        "--input",
        Path.join(repoRoot, "test-sets/answer-correctness/sample.jsonl"),
        "--provider",
        "ollama",
        "--model",
        "llama3.1:8b",
        "--out",
        tempDir("ollama-")
      ],
      { env: env() }
    )
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(
      /error: ollama at 127\.0\.0\.1:\d+ does not serve model "llama3\.1:8b" .*check --model/
    )

    ollama.setBehaviour({ structuredOutput: "json_object" })
    const old = await runCli(
      [
        "run",
        "answer-correctness",
        "--input",
        Path.join(repoRoot, "test-sets/answer-correctness/sample.jsonl"),
        "--provider",
        "ollama",
        "--model",
        MODEL,
        "--out",
        tempDir("ollama-"),
        "--json"
      ],
      { env: env() }
    )
    ollama.setBehaviour({ structuredOutput: "json_schema" })
    expect(old.code).toBe(0)
    const summary = JSON.parse(old.stdout) as { runDir: string; judgments: { failed: number } }
    expect(summary.judgments.failed).toBe(0)
    const manifest = JSON.parse(fs.readFileSync(Path.join(summary.runDir, "manifest.json"), "utf8")) as {
      structuredOutput?: string
    }
    expect(manifest.structuredOutput).toBe("json_object")
  })
})

describe("examples/not-a-judge-server.mjs", () => {
  let child: ChildProcess.ChildProcess
  let url = ""
  beforeAll(async () => {
    const port = await freePort()
    child = ChildProcess.spawn(process.execPath, [Path.join(repoRoot, "examples", "not-a-judge-server.mjs")], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "pipe", "inherit"]
    })
    await new Promise<void>((ready, failed) => {
      child.stdout!.on("data", (d: Buffer) => {
        if (d.toString().includes("not-a-judge server")) ready()
      })
      child.once("exit", (code) => failed(new Error(`not-a-judge-server exited with ${code}`)))
    })
    url = `http://127.0.0.1:${port}/v1`
  })
  afterAll(() => {
    child.kill()
  })
  const judge = () => ["--provider", "openai-compatible", "--base-url", url, "--model", "not-a-judge"]

  it("labelled NOT A JUDGE in the report, your own rubric judged too, priced, resumed without a call; other models refused", async () => {
    const out = tempDir("not-a-judge-")
    const rubrics = tempDir("not-a-judge-rubrics-")
    fs.writeFileSync(
      Path.join(rubrics, "tone.json"),
      JSON.stringify({
        id: "tone",
        version: "1",
        name: "Tone",
        description: "Is the answer courteous?",
        scale: [{ score: 1, label: "Rude", description: "Curt." }, {
          score: 2,
          label: "Neutral",
          description: "Plain."
        }, {
          score: 3,
          label: "Courteous",
          description: "Polite."
        }],
        system: ["You judge one dimension: {{criterion}}.", "{{scale}}", "Answer only with the JSON object requested."],
        user: ["<data name=\"answer\">", "{{answer}}", "</data>"]
      })
    )
    const args = [
      "run",
      "rag-answers",
      "--csv",
      Path.join(repoRoot, "test-sets/rag-answers/sample.csv"),
      ...judge(),
      "--price-in",
      "0.15",
      "--price-out",
      "0.6",
      "--rubrics",
      rubrics,
      "--out",
      out,
      "--json"
    ]
    const r = await runCli(args)
    expect(r.code).toBe(0)
    const summary = JSON.parse(r.stdout) as {
      runDir: string
      judge: string
      judgments: { total: number; ok: number; failed: number }
      cost: { usd: number }
      metrics: Record<string, number | null>
    }
    expect(summary.judge).toContain("not-a-judge")
    // 12 answers × (6 built-in dimensions + the rubric given here)
    expect(summary.judgments).toMatchObject({ total: 84, ok: 84, failed: 0 })
    expect(summary.metrics["tone"]).toBeGreaterThanOrEqual(1)
    expect(summary.cost.usd).toBeGreaterThan(0)
    expect(fs.readFileSync(Path.join(summary.runDir, "report.md"), "utf8")).toContain("NOT A JUDGE:")
    const again = await runCli(args)
    expect(again.code).toBe(0)
    expect(again.stderr).toMatch(/84 judgments: 84 ok, 0 failed, 84 reused from the journal; tokens 0 in \/ 0 out/)

    const other = await runCli([
      ...args.slice(0, 4),
      "--provider",
      "openai-compatible",
      "--base-url",
      url,
      "--model",
      "gpt-4o"
    ])
    expect(other.code).toBe(2)
    expect(other.stderr).toMatch(/does not serve model "gpt-4o" .*it is not a judge/)
  })

  it("the Batch API: answer-correctness with --batch collects every judgment", async () => {
    const r = await runCli([
      "run",
      "answer-correctness",
      "--input",
      Path.join(repoRoot, "test-sets/answer-correctness/sample.jsonl"),
      ...judge(),
      "--batch",
      "--batch-poll",
      "0.05",
      "--out",
      tempDir("not-a-judge-"),
      "--json"
    ])
    expect(r.code).toBe(0)
    const summary = JSON.parse(r.stdout) as { judgments: { total: number; ok: number; failed: number } }
    expect(summary.judgments.failed).toBe(0)
    expect(summary.judgments.ok).toBe(summary.judgments.total)
  })
})
