/**
 * `npm run bench` [6]: a rate-bound run — the CLI as users run it (`node dist/bin.js run …`,
 * concurrency 32) against the fake server in a child process that enforces 600 requests/minute as a
 * token bucket with a burst of 10 (how OpenAI, Mistral and most gateways limit), answering 429s
 * with `Retry-After` in whole seconds and no rate-limit headers: the user knows the limit (`--rpm
 * 600`) or does not (the default flags).
 *
 * Figures per scenario: wall time (the server's first request → last response) ÷ the limit's ideal
 * ((requests − burst) / rate, the preflight included), the share of requests that got a 429, and
 * failed judgments.
 */
import { spawnSync } from "node:child_process"
import * as Path from "node:path"
import type { ChildServer } from "./child.js"

export interface RateScenario {
  readonly name: string
  readonly flags: ReadonlyArray<string>
  readonly judgments: number
  readonly failed: number
  readonly calls: number
  readonly limited: number
  readonly spanMs: number
  readonly idealMs: number
  readonly exit: number | null
}

export const RATE_LIMIT = { rpm: 600, burst: 10 } as const

export const rateLimitScenarios = async (
  server: ChildServer,
  options: { readonly repo: string; readonly csv: string; readonly out: (name: string) => string; readonly latencyMs: number; readonly concurrency: number }
): Promise<ReadonlyArray<RateScenario>> => {
  const scenarios: Array<RateScenario> = []
  for (const [name, flags] of [["no --rpm (default flags)", []], ["--rpm 600", ["--rpm", "600"]]] as const) {
    await server.setLimit(options.latencyMs, { ...RATE_LIMIT, retryAfter: "seconds" })
    await server.reset()
    const r = spawnSync(process.execPath, [
      Path.join(options.repo, "dist", "bin.js"), "run", "pipelines/rag-answers.ts", "--csv", options.csv, "--out", options.out(`rate-${scenarios.length}`),
      "--provider", "openai-compatible", "--base-url", server.url, "--model", "fake", "--concurrency", String(options.concurrency), ...flags
    ], { cwd: options.repo, encoding: "utf8", maxBuffer: 64 * 2 ** 20 })
    const stats = await server.stats()
    const counts = /^(\d+) judgments: (\d+) ok, (\d+) failed/m.exec(r.stderr)
    const rate = RATE_LIMIT.rpm / 60_000
    scenarios.push({
      name,
      flags,
      judgments: counts === null ? 0 : Number(counts[1]),
      failed: counts === null ? Number.NaN : Number(counts[3]),
      calls: stats.calls,
      limited: stats.limited,
      spanMs: (stats.lastResponseMs ?? 0) - (stats.firstRequestMs ?? 0),
      // Every successful request is a judgment or the preflight; the burst goes at once.
      idealMs: (stats.calls - stats.limited - RATE_LIMIT.burst) / rate,
      exit: r.status
    })
  }
  await server.setLimit(0, undefined)
  return scenarios
}
