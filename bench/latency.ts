/**
 * Bench [2b] (issue #35; `npx tsx bench/latency.ts` runs it alone): latency hiding measured from
 * outside, as a paid run meets it — the CLI as users run it (`node dist/bin.js run rag-answers …`,
 * `--concurrency 32`, the preflight included, no cache) against the fake server in a child process
 * answering every request after 100 ms. The ideal is calls ÷ 32 × latency plus one round trip for
 * the preflight (sent alone, before the first judgment); the figure is ideal ÷ the server's first
 * request → last response. Three runs after a warm-up; the median is printed beside the target.
 *
 * BENCH_LATENCY_ROWS (default 200 = 1,200 judgments a run), BENCH_LATENCY_RUNS (default 3).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { type ChildServer, startChildServer } from "./child.js"
import { judgmentCounts } from "./cli-output.js"
import { writeCsv } from "./gen.js"

export const LATENCY_TARGET = 0.97

export interface LatencyRun {
  readonly ratio: number
  readonly spanMs: number
  readonly idealMs: number
  readonly calls: number
  readonly judgments: number
  readonly failed: number
  readonly exit: number | null
  readonly load: number
  /** Requests in flight at the server, mean per 100 ms window. */
  readonly inFlight: ReadonlyArray<number>
}

export const latencyRuns = async (
  server: ChildServer,
  options: {
    readonly repo: string
    readonly csv: string
    readonly out: (name: string) => string
    readonly latencyMs: number
    readonly concurrency: number
    readonly runs: number
  }
): Promise<ReadonlyArray<LatencyRun>> => {
  await server.setLatency(options.latencyMs)
  const runs: Array<LatencyRun> = []
  try {
    for (let i = 0; i < options.runs + 1; i++) {
      await server.reset()
      const load = os.loadavg()[0]!
      const r = spawnSync(process.execPath, [
        Path.join(options.repo, "dist", "bin.js"),
        "run",
        "rag-answers",
        "--csv",
        options.csv,
        "--out",
        options.out(`latency-${i}`),
        "--provider",
        "openai-compatible",
        "--base-url",
        server.url,
        "--model",
        "fake",
        "--no-cache",
        "--concurrency",
        String(options.concurrency)
      ], { cwd: options.repo, encoding: "utf8", maxBuffer: 64 * 2 ** 20, env: { ...process.env, NO_COLOR: "1" } })
      const stats = await server.stats()
      const counts = judgmentCounts(r.stderr)
      const spanMs = (stats.lastResponseMs ?? 0) - (stats.firstRequestMs ?? 0)
      // Every call but the preflight is a judgment; the preflight goes alone, one round trip.
      const idealMs = ((stats.calls - 1) / options.concurrency) * options.latencyMs + options.latencyMs
      runs.push({
        ratio: idealMs / spanMs,
        spanMs,
        idealMs,
        calls: stats.calls,
        judgments: counts?.total ?? 0,
        failed: counts?.failed ?? Number.NaN,
        exit: r.status,
        load,
        inFlight: stats.inFlight ?? []
      })
      if (process.env.BENCH_LATENCY_TRACE === "1") {
        console.log(`      in flight per 100 ms: ${(stats.inFlight ?? []).join(" ")}`)
      }
    }
  } finally {
    await server.setLatency(0)
  }
  return runs
}

/** Each run's line, then the median (after the warm-up) beside the target through `figure`. */
export const reportLatencyRuns = (
  runs: ReadonlyArray<LatencyRun>,
  line: (text: string) => void,
  figure: (name: string, value: string, target: string, ok: boolean) => void
) => {
  runs.forEach((r, i) =>
    line(
      `    run ${i + 1}${i === 0 ? " (warm-up)" : ""}: ${r.ratio.toFixed(3)} (first request → last response ${
        Math.round(r.spanMs)
      } ms, ideal ${
        Math.round(r.idealMs)
      } ms; ${r.calls} calls, ${r.judgments} judgments, ${r.failed} failed, exit ${r.exit}; load ${r.load.toFixed(1)})`
    )
  )
  const measured = runs.slice(1)
  const sorted = measured.map((r) => r.ratio).sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
  figure(
    `latency hiding through the CLI with the preflight (ideal ÷ wall), median of ${measured.length}`,
    `${median.toFixed(3)} (runs ${measured.map((r) => r.ratio.toFixed(3)).join(" / ")})`,
    `≥ ${LATENCY_TARGET}`,
    median >= LATENCY_TARGET && measured.every((r) => r.exit === 0 && r.failed === 0)
  )
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const repo = fileURLToPath(new URL("..", import.meta.url))
  const rows = Number(process.env.BENCH_LATENCY_ROWS ?? 200)
  const runs = Number(process.env.BENCH_LATENCY_RUNS ?? 3)
  const concurrency = 32
  const latencyMs = 100
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-latency-"))
  const server = await startChildServer(0)
  try {
    const csv = Path.join(dir, `latency-${rows}.csv`)
    writeCsv(csv, rows, 4)
    console.log(
      `[2b] latency hiding from outside: the CLI (rag-answers, --concurrency ${concurrency}, preflight, no cache), ${rows} rows × 6 = ${
        rows * 6
      } judgments against the fake server (child process) at ${latencyMs} ms; load average ${
        os.loadavg().map((l) => l.toFixed(2)).join(" ")
      }`
    )
    reportLatencyRuns(
      await latencyRuns(server, { repo, csv, out: (name) => Path.join(dir, name), latencyMs, concurrency, runs }),
      (text) => console.log(text),
      (name, value, target, ok) => console.log(`  ${name}: ${value}   (target ${target}) ${ok ? "ok" : "below target"}`)
    )
  } finally {
    await server.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
