/**
 * The floor for bench [2b] (`npx tsx bench/latency-bare.ts`): a bare node:http keep-alive client —
 * one request alone (the preflight's place), then 32 loops sending 1,200 requests of a judge call's
 * size — against the same fake server in a child process at 100 ms, measured the same way (ideal ÷
 * the server's first request → last response, and where the slots sat idle). Whatever the runner
 * loses beyond this is its own. BENCH_LATENCY_NICE / BENCH_LATENCY_RT as for bench/latency.ts (this
 * process and the server); BENCH_LATENCY_RUNS rounds (default 3).
 */
import { spawnSync } from "node:child_process"
import * as Http from "node:http"
import * as os from "node:os"
import { startChildServer } from "./child.js"
import { priorityFromEnv, slotsOf } from "./latency.js"
import { postJson } from "./transport.js"

const CONCURRENCY = 32
const CALLS = 1_200
const LATENCY_MS = 100
const priority = priorityFromEnv()
const server = await startChildServer(LATENCY_MS)
for (const pid of [server.pid, process.pid]) {
  if (priority?.rt !== undefined) spawnSync("chrt", ["-a", "-p", "-r", String(priority.rt), String(pid)])
  else if (priority?.nice !== undefined) os.setPriority(pid, priority.nice)
}
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
try {
  for (let round = 0; round < Number(process.env.BENCH_LATENCY_RUNS ?? 3); round++) {
    await server.reset()
    const load = os.loadavg()[0]!
    await call()
    let left = CALLS
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (left > 0) {
        left--
        await call()
      }
    }))
    const stats = await server.stats(true)
    const span = stats.lastResponseMs! - stats.firstRequestMs!
    const ideal = (CALLS / CONCURRENCY) * LATENCY_MS + LATENCY_MS
    const s = slotsOf(stats.starts ?? [], stats.finishes ?? [], CONCURRENCY)
    console.log(
      `bare client, round ${round + 1}: ${(ideal / span).toFixed(3)} (span ${
        Math.round(span)
      } ms, ideal ${ideal} ms; load ${load.toFixed(1)})${
        s === undefined ?
          "" :
          `; at most ${s.peak} in flight; first wave out ${
            s.firstWaveMeanMs.toFixed(1)
          } ms after the first reply; a freed slot refilled after ${s.refillMeanMs.toFixed(2)} ms (mean; p50 ${
            s.refillP50Ms.toFixed(2)
          }); wall lost ${s.rampLossMs.toFixed(0)} + ${s.refillLossMs.toFixed(0)} ms`
      }`
    )
  }
} finally {
  agent.destroy()
  await server.close()
}
