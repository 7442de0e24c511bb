/**
 * `rag-eval …args` in-process through `main` — the path `bin.ts` takes, with stdout and stderr
 * captured and the exit code `bin.ts` would use — for tests whose subject is not the process
 * boundary (docs/development.md: "Fast tests"). Exit codes on signals, kill -9 and the bundle itself
 * stay out-of-process (`ChildCli.ts`).
 *
 * What a child started by `ChildCli.cli` sees, this gives too: the output of a pipe (ANSI styles
 * stripped, as `bin.ts` does when output is not a terminal), the environment with `OPENAI_API_KEY`
 * emptied unless `env` gives one, and the progress lines and notes the run writes to stderr (they go to
 * `process.stderr`, captured here while the command runs). The working directory is `cwd`, else the
 * test process's — the repository root, as `ChildCli`'s default — and is the test process's again
 * afterwards (`resume` changes it to the run's).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { ExitCode, main } from "../../src/cli/Cli.js"
import { plainConsole } from "../../src/cli/Colour.js"
import * as Shutdown from "../../src/engine/Shutdown.js"
import { countedInProcess } from "./Children.js"

export interface Output {
  readonly stdout: string
  readonly stderr: string
  /** The exit code `bin.ts` would use: 0, or the ExitCode's (1 for anything else). */
  readonly code: number
}

export interface Options {
  /** Columns help is laid out at (a child in a pipe: `COLUMNS`, else 80). */
  readonly width?: number
  /** Extra environment, as `ChildCli`'s `env` (OPENAI_API_KEY is emptied unless given here). */
  readonly env?: Readonly<Record<string, string>>
  /** The working directory while the command runs (vitest's `forks` pool: a process per worker). */
  readonly cwd?: string
}

/**
 * One command at a time per test process: the capture of `process.stderr` and the cwd are
 * process-wide, so commands of concurrent tests (`describe.concurrent`) queue here.
 */
let queue: Promise<unknown> = Promise.resolve()

/** `rag-eval …args` in-process, in `cwd` (default the test process's: the repository root). */
export const runCli = (args: ReadonlyArray<string>, options: number | Options = {}): Promise<Output> => {
  const next = queue.then(() =>
    countedInProcess(() => runOne(args, typeof options === "number" ? { width: options } : options))
  )
  queue = next.catch(() => undefined)
  return next
}

const runOne = async (args: ReadonlyArray<string>, options: Options): Promise<Output> => {
  const { cwd, env = {}, width = 80 } = options
  // stdout and stderr in the order they were written, as a child's pipes would hold them.
  const out: Array<string> = []
  const err: Array<string> = []
  const text = (xs: ReadonlyArray<unknown>) => xs.map(String).join(" ") + "\n"
  const toOut = (...xs: ReadonlyArray<unknown>) => void out.push(text(xs))
  const toErr = (...xs: ReadonlyArray<unknown>) => void err.push(text(xs))
  const captured = Console.consoleWith((base) =>
    Effect.succeed<Console.Console>({
      ...base,
      log: (...xs: ReadonlyArray<unknown>) => Effect.sync(() => toOut(...xs)),
      info: (...xs: ReadonlyArray<unknown>) => Effect.sync(() => toOut(...xs)),
      error: (...xs: ReadonlyArray<unknown>) => Effect.sync(() => toErr(...xs)),
      warn: (...xs: ReadonlyArray<unknown>) => Effect.sync(() => toErr(...xs)),
      unsafe: { ...base.unsafe, log: toOut, info: toOut, error: toErr, warn: toErr }
    })
  ).pipe(Effect.runSync)
  const environment = new Map(
    Object.entries({ ...process.env, OPENAI_API_KEY: "", ...env }).filter((e): e is [string, string] =>
      e[1] !== undefined
    )
  )
  const program = main(["node", "rag-eval", ...args], { width }).pipe(
    Effect.withConsole(plainConsole(captured, { stdout: true, stderr: true })),
    Effect.withConfigProvider(ConfigProvider.fromMap(environment, { pathDelim: "_", seqDelim: "," })),
    Effect.provide(NodeContext.layer),
    Effect.provideService(Shutdown.Shutdown, Shutdown.make())
  )
  // Progress lines and notes go straight to process.stderr (src/engine/Progress.ts).
  const write = process.stderr.write
  const home = process.cwd()
  if (cwd !== undefined) process.chdir(cwd)
  process.stderr.write = ((chunk: string | Uint8Array) => {
    err.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString())
    return true
  }) as typeof process.stderr.write
  try {
    const exit = await Effect.runPromiseExit(program)
    const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    const code = Exit.isSuccess(exit) ? 0 : failure instanceof ExitCode ? failure.code : 1
    if (Exit.isFailure(exit) && !(failure instanceof ExitCode)) err.push(Cause.pretty(exit.cause) + "\n")
    return { stdout: out.join(""), stderr: err.join(""), code }
  } finally {
    process.stderr.write = write
    process.chdir(home)
  }
}
