/**
 * `--columns history=` unmaps a role: the run's manifest records it (as null) and decodes again, so
 * the run writes its files and `report` and resume can read it back.
 */
import { it } from "@effect/vitest"
import { Effect } from "effect"
import * as Path from "node:path"
import { expect } from "vitest"
import ragAnswers from "../../src/builtin/rag-answers.js"
import { readManifest } from "../../src/domain/RunFiles.js"
import { instantiate } from "../../src/engine/Pipeline.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { parseColumnMapping } from "../../src/load/CaseMapping.js"
import { repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

it.effect("a role unmapped with --columns history= is written to the manifest as null and read back", () =>
  Effect.gen(function*() {
    const columns = yield* parseColumnMapping("history=")
    const result = yield* runWith(instantiate(ragAnswers, {}), HeuristicJudge.layer, {
      input: Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv"),
      outRoot: tempDir(),
      columns
    })
    expect(result.judgments.failed).toBe(0)
    const manifest = yield* readManifest(result.info.runDir)
    expect(manifest.columns).toEqual({ history: null })
  }))
