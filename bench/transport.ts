/**
 * Where an LLM judgment's time goes, layer by layer, against the same fake server at 0 ms latency
 * and 32 calls in flight: node:http (keep-alive agent) → the openai SDK over NodeFetch →
 * `OpenAiProvider.complete` (Effect) → `LlmJudge.judge` (render, RateGate, retry, decode).
 * Each level reports calls/s and the client process's CPU per call; the difference between two
 * levels is what the upper one adds.
 */
import { Effect, type Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as Http from "node:http"
import { performance } from "node:perf_hooks"
import OpenAI from "openai"
import type { EvalCase } from "../src/domain/Case.js"
import type { JudgeTask } from "../src/domain/Judgment.js"
import type { Rubric } from "../src/domain/Rubric.js"
import { answerVars } from "../src/engine/Stages.js"
import { Judge } from "../src/judges/Judge.js"
import { answerSchema, defaultPromptsDir, parseRubric, render } from "../src/judges/Prompt.js"
import { splitFragments, unescapeNewlines } from "../src/load/Fragments.js"
import type { ChatRequest } from "../src/providers/LlmProvider.js"
import * as NodeFetch from "../src/providers/NodeFetch.js"
import * as OpenAiProvider from "../src/providers/OpenAiProvider.js"
import { rowGenerator } from "./gen.js"
import { llmJudgeLayer } from "./harness.js"

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
      if (tasks.length < n) {
        tasks.push({ pipeline: "rag-answers", caseId: c.id, ordinal, iteration: 1, rubric, target: "answer", vars })
      }
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

/**
 * One JSON POST through node:http and `agent`, its reply read whole and parsed: the bare client the
 * benches measure the provider's path against.
 */
export const postJson = (url: string | URL, agent: Http.Agent, body: string, headers: Record<string, string> = {}) =>
  new Promise<void>((resolve, reject) => {
    const req = Http.request(url, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers }
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
  return {
    level,
    calls,
    wallMs,
    perSecond: (calls * 1000) / wallMs,
    cpuMsPerCall: (used.user + used.system) / 1000 / calls
  }
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
 * Where a judge call's CPU goes, one layer on top of the other, `concurrency` calls in flight: raw
 * node:http (the floor), the openai SDK over the product's transport (NodeFetch), the provider
 * (Effect, errors mapped), the LLM judge (prompt rendering, RateGate, retry policy, decoding).
 */
export const transportLadder = async (
  baseURL: string,
  options: { readonly calls: number; readonly concurrency: number }
): Promise<Array<LevelResult>> => {
  const { calls, concurrency } = options
  const rubrics = await loadRubrics()
  const tasks = makeTasks(rubrics, calls)
  const requests: Array<ChatRequest> = tasks.map((t) => ({
    ...render(t.rubric, t.vars),
    schema: answerSchema(t.rubric)
  }))
  const bodies = requests.map((r) => chatBody(r))
  const url = new URL(`${baseURL}/chat/completions`)
  const results: Array<LevelResult> = []
  const warm = Math.min(500, calls)

  // 1. node:http with a keep-alive agent, the body already serialised: the floor for Node's HTTP client.
  const agent = new Http.Agent({ keepAlive: true, maxSockets: concurrency })
  const serialised = bodies.map((b) => JSON.stringify(b))
  const httpPost = (body: string) => postJson(url, agent, body, { authorization: "Bearer bench" })
  await pool(warm, concurrency, (i) => httpPost(serialised[i]!))
  results.push(
    await measure("node:http keep-alive", calls, () => pool(calls, concurrency, (i) => httpPost(serialised[i]!)))
  )
  agent.destroy()

  // 2. The openai SDK as OpenAiProvider configures it (its transport: NodeFetch over node:http).
  const transport = NodeFetch.make()
  const client = new OpenAI({
    apiKey: "bench",
    baseURL,
    maxRetries: 0,
    timeout: 60_000,
    organization: null,
    project: null,
    logLevel: "off",
    fetch: transport.fetch
  })
  await pool(warm, concurrency, (i) => client.chat.completions.create(bodies[i]!))
  results.push(
    await measure(
      "openai SDK create(), NodeFetch",
      calls,
      () => pool(calls, concurrency, (i) => client.chat.completions.create(bodies[i]!))
    )
  )
  transport.close()

  // 3. OpenAiProvider.complete (Effect over the SDK: an AbortSignal per call, errors classified).
  const provider = await Effect.runPromise(OpenAiProvider.make({
    provider: "openai-compatible",
    model: "fake-judge",
    baseURL,
    apiKey: Redacted.make("bench"),
    timeoutMs: 60_000
  }))
  const viaProvider = (n: number) =>
    Effect.runPromise(Effect.forEach(requests.slice(0, n), (r) => provider.complete(r), { concurrency, discard: true }))
  await viaProvider(warm)
  results.push(await measure("OpenAiProvider.complete", calls, () => viaProvider(calls)))

  // 4. LlmJudge.judge: render + RateGate(concurrency) + retry/repair policy + decode.
  const judge = await Effect.runPromise(
    Effect.provide(Judge, llmJudgeLayer(baseURL, concurrency) as Layer.Layer<Judge>)
  )
  const viaJudge = (n: number) =>
    Effect.runPromise(Effect.forEach(tasks.slice(0, n), (t) => judge.judge(t), { concurrency, discard: true }))
  await viaJudge(warm)
  results.push(await measure(`LlmJudge.judge`, calls, () => viaJudge(calls)))
  return results
}
