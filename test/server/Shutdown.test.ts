/**
 * Graceful shutdown of `rag-eval serve` in a child process: a slow request (the fake LLM answers
 * after a delay) is in flight when SIGTERM / SIGINT arrives; the server stops accepting connections
 * at once, the request still completes with its judgments, and the process exits 0.
 *
 * Runs the CLI as users do, `node dist/bin.js serve` (dist is built by `pretest`), so bin.ts's own
 * signal handling is what is tested.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"
import type { SearchReply } from "./support.js"

const command = [Path.join(repoRoot, "dist", "bin.js")]

const children = new Set<ChildProcess>()
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
})

interface Started {
  readonly child: ChildProcess
  readonly url: string
  readonly exit: Promise<{ readonly code: number | null; readonly stderr: string; readonly stdout: string }>
}

const startServe = (args: ReadonlyArray<string>): Promise<Started> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...command, "serve", ...args], {
      cwd: repoRoot,
      env: { ...process.env, RAG_EVAL_TOKEN: "" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.add(child)
    let stdout = ""
    let stderr = ""
    const exit = new Promise<{ code: number | null; stderr: string; stdout: string }>((done) =>
      child.on("close", (code) => done({ code, stderr, stdout }))
    )
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      const url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1]
      if (url !== undefined) resolve({ child, url, exit })
    })
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    void exit.then(({ code }) => reject(new Error(`serve exited (${code}) before listening:\n${stderr}`)))
  })

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

const until = async (condition: () => boolean, timeoutMs = 10_000): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) return false
    await sleep(10)
  }
  return true
}

const body = {
  query: { inputs: { text: "what is the capital of france?" } },
  hits: [{ id: "a", text: "Paris is the capital and largest city of France." }, {
    id: "b",
    text: "Lyon is a city in France."
  }]
}

describe.concurrent("graceful shutdown (child process)", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal}: stops accepting, finishes the request in flight, exits 0`, async () => {
      const fake = await FakeOpenAi.start({ latencyMs: 1200 })
      try {
        const server = await startServe([
          "--port",
          "0",
          "--provider",
          "openai-compatible",
          "--model",
          "fake-judge",
          "--base-url",
          fake.url,
          "--out",
          tempDir("rag-eval-serve-stop-")
        ])
        const inFlight = fetch(`${server.url}/v1/eval/search`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body)
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as SearchReply }))
        expect(await until(() => fake.calls === 2)).toBe(true)
        server.child.kill(signal)
        // New connections are refused once the signal is handled (the request in flight goes on).
        await sleep(400)
        const refused = await fetch(`${server.url}/health`).then(
          () => "answered",
          (e: unknown) => String((e as { cause?: { code?: string } }).cause?.code ?? e)
        )
        expect(refused).toBe("ECONNREFUSED")
        const reply = await inFlight
        expect(reply.status).toBe(200)
        expect(reply.body.hits.map((h) => h.score)).toEqual([3, 3])
        const exit = await server.exit
        expect(exit.code).toBe(0)
        expect(exit.stderr).toContain("stopping: no new connections; finishing 1 request in flight")
      } finally {
        await fake.close()
      }
    })
  }

  it("a second SIGTERM while a request is still in flight: stops at once, without waiting out the grace", async () => {
    const fake = await FakeOpenAi.start({ latencyMs: 60_000 })
    try {
      const server = await startServe([
        "--port",
        "0",
        "--provider",
        "openai-compatible",
        "--model",
        "fake-judge",
        "--base-url",
        fake.url,
        "--shutdown-grace",
        "600",
        "--out",
        tempDir("rag-eval-serve-stop2-")
      ])
      const inFlight = fetch(`${server.url}/v1/eval/search`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then((r) => r.status, () => "closed")
      expect(await until(() => fake.calls === 2)).toBe(true)
      server.child.kill("SIGTERM")
      await sleep(300)
      server.child.kill("SIGTERM")
      // With a 600 s grace and a judge that answers in 60 s, only the second signal can end it before the test's own timeout.
      const exit = await server.exit
      expect(exit.stderr).toContain("stopping now: closing the connections of 1 request still in flight")
      expect(await inFlight).not.toBe(200)
    } finally {
      await fake.close()
    }
  }, 120_000)
})
