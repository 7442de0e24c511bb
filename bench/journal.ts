/**
 * Journal figures (durable runs): append cost per judgment (one write per judgment, as the LLM path
 * does) and resume start-up with a 100k-judgment journal (opening it again: its index built).
 */
import { Effect } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import type { Judgment } from "../src/domain/Judgment.js"
import { JudgmentJournal, layerFile } from "../src/store/JudgmentJournal.js"

const judgment = (i: number): Judgment => ({
  // Keys as the runner makes them: the first 32 hex digits of a SHA-256.
  key: createHash("sha256").update(String(i)).digest("hex").slice(0, 32),
  caseId: String(Math.floor(i / 6) + 1),
  ordinal: Math.floor(i / 6),
  iteration: 1,
  criterion: "rag-answers/groundedness",
  target: "answer",
  status: "ok",
  score: 2,
  reason:
    "9 of 12 claim terms (75%, numbers weighted double) and 1 of 1 sentences are supported by the passages (combined 88%), so 2 on 0–2.",
  usage: { inputTokens: 612, outputTokens: 48 },
  attempts: 1,
  latencyMs: 840,
  provider: "openai",
  model: "gpt-4o-mini"
})

export const journalFigures = (dir: string, count: number) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const journals = yield* JudgmentJournal
      const runDir = Path.join(dir, "journal-bench")
      fs.mkdirSync(runDir, { recursive: true })
      const written = yield* Effect.scoped(Effect.gen(function*() {
        const journal = yield* journals.open(runDir, { fresh: true })
        const items = Array.from({ length: count }, (_, i) => judgment(i))
        const t0 = performance.now()
        for (const j of items) yield* journal.append([j])
        return { appendUs: ((performance.now() - t0) * 1000) / count, bytes: fs.statSync(journal.path).size }
      }))
      const t1 = performance.now()
      const read = yield* Effect.scoped(Effect.map(journals.open(runDir, { fresh: false }), (j) => j.stats.ok))
      return { ...written, resumeMs: performance.now() - t1, read }
    }).pipe(Effect.provide(layerFile))
  )
