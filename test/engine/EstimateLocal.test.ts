/**
 * `--dry-run` with a local judge (the heuristic): nothing to price, so a fresh run's cases are not
 * walked (no retrieval, no plan); once the run has a journal, the walk says how much is done.
 */
import { it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Path from "node:path"
import { describe, expect } from "vitest"
import answerCorrectness from "../../src/builtin/answer-correctness.js"
import type { EvalCase } from "../../src/domain/Case.js"
import { instantiate, type Pipeline } from "../../src/engine/Pipeline.js"
import { precomputed, Retriever } from "../../src/engine/Retriever.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { estimateWith, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

const pipeline = instantiate(answerCorrectness, {}) as unknown as Pipeline<unknown, unknown>
const sample = Path.join(repoRoot, "test-sets", "answer-correctness", "sample.jsonl")

describe("--dry-run with a local judge", () => {
  it.scoped("a fresh run: every count 0 without walking the cases; after a run: what is done, walked", () =>
    Effect.gen(function*() {
      const out = tempDir()
      let retrieved = 0
      // The run's own retriever (the same run directory), counting its calls.
      const counting = Layer.succeed(Retriever, {
        ...precomputed,
        retrieve: (c: EvalCase) => Effect.sync(() => (retrieved++, c))
      })
      const dryRun = estimateWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: out }, counting)
      const fresh = yield* dryRun
      expect(fresh).toMatchObject({ calls: 0, judgments: 0, alreadyDone: 0, inputTokens: 0, outputTokens: 0 })
      expect(retrieved).toBe(0)

      const done = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: out })
      expect(done.judgments.total).toBeGreaterThan(0)
      const after = yield* dryRun
      expect(after).toMatchObject({ calls: 0, judgments: 0, alreadyDone: done.judgments.total })
      expect(retrieved).toBeGreaterThan(0)
    }))
})
