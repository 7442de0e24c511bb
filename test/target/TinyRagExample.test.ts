/**
 * The worked example of the target docs (docs/target.md): the tiny RAG service it ships, asked
 * by the target client as the documented flags configure it.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import * as ChildProcess from "node:child_process"
import { fileURLToPath } from "node:url"
import * as TargetClient from "../../src/target/TargetClient.js"
import { resolve, type TargetSettings } from "../../src/target/TargetConfig.js"
import { freePort } from "../support/Ports.js"

const script = fileURLToPath(new URL("../../examples/tiny-rag-server.mjs", import.meta.url))
const TOKEN = "dev-token-for-the-example"

/** The example service on a free port, with RAG_TOKEN set, for the life of the scope. */
const tinyRag = Effect.acquireRelease(
  Effect.promise(async () => {
    const port = await freePort()
    const child = ChildProcess.spawn(process.execPath, [script], {
      env: { ...process.env, PORT: String(port), RAG_TOKEN: TOKEN },
      stdio: ["ignore", "pipe", "inherit"]
    })
    await new Promise<void>((ready, failed) => {
      child.stdout.on("data", (d: Buffer) => {
        if (d.toString().includes("tiny RAG service on")) ready()
      })
      child.once("exit", (code) => failed(new Error(`tiny-rag-server exited with ${code}`)))
    })
    return { url: `http://127.0.0.1:${port}/ask`, child }
  }),
  ({ child }) => Effect.sync(() => child.kill())
)

const client = (settings: TargetSettings) =>
  resolve(settings).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["RAG_TOKEN", TOKEN]]))),
    Effect.orDie,
    Effect.flatMap(TargetClient.make),
    Effect.provide(TargetClient.httpLayer)
  )

describe("the docs' worked example: tiny-rag-server.mjs", () => {
  it.scopedLive("answers and passages, JSON and streamed, with the bearer token from the environment", () =>
    Effect.gen(function*() {
      const { url } = yield* tinyRag
      const flags = { url, headers: ["Authorization: Bearer ${RAG_TOKEN}"], contexts: "$.sources[*].text" }
      const json = yield* client(flags)
      const a = yield* json.call({ id: "1", question: "How does a heat pump heat a house in winter?" })
      expect(a.answer).toMatch(/^From my documents: .*heat/)
      expect(a.contexts!.length).toBeGreaterThan(0)
      expect(a.streamed).toBe(false)
      const streamed = yield* client({ ...flags, body: "{\"question\": \"{{question}}\", \"stream\": true}" })
      const s = yield* streamed.call({ id: "2", question: "What is a black hole?" })
      expect(s.streamed).toBe(true)
      expect(s.answer).toMatch(/black hole/)
      expect(s.ttfbMs).toBeLessThanOrEqual(s.latencyMs)
      const noToken = yield* client({ url })
      const e = yield* Effect.flip(noToken.call({ id: "3", question: "q" }))
      expect(e.kind).toBe("unauthorized")
      expect(e.fatal).toBe(true)
    }))
})
