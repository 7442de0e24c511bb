/**
 * Every built-in kind's own fold can be saved and restored (`Accumulator.save` / `restore`), which a
 * resume's snapshot needs (`engine/HeldRecords.ts`): each sample run's records folded whole, and
 * folded in two parts with the state between them passed through `v8.serialize` as the snapshot
 * stores it, give the same summary part — at every split point.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import * as v8 from "node:v8"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { builtinSamples, loadPipelineModule, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

describe("the kinds' own folds saved and restored (a resume's snapshot)", () => {
  for (const [name, input] of builtinSamples) {
    it.effect(`${name}: folding the rest after a restore gives what one fold over every record gives`, () =>
      Effect.gen(function*() {
        const pipeline = yield* Effect.promise(() => loadPipelineModule(name))
        const outcome = yield* runWith(pipeline, HeuristicJudge.layer, {
          input: Path.join(repoRoot, input),
          outRoot: tempDir("rag-eval-snapshots-"),
          reporters: []
        })
        const info = outcome.info
        const records: ReadonlyArray<unknown> = fs.readFileSync(
          Path.join(info.runDir, "records-iteration-1.jsonl"),
          "utf8"
        ).trim().split("\n").map((l) => JSON.parse(l))
        expect(records.length).toBeGreaterThan(2)
        const aggregate = pipeline.aggregate!
        const of = pipeline.score.perCase.of
        const whole = aggregate.start(info)
        for (const r of records) whole.add(r, of(r))
        const expected = whole.finish()
        for (const at of [0, 1, records.length >> 1, records.length]) {
          const first = aggregate.start(info)
          for (const r of records.slice(0, at)) first.add(r, of(r))
          expect(first.save, `${name} saves its fold`).toBeDefined()
          const state = v8.deserialize(v8.serialize(first.save!()))
          const second = aggregate.start(info)
          second.restore!(state)
          for (const r of records.slice(at)) second.add(r, of(r))
          expect(second.finish(), `split after ${at} records`).toEqual(expected)
        }
      }))
  }
})
