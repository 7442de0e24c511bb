/** Hand-made judgments, rubrics and run info for the retrieval stages' tests. */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { heuristicTraits } from "../../src/domain/JudgeTraits.js"
import type { Judgment } from "../../src/domain/Judgment.js"
import type { Rubric } from "../../src/domain/Rubric.js"
import type { RunInfo } from "../../src/engine/Pipeline.js"
import { defaultPromptsDir, parseRubric } from "../../src/judges/Prompt.js"

export const loadPrompt = (id: string): Rubric =>
  Effect.runSync(parseRubric(fs.readFileSync(Path.join(defaultPromptsDir, `${id}.json`), "utf8"), `${id}.json`))

export const runInfo = (
  rubrics: ReadonlyArray<Rubric>,
  retriever: RunInfo["retriever"] = { name: "precomputed", params: {} }
): RunInfo => ({
  pipeline: "test",
  description: "test",
  runId: "run",
  runDir: "/tmp/run",
  judge: { provider: "heuristic", model: "lexical-v3", label: "heuristic", params: {}, traits: heuristicTraits },
  rubrics,
  input: { path: "in.json", sha256: "0".repeat(64), rows: 1, cases: 1, columns: [] },
  iterations: 1,
  concurrency: 1,
  retriever
})

/** A judgment of `hit:<id>`; `score: null` for a failed one. */
export const judgment = (
  caseId: string,
  id: string,
  score: number | null,
  extra: Partial<Judgment> = {}
): Judgment => ({
  key: `${caseId}-${id}`,
  caseId,
  ordinal: 0,
  iteration: 1,
  criterion: "rubric",
  target: `hit:${id}`,
  status: score === null ? "failed" : "ok",
  score,
  reason: score === null ? "the judge's answer could not be decoded" : `grade ${score}`,
  ...(score === null ? { raw: "not json" } : {}),
  usage: { inputTokens: 100, outputTokens: 20 },
  attempts: 1,
  latencyMs: 10,
  provider: "test",
  model: "test",
  ...extra
})

const tmp = fs.mkdtempSync(Path.join(os.tmpdir(), "retrieval-"))
let fileNo = 0
export const writeInput = (ext: string, text: string) => {
  const path = Path.join(tmp, `input-${fileNo++}.${ext}`)
  fs.writeFileSync(path, text)
  return path
}
