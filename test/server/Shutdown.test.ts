/**
 * Graceful shutdown of `rag-eval serve` in a child process: a slow request (the fake LLM answers
 * after a delay) is in flight when SIGTERM / SIGINT arrives; the server stops accepting connections
 * at once, the request still completes with its judgments, and the process exits 0.
 *
 * Runs the CLI as users do, `node dist/bin.js serve` (dist is built by `pretest`), so bin.ts's own
 * signal handling is what is tested.
 */
import { describe, expect, it } from "vitest"
import { waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { freePort } from "../support/Ports.js"
import { tempDir } from "../support/RunPipeline.js"
import { connect, startServe, untilRefused } from "../support/Serve.js"
import type { SearchReply } from "./support.js"

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
        // Not port 0: after the listener closes, a server another test starts could be given that port.
        const server = await startServe([
          "--port",
          String(await freePort()),
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
        await waitFor("both judge calls in flight", () => fake.calls === 2)
        expect(await connect(`${server.url}/health`)).toBe("answered")
        server.child.kill(signal)
        // New connections are refused once the signal is handled (the request in flight goes on):
        // waited for as events — the stop notice, then a refused connection — not for a time.
        await waitFor("the stop notice", () => server.stderr().includes("stopping: no new connections"))
        await untilRefused(`${server.url}/health`)
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
      await waitFor("both judge calls in flight", () => fake.calls === 2)
      server.child.kill("SIGTERM")
      // The second signal once the first is handled (its notice printed), not after a fixed time.
      await waitFor("the stop notice", () => server.stderr().includes("stopping: no new connections"))
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
