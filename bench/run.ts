/**
 * `npm run bench` — throughput and memory figures for the rag-answers pipeline. No assertions: each
 * figure is printed next to its target with "ok" or "below target".
 *
 *  1. LLM judge, 0 ms latency, concurrency 32: judgments/s through the real runner against the fake
 *     OpenAI-compatible server in a child process. The pipeline's throughput is measured warm — the
 *     median of 3 runs after 2 warm-up runs in the same process, as a long job runs — and the first
 *     (cold, JIT still compiling) run is printed beside it. Then where a call's CPU goes.
 *  2. LLM judge, 100 ms latency, concurrency 32: achieved ÷ ideal throughput, first request to last
 *     response as seen by the server; median of 3 runs after a warm-up run. 2b: the same through the
 *     CLI with its preflight, 1,200 calls (bench/latency.ts; issue #35's ≥ 0.97).
 *  3. The heuristic judge on 100k generated rows, and 4. peak RSS for 1,000, 10,000 and 100,000
 *     rows: the installed CLI as users run it (`node dist/bin.js run …` under `/usr/bin/time`), so
 *     start-up, validation, judging, reports and the CLI's memory settings all count. Then the same
 *     100k run in-process, split into phases, with the pieces of a judgment measured alone.
 *  5. The journal: append cost and resume start-up.
 *  6. A rate-bound run: 1,000 judgments against a server enforcing 600 requests/min as a token
 *     bucket with a burst of 10, charging rejected requests or not, with and without --rpm
 *     (bench/rate-limits.ts; alone: npm run bench:rate).
 *  9. The heuristic judge's Cohen's κ against NIST's grades on llmjudge-test (when ../shared is here).
 *  7. Resuming a 1,000,000-row heuristic run (6M judgments) killed half-way: start-up, peak RSS
 *     (bench/resume.ts).
 *  8. Reports people look at, at 100k rows: report.md and report.html time and size, and the CLI's
 *     `--help` start-up with the charting library in its own chunk (bench/html-report.ts).
 * 10. `--batch` and the prompt cache: the estimated cost of 10,000 judgments synchronous, with
 *     `--batch`, and with `--batch` at the cache hit rate the fake observed; the wall time of a
 *     `--batch` run against the fake (bench/batch.ts; `npx tsx bench/batch.ts` runs it alone).
 * 11. The heuristic claim model (answer-correctness): Pearson r against RAGChecker's human labels,
 *     balanced accuracy against ExpertQA's experts (when ../shared is here), the ablation, and
 *     cases/s (bench/claims.ts; `npx tsx bench/claims.ts` runs it alone).
 * 12. answer-correctness end to end through the CLI on 1,000 / 10,000 / 100,000 generated cases:
 *     cases/s and peak RSS, flat as the input grows (bench/correctness.ts).
 * 14. synthesize: how often plain BM25 ranks an offline item's gold chunk first (a sanity figure), and
 *     chunking's peak RSS on 1,000 and 10,000 documents and a 50 MB file (bench/synthesize.ts).
 * 15. The size bounds: a 50 MB answer refused, a judge listing 100,000 claims per extraction — wall
 *     time and peak RSS through the CLI (bench/bounds.ts).
 * 16. What tracing costs: runner CPU per judgment with tracing off, Effect's default tracer and
 *     --trace-otlp to a local receiver (bench/tracing.ts).
 * 17. `rag-eval ui` on two 100,000-case rag-answers runs beside a 100-case one: opening a run, its
 *     first page, a case, a search, a label, compare; the server's peak RSS (bench/ui.ts).
 * 18. `rag-eval compare` of two 100,000-case runs (every metric: time) and of two 1,000,000-case runs
 *     (one metric: peak RSS) through the CLI (bench/compare.ts).
 *
 * Inputs are generated (seeded) into a temp dir, removed at the end. Environment:
 *   BENCH_HEURISTIC_ROWS (default 100000), BENCH_LLM_ROWS (default 500 = 3,000 judgments a run),
 *   BENCH_RATE_ROWS (default 167 = 1,002 judgments a run; each of the 4 scenarios takes about 100 s),
 *   BENCH_RESUME_ROWS (default 1000000; about 6 minutes; 0 skips it).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { bootstrapTable } from "../src/stats/Bootstrap.js"
import { cohenKappa, exactAgreement, tableOf } from "../src/stats/Kappa.js"
import * as FakeOpenAi from "../test/support/FakeOpenAi.js"
import { batchFigures, printBatchFigures } from "./batch.js"
import { printBoundsFigures } from "./bounds.js"
import { perJudgmentCosts, readRecordsPass, validationPasses } from "./breakdown.js"
import { startChildServer } from "./child.js"
import { printHeldOut } from "./claims-lodo.js"
import { printClaimFigures } from "./claims.js"
import { judgmentCounts } from "./cli-output.js"
import { printCompareFigures } from "./compare.js"
import { printCorrectnessFigures, writeCases } from "./correctness.js"
import { benchTempDir, writeCsv } from "./gen.js"
import { heuristicJudgeLayer, llmJudgeLayer, loadRagAnswers, type TimedRun, timedRun } from "./harness.js"
import { htmlReportFigures } from "./html-report.js"
import { journalFigures } from "./journal.js"
import { defaultDataDir as agreementDir, measureAgreement } from "./judge-agreement.js"
import { bareRuns } from "./latency-bare.js"
import { latencyRuns, priorityFromEnv, reportLatencyRuns } from "./latency.js"
import { RATE_LIMIT, rateLimitScenarios, reportRateScenarios } from "./rate-limits.js"
import { correctnessRun, ragAnswersRun, resumeFigures } from "./resume.js"
import { printSynthesizeFigures } from "./synthesize.js"
import { timedCli } from "./timed.js"
import { printTracingFigures } from "./tracing.js"
import { transportLadder } from "./transport.js"
import { printUiFigures } from "./ui.js"

const CONCURRENCY = 32
const LLM_ROWS = Number(process.env.BENCH_LLM_ROWS ?? 500)
const LATENCY_ROWS = 128
const LATENCY_MS = 100
const HEURISTIC_ROWS = Number(process.env.BENCH_HEURISTIC_ROWS ?? 100_000)
const RATE_ROWS = Number(process.env.BENCH_RATE_ROWS ?? 167)
const RATE_LATENCY_MS = 100
const RESUME_ROWS = Number(process.env.BENCH_RESUME_ROWS ?? 1_000_000)
/** [7b], opt-in (~15 minutes at a million): answer-correctness killed half-way and resumed. */
const RESUME_CORRECTNESS_CASES = Number(process.env.BENCH_RESUME_CORRECTNESS_CASES ?? 0)
const DIMENSIONS = 6
const WARM_UP_RUNS = 2
const MEASURED_RUNS = 3

const TARGETS = {
  llmPerSecond: 1_500,
  latencyRatio: 0.95,
  /** Resuming a 6M-judgment run: peak RSS, and start-up until it resumes. */
  resumeRssMB: 200,
  resumeStartupMs: 10_000,
  /** Issue #35: a 1M-case run's resume starts judging new cases within 15 s. */
  resumeFirstNewMs: 15_000,
  heuristicPerSecond: 20_000,
  rssMB: 150
}

// ---------------------------------------------------------------------------------------------
// Printing

const benchStart = performance.now()
const int = (n: number) => Math.round(n).toLocaleString("en-US")
const ms = (n: number) => `${int(n)} ms`
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`
const line = (text = "") => console.log(text)
const verdict = (ok: boolean) => (ok ? "ok" : "below target")
const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(0)}`
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

interface Figure {
  readonly name: string
  readonly value: string
  readonly target: string
  readonly ok: boolean
}
const figures: Array<Figure> = []
const figure = (name: string, value: string, target: string, ok: boolean) => {
  figures.push({ name, value, target, ok })
  line(`  ${name}: ${value}   (target ${target}) ${verdict(ok)}`)
}

const phaseLine = (r: TimedRun) => {
  const p = r.phases
  return `setup+validation ${ms(p.setupAndValidationMs)} · judging ${ms(p.judgingMs)} · ` +
    `reports ${ms(p.reportsMs)} (${p.reportsByFormat.map((f) => `${f.format} ${ms(f.ms)}`).join(", ")}) · ` +
    `records tail ${ms(p.recordsTailMs)} · summary/final files ${ms(p.finishMs)}`
}

const loadAverage = () => os.loadavg().map((x) => x.toFixed(2)).join(" ")

const repo = fileURLToPath(new URL("..", import.meta.url))

/** `node dist/bin.js run pipelines/rag-answers.ts --csv <csv>` under GNU time: wall time and peak RSS. */
const cliRun = (csv: string, out: string) => {
  const r = timedCli(["run", "pipelines/rag-answers.ts", "--csv", csv, "--out", out])
  return { status: r.status, peakMB: r.peakMB, seconds: r.seconds, judgments: judgmentCounts(r.stderr)?.total ?? 0 }
}

// ---------------------------------------------------------------------------------------------

const main = async () => {
  const cpus = os.cpus()
  line("rag-eval bench — rag-answers pipeline")
  line(
    `machine: ${cpus[0]?.model ?? "unknown CPU"} · ${cpus.length} cores · ${
      (os.totalmem() / 2 ** 30).toFixed(1)
    } GiB RAM · node ${process.version} · ${os.platform()} ${os.release()}`
  )
  line(`load average at start: ${loadAverage()} (other processes on these ${cpus.length} cores skew every figure)`)
  line()

  const dir = benchTempDir()
  const pipeline = await loadRagAnswers()
  const out = (name: string) => Path.join(dir, "out", name)
  try {
    const llmCsv = Path.join(dir, `llm-${LLM_ROWS}.csv`)
    writeCsv(llmCsv, LLM_ROWS, 1)
    const latencyCsv = Path.join(dir, `latency-${LATENCY_ROWS}.csv`)
    writeCsv(latencyCsv, LATENCY_ROWS, 4)

    const server = await startChildServer(0)
    try {
      // ---------------------------------------------------------------------------------------
      const n = LLM_ROWS * DIMENSIONS
      line(
        `[1] LLM judge (openai-compatible provider → fake server in a child process), 0 ms latency, concurrency ${CONCURRENCY}`
      )
      line(
        `    ${LLM_ROWS} rows × ${DIMENSIONS} = ${
          int(n)
        } judgments a run; CLI defaults: markdown + csv reports, file journal and cache; silent progress`
      )
      const rates: Array<number> = []
      let lastRun: TimedRun | undefined
      let serverCpu = 0
      for (let i = 0; i < WARM_UP_RUNS + MEASURED_RUNS; i++) {
        await server.reset()
        const r = await timedRun(pipeline, llmJudgeLayer(server.url, CONCURRENCY), {
          input: llmCsv,
          outRoot: out(`llm-${i}`),
          concurrency: CONCURRENCY,
          cache: "file"
        })
        const stats = await server.stats()
        const rate = (r.outcome.judgments.total * 1000) / r.wallMs
        rates.push(rate)
        line(
          `    run ${i + 1}${i < WARM_UP_RUNS ? " (warm-up)" : ""}: ${int(rate)}/s (${
            int(r.outcome.judgments.total)
          } in ${ms(r.wallMs)}, ${r.outcome.judgments.failed} failed; runner CPU ${
            (r.cpuMs / r.outcome.judgments.total).toFixed(2)
          } ms/judgment, fake server ${(stats.cpuMs / Math.max(1, stats.calls)).toFixed(2)} ms/call)`
        )
        lastRun = r
        serverCpu = stats.cpuMs / Math.max(1, stats.calls)
      }
      const warm = median(rates.slice(WARM_UP_RUNS))
      figure(
        `judgments/s, median of ${MEASURED_RUNS} warm runs`,
        `${int(warm)}/s (first, cold run: ${int(rates[0]!)}/s)`,
        `≥ ${int(TARGETS.llmPerSecond)}/s`,
        warm >= TARGETS.llmPerSecond
      )
      if (lastRun !== undefined) {
        const cpu = lastRun.cpuMs / lastRun.outcome.judgments.total
        line(`    last run: ${phaseLine(lastRun)}`)
        line(
          `    CPU per judgment: runner process ${cpu.toFixed(2)} ms (every thread: JIT, GC, I/O) · fake server ${
            serverCpu.toFixed(2)
          } ms`
        )
      }

      const fake = await FakeOpenAi.start({ latencyMs: 0, record: false })
      try {
        const inProcess = await timedRun(pipeline, llmJudgeLayer(fake.url, CONCURRENCY), {
          input: llmCsv,
          outRoot: out("llm-inprocess"),
          concurrency: CONCURRENCY,
          cache: "file"
        })
        const rate = (inProcess.outcome.judgments.total * 1000) / inProcess.wallMs
        line(
          `    server in-process instead (runner + server share one event loop): ${int(rate)}/s — CPU ${
            (inProcess.cpuMs / inProcess.outcome.judgments.total).toFixed(2)
          } ms/judgment`
        )
      } finally {
        await fake.close()
      }

      line()
      line(
        `  Where a call's CPU goes (server in the child process, ${CONCURRENCY} calls in flight, client CPU = user + system of this process):`
      )
      const ladder = await transportLadder(server.url, { calls: 3000, concurrency: CONCURRENCY })
      let below = 0
      for (const level of ladder) {
        line(
          `    ${level.level.padEnd(34)} ${int(level.perSecond).padStart(6)}/s   ${
            level.cpuMsPerCall.toFixed(3)
          } ms CPU/call   (+${(level.cpuMsPerCall - below).toFixed(3)})`
        )
        below = level.cpuMsPerCall
      }
      line()

      // ---------------------------------------------------------------------------------------
      const ln = LATENCY_ROWS * DIMENSIONS
      const idealMs = (ln * LATENCY_MS) / CONCURRENCY
      line(
        `[2] LLM judge, ${LATENCY_MS} ms latency, concurrency ${CONCURRENCY}: ${LATENCY_ROWS} rows × ${DIMENSIONS} = ${
          int(ln)
        } judgments a run; ideal ${ms(idealMs)} = ${int(ln)} × ${LATENCY_MS} ms / ${CONCURRENCY}`
      )
      await server.setLatency(LATENCY_MS)
      const ratios: Array<number> = []
      for (let i = 0; i < 1 + MEASURED_RUNS; i++) {
        await server.reset()
        const slow = await timedRun(pipeline, llmJudgeLayer(server.url, CONCURRENCY), {
          input: latencyCsv,
          outRoot: out(`latency-${i}`),
          concurrency: CONCURRENCY,
          cache: "file"
        })
        const stats = await server.stats()
        const span = (stats.lastResponseMs ?? 0) - (stats.firstRequestMs ?? 0)
        const ratio = idealMs / span
        if (i > 0) ratios.push(ratio)
        line(
          `    run ${i + 1}${i === 0 ? " (warm-up)" : ""}: ${ratio.toFixed(3)} (server: first request → last response ${
            ms(span)
          }; in-process view, first call → last verdict ${
            ms(slow.phases.judgingMs)
          }; ${stats.calls} calls, ${slow.outcome.judgments.failed} failed)`
        )
      }
      await server.setLatency(0)
      const ratio = median(ratios)
      figure(
        `achieved ÷ ideal throughput, median of ${MEASURED_RUNS}`,
        ratio.toFixed(3),
        `≥ ${TARGETS.latencyRatio}`,
        ratio >= TARGETS.latencyRatio
      )
      // [2b] the same from outside (issue #35): the CLI with its preflight, 1,200 calls.
      const latencyRows = Number(process.env.BENCH_LATENCY_ROWS ?? 200)
      const cliLatencyCsv = Path.join(dir, `latency-cli-${latencyRows}.csv`)
      writeCsv(cliLatencyCsv, latencyRows, 4)
      line(
        `[2b] the same through the CLI, with the preflight (ideal = calls ÷ ${CONCURRENCY} × ${LATENCY_MS} ms + one round trip): ${latencyRows} rows × ${DIMENSIONS} = ${
          int(latencyRows * DIMENSIONS)
        } judgments (bench/latency.ts)`
      )
      const cliLatency = await latencyRuns(server, {
        repo: fileURLToPath(new URL("..", import.meta.url)),
        csv: cliLatencyCsv,
        out,
        latencyMs: LATENCY_MS,
        concurrency: CONCURRENCY,
        runs: MEASURED_RUNS,
        priority: priorityFromEnv()
      })
      // The host's floor beside it: a bare node:http client from this process (not reniced).
      reportLatencyRuns(cliLatency, line, figure, await bareRuns(server, MEASURED_RUNS, latencyRows * DIMENSIONS))
      line()

      // ---------------------------------------------------------------------------------------
      const rateCsv = Path.join(dir, `rate-${RATE_ROWS}.csv`)
      writeCsv(rateCsv, RATE_ROWS, 8)
      line(
        `[6] A rate-limited API: the fake server (child process, ${RATE_LATENCY_MS} ms latency) enforces ${RATE_LIMIT.rpm} requests/min as a token bucket with a burst of ${RATE_LIMIT.burst}`
      )
      line(
        `    (429 with Retry-After in whole seconds, no x-ratelimit headers), rejected requests not counted and counted (OpenAI's rule); the CLI, --concurrency ${CONCURRENCY}, ${RATE_ROWS} rows × ${DIMENSIONS} = ${
          int(RATE_ROWS * DIMENSIONS)
        } judgments`
      )
      reportRateScenarios(
        await rateLimitScenarios(server, {
          repo,
          csv: rateCsv,
          out,
          latencyMs: RATE_LATENCY_MS,
          concurrency: CONCURRENCY
        }),
        RATE_ROWS * DIMENSIONS,
        line,
        figure
      )
      line()
    } finally {
      await server.close()
    }

    // -----------------------------------------------------------------------------------------
    const bigCsv = Path.join(dir, `heuristic-${HEURISTIC_ROWS}.csv`)
    const genStart = performance.now()
    const bytes = writeCsv(bigCsv, HEURISTIC_ROWS, 5)
    const smallCsv = Path.join(dir, "rss-1000.csv")
    writeCsv(smallCsv, 1000, 6)
    const midCsv = Path.join(dir, "rss-10000.csv")
    writeCsv(midCsv, 10_000, 7)
    line(
      `[3] Heuristic judge, the CLI as users run it (/usr/bin/time node dist/bin.js run pipelines/rag-answers.ts --csv …; markdown + csv reports)`
    )
    line(
      `    input: ${int(HEURISTIC_ROWS)} generated rows, ${mb(bytes)} CSV (generated in ${
        ms(performance.now() - genStart)
      }, not counted)`
    )
    const big = cliRun(bigCsv, out("cli-big"))
    const hRate = big.judgments / big.seconds
    figure(
      `heuristic judgments/s, whole CLI run`,
      `${int(hRate)}/s (${int(big.judgments)} in ${big.seconds.toFixed(1)} s, exit ${big.status})`,
      `≥ ${int(TARGETS.heuristicPerSecond)}/s`,
      big.status === 0 && hRate >= TARGETS.heuristicPerSecond
    )
    fs.rmSync(out("cli-big"), { recursive: true, force: true })
    line()

    line(`[4] Peak RSS of CLI runs (the ${int(HEURISTIC_ROWS)}-row run above, and runs of 1,000 and 10,000 rows)`)
    const mid = cliRun(midCsv, out("cli-mid"))
    const small = cliRun(smallCsv, out("cli-small"))
    fs.rmSync(out("cli-mid"), { recursive: true, force: true })
    fs.rmSync(out("cli-small"), { recursive: true, force: true })
    figure(
      `peak RSS, CLI, 1,000 rows`,
      `${small.peakMB.toFixed(0)} MB (exit ${small.status}, ${small.seconds.toFixed(1)} s)`,
      `≤ ${TARGETS.rssMB} MB`,
      small.status === 0 && small.peakMB <= TARGETS.rssMB
    )
    figure(
      `peak RSS, CLI, ${int(HEURISTIC_ROWS)} rows`,
      `${big.peakMB.toFixed(0)} MB`,
      `≤ ${TARGETS.rssMB} MB`,
      big.status === 0 && big.peakMB <= TARGETS.rssMB
    )
    line(`    10,000 rows: ${mid.peakMB.toFixed(0)} MB (exit ${mid.status}, ${mid.seconds.toFixed(1)} s)`)
    // The first thousands of rows warm the collector up (the young generation grows to its maximum
    // size); after that nothing held grows with the rows.
    const growth = big.peakMB - mid.peakMB
    line(
      `    1,000 → 10,000 rows: ${signed(mid.peakMB - small.peakMB)} MB (the collector's warm-up); 10,000 → ${
        int(HEURISTIC_ROWS)
      } rows: ${signed(growth)} MB (${Math.abs(growth) <= 0.1 * mid.peakMB ? "flat" : "not flat"}: within 10%)`
    )
    line()

    line(
      `  Diagnosis: the same ${
        int(HEURISTIC_ROWS)
      } rows through the runner in this process (under tsx), split into phases:`
    )
    const heuristic = await timedRun(pipeline, heuristicJudgeLayer, {
      input: bigCsv,
      outRoot: out("heuristic"),
      concurrency: 8
    })
    const hn = heuristic.outcome.judgments.total
    const p = heuristic.phases
    const share = (x: number) => `${((100 * x) / heuristic.wallMs).toFixed(0)}%`
    line(
      `    ${int((hn * 1000) / heuristic.wallMs)}/s: setup+validation ${ms(p.setupAndValidationMs)} (${
        share(p.setupAndValidationMs)
      }) · judging ${ms(p.judgingMs)} (${share(p.judgingMs)}, ${int((hn * 1000) / p.judgingMs)}/s) · reports ${
        ms(p.reportsMs)
      } (${share(p.reportsMs)}: ${
        p.reportsByFormat.map((f) => `${f.format} ${ms(f.ms)}`).join(", ")
      }) · summary/final files ${ms(p.finishMs)}`
    )
    const perJudgmentUs = (p.judgingMs * 1000) / hn
    line(`    judging = ${perJudgmentUs.toFixed(1)} µs/judgment; pieces measured alone (60,000 judgments):`)
    let explained = 0
    for (const c of await perJudgmentCosts(60_000)) {
      explained += c.us
      line(`      ${c.label.padEnd(40)} ${c.us.toFixed(1).padStart(6)} µs`)
    }
    line(
      `      ${"rest: CSV, cases, scoring, records, I/O, GC".padEnd(40)} ${
        (perJudgmentUs - explained).toFixed(1).padStart(6)
      } µs`
    )
    const records = Path.join(heuristic.outcome.info.runDir, "records-iteration-1.jsonl")
    line(
      `    one pass over records-iteration-1.jsonl (${mb(fs.statSync(records).size)}, each report format makes one): ${
        ms(await readRecordsPass(records))
      }`
    )
    const v = await validationPasses(pipeline, bigCsv)
    line(`    validation passes alone: scanInput ${ms(v.scanInputMs)} + case stream ${ms(v.casesMs)}`)
    fs.rmSync(out("heuristic"), { recursive: true, force: true })
    line()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }

  {
    line(`[5] Journal (durable runs)`)
    const jdir = benchTempDir()
    try {
      const j = await journalFigures(jdir, 100_000)
      line(
        `  journal append, one write per judgment: ${j.appendUs.toFixed(1)} µs per judgment (100,000 appends, ${
          mb(j.bytes)
        })`
      )
      line(`  resume start-up, indexing a 100,000-judgment journal: ${ms(j.resumeMs)} (${int(j.read)} judgments)`)
    } finally {
      fs.rmSync(jdir, { recursive: true, force: true })
    }
    line()
  }

  if (RESUME_ROWS > 0) {
    line(
      `[7] Resuming a large run: ${int(RESUME_ROWS)} generated rows (${
        int(RESUME_ROWS * DIMENSIONS)
      } judgments), the heuristic judge, the CLI killed (SIGKILL) half-way, then the same command`
    )
    const rdir = benchTempDir()
    try {
      const csv = Path.join(rdir, "resume.csv")
      writeCsv(csv, RESUME_ROWS, 9)
      const r = await resumeFigures({ repo, out: Path.join(rdir, "out"), run: ragAnswersRun(csv, RESUME_ROWS) })
      line(
        `    killed with ${int(r.journaledAtKill)} judgments journaled (${
          mb(r.journalBytes)
        }); the resume: exit ${r.exit}, ${(r.totalMs / 1000).toFixed(1)} s in all`
      )
      figure(
        `resume of ${int(r.judgments)} judgments: peak RSS`,
        `${r.peakMB.toFixed(0)} MB`,
        `≤ ${TARGETS.resumeRssMB} MB`,
        r.exit === 0 && r.peakMB <= TARGETS.resumeRssMB
      )
      figure(
        `resume of ${int(r.judgments)} judgments: start-up until it resumes (input hashed, journal indexed)`,
        `${(r.startupMs / 1000).toFixed(1)} s`,
        `≤ ${TARGETS.resumeStartupMs / 1000} s`,
        r.startupMs <= TARGETS.resumeStartupMs
      )
      figure(
        `resume of ${
          int(r.judgments)
        } judgments: first new judgment journaled (the records a killed run wrote kept, their fold restored from its snapshot, the input read past them)`,
        `${(r.firstNewJudgmentMs / 1000).toFixed(1)} s`,
        `≤ ${TARGETS.resumeFirstNewMs / 1000} s`,
        r.firstNewJudgmentMs <= TARGETS.resumeFirstNewMs
      )
    } finally {
      fs.rmSync(rdir, { recursive: true, force: true })
    }
    line()
  }

  if (RESUME_CORRECTNESS_CASES > 0) {
    line(
      `[7b] Resuming a large answer-correctness run: ${
        int(RESUME_CORRECTNESS_CASES)
      } generated cases (bench [12]'s), the heuristic judge, the CLI killed (SIGKILL) half-way, then the same command`
    )
    const rdir = benchTempDir()
    try {
      const input = Path.join(rdir, "cases.jsonl")
      writeCases(input, RESUME_CORRECTNESS_CASES)
      const r = await resumeFigures({
        repo,
        out: Path.join(rdir, "out"),
        run: correctnessRun(input, RESUME_CORRECTNESS_CASES)
      })
      line(
        `    killed with ${int(r.journaledAtKill)} judgments journaled (${
          mb(r.journalBytes)
        }); the resume: exit ${r.exit}, ${(r.totalMs / 1000).toFixed(1)} s in all, peak RSS ${
          r.peakMB.toFixed(0)
        } MB, start-up ${(r.startupMs / 1000).toFixed(1)} s`
      )
      figure(
        `answer-correctness resume of ${int(RESUME_CORRECTNESS_CASES)} cases: first new judgment journaled`,
        `${(r.firstNewJudgmentMs / 1000).toFixed(1)} s`,
        `≤ ${TARGETS.resumeFirstNewMs / 1000} s`,
        r.exit === 0 && r.firstNewJudgmentMs <= TARGETS.resumeFirstNewMs
      )
    } finally {
      fs.rmSync(rdir, { recursive: true, force: true })
    }
    line()
  } else {
    line(
      "[7b] answer-correctness killed half-way and resumed: skipped (BENCH_RESUME_CORRECTNESS_CASES=1000000 runs it, ~15 minutes)"
    )
    line()
  }

  {
    line(
      `[8] Reports at ${
        int(HEURISTIC_ROWS)
      } rows (rag-answers, heuristic judge, in-process): report.md (bounded by --details 100) and report.html (charts rendered by vega, case table sampled)`
    )
    const h = await htmlReportFigures(HEURISTIC_ROWS)
    const mb2 = (bytes: number) => `${(bytes / 2 ** 20).toFixed(2)} MB`
    line(
      `    report.md: ${ms(h.markdownMs)}, ${mb2(h.markdownBytes)} · report.html: ${ms(h.htmlMs)}, ${mb2(h.htmlBytes)}`
    )
    figure(`report.md size at ${int(HEURISTIC_ROWS)} rows`, mb2(h.markdownBytes), "< 1 MB", h.markdownBytes < 1_000_000)
    figure(`report.html size at ${int(HEURISTIC_ROWS)} rows`, mb2(h.htmlBytes), "≤ 5 MB", h.htmlBytes <= 5_000_000)
    line(
      `    node dist/bin.js --help: ${
        ms(h.helpMs)
      } (median of ${h.helpRuns}); the HTML chunk (vega, vega-lite), loaded only by --format html: ${
        mb2(h.htmlChunkBytes)
      }`
    )
    line()
  }

  {
    // [9] How good the offline judge is: its agreement with NIST's grades on llmjudge-test, where
    // `../shared` is beside the repository (a user's clone skips it, saying so).
    line(
      `[9] The heuristic judge against human relevance labels (llmjudge-test: 25 TREC queries, 4,410 passages graded 0–3 by NIST)`
    )
    if (fs.existsSync(Path.join(agreementDir, "qrels.txt"))) {
      const a = await measureAgreement(agreementDir)
      figure(
        "heuristic judge, Cohen's κ on the four grades",
        a.kappa4.toFixed(4),
        "≥ 0.15 (Llama-3-8B: 0.104)",
        a.kappa4 >= 0.15
      )
      figure(
        "heuristic judge, Cohen's κ relevant (≥ 2) or not",
        a.kappa2.toFixed(4),
        "≥ 0.25 (Llama-3-8B: 0.155)",
        a.kappa2 >= 0.25
      )
      line(
        `    at ${
          Number.isNaN(a.judgmentsPerSecond) ? "(not measured)" : `${int(Math.round(a.judgmentsPerSecond))} judgments/s`
        } (single process)`
      )
    } else {
      line(`    skipped: ${agreementDir} is not here (it ships beside the repository in ../shared/data)`)
    }
    line()
  }

  {
    line(`[10] --batch and the prompt cache: 10,000 rag-answers judgments`)
    const bdir = benchTempDir()
    try {
      printBatchFigures(await batchFigures(bdir), line)
    } finally {
      fs.rmSync(bdir, { recursive: true, force: true })
    }
    line()
  }

  {
    line(
      `[11] The heuristic claim model (src/judges/claims/) against human judgments, and its throughput (bench/claims.ts)`
    )
    printClaimFigures(undefined, { line, figure })
    printHeldOut(line, figure)
    line()
  }

  {
    line(
      `[12] answer-correctness on the heuristic judge through the CLI: cases/s and peak RSS as the input grows (bench/correctness.ts)`
    )
    printCorrectnessFigures({ line, figure })
    line()
  }

  {
    // A CPU figure measured here, not asserted in a unit test (a shared machine's clock is no test).
    line(
      `[13] calibrate's bootstrap: 4,410 label pairs, 10,000 resamples, six statistics (cohenKappa and exactAgreement, three times each)`
    )
    const human = Array.from({ length: 4410 }, (_, i) => (i * 7) % 4)
    const judge = human.map((h, i) => (i % 5 === 0 ? (h + 2) % 4 : h))
    const table = tableOf(human, judge)
    const times: Array<number> = []
    for (let i = 0; i < 5; i++) {
      const start = performance.now()
      bootstrapTable(table, [cohenKappa, exactAgreement, cohenKappa, exactAgreement, cohenKappa, exactAgreement], {
        seed: 42
      })
      times.push(performance.now() - start)
    }
    figure(
      "calibrate bootstrap at 4,410 pairs × 10,000 resamples × 6 statistics, median of 5",
      ms(median(times)),
      "< 1,000 ms",
      median(times) < 1000
    )
    line()
  }

  {
    line(
      `[14] synthesize: BM25 over the chunks ranks an offline item's gold chunk first (sanity), and chunking memory as the corpus grows (bench/synthesize.ts)`
    )
    await printSynthesizeFigures({ line, figure })
    line()
  }

  {
    line(
      `[15] The size bounds (src/domain/Limits.ts): a 50 MB answer refused, a judge flooding claims (bench/bounds.ts)`
    )
    await printBoundsFigures({ line, figure })
    line()
  }

  {
    line(
      `[16] What tracing costs: the LLM judge at 0 ms, concurrency 32, with tracing off (the CLI without --trace-otlp), Effect's default tracer, and --trace-otlp to a local receiver (bench/tracing.ts)`
    )
    await printTracingFigures({ line, figure })
    line()
  }

  {
    line(
      `[17] rag-eval ui on a ${
        HEURISTIC_ROWS.toLocaleString("en-US")
      }-case run beside a 100-case one: open, a page, a case, search, label, compare; the server's peak RSS (bench/ui.ts)`
    )
    await printUiFigures({ line, figure }, HEURISTIC_ROWS)
    line()
  }

  {
    line(`[18] rag-eval compare of two large runs through the CLI: time and peak RSS (bench/compare.ts)`)
    printCompareFigures({ line, figure })
    line()
  }

  line("Summary")
  for (const f of figures) {
    line(`  ${verdict(f.ok).padEnd(12)} ${f.name}: ${f.value.split(" (")[0]} (target ${f.target})`)
  }
  line(`bench took ${((performance.now() - benchStart) / 1000).toFixed(0)} s; load average at end: ${loadAverage()}`)
}

await main()
