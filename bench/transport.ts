/**
 * Where an LLM judgment's time goes, layer by layer, against the same fake server at 0 ms latency
 * and 32 calls in flight: node:http (keep-alive agent) → fetch (undici) → openai SDK →
 * `OpenAiProvider.complete` (Effect) → `LlmJudge.judge` (render, RateGate, retry, decode), plus two
 * what-ifs measured with bench-only parts: the SDK over a node:http fetch (bench/http-fetch.ts) and
 * the judge behind a FIFO gate (bench/gate.ts).
 * Each level reports calls/s and the client process's CPU per call; the difference between two
 * levels is what the upper one adds.
 */
import { Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as Http from "node:http"
import { performance } from "node:perf_hooks"
import OpenAI from "openai"
import type { EvalCase } from "../src/domain/Case.js"
import type { JudgeTask } from "../src/domain/Judgment.js"
import type { Rubric } from "../src/domain/Rubric.js"
import { Judge } from "../src/judges/Judge.js"
import { answerSchema, defaultPromptsDir, parseRubric, render } from "../src/judges/Prompt.js"
import { splitFragments, unescapeNewlines } from "../src/load/Fragments.js"
import { answerVars } from "../src/pipeline/Stages.js"
import { type ChatRequest, LlmProvider, ProviderError } from "../src/providers/LlmProvider.js"
import * as LlmJudge from "../src/judges/LlmJudge.js"
import * as OpenAiProvider from "../src/providers/OpenAiProvider.js"
import { fifoRateGateLayer } from "./gate.js"
import { rowGenerator } from "./gen.js"
import { llmJudgeLayer } from "./harness.js"
import { makeNodeHttpFetch } from "./http-fetch.js"

export const RUBRICS = ["answer-relevance", "clarity", "completeness", "conciseness", "groundedness", "harmfulness"]
  .map((n) => `rag-answers/${n}`)

export const loadRubrics = (): Promise<ReadonlyArray<Rubric>> =>
  Effect.runPromise(Effect.forEach(RUBRICS, (id) => {
    const path = `${defaultPromptsDir}${id}.json`
    return parseRubric(fs.readFileSync(path, "utf8"), path)
  }))

/** `n` judge tasks over generated rows (six rubrics per row), as the runner would build them. */
export const makeTasks = (rubrics: ReadonlyArray<Rubric>, n: number): Array<JudgeTask> => {
  const next = rowGenerator(7)
  const tasks: Array<JudgeTask> = []
  for (let ordinal = 0; tasks.length < n; ordinal++) {
    const row = next()
    const c: EvalCase = {
      id: String(ordinal + 1),
      ordinal,
      line: ordinal + 2,
      question: row["Current User Question"]!,
      answer: row["Assistant Answer"]!,
      history: unescapeNewlines(row["Conversation History"]!).trim() || undefined,
      passages: splitFragments(row["Fragment Texts"]!).map((text, i) => ({ id: String(i + 1), rank: i + 1, text })),
      source: row
    }
    const vars = answerVars(c)
    for (const rubric of rubrics) {
      if (tasks.length < n) tasks.push({ pipeline: "rag-answers", caseId: c.id, ordinal, iteration: 1, rubric, target: "answer", vars })
    }
  }
  return tasks
}

/** The chat-completions body the provider sends for a request (same shape as OpenAiProvider's `body`). */
const chatBody = (request: ChatRequest) => ({
  model: "fake-judge",
  messages: [
    { role: "system" as const, content: request.system },
    { role: "user" as const, content: request.user }
  ],
  response_format: {
    type: "json_schema" as const,
    json_schema: { name: request.schema.name, schema: { ...request.schema.schema }, strict: true }
  }
})

export interface LevelResult {
  readonly level: string
  readonly calls: number
  readonly wallMs: number
  readonly perSecond: number
  /** Client process CPU per call (user + system), ms. */
  readonly cpuMsPerCall: number
}

const measure = async (level: string, calls: number, body: () => Promise<void>): Promise<LevelResult> => {
  const cpu = process.cpuUsage()
  const start = performance.now()
  await body()
  const wallMs = performance.now() - start
  const used = process.cpuUsage(cpu)
  return { level, calls, wallMs, perSecond: (calls * 1000) / wallMs, cpuMsPerCall: (used.user + used.system) / 1000 / calls }
}

/** `calls` promise-returning calls, `concurrency` at a time. */
const pool = async (calls: number, concurrency: number, call: (i: number) => Promise<unknown>) => {
  let next = 0
  const worker = async () => {
    while (next < calls) await call(next++)
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

/**
 * A bench-only provider with the changes recommended for OpenAiProvider.complete: the request's
 * timeout is an `AbortSignal.timeout` joined to Effect's interruption signal (it also covers a
 * stalled body, since the SDK reads the body under the same signal) instead of a forked
 * `Effect.timeoutFail` per call; optionally the SDK's transport is node:http (bench/http-fetch.ts).
 * Errors are not classified (the fake server answers 200 here).
 */
export const leanProvider = (baseURL: string, options: { readonly nodeHttp: boolean; readonly timeoutMs?: number }) => {
  const transport = options.nodeHttp ? makeNodeHttpFetch({ maxSockets: 64 }) : undefined
  const timeoutMs = options.timeoutMs ?? 60_000
  const client = new OpenAI({
    apiKey: "bench",
    baseURL,
    maxRetries: 0,
    timeout: timeoutMs,
    organization: null,
    project: null,
    logLevel: "off",
    ...(transport === undefined ? {} : { fetch: transport.fetch })
  })
  const provider = LlmProvider.of({
    provider: "openai-compatible",
    model: "fake-judge",
    params: {},
    complete: (request) =>
      Effect.tryPromise({
        try: (signal) =>
          client.chat.completions.create(chatBody(request), { signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs + 1_000)]) }),
        catch: (e) => new ProviderError({ kind: "server", detail: e instanceof Error ? e.message : String(e) })
      }).pipe(Effect.map((completion) => {
        const message = completion.choices[0]?.message
        return {
          text: message?.content ?? message?.refusal ?? "",
          usage: { inputTokens: completion.usage?.prompt_tokens ?? 0, outputTokens: completion.usage?.completion_tokens ?? 0 }
        }
      }))
  })
  return { provider, close: () => transport?.close() }
}

const providerLayer = (baseURL: string) =>
  OpenAiProvider.layer({ provider: "openai-compatible", model: "fake-judge", baseURL, apiKey: Redacted.make("bench"), timeoutMs: 60_000 })

export const transportLadder = async (
  baseURL: string,
  options: { readonly calls: number; readonly concurrency: number; readonly herdCalls: number }
): Promise<Array<LevelResult>> => {
  const { calls, concurrency } = options
  const rubrics = await loadRubrics()
  const tasks = makeTasks(rubrics, calls)
  const bodies = tasks.map((t) => JSON.stringify(chatBody({ ...render(t.rubric, t.vars), schema: answerSchema(t.rubric) })))
  const url = new URL(`${baseURL}/chat/completions`)
  const results: Array<LevelResult> = []

  // 1. node:http with a keep-alive agent: the floor for Node's HTTP client.
  const agent = new Http.Agent({ keepAlive: true, maxSockets: concurrency })
  const httpPost = (body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = Http.request(url, {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: "Bearer bench" }
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => {
          JSON.parse(Buffer.concat(chunks).toString("utf8"))
          resolve()
        })
        res.on("error", reject)
      })
      req.on("error", reject)
      req.end(body)
    })
  await pool(200, concurrency, (i) => httpPost(bodies[i % bodies.length]!))
  results.push(await measure("node:http keep-alive", calls, () => pool(calls, concurrency, (i) => httpPost(bodies[i]!))))
  agent.destroy()

  // 2. fetch (undici, as the SDK uses it).
  const fetchPost = async (body: string) => {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer bench" }, body })
    await res.json()
  }
  await pool(200, concurrency, (i) => fetchPost(bodies[i % bodies.length]!))
  results.push(await measure("fetch (undici)", calls, () => pool(calls, concurrency, (i) => fetchPost(bodies[i]!))))

  // 3. The openai SDK, configured as OpenAiProvider configures it.
  const client = new OpenAI({ apiKey: "bench", baseURL, maxRetries: 0, timeout: 60_000, organization: null, project: null, logLevel: "off" })
  const parsedBodies = bodies.map((b) => JSON.parse(b))
  await pool(200, concurrency, (i) => client.chat.completions.create(parsedBodies[i % parsedBodies.length]))
  results.push(await measure("openai SDK create()", calls, () => pool(calls, concurrency, (i) => client.chat.completions.create(parsedBodies[i]))))

  // 3b. The same SDK with its transport swapped for node:http (the fix recommended for OpenAiProvider).
  const nodeFetch = makeNodeHttpFetch({ maxSockets: concurrency })
  const fastClient = new OpenAI({ apiKey: "bench", baseURL, maxRetries: 0, timeout: 60_000, organization: null, project: null, logLevel: "off", fetch: nodeFetch.fetch })
  await pool(200, concurrency, (i) => fastClient.chat.completions.create(parsedBodies[i % parsedBodies.length]))
  results.push(await measure("openai SDK, fetch = node:http", calls, () => pool(calls, concurrency, (i) => fastClient.chat.completions.create(parsedBodies[i]))))
  nodeFetch.close()

  // 4. OpenAiProvider.complete (Effect over the SDK: tryPromise with an AbortSignal + timeoutFail).
  const provider = await Effect.runPromise(OpenAiProvider.make({
    provider: "openai-compatible",
    model: "fake-judge",
    baseURL,
    apiKey: Redacted.make("bench"),
    timeoutMs: 60_000
  }))
  const requests: Array<ChatRequest> = tasks.map((t) => ({ ...render(t.rubric, t.vars), schema: answerSchema(t.rubric) }))
  const viaProvider = (p: LlmProvider["Type"], n: number) =>
    Effect.runPromise(Effect.forEach(requests.slice(0, n), (r) => p.complete(r), { concurrency, discard: true }))
  await viaProvider(provider, 200)
  results.push(await measure("OpenAiProvider.complete", calls, () => viaProvider(provider, calls)))
  // 4b. The provider minus its per-call Effect.timeoutFail (timeout via AbortSignal.timeout instead).
  const sdkOnly = leanProvider(baseURL, { nodeHttp: false })
  await viaProvider(sdkOnly.provider, 200)
  results.push(await measure("  same, AbortSignal.timeout, no timeoutFail", calls, () => viaProvider(sdkOnly.provider, calls)))
  sdkOnly.close()

  // 5. LlmJudge.judge: render + RateGate(concurrency) + retry/repair wrappers + decode.
  const judge = await Effect.runPromise(Effect.provide(Judge, llmJudgeLayer(baseURL, concurrency) as Layer.Layer<Judge>))
  const viaJudge = (j: Judge["Type"], n: number, fibers: number | "unbounded") =>
    Effect.runPromise(Effect.forEach(tasks.slice(0, n), (t) => j.judge(t), { concurrency: fibers, discard: true }))
  await viaJudge(judge, 200, concurrency)
  results.push(await measure(`LlmJudge.judge, ${concurrency} fibers`, calls, () => viaJudge(judge, calls, concurrency)))
  // The runner keeps 2 × concurrency cases × 6 judgments in flight, most of them waiting for a
  // permit of an Effect semaphore. Fewer calls here: this level is slow.
  const waiting = concurrency * 12
  const herdCalls = Math.min(calls, options.herdCalls)
  results.push(await measure(`LlmJudge.judge, ${waiting} fibers`, herdCalls, () => viaJudge(judge, herdCalls, waiting)))
  // Same, with RateGate replaced by the bench's FIFO semaphore (one wake-up per release).
  const fifoJudge = await Effect.runPromise(Effect.provide(Judge, LlmJudge.layer().pipe(Layer.provide(Layer.merge(providerLayer(baseURL), fifoRateGateLayer(concurrency))))))
  await viaJudge(fifoJudge, 200, waiting)
  results.push(await measure(`LlmJudge.judge, ${waiting} fibers, FIFO gate`, calls, () => viaJudge(fifoJudge, calls, waiting)))
  // And with every recommended change to the call path: FIFO gate + SDK over node:http + no timeoutFail.
  const lean = leanProvider(baseURL, { nodeHttp: true })
  const leanJudge = await Effect.runPromise(Effect.provide(Judge, LlmJudge.layer().pipe(Layer.provide(Layer.merge(Layer.succeed(LlmProvider, lean.provider), fifoRateGateLayer(concurrency))))))
  await viaJudge(leanJudge, 200, waiting)
  results.push(await measure(`  + SDK over node:http, no timeoutFail`, calls, () => viaJudge(leanJudge, calls, waiting)))
  lean.close()
  return results
}

/**
 * `tasks` through `LlmJudge.judge` with `fibers` fibers behind a gate of `concurrency` permits:
 * the real `RateGate` (Effect semaphore) or the bench's FIFO one. Resolves when all are judged.
 */
export const judgeThroughGate = async (
  baseURL: string,
  tasks: ReadonlyArray<JudgeTask>,
  options: { readonly gate: "RateGate" | "fifo"; readonly concurrency: number; readonly fibers: number }
): Promise<number> => {
  const layer = options.gate === "fifo"
    ? LlmJudge.layer().pipe(Layer.provide(Layer.merge(providerLayer(baseURL), fifoRateGateLayer(options.concurrency))))
    : llmJudgeLayer(baseURL, options.concurrency) as Layer.Layer<Judge>
  const judge = await Effect.runPromise(Effect.provide(Judge, layer))
  const verdicts = await Effect.runPromise(Effect.forEach(tasks, (t) => judge.judge(t), { concurrency: options.fibers }))
  return verdicts.filter((v) => v.status === "failed").length
}
