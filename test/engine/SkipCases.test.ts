/**
 * A load stage that `skips` (a resume past the cases it kept reads past them without parsing them)
 * gives, from case `skip`, exactly the cases a full read gives from there: the same values, lines and
 * ordinals. Checked on every built-in pipeline's sample whose stage says it skips.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import { builtinSamples, loadPipelineModule, repoRoot } from "../support/RunPipeline.js"

describe("load stages that skip", () => {
  it.effect("rag-answers and answer-correctness skip; the others are read and dropped by the engine", () =>
    Effect.gen(function*() {
      const skipping: Array<string> = []
      for (const [name] of builtinSamples) {
        const pipeline = yield* Effect.promise(() => loadPipelineModule(name))
        if (pipeline.load.skips === true) skipping.push(name)
      }
      expect(skipping).toEqual(["rag-answers", "answer-correctness"])
    }))

  for (const name of ["rag-answers", "answer-correctness"]) {
    it.effect(`${name}: the cases from \`skip\` on are a full read's, ordinals included`, () =>
      Effect.gen(function*() {
        const pipeline = yield* Effect.promise(() => loadPipelineModule(name))
        const input = builtinSamples.find(([n]) => n === name)![1]
        const ctx = { file: Path.join(repoRoot, input) }
        const all = Chunk.toReadonlyArray(yield* Stream.runCollect(pipeline.load.cases(ctx)))
        expect(all.length).toBeGreaterThan(3)
        for (const skip of [1, 2, all.length - 1, all.length, all.length + 2]) {
          const rest = Chunk.toReadonlyArray(yield* Stream.runCollect(pipeline.load.cases({ ...ctx, skip })))
          expect(rest, `skip ${skip}`).toEqual(all.slice(skip))
        }
      }))
  }
})
