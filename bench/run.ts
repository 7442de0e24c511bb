/**
 * `npm run bench` — throughput and memory figures for the rag-answers pipeline. No assertions:
 * each figure is printed next to its target with "ok" or "below target".
 *
 *  1. LLM judge, 0 ms latency, concurrency 32: judgments/s through the real runner (fake
 *     OpenAI-compatible server in a child process, and in-process), and where a call's time goes
 *     (node:http → fetch → SDK → provider → judge), plus the permit-gate diagnosis.
 *  2. LLM judge, 100 ms latency, concurrency 32: achieved ÷ ideal throughput, first request to
 *     last response as seen by the server.
 *  3. Heuristic judge on 100k generated rows through the real runner: judgments/s and the split
 *     validation / judging / reports.
 *  4. Peak RSS (process.resourceUsage().maxRSS) of heuristic runs of 1,000 and 100,000 rows, each
 *     in a fresh child process (bench/rss-run.ts).
 *
 * Inputs are generated (seeded) into a temp dir, removed at the end. Environment:
 *   BENCH_HEURISTIC_ROWS (default 100000), BENCH_LLM_ROWS (default 300 = 1,800 judgments a run),
 *   BENCH_DIAG=1 adds a capped-heap RSS run (is the growth live memory or uncollected garbage?).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { spawnSync } from "node:child_process"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as FakeOpenAi from "../test/support/FakeOpenAi.js"
import { runJsonScript, startChildServer } from "./child.js"
import { perJudgmentCosts, readRecordsPass, validationPasses } from "./breakdown.js"
import { semaphoreMicro } from "./gate.js"
import { benchTempDir, writeCsv } from "./gen.js"
import { journalFigures } from "./journal.js"
import { heuristicJudgeLayer, llmJudgeLayer, loadRagAnswers, type TimedRun, timedRun } from "./harness.js"
import { judgeThroughGate, loadRubrics, makeTasks, transportLadder } from "./transport.js"

const CONCURRENCY = 32
const LLM_ROWS = Number(process.env.BENCH_LLM_ROWS ?? 300)
const LATENCY_ROWS = 128
const LATENCY_MS = 100
const HEURISTIC_ROWS = Number(process.env.BENCH_HEURISTIC_ROWS ?? 100_000)
const DIMENSIONS = 6

const TARGETS = {
  llmPerSecond: 1_500,
  latencyRatio: 0.95,
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

// ---------------------------------------------------------------------------------------------

const main = async () => {
  const cpus = os.cpus()
  line("rag-eval bench — rag-answers pipeline")
  line(`machine: ${cpus[0]?.model ?? "unknown CPU"} · ${cpus.length} cores · ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM · node ${process.version} · ${os.platform()} ${os.release()}`)
  line(`load average at start: ${loadAverage()} (other processes on these ${cpus.length} cores skew every figure)`)
  line()

  const dir = benchTempDir()
  const pipeline = await loadRagAnswers()
  const out = (name: string) => Path.join(dir, "out", name)
  try {
    const llmCsv = Path.join(dir, `llm-${LLM_ROWS}.csv`)
    writeCsv(llmCsv, LLM_ROWS, 1)
    const warmCsv = Path.join(dir, "warm-60.csv")
    writeCsv(warmCsv, 60, 3)
    const latencyCsv = Path.join(dir, `latency-${LATENCY_ROWS}.csv`)
    writeCsv(latencyCsv, LATENCY_ROWS, 4)

    const server = await startChildServer(0)
    try {
      // ---------------------------------------------------------------------------------------
      line(`[1] LLM judge (openai-compatible provider → fake server), 0 ms latency, RateGate concurrency ${CONCURRENCY}`)
      line(`    ${LLM_ROWS} rows × ${DIMENSIONS} = ${int(LLM_ROWS * DIMENSIONS)} judgments; CLI defaults: markdown + csv reports, file journal and cache; silent progress`)
      await timedRun(pipeline, llmJudgeLayer(server.url, CONCURRENCY), { input: warmCsv, outRoot: out("warm"), concurrency: CONCURRENCY, cache: "file" })

      await server.reset()
      const child = await timedRun(pipeline, llmJudgeLayer(server.url, CONCURRENCY), { input: llmCsv, outRoot: out("llm-child"), concurrency: CONCURRENCY, cache: "file" })
      const childStats = await server.stats()
      const childRate = (child.outcome.judgments.total * 1000) / child.wallMs
      figure("judgments/s, server in a child process", `${int(childRate)}/s (${int(child.outcome.judgments.total)} in ${ms(child.wallMs)}, ${child.outcome.judgments.failed} failed)`, `≥ ${int(TARGETS.llmPerSecond)}/s`, childRate >= TARGETS.llmPerSecond)
      line(`    phases: ${phaseLine(child)}`)
      const childCpuPerJudgment = child.cpuMs / child.outcome.judgments.total
      line(`    CPU per judgment: runner process ${childCpuPerJudgment.toFixed(2)} ms · fake server ${(childStats.cpuMs / Math.max(1, childStats.calls)).toFixed(2)} ms → CPU-bound rate on an idle core ≈ ${int(1000 / childCpuPerJudgment)}/s`)

      const fake = await FakeOpenAi.start({ latencyMs: 0, record: false })
      try {
        const inProcess = await timedRun(pipeline, llmJudgeLayer(fake.url, CONCURRENCY), { input: llmCsv, outRoot: out("llm-inprocess"), concurrency: CONCURRENCY, cache: "file" })
        const rate = (inProcess.outcome.judgments.total * 1000) / inProcess.wallMs
        line(`  judgments/s, server in-process: ${int(rate)}/s (${int(inProcess.outcome.judgments.total)} in ${ms(inProcess.wallMs)}; runner + server share one event loop) — CPU ${(inProcess.cpuMs / inProcess.outcome.judgments.total).toFixed(2)} ms/judgment`)
      } finally {
        await fake.close()
      }

      line()
      line(`  Where a call's time goes (server in the child process, ${CONCURRENCY} calls in flight, client CPU = user + system of this process):`)
      const ladder = await transportLadder(server.url, { calls: 3000, concurrency: CONCURRENCY, herdCalls: 600 })
      for (const level of ladder) {
        line(`    ${level.level.padEnd(40)} ${int(level.perSecond).padStart(6)}/s   ${level.cpuMsPerCall.toFixed(3)} ms CPU/call   (${int(level.calls)} calls)`)
      }
      const judge32 = ladder.find((l) => l.level === `LlmJudge.judge, ${CONCURRENCY} fibers`)
      const lean = ladder[ladder.length - 1]
      if (judge32 !== undefined && lean !== undefined) {
        line(`    ceiling for one event loop (1 core), judge path without the runner: as configured ≈ 1000 / ${judge32.cpuMsPerCall.toFixed(2)} ms ≈ ${int(1000 / judge32.cpuMsPerCall)}/s; with the bench-only changes ≈ 1000 / ${lean.cpuMsPerCall.toFixed(2)} ms ≈ ${int(1000 / lean.cpuMsPerCall)}/s`)
      }
      line()
      line(`  Permit gate: cost per acquisition when every holder keeps its permit across one macrotask:`)
      for (const r of await semaphoreMicro(400, CONCURRENCY)) {
        line(`    ${r.label.padEnd(48)} ${r.usPerAcquisition.toFixed(1).padStart(8)} µs   (${int(r.acquisitions)} acquisitions)`)
      }
      line()

      // ---------------------------------------------------------------------------------------
      line(`[2] LLM judge, ${LATENCY_MS} ms latency, concurrency ${CONCURRENCY}: ${LATENCY_ROWS} rows × ${DIMENSIONS} = ${int(LATENCY_ROWS * DIMENSIONS)} judgments`)
      await server.setLatency(LATENCY_MS)
      await server.reset()
      const slow = await timedRun(pipeline, llmJudgeLayer(server.url, CONCURRENCY), { input: latencyCsv, outRoot: out("llm-latency"), concurrency: CONCURRENCY, cache: "file" })
      const slowStats = await server.stats()
      const n = slow.outcome.judgments.total
      const idealMs = (n * LATENCY_MS) / CONCURRENCY
      const serverSpan = (slowStats.lastResponseMs ?? 0) - (slowStats.firstRequestMs ?? 0)
      const ratio = idealMs / serverSpan
      figure("achieved ÷ ideal throughput (server: first request → last response)", `${ratio.toFixed(3)} (${ms(serverSpan)} vs ideal ${ms(idealMs)} = ${int(n)} × ${LATENCY_MS} ms / ${CONCURRENCY})`, `≥ ${TARGETS.latencyRatio}`, ratio >= TARGETS.latencyRatio)
      const clientSpan = slow.phases.judgingMs
      line(`    in-process view (first judge call → last verdict): ${ms(clientSpan)} → ratio ${(idealMs / clientSpan).toFixed(3)}; whole run ${ms(slow.wallMs)} (${phaseLine(slow)})`)
      line(`    runner CPU ${(slow.cpuMs / n).toFixed(2)} ms/judgment → ${int(slow.cpuMs)} ms CPU for ${ms(idealMs)} of ideal wall time; server saw ${int(slowStats.calls)} calls`)
      // What-if: the same judgments through LlmJudge with as many fibers waiting as the runner keeps
      // (2 × concurrency cases × 6), behind the bench's FIFO gate instead of an Effect semaphore.
      const tasks = makeTasks(await loadRubrics(), n)
      await server.reset()
      const failed = await judgeThroughGate(server.url, tasks, { gate: "fifo", concurrency: CONCURRENCY, fibers: CONCURRENCY * 2 * DIMENSIONS })
      const fifoStats = await server.stats()
      const fifoSpan = (fifoStats.lastResponseMs ?? 0) - (fifoStats.firstRequestMs ?? 0)
      await server.setLatency(0)
      line(`    what-if (bench-only FIFO gate, LlmJudge.judge × ${int(n)} with ${CONCURRENCY * 2 * DIMENSIONS} fibers, no runner): ${ms(fifoSpan)} → ratio ${(idealMs / fifoSpan).toFixed(3)} (${failed} failed)`)
      line()
    } finally {
      await server.close()
    }

    // -----------------------------------------------------------------------------------------
    line(`[3] Heuristic judge, ${int(HEURISTIC_ROWS)} generated rows × ${DIMENSIONS} = ${int(HEURISTIC_ROWS * DIMENSIONS)} judgments (in-process runner, markdown + csv, file journal, silent progress)`)
    const bigCsv = Path.join(dir, `heuristic-${HEURISTIC_ROWS}.csv`)
    const genStart = performance.now()
    const bytes = writeCsv(bigCsv, HEURISTIC_ROWS, 5)
    line(`    input: ${mb(bytes)} CSV generated in ${ms(performance.now() - genStart)} (not counted)`)
    const heuristic = await timedRun(pipeline, heuristicJudgeLayer, { input: bigCsv, outRoot: out("heuristic"), concurrency: 8 })
    const hRate = (heuristic.outcome.judgments.total * 1000) / heuristic.wallMs
    figure("heuristic judgments/s (whole run)", `${int(hRate)}/s (${int(heuristic.outcome.judgments.total)} in ${ms(heuristic.wallMs)})`, `≥ ${int(TARGETS.heuristicPerSecond)}/s`, hRate >= TARGETS.heuristicPerSecond)
    const p = heuristic.phases
    const share = (x: number) => `${((100 * x) / heuristic.wallMs).toFixed(0)}%`
    line(`    split: setup+validation ${ms(p.setupAndValidationMs)} (${share(p.setupAndValidationMs)}) · judging ${ms(p.judgingMs)} (${share(p.judgingMs)}, ${int((heuristic.outcome.judgments.total * 1000) / p.judgingMs)}/s) · reports ${ms(p.reportsMs)} (${share(p.reportsMs)}: ${p.reportsByFormat.map((f) => `${f.format} ${ms(f.ms)}`).join(", ")}) · summary/final files ${ms(p.finishMs)} (${share(p.finishMs)}) · records tail ${ms(p.recordsTailMs)}`)
    line(`    CPU ${int(heuristic.cpuMs)} ms for ${ms(heuristic.wallMs)} wall → ${int((heuristic.outcome.judgments.total * 1000) / heuristic.cpuMs)} judgments per CPU-second (≈ the rate on an idle core)`)
    const hn = heuristic.outcome.judgments.total
    const perJudgmentUs = (p.judgingMs * 1000) / hn
    line(`    judging phase = ${perJudgmentUs.toFixed(1)} µs/judgment; pieces measured alone (60,000 judgments):`)
    let explained = 0
    for (const c of await perJudgmentCosts(60_000)) {
      if (!c.label.includes("buffered")) explained += c.us
      line(`      ${c.label.padEnd(46)} ${c.us.toFixed(1).padStart(6)} µs`)
    }
    line(`      ${"rest: CSV parse + cases, Effect/stream, score, records".padEnd(46)} ${(perJudgmentUs - explained).toFixed(1).padStart(6)} µs`)
    const records = Path.join(heuristic.outcome.info.runDir, "records-iteration-1.jsonl")
    const recordsBytes = fs.statSync(records).size
    const readMs = await readRecordsPass(records)
    line(`    one readJsonLines pass over records-iteration-1.jsonl (${mb(recordsBytes)}): ${ms(readMs)} — once per report format (markdown, csv), and again for agreement when iterations > 1`)
    const v = await validationPasses(pipeline, bigCsv)
    line(`    validation passes alone: scanInput ${ms(v.scanInputMs)} + case stream ${ms(v.casesMs)} (the judging phase parses the CSV a third time)`)
    fs.rmSync(out("heuristic"), { recursive: true, force: true })
    line()

    // -----------------------------------------------------------------------------------------
    line(`[4] Peak RSS, heuristic judge, the installed CLI as users run it (/usr/bin/time -f %M node dist/bin.js run pipelines/rag-answers.ts --csv …)`)
    const smallCsv = Path.join(dir, "rss-1000.csv")
    writeCsv(smallCsv, 1000, 6)
    const repo = fileURLToPath(new URL("..", import.meta.url))
    const cliRss: Array<number> = []
    for (const [rows, csv] of [[1000, smallCsv], [HEURISTIC_ROWS, bigCsv]] as const) {
      const r = spawnSync("/usr/bin/time", ["-f", "%M %e", process.execPath, Path.join(repo, "dist", "bin.js"), "run", "pipelines/rag-answers.ts", "--csv", csv, "--out", Path.join(dir, `cli-${rows}`)], { cwd: repo, encoding: "utf8", maxBuffer: 64 * 2 ** 20 })
      const [kb, seconds] = (r.stderr.trim().split("\n").at(-1) ?? "").split(" ")
      const maxMB = Number(kb) / 1024
      cliRss.push(maxMB)
      figure(`peak RSS, CLI, ${int(rows)} rows`, `${maxMB.toFixed(0)} MB (exit ${r.status}, ${Number(seconds).toFixed(1)} s)`, `≤ ${TARGETS.rssMB} MB`, r.status === 0 && maxMB <= TARGETS.rssMB)
      fs.rmSync(Path.join(dir, `cli-${rows}`), { recursive: true, force: true })
    }
    line(`    growth from 1,000 to ${int(HEURISTIC_ROWS)} rows: ${(cliRss[1]! - cliRss[0]!).toFixed(0)} MB (${verdict(Math.abs(cliRss[1]! - cliRss[0]!) <= 0.1 * cliRss[0]!)}: flat means within 10%)`)
    line(`  diagnosis: the same runs in-process under tsx (node --import tsx bench/rss-run.ts <rows> <csv>), with memory sampled by phase:`)
    interface RssResult {
      readonly rows: number
      readonly judgments: number
      readonly wallMs: number
      readonly rssBeforeRunMB: number
      readonly peaksByPhase: Readonly<Record<string, { rssMB: number; heapMB: number }>>
      readonly maxRssKB: number
    }
    const rss: Array<RssResult> = []
    for (const [rows, csv] of [[1000, smallCsv], [HEURISTIC_ROWS, bigCsv]] as const) {
      const r = await runJsonScript<RssResult>("./rss-run.ts", [String(rows), csv])
      rss.push(r)
      const maxMB = r.maxRssKB / 1024
      line(`    peak RSS under tsx, ${int(rows)} rows: ${maxMB.toFixed(0)} MB (RSS after loading modules, before the run: ${r.rssBeforeRunMB.toFixed(0)} MB; run ${ms(r.wallMs)})`)
      line(`    sampled peaks by phase (RSS / JS heap used): ${Object.entries(r.peaksByPhase).map(([k, v]) => `${k} ${v.rssMB.toFixed(0)}/${v.heapMB.toFixed(0)} MB`).join(" · ")}`)
    }
    if (process.env.BENCH_DIAG === "1") {
      // Diagnosis: is the growth live memory or garbage V8 has not collected yet? Cap the old space.
      const capMB = 256
      try {
        const r = await runJsonScript<RssResult>("./rss-run.ts", [String(HEURISTIC_ROWS), bigCsv], [`--max-old-space-size=${capMB}`])
        line(`    diagnosis, ${int(HEURISTIC_ROWS)} rows with --max-old-space-size=${capMB}: peak RSS ${(r.maxRssKB / 1024).toFixed(0)} MB, run ${ms(r.wallMs)}; peaks ${Object.entries(r.peaksByPhase).map(([k, v]) => `${k} ${v.rssMB.toFixed(0)}/${v.heapMB.toFixed(0)} MB`).join(" · ")}`)
      } catch (e) {
        line(`    diagnosis, ${int(HEURISTIC_ROWS)} rows with --max-old-space-size=${capMB}: failed (${(e as Error).message.split("\n")[0]})`)
      }
    }
    if (rss.length === 2) {
      const [a, b] = rss as [RssResult, RssResult]
      const growth = (b.maxRssKB - a.maxRssKB) / 1024
      line(`    growth from ${int(a.rows)} to ${int(b.rows)} rows: ${growth >= 0 ? "+" : ""}${growth.toFixed(0)} MB (${verdict(Math.abs(growth) <= 0.1 * (a.maxRssKB / 1024))}: flat means within 10%)`)
    }
    line()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }

  {
    line(`[5] Journal (durable runs)`)
    const jdir = benchTempDir()
    try {
      const j = await journalFigures(jdir, 100_000)
      line(`  journal append, one write per judgment: ${j.appendUs.toFixed(1)} µs per judgment (100,000 appends, ${mb(j.bytes)})`)
      line(`  resume start-up, reading a 100,000-judgment journal into the key map: ${ms(j.resumeMs)} (${int(j.read)} judgments)`)
      line(`  peak RSS of a 100k-case run: see [4]`)
    } finally {
      fs.rmSync(jdir, { recursive: true, force: true })
    }
    line()
  }

  line("Summary")
  for (const f of figures) line(`  ${verdict(f.ok).padEnd(12)} ${f.name}: ${f.value.split(" (")[0]} (target ${f.target})`)
  line(`bench took ${((performance.now() - benchStart) / 1000).toFixed(0)} s; load average at end: ${loadAverage()}`)
}

await main()
