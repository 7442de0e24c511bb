/**
 * Profiling aid (not part of `npm run bench`): runs of the rag-answers pipeline with a remote judge,
 * to split the runner's cost per judgment from the provider's. Variants: the LLM judge against the
 * fake server in a child process (cache file / none), and a stand-in remote judge that answers after
 * one macrotask without any HTTP (the runner's own overhead). Run under
 * `node --cpu-prof --import tsx bench/profile-llm.ts [rows] [variant]`.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Path from "node:path"
import { llmTraits } from "../src/domain/JudgeTraits.js"
import { Judge } from "../src/judges/Judge.js"
import { startChildServer } from "./child.js"
import { benchTempDir, writeCsv } from "./gen.js"
import { llmJudgeLayer, loadRagAnswers, timedRun } from "./harness.js"

const rows = Number(process.argv[2] ?? 600)
const variant = process.argv[3] ?? "all"
const dir = benchTempDir()
const csv = Path.join(dir, "in.csv")
writeCsv(csv, rows, 1)
const server = await startChildServer(0)
const pipeline = await loadRagAnswers()

const standIn = Layer.succeed(Judge, {
  provider: "stand-in",
  model: "m",
  label: "stand-in remote judge",
  params: {},
  traits: llmTraits,
  judge: () =>
    Effect.as(Effect.promise(() => new Promise<void>((r) => setImmediate(r))), {
      status: "ok" as const,
      score: 2,
      reason: "fine",
      usage: { inputTokens: 100, outputTokens: 20 },
      attempts: 1
    }),
  judgeList: () => Effect.succeed([])
})

try {
  const variants: Array<[string, Layer.Layer<Judge, unknown>, "file" | "none"]> = [
    ["llm, no cache", llmJudgeLayer(server.url, 32), "none"],
    ["llm, cache file", llmJudgeLayer(server.url, 32), "file"],
    ["stand-in judge, cache file", standIn, "file"],
    ["stand-in judge, no cache", standIn, "none"]
  ]
  // Warm-up (JIT): the first run in a process is slower whatever it measures.
  await timedRun(pipeline, standIn, {
    input: csv,
    outRoot: Path.join(dir, "out", "warm-1"),
    concurrency: 32,
    cache: "file"
  })
  await timedRun(pipeline, llmJudgeLayer(server.url, 32), {
    input: csv,
    outRoot: Path.join(dir, "out", "warm-2"),
    concurrency: 32,
    cache: "none"
  })
  for (const [name, judge, cache] of variants) {
    if (variant !== "all" && !name.startsWith(variant)) continue
    const r = await timedRun(pipeline, judge, {
      input: csv,
      outRoot: Path.join(dir, "out", name.replace(/\W+/g, "-")),
      concurrency: 32,
      cache
    })
    const n = r.outcome.judgments.total
    console.log(
      `${name.padEnd(28)} ${n} judgments in ${Math.round(r.wallMs)} ms → ${Math.round((n * 1000) / r.wallMs)}/s; CPU ${
        (r.cpuMs / n).toFixed(3)
      } ms/judgment`
    )
  }
} finally {
  await server.close()
}
