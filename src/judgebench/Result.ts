/**
 * What `rag-eval judge-bench` reports, typed once: the printed report is rendered from it
 * (`Render.ts`) and `--format json` prints it encoded through `JudgeBenchResult`.
 */
import * as Schema from "effect/Schema"
import { Interval } from "../domain/RunFiles.js"

export const PublishedFigure = Schema.Struct({
  judge: Schema.String,
  value: Schema.Number,
  /** Measured on the items judge-bench ships, or on a comparable set. */
  same: Schema.Boolean,
  source: Schema.String
})

/** One agreement figure of the configured judge on a set, with its bootstrap CI and the published ones. */
export const Figure = Schema.Struct({
  /** `precision ~ correctness`, `balanced accuracy`… */
  name: Schema.String,
  /** How it is computed, in a sentence. */
  description: Schema.String,
  value: Schema.NullOr(Schema.Number),
  /** Why `value` is null. */
  reason: Schema.optional(Schema.String),
  ci: Schema.NullOr(Interval),
  /** The units the CI resamples (pairs of answers, claims, graded passages). */
  units: Schema.Number,
  published: Schema.Array(PublishedFigure)
})
export type Figure = typeof Figure.Type

export const SetRun = Schema.Struct({
  dir: Schema.String,
  runId: Schema.String,
  pipeline: Schema.String,
  cases: Schema.Number,
  judgments: Schema.Number,
  failed: Schema.Number,
  /** USD as the run's manifest records it; null when the model has no price. */
  costUsd: Schema.NullOr(Schema.Number)
})

export const SetResult = Schema.Struct({
  name: Schema.Literal("ragchecker", "expertqa", "relevance"),
  title: Schema.String,
  status: Schema.Literal("measured", "skipped", "estimated"),
  /** Why a set was skipped. */
  reason: Schema.optional(Schema.String),
  /** Items of the set used (all of them, or `--sample N`), and how many it has. */
  items: Schema.Number,
  of: Schema.Number,
  unit: Schema.String,
  run: Schema.optional(SetRun),
  figures: Schema.Array(Figure),
  /** What a reader must know (labels left out, deltas filled, the heuristic's dev-set caveat). */
  notes: Schema.Array(Schema.String),
  /** `--dry-run`: the run's estimate as it printed it. */
  estimate: Schema.optional(Schema.String)
})
export type SetResult = typeof SetResult.Type

export const JudgeBenchResult = Schema.Struct({
  tool: Schema.Literal("rag-eval judge-bench"),
  judge: Schema.Struct({ provider: Schema.String, model: Schema.String, label: Schema.String }),
  /** The heuristic judge's rules were chosen on these sets: its figures here are optimistic. */
  caveat: Schema.NullOr(Schema.String),
  dryRun: Schema.Boolean,
  sample: Schema.NullOr(Schema.Number),
  sampleSeed: Schema.Number,
  bootstrap: Schema.Struct({ resamples: Schema.Number, seed: Schema.Number, level: Schema.Number }),
  sets: Schema.Array(SetResult)
})
export type JudgeBenchResult = typeof JudgeBenchResult.Type
