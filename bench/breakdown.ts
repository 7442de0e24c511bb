/**
 * Pieces of a heuristic run measured on their own, to explain its phase split (figure 3):
 *
 * - per judgment, outside the runner: the heuristic verdict, the judgment key (content hash of the
 *   case's variables, then the key itself, as the runner computes them), and one journal line;
 * - per pass over a file: the validation passes (`scanInput`, then the pipeline's case stream) and
 *   one read of the records file (each report format makes one).
 */
import { Effect, Stream } from "effect"
import { performance } from "node:perf_hooks"
import type { Pipeline } from "../src/engine/Pipeline.js"
import { taskKey, toJudgment } from "../src/engine/Runner.js"
import { readJsonLines } from "../src/io/Files.js"
import { model as heuristicModel, verdict } from "../src/judges/HeuristicJudge.js"
import { scanInput } from "../src/load/Rows.js"
import { loadRubrics, makeTasks } from "./transport.js"

export interface PerJudgment {
  readonly label: string
  readonly us: number
}

export const perJudgmentCosts = async (n: number): Promise<Array<PerJudgment>> => {
  // Tasks of a row share one variables object, as in a run (the content hash is taken once per row).
  const tasks = makeTasks(await loadRubrics(), n)
  const judge = { provider: "heuristic", model: heuristicModel, params: {} }
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
  time("judgment key (content hash + key)", () => {
    for (const t of tasks) taskKey(judge, t)
  })
  const verdicts = tasks.map(verdict)
  time("judgment + its journal line (JSON)", () => {
    tasks.forEach((t, i) => JSON.stringify(toJudgment("0123456789abcdef0123456789abcdef", t, verdicts[i]!, judge, 0)))
  })
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
