/**
 * Bench section [8]: reports people look at, at 100k rows. The rag-answers pipeline with the
 * heuristic judge on generated rows, in-process (under tsx), writing report.md and report.html:
 * the time each report takes and its size (report.md is bounded by --details; the HTML case table
 * is sampled past 2,000 cases). And the CLI's start-up, `node dist/bin.js --help`, which must not
 * load the charting library (vega is in its own chunk, loaded only by --format html).
 *
 * Alone: `npx tsx bench/html-report.ts [rows]`; `npm run bench` runs it as section [8].
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { html, markdown } from "../src/report/Reporter.js"
import { benchTempDir, writeCsv } from "./gen.js"
import { heuristicJudgeLayer, loadRagAnswers, timedRun } from "./harness.js"

const repo = fileURLToPath(new URL("..", import.meta.url))

export interface HtmlReportFigures {
  readonly rows: number
  readonly markdownMs: number
  readonly htmlMs: number
  readonly markdownBytes: number
  readonly htmlBytes: number
  /** Median of `helpRuns` runs of `node dist/bin.js --help`, ms. */
  readonly helpMs: number
  readonly helpRuns: number
  /** Size of the chunk holding vega / vega-lite, loaded only with --format html. */
  readonly htmlChunkBytes: number
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export const htmlReportFigures = async (rows: number): Promise<HtmlReportFigures> => {
  const dir = benchTempDir()
  try {
    const csv = Path.join(dir, "html.csv")
    writeCsv(csv, rows, 11)
    const pipeline = await loadRagAnswers()
    const run = await timedRun(pipeline, heuristicJudgeLayer, {
      input: csv,
      outRoot: Path.join(dir, "out"),
      concurrency: 8,
      reporters: [markdown, html]
    })
    const byFormat = (f: string) => run.phases.reportsByFormat.find((x) => x.format === f)?.ms ?? NaN
    const runDir = run.outcome.info.runDir
    const helpTimes: Array<number> = []
    const helpRuns = 11
    for (let i = 0; i < helpRuns; i++) {
      const t = performance.now()
      spawnSync(process.execPath, [Path.join(repo, "dist", "bin.js"), "--help"], { stdio: "ignore" })
      helpTimes.push(performance.now() - t)
    }
    const chunks = Path.join(repo, "dist", "chunks")
    const htmlChunk = fs.readdirSync(chunks).find((f) => /^Html-.*\.js$/.test(f))
    return {
      rows,
      markdownMs: byFormat("markdown"),
      htmlMs: byFormat("html"),
      markdownBytes: fs.statSync(Path.join(runDir, "report.md")).size,
      htmlBytes: fs.statSync(Path.join(runDir, "report.html")).size,
      helpMs: median(helpTimes),
      helpRuns,
      htmlChunkBytes: htmlChunk === undefined ? 0 : fs.statSync(Path.join(chunks, htmlChunk)).size
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === Path.resolve(process.argv[1])) {
  const rows = Number(process.argv[2] ?? 100_000)
  const f = await htmlReportFigures(rows)
  console.log(JSON.stringify(f, null, 2))
}
