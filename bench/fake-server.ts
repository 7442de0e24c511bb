/**
 * The fake OpenAI-compatible server (test/support/FakeOpenAi.ts) in its own process, so its CPU
 * does not compete with the runner's event loop. Started by bench/run.ts with an IPC channel:
 *
 *   node --import tsx bench/fake-server.ts [latencyMs]
 *
 * prints `{"url": …}` as one line on stdout once listening, then answers IPC messages:
 *   { cmd: "set", latencyMs, limit? } → change the reply latency (and the token-bucket rate limit:
 *                                  FakeRateLimit, or null for none)
 *   { cmd: "reset" }           → zero the counters and the first/last timestamps
 *   { cmd: "stats" }           → { calls, limited, firstRequestMs, lastResponseMs, cpuMs } (epoch ms, fractional),
 *                                  inFlight (per 100 ms), requestStarts (the first 100 requests' arrivals, ms after the first)
 *   { cmd: "stats", timeline: true } → also `starts` and `finishes`: every request start and response
 *                                  finish since the reset (epoch ms, in order), and `services`: each response's
 *                                  finish minus its own request's start (ms, in finish order)
 *
 * Timestamps are taken at the server through node:http's diagnostics channels: the first
 * `http.server.request.start` and the last `http.server.response.finish` since the last reset.
 */
import * as diagnostics from "node:diagnostics_channel"
import { performance } from "node:perf_hooks"
import * as FakeOpenAi from "../test/support/FakeOpenAi.js"

const now = () => performance.timeOrigin + performance.now()

let first: number | undefined
let last: number | undefined
let requests = 0
let responses = 0
let cpu = process.cpuUsage()
/** Request starts (+1) and response finishes (−1), in order: how many requests were in flight when. */
let events: Array<readonly [number, 1 | -1]> = []

/** Each request's start, by its response object: a response's service time is its finish minus that. */
const startedAt = new WeakMap<object, number>()
/** Every response's service time (finish − start, ms) since the last reset. */
let services: Array<number> = []

diagnostics.subscribe("http.server.request.start", (message) => {
  requests++
  const t = now()
  if (first === undefined) first = t
  events.push([t, 1])
  startedAt.set((message as { response: object }).response, t)
})
diagnostics.subscribe("http.server.response.finish", (message) => {
  responses++
  last = now()
  events.push([last, -1])
  const started = startedAt.get((message as { response: object }).response)
  if (started !== undefined) services.push(last - started)
})

const latencyMs = Number(process.argv[2] ?? "0")
const fake = await FakeOpenAi.start({ latencyMs, record: false })

process.on(
  "message",
  (
    message: {
      cmd: string
      latencyMs?: number
      limit?: FakeOpenAi.FakeRateLimit | null
      id?: number
      timeline?: boolean
    }
  ) => {
    switch (message.cmd) {
      case "set":
        fake.setBehaviour({
          latencyMs: message.latencyMs ?? 0,
          ...(message.limit === undefined ? {} : { limit: message.limit ?? undefined })
        })
        process.send?.({ id: message.id, ok: true })
        break
      case "reset":
        fake.reset()
        first = undefined
        last = undefined
        requests = 0
        responses = 0
        events = []
        services = []
        cpu = process.cpuUsage()
        process.send?.({ id: message.id, ok: true })
        break
      case "stats": {
        const used = process.cpuUsage(cpu)
        process.send?.({
          id: message.id,
          calls: fake.calls,
          limited: fake.limited,
          requests,
          responses,
          firstRequestMs: first,
          lastResponseMs: last,
          cpuMs: (used.user + used.system) / 1000,
          inFlight: inFlightSeries(100),
          ...(message.timeline === true ?
            {
              starts: events.filter(([, d]) => d === 1).map(([t]) => t),
              finishes: events.filter(([, d]) => d === -1).map(([t]) => t),
              services
            } :
            {}),
          requestStarts: requestStarts(100)
        })
        break
      }
    }
  }
)
/** When the first `n` requests reached the server (ms after the first): how a first wave arrived. */
const requestStarts = (n: number): ReadonlyArray<number> =>
  events.filter(([, d]) => d === 1).slice(0, n).map(([t]) => Math.round((t - first!) * 10) / 10)

/** The mean number of requests in flight in each `stepMs` window from the first request to the last response. */
const inFlightSeries = (stepMs: number): ReadonlyArray<number> => {
  if (first === undefined || last === undefined) return []
  const windows = new Array<number>(Math.ceil((last - first) / stepMs) + 1).fill(0)
  let level = 0
  let at = first
  const spread = (from: number, to: number) => {
    for (let t = from; t < to;) {
      const w = Math.floor((t - first!) / stepMs)
      const end = Math.min(to, first! + (w + 1) * stepMs)
      windows[w]! += (level * (end - t)) / stepMs
      t = end
    }
  }
  for (const [t, d] of events) {
    spread(at, t)
    level += d
    at = t
  }
  return windows.map((x) => Math.round(x * 10) / 10)
}

process.on("disconnect", () => {
  void fake.close().then(() => process.exit(0))
})

process.stdout.write(JSON.stringify({ url: fake.url, pid: process.pid }) + "\n")
