/**
 * `rag-eval serve` in a child process (`node dist/bin.js serve`, built by `pretest`), for the tests
 * whose subject is the process: signals, exit codes, sockets. Every child is killed when the file's
 * tests end (`Children.ts`, from `Setup.ts`). Wait for events (`waitFor` on what the process printed or a connection refused), never
 * for a fixed time.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import { waitFor } from "./ChildCli.js"
import { track } from "./Children.js"
import { repoRoot } from "./RunPipeline.js"

const bin = Path.join(repoRoot, "dist", "bin.js")

export interface Served {
  readonly child: ChildProcess
  readonly url: string
  readonly port: number
  readonly stdout: () => string
  readonly stderr: () => string
  /** Both streams, in the order they arrived. */
  readonly output: () => string
  readonly exit: Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>
}

export const startServe = (args: ReadonlyArray<string>): Promise<Served> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "serve", ...args], {
      cwd: repoRoot,
      env: { ...process.env, RAG_EVAL_TOKEN: "" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    track(child)
    let stdout = ""
    let stderr = ""
    let output = ""
    const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((done) =>
      child.on("close", (code) => done({ code, stdout, stderr }))
    )
    const listening = () => {
      const url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1]
      if (url !== undefined) {
        resolve({
          child,
          url,
          port: Number(new URL(url).port),
          stdout: () => stdout,
          stderr: () => stderr,
          output: () => output,
          exit
        })
      }
    }
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      output += chunk
      listening()
    })
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
      output += chunk
    })
    void exit.then(({ code }) => reject(new Error(`serve exited (${code}) before listening:\n${stderr}`)))
  })

/** How a new connection to `url` ends: "answered", or the system's code ("ECONNREFUSED"). */
export const connect = (url: string): Promise<string> =>
  fetch(url).then(
    () => "answered",
    (e: unknown) => String((e as { cause?: { code?: string } }).cause?.code ?? e)
  )

/** Wait until a new connection is refused (the server closed its listener); the deadline is for a stuck server. */
export const untilRefused = async (url: string, timeoutMs = 60_000): Promise<void> => {
  let last = ""
  await waitFor(`${url} to refuse connections`, () => last === "ECONNREFUSED", timeoutMs, async () => {
    last = await connect(url)
  })
}
