/**
 * One name per metric — by construction since the engine derives the headline metrics from the
 * per-case ones (`engine/Headline.ts`); kept as a guard: every built-in pipeline, run on its sample with the heuristic judge, declares
 * its headline metrics once (summary.json `metricSpecs`) and its per-case metrics (what `compare`
 * pairs, manifest `caseMetricSpecs`) under the same names — the mean of a per-case metric is the
 * summary's metric of that name, with the same range, unit and direction — and a gate on each
 * per-case name resolves to the summary's metric of that name.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { parseGates, resolveGates } from "../../src/domain/Gate.js"
import { Manifest, readJsonFile, Summary } from "../../src/domain/RunFiles.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { builtinSamples, loadPipelineModule, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

describe("one name per metric: summary, compare and gates", () => {
  for (const [name, input] of builtinSamples) {
    it.effect(
      `${name}: every per-case metric is a summary metric of the same name, scale and direction`,
      () =>
        Effect.gen(function*() {
          const pipeline = yield* Effect.promise(() => loadPipelineModule(name))
          const outcome = yield* runWith(pipeline, HeuristicJudge.layer, {
            input: Path.join(repoRoot, input),
            outRoot: tempDir("rag-eval-names-"),
            reporters: []
          })
          const summary = yield* readJsonFile(Summary, Path.join(outcome.info.runDir, "summary.json"), "a summary")
          const manifest = yield* readJsonFile(Manifest, Path.join(outcome.info.runDir, "manifest.json"), "a manifest")
          const headline = new Map(summary.metricSpecs.map((m) => [m.name, m]))
          expect(summary.metricSpecs.length).toBeGreaterThan(0)
          // Every metric summary.json has a value for is declared (a declared one may be absent: costUsd without a price).
          for (const key of Object.keys(summary.metrics)) {
            expect(headline.has(key), `${name}: ${key} is not declared`).toBe(true)
          }
          const perCase = manifest.caseMetricSpecs ?? []
          expect(perCase.length).toBeGreaterThan(0)
          for (const m of perCase) {
            const h = headline.get(m.name)
            expect(h, `${name}: per-case ${m.name} is not a summary metric`).toBeDefined()
            expect({ min: h!.min, max: h!.max, unit: h!.unit, direction: h!.direction }).toEqual({
              min: m.min,
              max: m.max,
              unit: m.unit,
              direction: m.direction
            })
            // Its value carries the cases it is over and, with two or more, a 95% interval of the mean.
            const value = summary.metrics[m.name]
            expect(value !== null && typeof value === "object", `${name}: ${m.name} is not { mean, n, ci }`).toBe(true)
            const v = value as { mean: number | null; n: number | null; ci: { lower: number; upper: number } | null }
            expect(v.n, `${name}: ${m.name} has no case count`).not.toBeNull()
            if (v.n! >= 2 && v.mean !== null) {
              expect(v.ci, `${name}: ${m.name} has no interval`).not.toBeNull()
              expect(v.ci!.lower).toBeLessThanOrEqual(v.mean + 1e-12)
              expect(v.ci!.upper).toBeGreaterThanOrEqual(v.mean - 1e-12)
            }
          }
          for (const m of summary.metricSpecs) {
            const flag = m.direction === "lower" ? "--fail-over" : "--fail-under"
            const gates = yield* Effect.flatMap(parseGates(flag, `${m.name}=${m.min}`), (t) =>
              resolveGates(t, summary.metricSpecs))
            expect(gates[0]!.metric.name).toBe(m.name)
          }
          expect(fs.existsSync(Path.join(outcome.info.runDir, "case-metrics-iteration-1.jsonl"))).toBe(true)
        }),
      60_000
    )
  }
})
