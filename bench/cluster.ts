/**
 * `npm run bench:cluster` — judgments/s of one run across 1, 2 and 3 cluster runners (SPEC §9).
 *
 * A private PostgreSQL (Debian's `postgresql`; the bench says so and stops when it is absent),
 * `rag-eval store migrate`, the fake OpenAI-compatible server in a child process at 50 ms latency,
 * N `rag-eval runner` processes at a fixed `--concurrency` each (default 4), and `rag-eval run … --store …
 * --cluster` over BENCH_CLUSTER_ROWS generated rows (default 500 = 3,000 judgments; `--no-cache`
 * and a run id per N, so nothing is reused). Judgments/s = judgments ÷ the coordinator's wall time
 * (start-up, validation and reports included); the ideal is N × concurrency ÷ 50 ms. A local run
 * (no cluster, the same concurrency as one runner) is measured first as the baseline; then the same
 * runs against a server enforcing 9,000 requests/min, given as `--rpm`: the ideal is then capped at 150/s.
 *
 * Every process shares this machine's cores: the figures show how the protocol scales until the CPU
 * (or, on real APIs, the rate limit) binds, not what N machines would do.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "../test/support/Ports.js"
import { postgresAvailable, startPostgres } from "../test/support/Postgres.js"
import { startChildServer } from "./child.js"
import { benchTempDir, writeCsv } from "./gen.js"

const repo = fileURLToPath(new URL("..", import.meta.url))
const bin = Path.join(repo, "dist", "bin.js")
const ROWS = Number(process.env.BENCH_CLUSTER_ROWS ?? 500)
const JUDGMENTS = ROWS * 6
const LATENCY_MS = 50
/**
 * Calls in flight per runner. Small enough that one runner is bound by the server's latency, not by
 * this machine's two cores (4 × 20/s = 80/s a runner; three runners' 240/s still fit), so adding
 * runners shows the protocol scaling; `BENCH_CLUSTER_CONCURRENCY` changes it.
 */
const PER_RUNNER = Number(process.env.BENCH_CLUSTER_CONCURRENCY ?? 4)
const RUNNERS = (process.env.BENCH_CLUSTER_RUNNERS ?? "1,2,3").split(",").map(Number)
/** More flags for every run (e.g. `--adaptive false`, to see what asking the shared limit costs). */
const RUN_ARGS = (process.env.BENCH_CLUSTER_RUN_ARGS ?? "").split(" ").filter((a) => a !== "")
/** The second series: the server enforces this many requests/min (a token bucket), and the run says so. */
const LIMIT_RPM = 9_000

const startRunner = async (store: string): Promise<ChildProcess> => {
  const port = await freePort()
  const child = spawn(process.execPath, [
    bin,
    "runner",
    "--store",
    store,
    "--listen",
    `127.0.0.1:${port}`,
    "--concurrency",
    String(PER_RUNNER)
  ], {
    cwd: repo,
    env: { ...process.env, OPENAI_API_KEY: "bench" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  await new Promise<void>((resolve, reject) => {
    let out = ""
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString()
      if (out.includes("Listening on")) resolve()
    })
    child.on("exit", (code) => reject(new Error(`runner exited with ${code}`)))
  })
  return child
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.on("exit", () => resolve())
    child.kill("SIGTERM")
    setTimeout(() => child.kill("SIGKILL"), 10_000).unref()
  })

const main = async () => {
  if (!postgresAvailable) {
    console.log(
      "bench:cluster needs PostgreSQL (Debian's postgresql package: /usr/lib/postgresql/<v>/bin); not found, nothing measured"
    )
    return
  }
  if (!fs.existsSync(bin)) throw new Error("run `npm run build` first (the bench runs dist/bin.js)")
  const pg = await startPostgres()
  const server = await startChildServer(LATENCY_MS)
  const dir = benchTempDir()
  try {
    const input = Path.join(dir, "rows.csv")
    writeCsv(input, ROWS)
    const migrate = spawnSync(process.execPath, [bin, "store", "migrate", "--store", pg.url], {
      cwd: repo,
      encoding: "utf8"
    })
    if (migrate.status !== 0) throw new Error(migrate.stderr)
    console.log(
      `cluster: ${
        JUDGMENTS.toLocaleString("en")
      } judgments a run, fake server at ${LATENCY_MS} ms, --concurrency ${PER_RUNNER} per runner, ${
        process.env.BENCH_CLUSTER_ROWS === undefined ? "" : "BENCH_CLUSTER_ROWS set, "
      }all processes on this machine (${(await import("node:os")).cpus().length} cores)`
    )
    // The baseline: the same run on one machine, no cluster, at one runner's concurrency.
    await server.reset()
    const localStart = performance.now()
    const local = spawnSync(process.execPath, [
      bin,
      "run",
      "pipelines/rag-answers.ts",
      "--csv",
      input,
      "--out",
      Path.join(dir, "out-local"),
      "--provider",
      "openai-compatible",
      "--base-url",
      server.url,
      "--model",
      "fake",
      "--no-cache",
      "--concurrency",
      String(PER_RUNNER)
    ], { cwd: repo, encoding: "utf8", env: { ...process.env, OPENAI_API_KEY: "bench" } })
    const localSeconds = (performance.now() - localStart) / 1000
    if (local.status !== 0) throw new Error(`local run failed: ${local.stderr}`)
    console.log(
      `  local    : ${(JUDGMENTS / localSeconds).toFixed(0).padStart(5)} judgments/s (${
        localSeconds.toFixed(1)
      } s; ideal ${(PER_RUNNER * 1000 / LATENCY_MS).toFixed(0)}/s; no cluster, --concurrency ${PER_RUNNER})`
    )
    const series = async (limited: boolean) => {
      for (const n of RUNNERS) {
        const runners: Array<ChildProcess> = []
        for (let i = 0; i < n; i++) runners.push(await startRunner(pg.url))
        await server.setLimit(LATENCY_MS, limited ? { rpm: LIMIT_RPM, burst: LIMIT_RPM / 60 } : undefined)
        await server.reset()
        const started = performance.now()
        const run = spawnSync(process.execPath, [
          bin,
          "run",
          "pipelines/rag-answers.ts",
          "--csv",
          input,
          "--out",
          Path.join(dir, `out-${n}-${limited}`),
          "--provider",
          "openai-compatible",
          "--base-url",
          server.url,
          "--model",
          "fake",
          "--store",
          pg.url,
          "--cluster",
          "--no-cache",
          "--run-id",
          `bench-${n}-runners${limited ? "-limited" : ""}`,
          ...(limited ? ["--rpm", String(LIMIT_RPM)] : []),
          ...RUN_ARGS
        ], { cwd: repo, encoding: "utf8" })
        const seconds = (performance.now() - started) / 1000
        const stats = await server.stats()
        await Promise.all(runners.map(stop))
        if (run.status !== 0) throw new Error(`run with ${n} runner(s) failed: ${run.stderr}`)
        const ideal = Math.min(
          (n * PER_RUNNER * 1000) / LATENCY_MS,
          limited ? LIMIT_RPM / 60 : Number.POSITIVE_INFINITY
        )
        console.log(
          `  ${n} runner${n === 1 ? " " : "s"}: ${(JUDGMENTS / seconds).toFixed(0).padStart(5)} judgments/s (${
            seconds.toFixed(1)
          } s; ideal ${ideal.toFixed(0)}/s; ${stats.calls} calls incl. preflights, ${stats.limited} met a 429)`
        )
      }
    }
    await series(false)
    console.log(
      `  the server allowing ${LIMIT_RPM.toLocaleString("en")} requests/min (${
        LIMIT_RPM / 60
      }/s) and the run given --rpm ${LIMIT_RPM}: runners add throughput until the limit binds`
    )
    await series(true)
  } finally {
    await server.close()
    pg.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

await main()
