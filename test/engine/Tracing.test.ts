/**
 * `--trace-otlp`: a run exported as OpenTelemetry spans to a minimal OTLP/HTTP receiver on
 * 127.0.0.1 (test/support/OtlpReceiver.ts), the CLI run in-process against the fake
 * OpenAI-compatible server. What arrives is decoded and the tree asserted: the run, a stage, a
 * judgment, a provider call, a rate-limit wait (the server answers the first call with a 429); and
 * no secret — the API key, a header value, URL credentials, or their base64 — anywhere in it.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { scrub, secretValues, traceEndpoint } from "../../src/engine/Tracing.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import * as OtlpReceiver from "../support/OtlpReceiver.js"
import type { ReceivedSpan } from "../support/OtlpReceiver.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

const KEY = "sk-trace-test-0123456789abcdef"
const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")

describe("--trace-otlp", () => {
  let server: FakeOpenAi.FakeOpenAi
  let receiver: OtlpReceiver.OtlpReceiver
  beforeAll(async () => {
    // The first call meets a 429 (Retry-After 1 s): every other call waits that pause out.
    server = await FakeOpenAi.start({ script: ["ok", "rate_limit"], retryAfterSeconds: 1, apiKey: KEY })
    receiver = await OtlpReceiver.start()
  })
  afterAll(async () => {
    await server?.close()
    await receiver?.close()
  })

  it(
    "exports the run's span tree — run, stage, judgment, provider call, rate-limit wait — with no secret in it",
    async () => {
      const out = tempDir()
      const collector = new URL(receiver.url)
      collector.username = "otel-user"
      collector.password = "otel-pass-42"
      const done = await runCli([
        "run",
        "rag-answers",
        "--csv",
        sample,
        "--limit",
        "2",
        "--out",
        out,
        "--provider",
        "openai-compatible",
        "--base-url",
        server.url,
        "--model",
        "fake",
        "--api-key",
        KEY,
        "--concurrency",
        "2",
        "--quiet",
        "--trace-otlp",
        collector.toString()
      ])
      expect(done.stderr).toBe("")
      expect(done.code).toBe(0)
      const spans = receiver.spans()
      const byId = new Map(spans.map((s) => [s.spanId, s]))
      const ancestors = (s: ReceivedSpan): Array<string> => {
        const names: Array<string> = []
        for (let p = s.parentSpanId; p !== undefined; p = byId.get(p)?.parentSpanId) {
          const parent = byId.get(p)
          if (parent === undefined) break
          names.push(parent.name)
        }
        return names
      }
      const roots = spans.filter((s) => s.name === "rag-eval run")
      expect(roots).toHaveLength(1)
      expect(roots[0]!.attributes["rag_eval.pipeline"]).toBe("rag-answers")
      expect(new Set(spans.map((s) => s.traceId)).size).toBe(1)
      const named = (name: string) => spans.filter((s) => s.name === name)
      expect(named("Runner.validate").map(ancestors)).toEqual([["rag-eval run"]])
      expect(named("Judging.iteration").map(ancestors)).toEqual([["rag-eval run"]])
      const judgments = named("Judgments.judge")
      expect(judgments.length).toBe(server.judgeCalls - 1)
      expect(judgments.every((j) => ancestors(j).join(" < ") === "Judging.iteration < rag-eval run")).toBe(true)
      expect(judgments[0]!.attributes).toMatchObject({ "rag_eval.pipeline": "rag-answers", "rag_eval.outcome": "ok" })
      expect(typeof judgments[0]!.attributes["rag_eval.case_id"]).toBe("string")
      expect(String(judgments[0]!.attributes["rag_eval.judgment_key"])).toMatch(/^[0-9a-f]{32}$/)
      // Provider calls under their judgment (and the preflight's under the run), with tokens.
      const calls = named("LlmProvider.complete")
      expect(calls.length).toBe(server.calls)
      expect(calls.filter((c) => ancestors(c)[0] === "Judgments.judge").length).toBe(calls.length - 1)
      expect(calls.some((c) => Number(c.attributes["rag_eval.input_tokens"]) > 0)).toBe(true)
      expect(calls[0]!.attributes["rag_eval.provider"]).toBe("openai-compatible")
      // The 429's pause, waited out in the gate: at least one wait of about Retry-After.
      const waits = named("RateGate.wait").map((w) => Number(w.attributes["rag_eval.wait_ms"]))
      expect(Math.max(...waits)).toBeGreaterThanOrEqual(900)
      expect(named("JudgmentJournal.append").length).toBeGreaterThan(0)
      expect(named("Runner.reports").map(ancestors)).toEqual([["rag-eval run"]])
      // No secret in anything that arrived, in any form.
      const everything = receiver.bodies.join("\n")
      for (
        const secret of [
          KEY,
          Buffer.from(KEY).toString("base64"),
          "otel-pass-42",
          Buffer.from("otel-user:otel-pass-42").toString("base64")
        ]
      ) {
        expect(everything).not.toContain(secret)
      }
      expect(fs.existsSync(out)).toBe(true)
    },
    60_000
  )
})

describe("Tracing helpers", () => {
  it("a bare collector URL gets /v1/traces; credentials become a Basic header and are secrets", () => {
    expect(traceEndpoint("http://localhost:4318")).toEqual({
      url: "http://localhost:4318/v1/traces",
      headers: {},
      secrets: []
    })
    expect(traceEndpoint("https://otel.example/custom/path")).toMatchObject({ url: "https://otel.example/custom/path" })
    const withCredentials = traceEndpoint("http://u:p%40ss@127.0.0.1:4318")
    expect(withCredentials).toMatchObject({
      url: "http://127.0.0.1:4318/v1/traces",
      headers: { authorization: `Basic ${Buffer.from("u:p@ss").toString("base64")}` }
    })
    expect(traceEndpoint("ftp://x")).toMatch(/^--trace-otlp must be an http\(s\) URL/)
    expect(traceEndpoint("not a url")).toMatch(/^--trace-otlp must be an http\(s\) URL/)
  })

  it("secrets: given values, credential-named variables, URL passwords, each also in base64; scrub masks them in JSON", () => {
    const secrets = secretValues({
      values: ["Bearer tok-123456"],
      urls: ["postgres://app:db-pass-9@host/db", "http://plain.example"],
      env: { OPENAI_API_KEY: "sk-env-abcdef", HOME: "/root", SHORT_TOKEN: "abc" }
    })
    expect(secrets).toContain("Bearer tok-123456")
    expect(secrets).toContain("sk-env-abcdef")
    expect(secrets).toContain("db-pass-9")
    expect(secrets).toContain(Buffer.from("sk-env-abcdef").toString("base64"))
    expect(secrets).not.toContain("/root")
    expect(secrets).not.toContain("abc")
    const json = JSON.stringify({ message: "401: key sk-env-abcdef \"db-pass-9\"" })
    expect(scrub(json, secrets)).toBe(JSON.stringify({ message: "401: key <redacted> \"<redacted>\"" }))
  })
})
