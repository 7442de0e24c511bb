/**
 * Pieces of the heuristic run measured on their own, to explain the phase split of figure 3:
 *
 * - per judgment, outside the runner: the heuristic verdict, the judgment key the runner computes
 *   (content hash of the task variables + the key itself, as `keyFor` in Runner.ts does), and one
 *   journal line (JSON.stringify + one writeSync, as JudgmentJournal.append does per judgment);
 * - per pass over a file: the validation passes (`scanInput`, then the pipeline's case stream) and
 *   one read of the records file through `readJsonLines` (each reporter, and `finalMetrics`, do one).
 */
import { Effect, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { verdict } from "../src/judges/HeuristicJudge.js"
import { sha256 } from "../src/judges/Prompt.js"
import { scanInput } from "../src/load/Rows.js"
import type { Pipeline } from "../src/pipeline/Pipeline.js"
import { canonicalJson, judgmentKey } from "../src/pipeline/Runner.js"
import { readJsonLines } from "../src/report/Files.js"
import { loadRubrics, makeTasks } from "./transport.js"

export interface PerJudgment {
  readonly label: string
  readonly us: number
}

export const perJudgmentCosts = async (n: number): Promise<Array<PerJudgment>> => {
  const tasks = makeTasks(await loadRubrics(), n)
  const results: Array<PerJudgment> = []
  const time = (label: string, body: () => void) => {
    const start = performance.now()
    body()
    results.push({ label, us: ((performance.now() - start) * 1000) / n })
  }
  // Warm the JIT on a slice first, so the figures are steady-state.
  for (const t of tasks.slice(0, 6000)) verdict(t)
  time("heuristic verdict()", () => {
    for (const t of tasks) verdict(t)
  })
  time("content hash: sha256(canonicalJson(vars))", () => {
    for (const t of tasks) sha256(canonicalJson(t.vars)).slice(0, 16)
  })
  time("judgmentKey(…): key JSON + sha256", () => {
    for (const t of tasks) {
      judgmentKey({
        pipeline: t.pipeline,
        caseId: t.caseId,
        content: "0123456789abcdef",
        iteration: 1,
        criterion: t.rubric.id,
        target: t.target,
        promptHash: t.rubric.hash,
        provider: "heuristic",
        model: "lexical-v1",
        params: {}
      })
    }
  })
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-journal-"))
  const fd = fs.openSync(Path.join(dir, "judgments.jsonl"), "w")
  const judgment = {
    key: "0123456789abcdef0123456789abcdef",
    caseId: "12345",
    ordinal: 12344,
    iteration: 1,
    criterion: "rag-answers/groundedness",
    target: "answer",
    status: "ok",
    score: 2,
    reason: "61% of the answer's terms and 2 of 3 sentences are supported by the passages; no unsupported numbers.",
    usage: { inputTokens: 0, outputTokens: 0 },
    attempts: 0,
    latencyMs: 0,
    provider: "heuristic",
    model: "lexical-v1"
  }
  try {
    time("journal line: JSON.stringify + writeSync", () => {
      for (let i = 0; i < n; i++) fs.writeSync(fd, JSON.stringify(judgment) + "\n")
    })
    let buffer = ""
    time("journal line, buffered (64 KiB writes)", () => {
      for (let i = 0; i < n; i++) {
        buffer += JSON.stringify(judgment) + "\n"
        if (buffer.length >= 1 << 16) {
          fs.writeSync(fd, buffer)
          buffer = ""
        }
      }
    })
  } finally {
    fs.closeSync(fd)
    fs.rmSync(dir, { recursive: true, force: true })
  }
  return results
}

const timed = async (body: () => Promise<unknown>) => {
  const start = performance.now()
  await body()
  return performance.now() - start
}

/** One `scanInput` pass and one pass of the pipeline's case stream (the two validation passes). */
export const validationPasses = async (pipeline: Pipeline<unknown, unknown>, input: string) => ({
  scanInputMs: await timed(() => Effect.runPromise(scanInput(input))),
  casesMs: await timed(() => Effect.runPromise(Stream.runDrain(pipeline.load.cases({ file: input }))))
})

/** One pass of `readJsonLines` over a records file (parse every record, discard). */
export const readRecordsPass = (path: string) => timed(() => Effect.runPromise(Stream.runDrain(readJsonLines(path))))
