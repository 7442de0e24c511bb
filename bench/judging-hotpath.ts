/**
 * The judging side of answer-correctness alone, in one process: each case's extraction round, check
 * round and record (`Claims.extractionRound` → the heuristic judge → `Claims.nextRound` → the judge →
 * `correctnessRecord`), as the engine makes them but without keys, journal or records files — what
 * issue #35's work on the claim checker measured, and how it showed its outputs unchanged.
 *
 *   npx tsx bench/judging-hotpath.ts cases.jsonl [dump|-] [passes]
 *
 * `cases.jsonl`: answer-correctness input (`id`, `question`, `answer`, `reference`, `contexts` as
 * texts, `nuggets`), e.g. bench [12]'s (`writeCases` in bench/correctness.ts). Prints the CPU time of
 * `passes` passes (default 1) and a SHA-256 of every judgment (as the journal has it, latency 0) and
 * record of the first pass; `dump` writes them (compare two builds' dumps byte for byte).
 */
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import type { EvalCase } from "../src/domain/Case.js"
import type { JudgeTask, Judgment, ListJudgeTask } from "../src/domain/Judgment.js"
import type { Rubric } from "../src/domain/Rubric.js"
import { toJudgment } from "../src/engine/JudgmentKey.js"
import { isListSpec, type JudgeSpec } from "../src/engine/Pipeline.js"
import { listVerdicts, verdict } from "../src/judges/HeuristicJudge.js"
import { parseRubric } from "../src/judges/Prompt.js"
import { claimRubrics, extractionRound, nextRound, plannedRounds } from "../src/kinds/correctness/Claims.js"
import { correctnessRecord } from "../src/kinds/correctness/CorrectnessScore.js"

interface Row {
  readonly id: string
  readonly question: string
  readonly answer: string
  readonly reference?: string
  readonly contexts?: ReadonlyArray<string>
  readonly nuggets?: ReadonlyArray<string | { readonly text: string; readonly importance?: "vital" | "okay" }>
}

const [file, dump, passesArg] = process.argv.slice(2)
if (file === undefined) {
  console.error("usage: npx tsx bench/judging-hotpath.ts cases.jsonl [dump|-] [passes]")
  process.exitCode = 2
} else {
  const rubrics = new Map<string, Rubric>()
  for (const id of [claimRubrics.extract, claimRubrics.check, claimRubrics.nugget]) {
    const path = `prompts/${id}.json`
    rubrics.set(id, Effect.runSync(parseRubric(fs.readFileSync(path, "utf8"), path)))
  }
  const rows = fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "")
  const judge = { provider: "heuristic", model: "lexical-v7" }
  const hash = createHash("sha256")
  const out = dump !== undefined && dump !== "-" ? fs.openSync(dump, "w") : undefined
  const passes = Number(passesArg ?? 1)
  let cpu = 0
  let judgments = 0
  for (let pass = 0; pass < passes; pass++) {
    rows.forEach((line, ordinal) => {
      const row = JSON.parse(line) as Row
      const c: EvalCase = {
        id: row.id,
        ordinal,
        line: ordinal + 1,
        question: row.question,
        answer: row.answer,
        reference: row.reference,
        passages: (row.contexts ?? []).map((text, i) => ({ id: String(i + 1), rank: i + 1, text })),
        nuggets: row.nuggets?.map((n) => (typeof n === "string" ? { text: n } : n)),
        source: row as unknown as Record<string, unknown>
      }
      const start = process.cpuUsage()
      plannedRounds(c, claimRubrics)
      const all: Array<Judgment> = []
      const judgeRound = (specs: ReadonlyArray<JudgeSpec>) => {
        for (const spec of specs) {
          const rubric = rubrics.get(spec.rubric)!
          const base = { pipeline: "answer-correctness", caseId: c.id, ordinal, iteration: 1, rubric, pool: spec.pool }
          if (isListSpec(spec)) {
            const task: ListJudgeTask = { ...base, vars: spec.vars, items: spec.items }
            const verdicts = listVerdicts(task)
            task.items.forEach((item, i) => all.push(toJudgment("-", task, verdicts[i]!, judge, 0, item.target)))
          } else {
            const task: JudgeTask = { ...base, target: spec.target, vars: spec.vars }
            all.push(toJudgment("-", task, verdict(task), judge, 0))
          }
        }
      }
      judgeRound(extractionRound(c, claimRubrics))
      judgeRound(nextRound(c, all, claimRubrics))
      const record = correctnessRecord(c, all, 1, claimRubrics)
      const used = process.cpuUsage(start)
      cpu += used.user + used.system
      judgments += all.length
      if (pass === 0) {
        const text = all.map((j) => JSON.stringify(j)).join("\n") + "\n" + JSON.stringify(record) + "\n"
        hash.update(text)
        if (out !== undefined) fs.writeSync(out, text)
      }
    })
  }
  const seconds = cpu / 1e6
  console.log(
    `${rows.length * passes} cases, ${judgments} judgments, ${seconds.toFixed(2)} s CPU judging, ${
      Math.round((rows.length * passes) / seconds)
    } cases/CPU-s; sha256 of the first pass ${hash.digest("hex").slice(0, 16)}`
  )
}
