/**
 * Bench [18]: `rag-eval compare` of two large runs, through the installed CLI under GNU time — wall
 * time, CPU and peak RSS. The runs are written here (seeded): a manifest and a case-metrics file each,
 * 18 per-case metrics; B keeps A's value on most cases (as a change to one stage does), five metrics
 * on every case. Two sizes: every metric over BENCH_COMPARE_CASES (default 100,000) paired cases, and
 * one metric over BENCH_COMPARE_LOAD_CASES (default 1,000,000; 0 skips it), where what is measured is
 * holding both runs. `npx tsx bench/compare.ts` runs it alone.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { manifestText } from "../test/support/RunFiles.js"
import { prng } from "./gen.js"
import { consolePrinter, isMain, type Printer, timedCli } from "./timed.js"

export const TARGETS = {
  /** Every metric of two 100,000-case runs compared within this many seconds (2-core machine). */
  seconds: 180,
  /** Two runs of a million cases held within this peak RSS. */
  loadPeakMB: 1024
}

const METRICS = Array.from({ length: 18 }, (_, k) => `m${k + 1}`)
/** The share of cases on which B differs from A, per metric: five never, the others 1%–60%. */
const changed = METRICS.map((_, k) => (k < 5 ? 0 : [0.01, 0.05, 0.1, 0.3, 0.6][k % 5]!))

const writeRun = (root: string, name: string, n: number, seed: number, candidate: boolean) => {
  const dir = Path.join(root, name, "answer-correctness", name)
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(
    Path.join(dir, "manifest.json"),
    manifestText({
      runId: name,
      pipeline: { name: "answer-correctness" },
      caseMetricSpecs: METRICS.map((m) => ({
        name: m,
        description: m,
        min: 0,
        max: 1,
        direction: "higher" as const,
        unit: "fraction" as const
      }))
    })
  )
  // The same stream for both runs, so A's values are B's wherever B keeps them.
  const random = prng(seed)
  const fd = fs.openSync(Path.join(dir, "case-metrics-iteration-1.jsonl"), "w")
  let lines: Array<string> = []
  for (let i = 0; i < n; i++) {
    const metrics: Record<string, number> = {}
    METRICS.forEach((m, k) => {
      const a = Math.round(random() * 100) / 100
      const moved = random() < changed[k]!
      const delta = Math.round((random() - 0.45) * 20) / 100
      metrics[m] = candidate && moved ? Math.min(1, Math.max(0, a + delta)) : a
    })
    lines.push(JSON.stringify({ caseId: `c${i + 1}`, line: i + 2, iteration: 1, metrics, failed: false }))
    if (lines.length === 1000) {
      fs.writeSync(fd, lines.join("\n") + "\n")
      lines = []
    }
  }
  if (lines.length > 0) fs.writeSync(fd, lines.join("\n") + "\n")
  fs.closeSync(fd)
  return dir
}

const timedCompare = (a: string, b: string, extra: ReadonlyArray<string>) => {
  const r = timedCli(["compare", a, b, ...extra])
  return {
    ...r,
    cpuSeconds: r.userSeconds + r.systemSeconds,
    metrics: r.stdout.split("\n").filter((l) => /^- .* on m\d+/.test(l)).length
  }
}

const int = (n: number) => n.toLocaleString("en-US")

export const printCompareFigures = (
  printer: Printer,
  cases = Number(process.env["BENCH_COMPARE_CASES"] ?? 100_000),
  loadCases = Number(process.env["BENCH_COMPARE_LOAD_CASES"] ?? 1_000_000)
) => {
  const root = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-compare-"))
  try {
    const load = os.loadavg()[0]!
    const all = timedCompare(writeRun(root, "a", cases, 7, false), writeRun(root, "b", cases, 7, true), [])
    printer.line(
      `    ${int(cases)} cases, ${all.metrics} metrics: ${all.seconds.toFixed(1)} s wall, ${
        all.cpuSeconds.toFixed(1)
      } CPU-s, peak RSS ${all.peakMB.toFixed(0)} MB (exit ${all.status}; load average ${load.toFixed(1)})`
    )
    printer.figure(
      `compare, every metric of two ${int(cases)}-case runs`,
      `${all.seconds.toFixed(1)} s`,
      `≤ ${TARGETS.seconds} s`,
      all.status === 0 && all.metrics === METRICS.length && all.seconds <= TARGETS.seconds
    )
    if (loadCases > 0) {
      fs.rmSync(Path.join(root, "a"), { recursive: true, force: true })
      fs.rmSync(Path.join(root, "b"), { recursive: true, force: true })
      const held = timedCompare(
        writeRun(root, "a", loadCases, 8, false),
        writeRun(root, "b", loadCases, 8, true),
        ["--metrics", "m1"]
      )
      printer.line(
        `    ${int(loadCases)} cases, one metric: ${held.seconds.toFixed(1)} s wall, ${
          held.cpuSeconds.toFixed(1)
        } CPU-s, peak RSS ${held.peakMB.toFixed(0)} MB (exit ${held.status})`
      )
      printer.figure(
        `compare, two ${int(loadCases)}-case runs held (one metric tested): peak RSS`,
        `${held.peakMB.toFixed(0)} MB`,
        `≤ ${int(TARGETS.loadPeakMB)} MB`,
        held.status === 0 && held.peakMB <= TARGETS.loadPeakMB
      )
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

if (isMain(import.meta.url)) printCompareFigures(consolePrinter)
