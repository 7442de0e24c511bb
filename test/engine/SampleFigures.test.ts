/**
 * Every sample run's figures, pinned: each built-in pipeline run on its sample test set with the
 * heuristic judge gives the headline metrics, the per-case metrics (case-metrics-iteration-N.jsonl),
 * the judgment counts and the lowest and failed cases recorded in `test/fixtures/sample-figures/`.
 * They were captured before the engine took over the kinds' bookkeeping (the fold), so a refactor of
 * the fold, the summaries or the reports that changed a figure fails here.
 *
 * When the heuristic judge itself changes (its verdicts, hence the figures), regenerate the files —
 * `UPDATE_SAMPLE_FIGURES=1 npx vitest run test/engine/SampleFigures.test.ts` — and review the diff in
 * the same commit: a figure that moved must be one the change meant to move.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { headlineOf, readJsonFile, Summary } from "../../src/domain/RunFiles.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { builtinSamples, loadPipelineModule, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

const figuresDir = Path.join(repoRoot, "test", "fixtures", "sample-figures")
const update = process.env.UPDATE_SAMPLE_FIGURES === "1"

/** What is pinned of a run: figures only (no paths, ids or times). */
interface Figures {
  readonly metrics: Readonly<Record<string, number | null>>
  readonly judgments: { readonly total: number; readonly ok: number; readonly failed: number }
  readonly cases: ReadonlyArray<unknown>
  readonly lowest: ReadonlyArray<string>
  readonly failedCases: ReadonlyArray<string>
}

/** Means may be summed in another order by another fold: equal to 12 significant digits. */
const close = (a: number | null, b: number | null) =>
  a === null || b === null ? a === b : Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(a), Math.abs(b))

describe("sample runs' figures (heuristic judge)", () => {
  for (const [name, input] of builtinSamples) {
    it.effect(`${name}: headline metrics, per-case metrics, counts, lowest and failed cases`, () =>
      Effect.gen(function*() {
        const pipeline = yield* Effect.promise(() => loadPipelineModule(name))
        const outcome = yield* runWith(pipeline, HeuristicJudge.layer, {
          input: Path.join(repoRoot, input),
          outRoot: tempDir("rag-eval-figures-"),
          reporters: []
        })
        const runDir = outcome.info.runDir
        const summary = yield* readJsonFile(Summary, Path.join(runDir, "summary.json"), "a summary")
        const lowScores = fs.existsSync(Path.join(runDir, "low-scores-iteration-1.json"))
          ? JSON.parse(fs.readFileSync(Path.join(runDir, "low-scores-iteration-1.json"), "utf8"))
          : {}
        const idsOf = (list: unknown): ReadonlyArray<string> =>
          Array.isArray(list) ? list.map((x: { caseId?: string }) => x.caseId ?? "") : []
        const actual: Figures = {
          metrics: headlineOf(summary),
          judgments: summary.judgments,
          cases: fs.readFileSync(Path.join(runDir, "case-metrics-iteration-1.jsonl"), "utf8").trim().split("\n").map(
            (l) => JSON.parse(l)
          ),
          lowest: idsOf(lowScores.lowest),
          failedCases: idsOf(lowScores.failedCases)
        }
        const file = Path.join(figuresDir, `${name}.json`)
        if (update) {
          fs.mkdirSync(figuresDir, { recursive: true })
          fs.writeFileSync(file, JSON.stringify(actual, null, 2) + "\n")
        }
        const expected = JSON.parse(fs.readFileSync(file, "utf8")) as Figures
        expect(Object.keys(actual.metrics).sort()).toEqual(Object.keys(expected.metrics).sort())
        for (const [k, v] of Object.entries(expected.metrics)) {
          expect(close(actual.metrics[k] ?? null, v), `${name}: ${k} ${actual.metrics[k]} vs ${v}`).toBe(true)
        }
        expect(actual.judgments).toEqual(expected.judgments)
        expect(actual.cases).toEqual(expected.cases)
        expect(actual.lowest).toEqual(expected.lowest)
        expect(actual.failedCases).toEqual(expected.failedCases)
      }))
  }
})
