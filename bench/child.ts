/**
 * Child processes for the bench: the fake server (bench/fake-server.ts, talked to over IPC) and
 * one-shot scripts whose last stdout line is a JSON result (bench/rss-run.ts).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import type { FakeRateLimit } from "../test/support/FakeOpenAi.js"

export const benchDir = fileURLToPath(new URL(".", import.meta.url))

/** `node --import tsx <script> …args` (tsx registered in the child, as the CLI does). */
const spawnTsx = (
  script: string,
  args: ReadonlyArray<string>,
  ipc: boolean,
  nodeArgs: ReadonlyArray<string> = []
): ChildProcess =>
  spawn(process.execPath, [...nodeArgs, "--import", "tsx", fileURLToPath(new URL(script, import.meta.url)), ...args], {
    stdio: ipc ? ["ignore", "pipe", "inherit", "ipc"] : ["ignore", "pipe", "inherit"],
    cwd: fileURLToPath(new URL("..", import.meta.url))
  })

export interface ServerStats {
  readonly calls: number
  /** 429s sent because the token bucket was empty. */
  readonly limited: number
  readonly requests: number
  readonly responses: number
  /** Epoch ms (fractional) of the first request / last response since the last reset. */
  readonly firstRequestMs: number | undefined
  readonly lastResponseMs: number | undefined
  /** Server process CPU since the last reset. */
  readonly cpuMs: number
  /** The mean number of requests in flight per 100 ms from the first request to the last response. */
  readonly inFlight?: ReadonlyArray<number> | undefined
  /** With `stats(true)`: every request start and response finish since the last reset (epoch ms, in order). */
  readonly starts?: ReadonlyArray<number> | undefined
  readonly finishes?: ReadonlyArray<number> | undefined
  /** When the first 100 requests arrived, ms after the first. */
  readonly requestStarts?: ReadonlyArray<number> | undefined
  /** With `stats(true)`: each response's finish minus its own request's start since the last reset (ms, in finish order). */
  readonly services?: ReadonlyArray<number> | undefined
}

export interface ChildServer {
  readonly url: string
  readonly pid: number
  readonly setLatency: (ms: number) => Promise<void>
  /** Latency and a token-bucket rate limit (undefined: none). */
  readonly setLimit: (latencyMs: number, limit: FakeRateLimit | undefined) => Promise<void>
  readonly reset: () => Promise<void>
  readonly stats: (timeline?: boolean) => Promise<ServerStats>
  readonly close: () => Promise<void>
}

export const startChildServer = (latencyMs = 0): Promise<ChildServer> =>
  new Promise((resolve, reject) => {
    const child = spawnTsx("./fake-server.ts", [String(latencyMs)], true)
    let nextId = 1
    const pending = new Map<number, (m: unknown) => void>()
    child.on("message", (m: { id?: number }) => {
      const done = m.id === undefined ? undefined : pending.get(m.id)
      if (done !== undefined) {
        pending.delete(m.id!)
        done(m)
      }
    })
    const ask = <A>(message: Record<string, unknown>): Promise<A> =>
      new Promise((done) => {
        const id = nextId++
        pending.set(id, done as (m: unknown) => void)
        child.send({ ...message, id })
      })
    let out = ""
    const onData = (chunk: Buffer) => {
      out += chunk.toString("utf8")
      const nl = out.indexOf("\n")
      if (nl === -1) return
      child.stdout!.off("data", onData)
      const { url, pid } = JSON.parse(out.slice(0, nl)) as { url: string; pid: number }
      resolve({
        url,
        pid,
        setLatency: (ms) => ask({ cmd: "set", latencyMs: ms }).then(() => undefined),
        setLimit: (latencyMs, limit) => ask({ cmd: "set", latencyMs, limit: limit ?? null }).then(() => undefined),
        reset: () => ask({ cmd: "reset" }).then(() => undefined),
        stats: (timeline) => ask<ServerStats>({ cmd: "stats", timeline: timeline === true }),
        close: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done()
            child.once("exit", () => done())
            child.disconnect()
            setTimeout(() => child.kill(), 2_000).unref()
          })
      })
    }
    child.stdout!.on("data", onData)
    child.once("error", reject)
    child.once("exit", (code) => reject(new Error(`fake server exited early (code ${code})`)))
  })

/** Run a script to completion (with extra node flags, e.g. a heap cap); its last stdout line is parsed as JSON. */
export const runJsonScript = <A>(
  script: string,
  args: ReadonlyArray<string>,
  nodeArgs: ReadonlyArray<string> = []
): Promise<A> =>
  new Promise((resolve, reject) => {
    const child = spawnTsx(script, args, false, nodeArgs)
    let out = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8")
    })
    child.once("error", reject)
    child.once("exit", (code) => {
      const lines = out.trim().split("\n")
      try {
        if (code !== 0) throw new Error(`exit code ${code}`)
        resolve(JSON.parse(lines[lines.length - 1]!) as A)
      } catch (e) {
        reject(new Error(`${script} ${args.join(" ")} failed: ${(e as Error).message}\n${out}`))
      }
    })
  })
