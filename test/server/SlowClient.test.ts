/**
 * `rag-eval serve` (`node dist/bin.js serve`, a child process) against slow and hostile clients:
 * - a client that sends its headers and then one byte of body a second cannot hold a stop: SIGTERM
 *   waits out `--shutdown-grace`, then closes it and exits 0; a second signal ends the process at once;
 * - such a client gets 408 after `--request-timeout`, while the server is running.
 * No assertion measures a duration (the machine may be busy): each waits for an outcome, with a
 * deadline far beyond the time the behaviour needs — a grace longer than the deadline where the test
 * must show the grace was *not* waited out.
 * - the secrets given to serve (API key, URL credentials) appear neither in its output nor in /health.
 */
import * as net from "node:net"
import { describe, expect, it } from "vitest"
import { waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { tempDir } from "../support/RunPipeline.js"
import { connect, startServe } from "../support/Serve.js"

const serve = (args: ReadonlyArray<string>) => startServe(["--port", "0", "--out", tempDir("rag-eval-slow-"), ...args])

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** A client that sends the headers of a 100 KB POST, then one byte a second; what it receives is kept. */
const trickle = (port: number) => {
  const socket = net.connect(port, "127.0.0.1")
  let received = ""
  const connected = new Promise<void>((resolve) => socket.once("connect", () => resolve()))
  let closed = false
  socket.setEncoding("utf8").on("data", (d: string) => (received += d))
  socket.on("close", () => (closed = true))
  socket.on("error", () => (closed = true))
  socket.write(
    "POST /v1/eval/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
  )
  const timer = setInterval(() => {
    if (!closed) socket.write(" ")
  }, 1000)
  return {
    connected,
    received: () => received,
    closed: () => closed,
    stop: () => {
      clearInterval(timer)
      socket.destroy()
    }
  }
}

describe.concurrent("slow clients (child process)", () => {
  /**
   * serve with `--shutdown-grace grace` and a client trickling its body; the signals sent 300 ms
   * apart; how the process ended within a deadline far beyond what either behaviour needs
   * (undefined: still running), and whether the client was closed by then.
   */
  const stopTrickling = async (grace: number, signals: ReadonlyArray<NodeJS.Signals>) => {
    const server = await serve(["--shutdown-grace", String(grace)])
    const client = trickle(server.port)
    try {
      // The request is in flight once its headers are in and a later request has been answered
      // (the server reads connections in order): events, not a fixed wait.
      await client.connected
      expect(await connect(`${server.url}/health`)).toBe("answered")
      for (const [i, signal] of signals.entries()) {
        // Each next signal once serve has handled the one before (its notice printed), or it exited.
        const exited = () => server.child.exitCode !== null || server.child.signalCode !== null
        const notices = [/stopping: no new connections/, /stopping now/]
        if (i > 0) {
          const notice = notices[Math.min(i, notices.length) - 1]!
          await waitFor(`serve's notice of signal ${i}, or its exit`, () => notice.test(server.stderr()) || exited())
        }
        if (!exited()) server.child.kill(signal)
      }
      const exit = await Promise.race([server.exit, sleep(45_000).then(() => undefined)])
      return { exit, output: server.output(), clientClosed: client.closed() }
    } finally {
      client.stop()
    }
  }

  it("SIGTERM with a client trickling its body: the grace is waited out, the client closed, exit 0", async () => {
    const { exit, output, clientClosed } = await stopTrickling(2, ["SIGTERM"])
    expect(exit, "still running 45 s after SIGTERM with --shutdown-grace 2").toBeDefined()
    expect(exit!.code).toBe(0)
    expect(output).toMatch(/still in flight/)
    expect(clientClosed).toBe(true)
  }, 120_000)

  it(
    "SIGTERM, SIGTERM, SIGINT with a client trickling its body: the second signal stops it without waiting out the grace",
    async () => {
      // A grace of ten minutes: exiting inside the 45 s deadline is only possible if the second signal cut it short.
      const { exit } = await stopTrickling(600, ["SIGTERM", "SIGTERM", "SIGINT"])
      expect(exit, "still running 45 s after a second signal, with --shutdown-grace 600").toBeDefined()
      // 143: the first stop signal was SIGTERM (130 after SIGINT).
      expect(exit!.code).toBe(143)
    },
    120_000
  )

  it("a client slower than --request-timeout gets 408 and is disconnected; the server keeps serving", async () => {
    const server = await serve(["--request-timeout", "2"])
    const client = trickle(server.port)
    try {
      // --request-timeout 2; the deadline is for a stuck server, not a measure of the timeout.
      await waitFor("the trickling client to be disconnected after --request-timeout 2", client.closed, 45_000)
      expect(client.received()).toMatch(/^HTTP\/1\.1 408/)
      const health = await fetch(`${server.url}/health`)
      expect(health.status).toBe(200)
    } finally {
      client.stop()
      server.child.kill("SIGTERM")
      await server.exit
    }
  }, 120_000)

  it("secrets given to serve appear neither in its output nor in /health", async () => {
    const fake = await FakeOpenAi.start()
    const secrets = ["serve-key-7e57ab1e", "serve-pass-c0de", "serve-query-f00d"]
    try {
      const host = fake.url.slice("http://".length)
      const server = await serve([
        "--provider",
        "openai-compatible",
        "--model",
        "fake-judge",
        "--base-url",
        `http://judge:${secrets[1]}@${host}?api_key=${secrets[2]}`,
        `--api-key=${secrets[0]}`
      ])
      const health = await (await fetch(`${server.url}/health`)).text()
      server.child.kill("SIGTERM")
      await server.exit
      for (const s of secrets) {
        expect(health).not.toContain(s)
        expect(server.output()).not.toContain(s)
      }
    } finally {
      await fake.close()
    }
  }, 120_000)
})
