/**
 * `rag-eval serve` as `bin.ts` runs it (same stop signal wiring: the first SIGINT/SIGTERM requests a
 * graceful stop, a second interrupts), for the child-process tests while `Cli.ts` does not register
 * the command yet. Run with tsx: `tsx test/server/serve-entry.ts serve --port 0 …`.
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Cause, Effect, Exit } from "effect"
import * as Shutdown from "../../src/engine/Shutdown.js"
import { serveCommand } from "../../src/cli/ServeCommand.js"

const root = Command.make("rag-eval").pipe(Command.withSubcommands([serveCommand]))
const cli = Command.run(root, { name: "rag-eval", version: "test" })

const shutdown = Shutdown.make()
const fiber = Effect.runFork(
  cli(process.argv).pipe(
    Effect.tapErrorCause((cause) => Effect.sync(() => process.stderr.write(`error: ${Cause.pretty(cause)}\n`))),
    Effect.provide(NodeContext.layer),
    Effect.provideService(Shutdown.Shutdown, shutdown)
  )
)
const keepAlive = setInterval(() => {}, 2 ** 31 - 1)
let signals = 0
const onSignal = () => {
  signals++
  if (signals === 1) Effect.runSync(shutdown.request)
  else fiber.unsafeInterruptAsFork(fiber.id())
}
process.on("SIGINT", onSignal)
process.on("SIGTERM", onSignal)
fiber.addObserver((exit) => {
  clearInterval(keepAlive)
  process.removeListener("SIGINT", onSignal)
  process.removeListener("SIGTERM", onSignal)
  process.exitCode = Exit.isSuccess(exit) ? 0 : Cause.isInterruptedOnly(exit.cause) ? 130 : 1
})
