/** Run files for tests that read runs (compare, calibrate): a valid manifest, with what the test sets. */
import { encodeJson, Manifest } from "../../src/domain/RunFiles.js"

export const manifestFixture = (overrides: Partial<Manifest> & Pick<Manifest, "runId">): Manifest => ({
  tool: "rag-eval",
  command: "test",
  pipeline: { name: "rag-answers" },
  identity: overrides.runId,
  input: { path: "in.csv", sha256: "0", rows: 1, cases: 1, columns: [] },
  iterations: 1,
  judgmentsPerIteration: 1,
  concurrency: 1,
  judge: { provider: "fake", model: "fake", label: "fake judge", params: {} },
  retriever: { name: "precomputed", params: {} },
  prompts: [],
  startedAt: "2026-11-26T00:00:00Z",
  status: "complete",
  ...overrides
})

/** A manifest's file text, encoded through its schema as a run writes it. */
export const manifestText = (overrides: Partial<Manifest> & Pick<Manifest, "runId">): string =>
  encodeJson(Manifest, manifestFixture(overrides))
