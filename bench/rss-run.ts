/**
 * Peak RSS of one heuristic rag-answers run in a fresh process (bench/run.ts spawns it per size):
 *
 *   node --import tsx bench/rss-run.ts <rows> [input.csv]
 *
 * Without an input path it generates `<rows>` rows into a temp dir first (streamed, before the
 * run). Runs the real runner in-process (HeuristicJudge.layer, markdown + csv reporters, file
 * journal, silent progress), samples memory every 50 ms to attribute the peak to a phase, and
 * prints one JSON line: rows, judgments, wall time, phases, process.resourceUsage().maxRSS (KB).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { benchTempDir, writeCsv } from "./gen.js"
import { heuristicJudgeLayer, loadRagAnswers, timedRun } from "./harness.js"

const rows = Number(process.argv[2])
if (!Number.isInteger(rows) || rows < 1) {
  console.error("usage: rss-run.ts <rows> [input.csv]")
  process.exit(2)
}
const dir = benchTempDir()
let input = process.argv[3]
if (input === undefined) {
  input = Path.join(dir, `rows-${rows}.csv`)
  writeCsv(input, rows)
}
const pipeline = await loadRagAnswers()
const rssBeforeRun = process.memoryUsage().rss

const samples: Array<{ t: number; rss: number; heap: number; external: number }> = []
const sample = () => {
  const m = process.memoryUsage()
  samples.push({ t: performance.now(), rss: m.rss, heap: m.heapUsed, external: m.external + m.arrayBuffers })
}
const timer = setInterval(sample, 50)
const result = await timedRun(pipeline, heuristicJudgeLayer, { input, outRoot: Path.join(dir, "out"), concurrency: 8 })
clearInterval(timer)
sample()

const { marks, startMs } = result
const phaseOf = (t: number) => {
  const r = t - startMs
  if (r < marks.firstJudgeCall) return "validation"
  if (r < marks.lastVerdict) return "judging"
  if (r < marks.reportStart) return "tail"
  if (r < marks.reportEnd) return "reports"
  return "finish"
}
const peaks: Record<string, { rssMB: number; heapMB: number }> = {}
for (const s of samples) {
  const p = (peaks[phaseOf(s.t)] ??= { rssMB: 0, heapMB: 0 })
  p.rssMB = Math.max(p.rssMB, s.rss / 2 ** 20)
  p.heapMB = Math.max(p.heapMB, s.heap / 2 ** 20)
}
fs.rmSync(dir, { recursive: true, force: true })
console.log(JSON.stringify({
  rows,
  judgments: result.outcome.judgments.total,
  wallMs: result.wallMs,
  phases: result.phases,
  rssBeforeRunMB: rssBeforeRun / 2 ** 20,
  peaksByPhase: peaks,
  maxRssKB: process.resourceUsage().maxRSS
}))
