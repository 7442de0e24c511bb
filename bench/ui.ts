/**
 * Bench [17]: the browser review (`rag-eval ui`) on a 100,000-case run beside a 100-case one. Two
 * rag-answers runs of 100,000 generated rows (heuristic judge, through the CLI) and one of 100 rows;
 * then `node dist/bin.js ui` as users start it, one server per output root, asked over HTTP as the
 * page asks: open the run (its index is built), the first page of cases (lowest composite first), a
 * case (the journal's index is built), another case, a text search over every record, a label, the
 * agreement, and compare of the two 100,000-case runs. Times are wall milliseconds of each request;
 * memory is the server's peak RSS (VmHWM) after all of it. `npx tsx bench/ui.ts` runs it alone;
 * BENCH_UI_CASES sets the large size (default 100000); BENCH_UI_DIR keeps the generated runs there for the
 * next invocation.
 */
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { benchTempDir, writeCsv } from "./gen.js"
import { consolePrinter, isMain, type Printer } from "./timed.js"

const repo = fileURLToPath(new URL("..", import.meta.url))
const bin = Path.join(repo, "dist", "bin.js")

export const TARGETS = {
  /** The issue's: a 100,000-case run opens (index, first page) in under 2 s. */
  openMs: 2_000,
  /** A case opened (the first one builds the journal's index). */
  caseMs: 2_000,
  /** Peak RSS of the server on the 100,000-case runs, beyond the 100-case one's: the index, not the files. */
  growthMB: 100
}

const runCli = (csv: string, out: string): string => {
  const r = spawnSync(process.execPath, [bin, "run", "rag-answers", "--csv", csv, "--out", out], {
    cwd: repo,
    encoding: "utf8",
    maxBuffer: 64 * 2 ** 20
  })
  if (r.status !== 0) throw new Error(`rag-eval run failed (${r.status}): ${r.stderr.slice(-500)}`)
  return /^run: (.+)$/m.exec(r.stdout)![1]!.trim()
}

const request = (
  port: number,
  path: string,
  body?: unknown
): Promise<{ readonly status: number; readonly json: any; readonly ms: number }> =>
  new Promise((resolve, reject) => {
    const start = performance.now()
    const req = Http.request({
      host: "127.0.0.1",
      port,
      path,
      method: body === undefined ? "GET" : "POST",
      headers: body === undefined ? {} : { "content-type": "application/json", "x-requested-by": "rag-eval" }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        resolve({
          status: res.statusCode ?? 0,
          json: text === "" ? undefined : JSON.parse(text),
          ms: performance.now() - start
        })
      })
    })
    req.on("error", reject)
    if (body !== undefined) req.write(JSON.stringify(body))
    req.end()
  })

const memoryOf = (pid: number): { readonly rssMB: number; readonly peakMB: number } => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0)
  return { rssMB: kb("VmRSS") / 1024, peakMB: kb("VmHWM") / 1024 }
}

interface ServerFigures {
  readonly startMB: number
  readonly openMs: number
  readonly pageMs: number
  readonly caseMs: number
  readonly nextCaseMs: number
  readonly searchMs: number
  readonly labelMs: number
  readonly agreementMs: number
  readonly compareMs: number | undefined
  /** Until compare's tests of every metric are in. */
  readonly compareDoneMs: number | undefined
  readonly settledMs: number
  readonly peakMB: number
  readonly rssMB: number
}

const measure = async (out: string, runs: ReadonlyArray<string>): Promise<ServerFigures> => {
  const child = spawn(process.execPath, [bin, "ui", "--out", out, "--listen", "127.0.0.1:0"], {
    stdio: ["ignore", "pipe", "pipe"]
  })
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let text = ""
      child.stdout.on("data", (d: Buffer) => {
        text += d.toString()
        const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(text)
        if (m !== null) resolve(Number(m[1]))
      })
      child.on("exit", (code) => reject(new Error(`rag-eval ui exited with ${code}`)))
    })
    const pid = child.pid!
    const startMB = memoryOf(pid).rssMB
    const [a, b] = runs.map((r) => Path.basename(r))
    const opened = performance.now()
    const open = await request(port, `/api/runs/${a}`)
    const page = await request(port, `/api/runs/${a}/cases?limit=50&sort=composite&order=asc`)
    const first = page.json.rows[0].caseId as string
    const second = page.json.rows[1].caseId as string
    const one = await request(port, `/api/runs/${a}/cases/${encodeURIComponent(first)}`)
    const two = await request(port, `/api/runs/${a}/cases/${encodeURIComponent(second)}`)
    const search = await request(port, `/api/runs/${a}/cases?q=${encodeURIComponent("heat pump")}&limit=50`)
    const label = await request(port, `/api/runs/${a}/labels`, {
      caseId: first,
      target: { kind: "grade", criterion: "rag-answers/clarity" },
      label: { grade: 2 }
    })
    if (label.status !== 201) throw new Error(`label: ${label.status} ${JSON.stringify(label.json)}`)
    const agreement = await request(port, `/api/runs/${a}/agreement`)
    // The background pass (journal, verdicts, headline intervals): until the list shows the intervals.
    for (;;) {
      const list = await request(port, `/api/runs?q=${a}`)
      if (list.json.runs[0]?.metrics.some((m: any) => m.ci !== null)) break
      await new Promise((r) => setTimeout(r, 100))
    }
    const settledMs = performance.now() - opened
    let compare: { readonly ms: number } | undefined
    let compareDoneMs: number | undefined
    if (b !== undefined) {
      const compareStart = performance.now()
      compare = await request(port, `/api/compare?a=${a}&b=${b}&limit=50`)
      // compare's own tests take about n × 10,000 draws per metric (minutes at 100,000 cases): waited
      // for only with BENCH_UI_COMPARE_ALL=1.
      for (; process.env["BENCH_UI_COMPARE_ALL"] === "1";) {
        const c = await request(port, `/api/compare?a=${a}&b=${b}&limit=1`)
        if (c.json.pending.length === 0) break
        await new Promise((r) => setTimeout(r, 500))
      }
      if (process.env["BENCH_UI_COMPARE_ALL"] === "1") compareDoneMs = performance.now() - compareStart
    }
    const memory = memoryOf(pid)
    return {
      startMB,
      openMs: open.ms,
      pageMs: page.ms,
      caseMs: one.ms,
      nextCaseMs: two.ms,
      searchMs: search.ms,
      labelMs: label.ms,
      agreementMs: agreement.ms,
      compareMs: compare?.ms,
      compareDoneMs,
      settledMs,
      peakMB: memory.peakMB,
      rssMB: memory.rssMB
    }
  } finally {
    child.kill("SIGTERM")
  }
}

const int = (n: number) => n.toLocaleString("en-US")
const ms = (x: number) => `${int(Math.round(x))} ms`

export const printUiFigures = async (printer: Printer, large = Number(process.env["BENCH_UI_CASES"] ?? 100_000)) => {
  const keep = process.env["BENCH_UI_DIR"]
  const dir = keep ?? benchTempDir()
  if (keep !== undefined) fs.mkdirSync(keep, { recursive: true })
  try {
    const small = Path.join(dir, "small")
    const big = Path.join(dir, "big")
    const csv = (n: number, seed: number) => {
      const file = Path.join(dir, `rows-${n}-${seed}.csv`)
      writeCsv(file, n, seed)
      return file
    }
    const t0 = performance.now()
    // BENCH_UI_DIR keeps the runs between invocations (made once, then reused).
    const made = (root: string) =>
      fs.existsSync(Path.join(root, "rag-answers"))
        ? fs.readdirSync(Path.join(root, "rag-answers")).sort().map((d) => Path.join(root, "rag-answers", d))
        : []
    const smallRun = made(small)[0] ?? runCli(csv(100, 1), small)
    const [bigA, bigB] = made(big).length === 2
      ? made(big) as [string, string]
      : [runCli(csv(large, 1), big), runCli(csv(large, 2), big)]
    const sizeMB = (["records-iteration-1.jsonl", "case-metrics-iteration-1.jsonl", "judgments.jsonl"] as const)
      .reduce((sum, f) => sum + fs.statSync(Path.join(bigA, f)).size, 0) / 2 ** 20
    printer.line(
      `    runs made in ${((performance.now() - t0) / 1000).toFixed(0)} s; the ${
        int(large)
      }-case run's records, case metrics and journal: ${sizeMB.toFixed(0)} MB`
    )
    const s = await measure(small, [smallRun])
    const l = await measure(big, [bigA, bigB])
    for (const [name, f] of [["100 cases", s], [`${int(large)} cases`, l]] as const) {
      printer.line(
        `    ${name}: open ${ms(f.openMs)}, first page ${ms(f.pageMs)}, a case ${ms(f.caseMs)} (next ${
          ms(f.nextCaseMs)
        }), search ${ms(f.searchMs)}, label ${ms(f.labelMs)}, agreement ${ms(f.agreementMs)}${
          f.compareMs === undefined
            ? ""
            : `, compare ${ms(f.compareMs)}${
              f.compareDoneMs === undefined ? "" : ` (every metric tested after ${ms(f.compareDoneMs)})`
            }`
        }; journal, verdicts and intervals ready ${ms(f.settledMs)} after the open; RSS ${
          f.startMB.toFixed(0)
        } MB at start, ${f.rssMB.toFixed(0)} MB after, peak ${f.peakMB.toFixed(0)} MB`
      )
    }
    printer.figure(
      `rag-eval ui: a ${int(large)}-case run opened (index) and its first page`,
      `${ms(l.openMs + l.pageMs)} (100 cases: ${ms(s.openMs + s.pageMs)})`,
      `< ${ms(TARGETS.openMs)}`,
      l.openMs + l.pageMs < TARGETS.openMs
    )
    printer.figure(
      `rag-eval ui: a case of the ${int(large)}-case run, the first (journal indexed)`,
      `${ms(l.caseMs)} (then ${ms(l.nextCaseMs)})`,
      `< ${ms(TARGETS.caseMs)}`,
      l.caseMs < TARGETS.caseMs
    )
    const growth = l.peakMB - s.peakMB
    printer.figure(
      `rag-eval ui: server peak RSS, 100 → ${int(large)} cases (two runs of ${sizeMB.toFixed(0)} MB of files each)`,
      `${s.peakMB.toFixed(0)} → ${l.peakMB.toFixed(0)} MB (+${growth.toFixed(0)} MB)`,
      `≤ +${TARGETS.growthMB} MB`,
      growth <= TARGETS.growthMB
    )
  } finally {
    if (keep === undefined) fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (isMain(import.meta.url)) await printUiFigures(consolePrinter)
