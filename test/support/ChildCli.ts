/**
 * The CLI as users run it: `node dist/bin.js …` in a child process (built by `pretest`), with its
 * exit code, signal, stdout and stderr. Children still running when a test file ends are killed
 * (`Children.ts`, from `Setup.ts`).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import { track } from "./Children.js"
import { repoRoot } from "./RunPipeline.js"

export const bin = Path.join(repoRoot, "dist", "bin.js")

export interface Result {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export interface Running {
  readonly child: ChildProcess
  readonly result: Promise<Result>
  readonly exited: () => boolean
  /** stderr so far. */
  readonly stderr: () => string
}

export interface StartOptions {
  readonly uid?: number
  readonly gid?: number
  /** Extra environment (OPENAI_API_KEY is emptied unless given here). */
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
  /**
   * Shell commands run before the CLI replaces the shell (`ulimit -f 16` for a file-size limit that
   * makes writes short and then fail, as a full disk does; SIGXFSZ is ignored so it does).
   */
  readonly shell?: string
  /**
   * SIGKILL after this many ms (default 100 s: a CLI that hangs must not hold a test for its whole
   * timeout); 0: never — a long-lived process the test stops itself (a cluster runner), which a busy
   * machine's slower test kept past 100 s: the guard killed the last runner mid-run and the
   * coordinator's resume waited for it until its own guard.
   */
  readonly guardMs?: number
}

export const start = (args: ReadonlyArray<string>, options: StartOptions = {}): Running => {
  const [command, argv] = options.shell === undefined
    ? [process.execPath, [bin, ...args]] as const
    : ["bash", ["-c", `trap '' XFSZ; ${options.shell}; exec "$0" "$@"`, process.execPath, bin, ...args]] as const
  const child = spawn(command, argv, {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, OPENAI_API_KEY: "", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid })
  })
  track(child)
  let stdout = ""
  let stderr = ""
  let done = false
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()))
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
  const guardMs = options.guardMs ?? 100_000
  const guard = guardMs === 0 ? undefined : setTimeout(() => child.kill("SIGKILL"), guardMs)
  const result = new Promise<Result>((resolve) =>
    child.on("close", (code, signal) => {
      done = true
      clearTimeout(guard)
      resolve({ code, signal, stdout, stderr })
    })
  )
  return { child, result, exited: () => done, stderr: () => stderr }
}

export const cli = (args: ReadonlyArray<string>, options: StartOptions = {}) => start(args, options).result

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Poll until `condition` holds (the fake server runs in this process, so polling is cheap). */
/**
 * Wait until `condition` holds (an event: a line printed, a call counted); `probe`, when given, runs
 * before each check (an async look, e.g. a connection attempt). The deadline only ends a stuck test;
 * `what` may be a function, to name what was seen by then (a child's stderr) in the failure.
 */
export const waitFor = async (
  what: string | (() => string),
  condition: () => boolean,
  timeoutMs = 60_000,
  probe?: () => Promise<void>
) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (probe !== undefined) await probe()
    if (condition()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === "string" ? what : what()}`)
    await sleep(5)
  }
}
