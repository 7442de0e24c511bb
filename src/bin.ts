#!/usr/bin/env node
/**
 * Entry point: provide the Node platform, run the CLI, and turn its outcome into the exit code.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Exit, Option } from "effect"
import { main } from "./Cli.js"

const exitCode = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  if (Cause.isInterruptedOnly(exit.cause)) return 130
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const error = failure.value as { readonly _tag?: string; readonly code?: number }
    if (error._tag === "ExitCode" && typeof error.code === "number") return error.code
  }
  return 1
}

main(process.argv).pipe(
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true, teardown: (exit, onExit) => onExit(exitCode(exit)) })
)
