/**
 * report.csv is written as the records leave (`Reporter.lines`): each view's `csvRow` is given the
 * record as the score stage built it. A resume that keeps records, and any caller of `write`, build
 * it from the records read back from disk (their JSON). The two must be the same file: every built-in
 * pipeline run on its sample, its CSV compared byte for byte with the one written from the records
 * file (neutralised cells, and with `--csv-raw`).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { viewOf } from "../../src/engine/DefaultView.js"
import type { ReportInput } from "../../src/engine/ReportInput.js"
import { readJsonLines } from "../../src/io/Files.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { csvReporter } from "../../src/report/Reporter.js"
import { builtinSamples, loadPipelineModule, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

describe("report.csv written as the records leave = written from the records read back", () => {
  for (const [name, input] of builtinSamples) {
    for (const raw of [false, true]) {
      it.effect(`${name}${raw ? " (--csv-raw)" : ""}`, () =>
        Effect.gen(function*() {
          const pipeline = yield* Effect.promise(() => loadPipelineModule(name))
          const reporter = csvReporter({ raw })
          const outcome = yield* runWith(pipeline, HeuristicJudge.layer, {
            input: Path.join(repoRoot, input),
            outRoot: tempDir("rag-eval-csv-lines-"),
            reporters: [reporter]
          })
          const runDir = outcome.info.runDir
          const live = fs.readFileSync(Path.join(runDir, "report.csv"), "utf8")
          expect(live.split("\n").length).toBeGreaterThan(2)
          const again = tempDir("rag-eval-csv-again-")
          const perCase = pipeline.score.perCase
          const readBack: ReportInput = {
            info: { ...outcome.info, runDir: again },
            summary: outcome.summaries[0]!,
            records: () => readJsonLines(Path.join(runDir, "records-iteration-1.jsonl")),
            view: viewOf(pipeline),
            caseMetrics: { declared: perCase.declared(outcome.info), of: (r) => perCase.of(r) },
            stem: "report",
            metrics: {},
            metricSpecs: []
          }
          const paths = yield* reporter.write(readBack)
          expect(paths).toEqual([Path.join(again, "report.csv")])
          expect(live).toBe(fs.readFileSync(paths[0]!, "utf8"))
          // Nothing but the finished file: no temporary file left beside it.
          expect(fs.readdirSync(runDir).filter((n) => n.includes(".tmp-"))).toEqual([])
        }))
    }
  }
})
