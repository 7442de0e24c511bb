/**
 * `rag-eval …args` in-process through `main` — the path `bin.ts` takes, with stdout and stderr
 * captured and the exit code `bin.ts` would use — for tests whose subject is not the process
 * boundary (docs/development.md: "Fast tests"). Exit codes on signals, kill -9 and the bundle itself
 * stay out-of-process (`ChildCli.ts`).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { ExitCode, main } from "../../src/cli/Cli.js"
import * as Shutdown from "../../src/engine/Shutdown.js"

export interface Output {
  readonly stdout: string
  readonly stderr: string
  /** The exit code `bin.ts` would use: 0, or the ExitCode's (1 for anything else). */
  readonly code: number
}

/** `rag-eval …args` in-process at `width` columns (the cwd is the test process's: give absolute paths). */
export const runCli = async (args: ReadonlyArray<string>, width = 80): Promise<Output> => {
  const out: Array<string> = []
  const err: Array<string> = []
  const text = (xs: ReadonlyArray<unknown>) => xs.map(String).join(" ")
  const program = Console.consoleWith((base) =>
    Effect.withConsole(main(["node", "rag-eval", ...args], { width }), {
      ...base,
      log: (...xs) => Effect.sync(() => void out.push(text(xs))),
      error: (...xs) => Effect.sync(() => void err.push(text(xs))),
      unsafe: { ...base.unsafe, log: (...xs) => void out.push(text(xs)), error: (...xs) => void err.push(text(xs)) }
    })
  )
  const exit = await Effect.runPromiseExit(
    program.pipe(Effect.provide(NodeContext.layer), Effect.provideService(Shutdown.Shutdown, Shutdown.make()))
  )
  const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
  const code = Exit.isSuccess(exit) ? 0 : failure instanceof ExitCode ? failure.code : 1
  return { stdout: out.join("\n"), stderr: err.join("\n"), code }
}
