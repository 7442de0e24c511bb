/**
 * Bench [16]: what tracing costs. The LLM judge against the fake server (child process, 0 ms
 * latency, concurrency 32, 3,000 judgments a run) run in-process three ways, interleaved, 1 warm-up
 * and 3 measured runs each: tracing off (the CLI without --trace-otlp), Effect's default tracer
 * (spans made, never exported) and --trace-otlp to a receiver on 127.0.0.1 (in this process: its
 * CPU counts). The figure is the runner's CPU per judgment; "off" must be within noise of the
 * default tracer (which is what the code without spans ran under). `npx tsx bench/tracing.ts` alone.
 */
import { Effect } from "effect"
import * as Path from "node:path"
import { layerOtlp, type TraceEndpoint, traceEndpoint } from "../src/engine/Tracing.js"
import * as OtlpReceiver from "../test/support/OtlpReceiver.js"
import { startChildServer } from "./child.js"
import { benchTempDir, writeCsv } from "./gen.js"
import { llmJudgeLayer, loadRagAnswers, timedRun } from "./harness.js"
import { consolePrinter, isMain, type Printer } from "./timed.js"

export const TARGETS = {
  /** Tracing off costs at most this share more CPU per judgment than the default tracer. */
  offShare: 0.03
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export const printTracingFigures = async (printer: Printer, rows = 500) => {
  const dir = benchTempDir()
  const csv = Path.join(dir, `tracing-${rows}.csv`)
  writeCsv(csv, rows, 9)
  const pipeline = await loadRagAnswers()
  const server = await startChildServer(0)
  const receiver = await OtlpReceiver.start()
  const endpoint = traceEndpoint(receiver.url) as TraceEndpoint
  const modes = {
    off: <A, E>(self: Effect.Effect<A, E>) => Effect.withTracerEnabled(self, false),
    "default tracer": <A, E>(self: Effect.Effect<A, E>) => self,
    "--trace-otlp": <A, E>(self: Effect.Effect<A, E>) =>
      Effect.provide(Effect.withSpan(self, "rag-eval run"), layerOtlp(endpoint, []))
  } as const
  const cpu: Record<keyof typeof modes, Array<number>> = { off: [], "default tracer": [], "--trace-otlp": [] }
  try {
    for (let round = 0; round < 4; round++) {
      for (const [name, around] of Object.entries(modes) as Array<[keyof typeof modes, typeof modes.off]>) {
        await server.reset()
        const r = await timedRun(pipeline, llmJudgeLayer(server.url, 32), {
          input: csv,
          outRoot: Path.join(dir, "out", `${name}-${round}`),
          concurrency: 32,
          around
        })
        if (round > 0) cpu[name].push(r.cpuMs / r.outcome.judgments.total)
      }
    }
  } finally {
    await server.close()
    await receiver.close()
  }
  const ms = (x: number) => `${x.toFixed(3)} ms`
  const off = median(cpu.off)
  const native = median(cpu["default tracer"])
  const otlp = median(cpu["--trace-otlp"])
  printer.line(
    `    runner CPU per judgment, median of 3 (${rows * 6} judgments a run): off ${ms(off)} · default tracer ${
      ms(native)
    } · --trace-otlp ${ms(otlp)} (${receiver.spans().length.toLocaleString("en-US")} spans received)`
  )
  printer.figure(
    "tracing off (no --trace-otlp) against the default tracer",
    `${((off / native - 1) * 100).toFixed(1)}% CPU per judgment (with --trace-otlp: ${
      ((otlp / native - 1) * 100).toFixed(1)
    }%)`,
    `≤ +${TARGETS.offShare * 100}%`,
    off <= native * (1 + TARGETS.offShare)
  )
}

if (isMain(import.meta.url)) {
  await printTracingFigures(consolePrinter)
  process.exit(0)
}
