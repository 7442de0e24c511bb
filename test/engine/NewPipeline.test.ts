/**
 * A new pipeline is an input, a judge stage and a score (with its per-case metrics): no aggregate,
 * no report view. The engine gives it everything else — the summary with intervals, headline metrics
 * of the per-case metrics' names, the lowest and failed cases, and every report format.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { EvalCase } from "../../src/domain/Case.js"
import type { Judgment } from "../../src/domain/Judgment.js"
import * as Metric from "../../src/domain/Metric.js"
import { readJsonFile, Summary } from "../../src/domain/RunFiles.js"
import type { Pipeline } from "../../src/engine/Pipeline.js"
import * as Stages from "../../src/engine/Stages.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { all, html } from "../../src/report/Reporter.js"
import { runWith, tempDir } from "../support/RunPipeline.js"

interface Grounding {
  readonly caseId: string
  readonly line: number
  readonly grounded: number | null
}

const grounding: Pipeline<Grounding, undefined> = {
  name: "grounding-check",
  description: "Is each answer supported by its passages?",
  load: Stages.loadRows({ columns: { question: "question", fragments: "passages", answer: "answer" } }),
  judge: Stages.judgeAnswer(["rag-answers/groundedness"]),
  score: {
    score: (c: EvalCase, judgments: ReadonlyArray<Judgment>) => ({
      caseId: c.id,
      line: c.line,
      grounded: judgments[0]?.status === "ok" ? judgments[0].score : null
    }),
    perCase: {
      declared: () => [Metric.score("grounded", "support in the passages, 0–2", 0, 2)],
      of: (r) => ({ caseId: r.caseId, line: r.line, metrics: { grounded: r.grounded }, failed: r.grounded === null }),
      rank: { by: ["grounded"] }
    }
  }
}

describe("a pipeline of three parts (no aggregate, no report view)", () => {
  it.effect("gets the summary with intervals, headline metrics by its per-case names, and every report", () =>
    Effect.gen(function*() {
      const dir = tempDir("rag-eval-new-")
      const input = Path.join(dir, "cases.csv")
      const rows = [
        ["When was Acme founded?", "1. Acme was founded in 1999.", "Acme was founded in 1999."],
        ["Who leads Acme?", "1. Acme is led by Ana Ruiz.", "Bob Smith leads it, from Paris."],
        ["Where is Acme?", "1. Acme is in Lyon.", "Acme is in Lyon, France."]
      ]
      fs.writeFileSync(
        input,
        ["question,passages,answer", ...rows.map((r) => r.map((x) => `"${x}"`).join(","))].join("\n") + "\n"
      )
      const outcome = yield* runWith(grounding, HeuristicJudge.layer, {
        input,
        outRoot: dir,
        reporters: [...all, html]
      })
      const runDir = outcome.info.runDir
      const summary = yield* readJsonFile(Summary, Path.join(runDir, "summary.json"), "a summary")
      expect(summary.summaryVersion).toBe(4)
      const grounded = summary.metrics.grounded as { mean: number; n: number; ci: { lower: number; upper: number } }
      expect(grounded.n).toBe(3)
      expect(grounded.ci.lower).toBeLessThanOrEqual(grounded.mean)
      expect(grounded.ci.upper).toBeGreaterThanOrEqual(grounded.mean)
      expect(summary.metricSpecs.map((m) => m.name)).toEqual(["grounded", "failedJudgments"])
      expect(summary.rankBy).toEqual(["grounded"])
      const md = fs.readFileSync(Path.join(runDir, "report.md"), "utf8")
      expect(md).toContain("# grounding-check")
      expect(md).toContain("## Headline metrics")
      expect(md).toContain("## Lowest grounded (3)")
      expect(md).toContain("## Per-case details")
      expect(fs.readFileSync(Path.join(runDir, "report.csv"), "utf8").split("\r\n")[0]).toBe("case_id,line,grounded")
      expect(fs.readFileSync(Path.join(runDir, "report.html"), "utf8")).toContain("grounded")
      const lows = JSON.parse(fs.readFileSync(Path.join(runDir, "low-scores-iteration-1.json"), "utf8"))
      expect(lows.lowest.map((x: { caseId: string }) => x.caseId)).toHaveLength(3)
    }))
})
