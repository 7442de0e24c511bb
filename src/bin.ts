#!/usr/bin/env node
/**
 * Entry point: provide the Node platform and the stop signal, run the CLI, exit with its code.
 *
 * The first Ctrl+C (or SIGTERM) asks the run to stop gracefully — no new judge calls, calls in
 * flight finish and are journaled; a second one interrupts everything.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as v8 from "node:v8"
import { main } from "./cli/Cli.js"
import { colourOff, plainConsole, terminalWidth } from "./cli/Colour.js"
import * as Shutdown from "./engine/Shutdown.js"

// Memory: when full collections are cheap (they are here: a run's live heap is ~15-30 MB), V8
// lets the old generation grow to 4× its live size before the next one, and a long run's peak
// memory is then mostly garbage (a 100k-row heuristic run: ~170 MB, against ~120 MB with this).
// Growing the heap by at most 25% between full collections keeps memory flat in the number of
// cases; the collections it adds are incremental and cost a few percent of a heuristic run's time.
v8.setFlagsFromString("--heap-growing-percent=25")
// And full collections fewer: by default V8 starts incremental marking as soon as the old generation
// has less room left than the young generation holds (16 MB), and with a live heap of ~20 MB and ~24
// MB of room a heuristic run was marking nearly all the time — 44 full collections for 20,000
// answer-correctness cases, ~65 ms of CPU each (49 of them on V8's background threads). Started once
// 60% of the room is used: 29. At 80%, 23 and ~13% less CPU, but a resumed million-row run (bench
// [7], ≤ 200 MB) peaked at 202 MB against 193; at 60%, 198 MB (docs/benchmarks.md, 2026-12-01). V8
// reads the trigger each time it decides, so it holds when set at run time (a heap size would not).
v8.setFlagsFromString("--incremental-marking-hard-trigger=60")
// And no allocation-site pretenuring: once enough of an allocation site's objects were seen to
// survive young collections, V8 allocates its objects straight in the old generation, and a
// container that lives for a batch (an `Effect.forEach`'s results, a journal batch) then holds the
// batch's cases from there, where nothing is freed before the next full collection: the records,
// judgments and inputs it held were all promoted. Off: 20,000 heuristic answer-correctness cases
// promoted 115 MB with 10 full collections instead of 258-267 MB with 27, ~10% less CPU
// (docs/benchmarks.md, 2026-12-01).
v8.setFlagsFromString("--no-allocation-site-pretenuring")

/** The first stop signal received: a stop by SIGTERM exits 143 (128 + 15), by SIGINT 130 (128 + 2). */
let stopSignal: NodeJS.Signals | undefined

const exitCode = (exit: Exit.Exit<unknown, unknown>): number => {
  const code = exitCodeOf(exit)
  return code === 130 && stopSignal === "SIGTERM" ? 143 : code
}

const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  if (Cause.isInterruptedOnly(exit.cause)) return 130
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const error = failure.value as { readonly _tag?: string; readonly code?: number }
    if (error._tag === "ExitCode" && typeof error.code === "number") return error.code
  }
  return 1
}

const shutdown = Shutdown.make()
/** Commands whose work a second Ctrl+C abandons and the same command resumes (not `serve`). */
const resumable = process.argv[2] === "run" || process.argv[2] === "resume"
// NO_COLOR, or output that is not a terminal: no ANSI styles in --help or anywhere else.
const stdoutPlain = colourOff(process.env, process.stdout.isTTY)
const stderrPlain = colourOff(process.env, process.stderr.isTTY)
const width = terminalWidth(process.env, process.stdout)
const program = main(process.argv, { width }).pipe(
  Effect.provide(NodeContext.layer),
  Effect.provideService(Shutdown.Shutdown, shutdown)
)
const fiber = Effect.runFork(
  stdoutPlain || stderrPlain
    ? Console.consoleWith((base) =>
      Effect.withConsole(program, plainConsole(base, { stdout: stdoutPlain, stderr: stderrPlain }))
    )
    : program
)
const keepAlive = setInterval(() => {}, 2 ** 31 - 1)
let signals = 0
const onSignal = (signal: NodeJS.Signals) => {
  stopSignal ??= signal
  signals++
  if (signals === 1) {
    process.stderr.write(
      "\nstopping: no new judge calls; waiting for the ones in flight (Ctrl+C again to abort them)\n"
    )
    Effect.runSync(shutdown.request)
  } else {
    fiber.unsafeInterruptAsFork(fiber.id())
  }
}
process.on("SIGINT", onSignal)
process.on("SIGTERM", onSignal)
fiber.addObserver((exit) => {
  clearInterval(keepAlive)
  process.removeListener("SIGINT", onSignal)
  process.removeListener("SIGTERM", onSignal)
  const code = exitCode(exit)
  process.exitCode = code
  // A second Ctrl+C interrupts everything, the run's own stop message included: say how to go on.
  if (signals >= 2 && resumable && Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) {
    process.stderr.write(
      "aborted: the calls in flight were abandoned (not journaled); run the same command again to resume (it skips what is done)\n"
    )
  }
  // Sockets left open by an aborted call must not keep the process alive.
  if (code !== 0) setTimeout(() => process.exit(code), 1000).unref()
})
