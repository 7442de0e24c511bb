/**
 * Judging that holds up against real APIs, tested as a user meets it: `node dist/bin.js run …`
 * against the fake OpenAI-compatible server made as hostile as real ones —
 *
 * - a token-bucket rate limit (600 requests/min, burst 10) that charges rejected requests or not,
 *   with the default flags and concurrency 32, and with `--rpm 600`: every judgment ends ok, each
 *   paid once;
 * - a rejected key, an unknown model, a wrong URL, a dead host, an Ollama that is not running: one
 *   line naming provider, host, status and fix, exit 2, and nothing journaled — with the preflight,
 *   and without it;
 * - transport failures are asked again on resume; judge failures are kept (and said so);
 * - the judge's endpoint is part of the run: another server's judgments are never reused;
 * - bad flags are refused as they are parsed; `--dry-run` needs no key.
 *
 * No time and no share of 429s is asserted on the real clock: the policy's targets are asserted on
 * the simulated server (test/providers/RatePolicy.test.ts) and measured by `npm run bench`.
 *
 * The built CLI in a child process where the process is the subject or runs long beside others: the
 * rate-limited runs (each waits out the bucket for seconds; in-process commands queue) and the
 * Ctrl+C. The rest — refusals, misconfigured providers, resumes, endpoints, `report` — run in-process
 * (`runCli`: the same arguments, environment, output and exit code, without a Node start-up each).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { writeCsv } from "../../bench/gen.js"
import { cli, start, waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { freePort } from "../support/Ports.js"
import { repoRoot, runDirIn, tempDir } from "../support/RunPipeline.js"

// The built-in pipeline by name: loading a pipeline file is Cli.test.ts's subject, and costs each run an esbuild compile.
const pipeline = "rag-answers"
const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const SAMPLE_JUDGMENTS = 72

/** `rows` generated rag-answers rows (seeded), as a CSV in `dir`. */
const csvOf = (dir: string, rows: number) => {
  const file = Path.join(dir, `rows-${rows}.csv`)
  writeCsv(file, rows)
  return file
}

const llm = (url: string, input: string, out: string, ...extra: ReadonlyArray<string>) => [
  "run",
  pipeline,
  "--csv",
  input,
  "--out",
  out,
  "--provider",
  "openai-compatible",
  "--base-url",
  url,
  "--model",
  "fake",
  ...extra
]

const journalLines = (runDir: string) => {
  const path = Path.join(runDir, "judgments.jsonl")
  if (!fs.existsSync(path)) return []
  return fs.readFileSync(path, "utf8").split("\n").filter((l) => l !== "").map((l) =>
    JSON.parse(l) as { status: string; failure?: string; key: string }
  )
}

const manifestOf = (runDir: string) =>
  JSON.parse(fs.readFileSync(Path.join(runDir, "manifest.json"), "utf8")) as Record<string, any>

describe.concurrent(
  "a rate-limited server (600 requests/min as a token bucket, burst 10)",
  { timeout: 120_000 },
  () => {
    // Outcomes only: every judgment ends ok and is paid for once. How many requests meet a 429 and how
    // long the run takes against the limit's ideal depend on the machine's load here; they are asserted
    // on the simulated server (test/providers/RatePolicy.test.ts) and measured by `npm run bench`.
    for (const chargeRejected of [false, true]) {
      const rule = chargeRejected ? "charging rejected requests (as OpenAI does)" : "not charging rejected requests"
      const limit = { rpm: 600, burst: 10, chargeRejected }

      it(`${rule}; default flags, --concurrency 32, no --rpm: every judgment ends ok, each paid once; the manifest tells the rate control`, async () => {
        const server = await FakeOpenAi.start({ record: false, limit })
        try {
          const out = tempDir()
          const input = csvOf(out, 25)
          const r = await cli(llm(server.url, input, out, "--concurrency", "32"))
          expect(r.stderr).toContain("150 judgments: 150 ok, 0 failed")
          expect(r.code).toBe(0)
          expect(server.paidJudgeCalls).toBe(150)
          const manifest = manifestOf(runDirIn(out, pipeline))
          expect(manifest.rateControl.concurrency.max).toBe(32)
          expect(manifest.rateControl.rateLimited).toBe(server.limited)
          expect(manifest.preflight.structuredOutput).toBe("json_schema")
          // The progress line shows the level the judge runs at.
          expect(r.stderr).toMatch(/concurrency \d+\/32/)
          expect(journalLines(runDirIn(out, pipeline)).every((j) => j.status === "ok")).toBe(true)
        } finally {
          await server.close()
        }
      })

      it(`${rule}; --rpm 600 (the server's own limit): every judgment ends ok, each paid once`, async () => {
        const server = await FakeOpenAi.start({ record: false, latencyMs: 20, limit })
        try {
          const out = tempDir()
          const r = await cli(llm(server.url, csvOf(out, 25), out, "--concurrency", "32", "--rpm", "600"))
          expect(r.stderr).toContain("150 judgments: 150 ok, 0 failed")
          expect(r.code).toBe(0)
          expect(server.paidJudgeCalls).toBe(150)
          expect(manifestOf(runDirIn(out, pipeline)).rateControl.rateLimited).toBe(server.limited)
        } finally {
          await server.close()
        }
      })
    }

    it("x-ratelimit headers and retry-after-ms, 50 ms latency: every judgment ends ok, each paid once", async () => {
      const server = await FakeOpenAi.start({
        record: false,
        latencyMs: 50,
        limit: { rpm: 600, burst: 10, headers: true, retryAfter: "ms" }
      })
      try {
        const out = tempDir()
        const r = await cli(llm(server.url, csvOf(out, 25), out, "--concurrency", "32"))
        expect(r.stderr).toContain("150 judgments: 150 ok, 0 failed")
        expect(r.code).toBe(0)
        expect(server.paidJudgeCalls).toBe(150)
      } finally {
        await server.close()
      }
    })
  }
)

describe.concurrent("waiting out a rate limit", { timeout: 120_000 }, () => {
  it("the first Ctrl+C ends a wait at once (a 10-minute Retry-After): exit 130, nothing lost, the same command resumes", async () => {
    const server = await FakeOpenAi.start({ faults: { rate_limit: 1 }, retryAfterSeconds: 600 })
    try {
      const out = tempDir()
      const args = llm(server.url, sample, out)
      const running = start(args)
      await waitFor("a 429", () => server.replies.rate_limit > 0 || running.exited())
      running.child.kill("SIGINT")
      // (No real-clock bound: a run that waited the 10 minutes out would exceed the test's timeout.)
      const r = await running.result
      expect(r.code).toBe(130)
      expect(r.stderr).toContain("run the same command again to resume")
      server.setBehaviour({ faults: {} })
      const resumed = await runCli(args)
      expect(resumed.code).toBe(0)
      expect(resumed.stderr).toContain(`${SAMPLE_JUDGMENTS} judgments: ${SAMPLE_JUDGMENTS} ok, 0 failed`)
    } finally {
      await server.close()
    }
  })
})

describe.concurrent("a misconfigured provider: one line, exit 2, nothing journaled", { timeout: 120_000 }, () => {
  /**
   * Run until exit. That it stops at once is told by the requests it made (the preflight's one, or
   * the calls that started together), not by a time on the real clock, which the machine's load moves.
   */
  const fatalRun = (args: ReadonlyArray<string>, env?: Record<string, string>) =>
    runCli(args, env === undefined ? {} : { env })

  const expectNothingJournaled = (out: string) => {
    const root = Path.join(out, "rag-answers")
    if (!fs.existsSync(root)) return
    for (const id of fs.readdirSync(root)) expect(journalLines(Path.join(root, id))).toEqual([])
  }

  for (const preflight of [true, false]) {
    const flags = preflight ? [] : ["--no-preflight"]
    const which = preflight ? "by the preflight" : "without the preflight, by the first judgments"

    it(`a rejected API key (401), ${which}`, async () => {
      const server = await FakeOpenAi.start({ apiKey: "sk-right" })
      try {
        const out = tempDir()
        const r = await fatalRun(llm(server.url, sample, out, "--api-key", "sk-wrong", ...flags))
        expect(r.code).toBe(2)
        expect(r.stderr.trim().split("\n").at(-1)).toBe(
          `error: openai-compatible at ${
            new URL(server.url).host
          } rejected the API key (HTTP 401): check --api-key or OPENAI_API_KEY`
        )
        expect(r.stderr).not.toContain("sk-wrong")
        // The preflight is one call; without it, at most the calls that started at once (--concurrency 8).
        expect(server.calls).toBeLessThanOrEqual(preflight ? 1 : 8)
        expectNothingJournaled(out)
      } finally {
        await server.close()
      }
    })

    it(`an unknown model (404), ${which}`, async () => {
      const server = await FakeOpenAi.start({ models: ["gpt-4o-mini"] })
      try {
        const out = tempDir()
        const r = await fatalRun(llm(server.url, sample, out, ...flags))
        expect(r.code).toBe(2)
        expect(r.stderr).toContain(
          `error: openai-compatible at ${new URL(server.url).host} does not serve model "fake" (HTTP 404`
        )
        expect(r.stderr).toContain("check --model")
        expect(server.calls).toBeLessThanOrEqual(preflight ? 1 : 8)
        expectNothingJournaled(out)
      } finally {
        await server.close()
      }
    })

    it(`a dead host (connection refused), ${which}`, async () => {
      const port = await freePort()
      const out = tempDir()
      const r = await fatalRun(llm(`http://127.0.0.1:${port}/v1`, sample, out, ...flags))
      expect(r.code).toBe(2)
      expect(r.stderr).toContain(
        `error: cannot reach openai-compatible at 127.0.0.1:${port} (connection refused): is the server running? check --base-url`
      )
      expectNothingJournaled(out)
    })
  }

  it("a wrong base URL path (404 on the chat-completions endpoint)", async () => {
    const server = await FakeOpenAi.start()
    try {
      const out = tempDir()
      const r = await fatalRun(llm(`${server.origin}/api`, sample, out))
      expect(r.code).toBe(2)
      expect(r.stderr).toContain(
        `answered HTTP 404 for its chat-completions endpoint: check --base-url (it usually ends in /v1)`
      )
      expectNothingJournaled(out)
    } finally {
      await server.close()
    }
  })

  it("an Ollama that is not running", async () => {
    const port = await freePort()
    const out = tempDir()
    const r = await fatalRun(["run", pipeline, "--csv", sample, "--out", out, "--provider", "ollama"], {
      OLLAMA_HOST: `127.0.0.1:${port}`
    })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(`error: cannot reach ollama at 127.0.0.1:${port} (connection refused): is it running?`)
    expectNothingJournaled(out)
  })

  it("a server that rejects json_schema answers is not misconfigured: the preflight falls back and the manifest records the mode", async () => {
    const server = await FakeOpenAi.start({ structuredOutput: "none" })
    try {
      const out = tempDir()
      const r = await runCli(llm(server.url, sample, out))
      expect(r.code).toBe(0)
      expect(r.stderr).toContain(`${SAMPLE_JUDGMENTS} judgments: ${SAMPLE_JUDGMENTS} ok, 0 failed`)
      expect(manifestOf(runDirIn(out, pipeline)).structuredOutput).toBe("prompt")
    } finally {
      await server.close()
    }
  })
})

describe.concurrent("resume keeps judge failures, never transport failures", { timeout: 120_000 }, () => {
  it("failures from 5xx are asked again by the next run of the same command; the resume line counts only what is kept", async () => {
    const server = await FakeOpenAi.start({ faults: { server_error: 1 } })
    try {
      const out = tempDir()
      const args = llm(server.url, sample, out, "--max-retries", "0", "--max-failures", String(SAMPLE_JUDGMENTS))
      // The preflight (server errors after its retries) lets judging go on; every judgment fails.
      const first = await runCli(args)
      expect(first.stderr).toContain(`${SAMPLE_JUDGMENTS} judgments: 0 ok, ${SAMPLE_JUDGMENTS} failed`)
      const runDir = runDirIn(out, pipeline)
      expect(journalLines(runDir).every((j) => j.status === "failed" && j.failure === "transport")).toBe(true)
      server.setBehaviour({ faults: {} })
      server.reset()
      const second = await runCli(args)
      expect(second.code).toBe(0)
      expect(second.stderr).not.toContain("resuming run")
      expect(second.stderr).toContain(`${SAMPLE_JUDGMENTS} judgments: ${SAMPLE_JUDGMENTS} ok, 0 failed`)
      // The preflight, then every judgment once more.
      expect(server.calls).toBe(SAMPLE_JUDGMENTS + 1)
    } finally {
      await server.close()
    }
  })

  it("judge failures (unusable answers after repairs) are kept and said so; --retry-failed asks them again", async () => {
    const server = await FakeOpenAi.start({
      // Clarity answers are never usable; everything else is.
      answer: (request) =>
        String(request.body.messages?.[0]?.content).includes("Clarity") ? "no idea" : FakeOpenAi.defaultAnswer(request)
    })
    try {
      const out = tempDir()
      const args = llm(server.url, sample, out, "--max-failures", "100")
      const first = await runCli(args)
      expect(first.stderr).toContain(`${SAMPLE_JUDGMENTS} judgments: 60 ok, 12 failed`)
      const id = Path.basename(runDirIn(out, pipeline))
      server.reset()
      const second = await runCli(args)
      expect(second.stderr).toContain(
        `resuming run ${id}: 72 of 72 judgments done (12 failed judgments kept; --retry-failed asks again)`
      )
      // Nothing is left to judge: nothing is sent, not even the preflight.
      expect(server.calls).toBe(0)
      server.setBehaviour({ answer: FakeOpenAi.defaultAnswer })
      server.reset()
      const third = await runCli([...args, "--retry-failed"])
      expect(third.stderr).toContain(`resuming run ${id}: 60 of 72 judgments done`)
      expect(third.stderr).toContain(`${SAMPLE_JUDGMENTS} judgments: ${SAMPLE_JUDGMENTS} ok, 0 failed`)
      expect(server.calls).toBe(1 + 12)
    } finally {
      await server.close()
    }
  })
})

describe.concurrent("the judge's endpoint is part of the run", { timeout: 120_000 }, () => {
  it("the same model name on another server is another judge: another run id, nothing reused from the first server", async () => {
    const a = await FakeOpenAi.start()
    const b = await FakeOpenAi.start()
    try {
      const out = tempDir()
      expect((await runCli(llm(a.url, sample, out))).code).toBe(0)
      expect((await runCli(llm(b.url, sample, out))).code).toBe(0)
      expect(fs.readdirSync(Path.join(out, "rag-answers"))).toHaveLength(2)
      expect(b.calls).toBe(SAMPLE_JUDGMENTS + 1)
      // Credentials in the URL are no part of the endpoint, and never recorded.
      const withCredentials = a.url.replace("http://", "http://user:s3cret@")
      expect((await runCli(llm(withCredentials, sample, out))).code).toBe(0)
      expect(fs.readdirSync(Path.join(out, "rag-answers"))).toHaveLength(2)
      for (const id of fs.readdirSync(Path.join(out, "rag-answers"))) {
        const manifest = fs.readFileSync(Path.join(out, "rag-answers", id, "manifest.json"), "utf8")
        expect(JSON.parse(manifest).judge.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
      }
    } finally {
      await a.close()
      await b.close()
    }
  })
})

describe.concurrent("rag-eval report on a run judged at a custom endpoint", { timeout: 120_000 }, () => {
  it("re-renders every report from the journal with no call (the endpoint is part of the keys it looks up)", async () => {
    const server = await FakeOpenAi.start()
    try {
      const out = tempDir()
      expect((await runCli(llm(server.url, sample, out))).code).toBe(0)
      const runDir = runDirIn(out, pipeline)
      const before = fs.readFileSync(Path.join(runDir, "report.csv"), "utf8")
      fs.rmSync(Path.join(runDir, "report.csv"))
      server.reset()
      const r = await runCli(["report", runDir])
      expect(r.stderr).toBe("")
      expect(r.code).toBe(0)
      expect(server.calls).toBe(0)
      expect(fs.readFileSync(Path.join(runDir, "report.csv"), "utf8")).toBe(before)
    } finally {
      await server.close()
    }
  })
})

describe.concurrent("flags are checked as they are parsed", { timeout: 120_000 }, () => {
  const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
    [
      ["--provider", "openai-compatible", "--model", "m", "--base-url", "localhost:8000"],
      "--base-url must be an http or https URL"
    ],
    [
      ["--provider", "openai-compatible", "--model", "m", "--base-url", "not a url"],
      "--base-url must be an absolute http(s) URL"
    ],
    [
      ["--provider", "openai-compatible", "--model", "m", "--base-url", "ftp://example.com/v1"],
      "--base-url must be an http or https URL"
    ],
    [["--timeout", "0"], "--timeout must be greater than 0"],
    [["--rpm", "0"], "--rpm must be greater than 0"],
    [["--tpm", "-5"], "--tpm must be greater than 0"],
    [["--burst", "0"], "--burst must be greater than 0"],
    [["--concurrency", "0"], "--concurrency must be at least 1"],
    [["--max-wait", "soon"], "--max-wait must be a duration"],
    [
      ["--provider", "openai", "--api-key", "k", "--temperature", "3"],
      "--temperature must be between 0 and 2 for openai"
    ],
    [["--temperature", "-1"], "--temperature must be 0 or more"]
  ]
  for (const [flags, message] of cases) {
    it(`${flags.join(" ")} → exit 2: ${message}`, async () => {
      const out = tempDir()
      const r = await runCli(["run", pipeline, "--csv", sample, "--out", out, ...flags])
      expect(r.code).toBe(2)
      expect(r.stderr).toContain(message)
      expect(fs.readdirSync(out)).toEqual([])
    })
  }

  it("--dry-run needs no API key", async () => {
    const out = tempDir()
    const r = await runCli(["run", pipeline, "--csv", sample, "--out", out, "--provider", "openai", "--dry-run"])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("dry run: rag-answers with openai gpt-4o-mini")
    expect(r.stdout).toContain(`judge calls:       ${SAMPLE_JUDGMENTS}`)
  })
})
