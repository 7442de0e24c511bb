/**
 * The floor for bench [2b] (`npx tsx bench/latency-bare.ts`; `npm run bench` prints it beside [2b]):
 * a bare node:http keep-alive client — one request alone (the preflight's place), then 32 loops
 * sending 1,200 requests of a judge call's size — against the same fake server in a child process at
 * 100 ms, measured the same way (ideal ÷ the server's first request → last response, and where the
 * slots sat idle). Whatever the runner loses beyond this is its own; what this loses is the host's
 * (its timers, its scheduling of two processes, the server's own time) — 0.968–0.977 on this 2-core
 * VM on 2026-11-22 and 29, 0.937–0.953 on a slower day (2026-11-29 evening), where no client can
 * show 0.97. BENCH_LATENCY_NICE / BENCH_LATENCY_RT as for bench/latency.ts (this process and the
 * server); BENCH_LATENCY_RUNS rounds (default 3).
 */
import * as Http from "node:http"
import * as os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { type ChildServer, startChildServer } from "./child.js"
import {
  priorityFromEnv,
  schedule,
  type ServerOverhead,
  serverOverheadOf,
  serverText,
  type Slots,
  slotsOf
} from "./latency.js"
import { postJson } from "./transport.js"

const CONCURRENCY = 32
const CALLS = 1_200
const LATENCY_MS = 100

export interface BareRun {
  readonly ratio: number
  readonly spanMs: number
  readonly idealMs: number
  readonly load: number
  readonly slots: Slots | undefined
  readonly server: ServerOverhead | undefined
}

/** `rounds` runs of the bare client against `server` (its latency set to 100 ms here), `calls` after the first. */
export const bareRuns = async (
  server: ChildServer,
  rounds: number,
  calls = CALLS
): Promise<ReadonlyArray<BareRun>> => {
  await server.setLatency(LATENCY_MS)
  const agent = new Http.Agent({ keepAlive: true })
  const body = JSON.stringify({
    model: "fake",
    messages: [
      { role: "system", content: "You grade answers. ".repeat(100) },
      {
        role: "user",
        content: "Question: what?\nAnswer: yes\nReply with the JSON object {\"score\": n, \"reason\": \"…\"}"
      }
    ]
  })
  const call = () => postJson(`${server.url}/chat/completions`, agent, body)
  const runs: Array<BareRun> = []
  try {
    for (let round = 0; round < rounds; round++) {
      await server.reset()
      const load = os.loadavg()[0]!
      await call()
      let left = calls
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        while (left > 0) {
          left--
          await call()
        }
      }))
      const stats = await server.stats(true)
      const spanMs = stats.lastResponseMs! - stats.firstRequestMs!
      const idealMs = (calls / CONCURRENCY) * LATENCY_MS + LATENCY_MS
      runs.push({
        ratio: idealMs / spanMs,
        spanMs,
        idealMs,
        load,
        slots: slotsOf(stats.starts ?? [], stats.finishes ?? [], CONCURRENCY),
        server: serverOverheadOf(stats.services, LATENCY_MS, CONCURRENCY)
      })
    }
  } finally {
    agent.destroy()
  }
  return runs
}

/** One line a run. */
const bareRunLine = (r: BareRun, i: number) => {
  const s = r.slots
  return `bare client, round ${i + 1}: ${r.ratio.toFixed(3)} (span ${
    Math.round(r.spanMs)
  } ms, ideal ${r.idealMs} ms; load ${r.load.toFixed(1)})${
    s === undefined ?
      "" :
      `; at most ${s.peak} in flight; first wave out ${
        s.firstWaveMeanMs.toFixed(1)
      } ms after the first reply; a freed slot refilled after ${s.refillMeanMs.toFixed(2)} ms (mean; p50 ${
        s.refillP50Ms.toFixed(2)
      }); wall lost ${s.rampLossMs.toFixed(0)} + ${s.refillLossMs.toFixed(0)} ms`
  }${serverText(r.server)}`
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const priority = priorityFromEnv()
  const server = await startChildServer(LATENCY_MS)
  for (const pid of [server.pid, process.pid]) schedule(pid, priority)
  try {
    const runs = await bareRuns(server, Number(process.env.BENCH_LATENCY_RUNS ?? 3))
    runs.forEach((r, i) => console.log(bareRunLine(r, i)))
  } finally {
    await server.close()
  }
}
