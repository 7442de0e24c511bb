/**
 * `npm run bench` [6] (or alone: `npm run bench:rate`): a rate-bound run — the CLI as users run it
 * (`node dist/bin.js run …`, concurrency 32) against the fake server in a child process that
 * enforces 600 requests/minute as a token bucket with a burst of 10 (how OpenAI, Mistral and most
 * gateways limit), answering 429s with `Retry-After` in whole seconds and no rate-limit headers.
 * Two servers: one that does not count a rejected request, and one that does (OpenAI's rule:
 * "unsuccessful requests contribute to your per-minute limit"); against each the user knows the
 * limit (`--rpm 600`) or does not (the default flags).
 *
 * Figures per scenario: wall time (the server's first request → last response) ÷ the limit's ideal
 * ((requests answered − burst) / rate, the preflight included), the share of requests that got a
 * 429 (all of them: the first wave, concurrency − burst requests refused at once when no rate is
 * given, included), and failed judgments — beside SPEC §5's targets (`RATE_TARGETS`).
 *
 * Alone: BENCH_RATE_ROWS (default 167 = 1,002 judgments a run; about 100 s a scenario).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { type ChildServer, startChildServer } from "./child.js"
import { judgmentCounts } from "./cli-output.js"
import { writeCsv } from "./gen.js"

export interface RateScenario {
  readonly name: string
  readonly flags: ReadonlyArray<string>
  readonly chargeRejected: boolean
  readonly judgments: number
  readonly failed: number
  readonly calls: number
  readonly limited: number
  readonly spanMs: number
  readonly idealMs: number
  readonly exit: number | null
  /**
   * How the first wave (the `concurrency` requests after the preflight) reached the server: over how
   * many ms, and the most of them within any 5 ms — the gate spreads it; a clump here formed after it.
   */
  readonly wave: { readonly spanMs: number; readonly clump: number } | undefined
}

/** The first wave's arrival (see `RateScenario.wave`) from the server's request arrivals. */
const waveArrival = (starts: ReadonlyArray<number> | undefined, concurrency: number) => {
  const wave = (starts ?? []).slice(1, 1 + concurrency)
  if (wave.length < concurrency) return undefined
  let clump = 0
  for (let i = 0, j = 0; i < wave.length; i++) {
    while (wave[i]! - wave[j]! > 5) j++
    clump = Math.max(clump, i - j + 1)
  }
  return { spanMs: wave[wave.length - 1]! - wave[0]!, clump }
}

export const RATE_LIMIT = { rpm: 600, burst: 10 } as const

/** SPEC §5: without a rate, ≤ 5% 429s and ≤ 1.15× the ideal; with `--rpm`, ≤ 1% and ≤ 1.10×. */
export const RATE_TARGETS = {
  ratioWithRpm: 1.10,
  ratioWithout: 1.15,
  limitedShareWithRpm: 0.01,
  limitedShareWithout: 0.05
} as const

export const rateLimitScenarios = async (
  server: ChildServer,
  options: {
    readonly repo: string
    readonly csv: string
    readonly out: (name: string) => string
    readonly latencyMs: number
    readonly concurrency: number
  }
): Promise<ReadonlyArray<RateScenario>> => {
  const scenarios: Array<RateScenario> = []
  for (const chargeRejected of [false, true]) {
    for (const [flagsName, flags] of [["no --rpm (default flags)", []], ["--rpm 600", ["--rpm", "600"]]] as const) {
      await server.setLimit(options.latencyMs, { ...RATE_LIMIT, retryAfter: "seconds", chargeRejected })
      await server.reset()
      const r = spawnSync(process.execPath, [
        Path.join(options.repo, "dist", "bin.js"),
        "run",
        "pipelines/rag-answers.ts",
        "--csv",
        options.csv,
        "--out",
        options.out(`rate-${scenarios.length}`),
        "--provider",
        "openai-compatible",
        "--base-url",
        server.url,
        "--model",
        "fake",
        "--concurrency",
        String(options.concurrency),
        ...flags
      ], { cwd: options.repo, encoding: "utf8", maxBuffer: 64 * 2 ** 20 })
      const stats = await server.stats()
      const counts = judgmentCounts(r.stderr)
      const rate = RATE_LIMIT.rpm / 60_000
      scenarios.push({
        name: `${chargeRejected ? "rejected requests charged" : "rejected requests free"}, ${flagsName}`,
        flags,
        chargeRejected,
        judgments: counts?.total ?? 0,
        failed: counts?.failed ?? Number.NaN,
        calls: stats.calls,
        limited: stats.limited,
        spanMs: (stats.lastResponseMs ?? 0) - (stats.firstRequestMs ?? 0),
        // Every successful request is a judgment or the preflight; the burst goes at once.
        idealMs: (stats.calls - stats.limited - RATE_LIMIT.burst) / rate,
        exit: r.status,
        wave: waveArrival(stats.requestStarts, options.concurrency)
      })
    }
  }
  await server.setLimit(0, undefined)
  return scenarios
}

/** Each scenario's line and its figures beside the targets, through the caller's `figure`. */
export const reportRateScenarios = (
  scenarios: ReadonlyArray<RateScenario>,
  expectedJudgments: number,
  line: (text: string) => void,
  figure: (name: string, value: string, target: string, ok: boolean) => void
) => {
  for (const sc of scenarios) {
    const ratio = sc.spanMs / sc.idealMs
    const share = sc.limited / Math.max(1, sc.calls)
    const withRpm = sc.flags.length > 0
    line(
      `    ${sc.name}: ${(sc.spanMs / 1000).toFixed(1)} s (ideal ${
        (sc.idealMs / 1000).toFixed(1)
      } s) · ${sc.calls} requests, ${sc.limited} got a 429 (${
        (100 * share).toFixed(1)
      }%) · ${sc.judgments} judgments, ${sc.failed} failed · exit ${sc.exit}${
        sc.wave === undefined
          ? ""
          : ` · the first wave reached the server over ${
            sc.wave.spanMs.toFixed(0)
          } ms, at most ${sc.wave.clump} within 5 ms`
      }`
    )
    const ratioTarget = withRpm ? RATE_TARGETS.ratioWithRpm : RATE_TARGETS.ratioWithout
    const shareTarget = withRpm ? RATE_TARGETS.limitedShareWithRpm : RATE_TARGETS.limitedShareWithout
    figure(
      `rate-bound run, ${sc.name}: wall time ÷ ideal`,
      ratio.toFixed(3),
      `≤ ${ratioTarget}`,
      ratio <= ratioTarget && sc.exit === 0
    )
    figure(
      `rate-bound run, ${sc.name}: requests that got a 429`,
      `${(100 * share).toFixed(1)}%`,
      `≤ ${100 * shareTarget}%`,
      share <= shareTarget
    )
    figure(
      `rate-bound run, ${sc.name}: failed judgments`,
      String(sc.failed),
      "0",
      sc.failed === 0 && sc.judgments === expectedJudgments
    )
  }
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const repo = fileURLToPath(new URL("..", import.meta.url))
  const rows = Number(process.env.BENCH_RATE_ROWS ?? 167)
  const concurrency = 32
  const latencyMs = 100
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-rate-"))
  const server = await startChildServer(0)
  try {
    const csv = Path.join(dir, `rate-${rows}.csv`)
    writeCsv(csv, rows, 8)
    console.log(
      `A rate-limited API: the fake server (child process, ${latencyMs} ms latency) enforces ${RATE_LIMIT.rpm} requests/min as a token bucket with a burst of ${RATE_LIMIT.burst}`
    )
    console.log(
      `(429 with Retry-After in whole seconds, no x-ratelimit headers); the CLI, --concurrency ${concurrency}, ${rows} rows × 6 = ${
        rows * 6
      } judgments; load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`
    )
    const scenarios = await rateLimitScenarios(server, {
      repo,
      csv,
      out: (name) => Path.join(dir, name),
      latencyMs,
      concurrency
    })
    reportRateScenarios(
      scenarios,
      rows * 6,
      (text) => console.log(text),
      (name, value, target, ok) => console.log(`  ${name}: ${value}   (target ${target}) ${ok ? "ok" : "below target"}`)
    )
  } finally {
    await server.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
