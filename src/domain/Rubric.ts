/**
 * A rubric is a judge prompt stored as data in `prompts/` (SPEC §4): the criterion, its scale with a
 * description for every value, and the prompt text. The judge must answer with one of the scale's
 * values (a JSON-schema enum), so parsing cannot drift.
 */
import * as Schema from "effect/Schema"

export const ScaleValue = Schema.Struct({
  score: Schema.Int,
  label: Schema.String,
  description: Schema.String
})
export type ScaleValue = typeof ScaleValue.Type

export const RubricFile = Schema.Struct({
  /** Stable id, e.g. `rag-answers/groundedness`. Part of every judgment key. */
  id: Schema.String,
  version: Schema.String,
  name: Schema.String,
  description: Schema.String,
  /** Every allowed score with its meaning, lowest first. */
  scale: Schema.Array(ScaleValue).pipe(Schema.minItems(2)),
  /** Which heuristic stands in for this rubric when `--provider heuristic` (see `judges/Heuristic.ts`). */
  heuristic: Schema.String,
  /** Ask the judge for a 1–5 confidence too (checklist relevance judge). */
  confidence: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** System and user message templates, as lines. `{{name}}` inserts a variable, already escaped as data. */
  system: Schema.Array(Schema.String),
  user: Schema.Array(Schema.String),
  /**
   * Listwise rubrics only: the template of one judged item (lines, e.g. a `<data name="passage"
   * hit="{{hit}}">` block). The user template's `{{items}}` becomes every item rendered with its own
   * variables and `{{hit}}` = its number (1, 2, …); the judge answers with one grade per hit number.
   */
  item: Schema.optional(Schema.Array(Schema.String))
})
export type RubricFile = typeof RubricFile.Type

/** A rubric as loaded: the decoded file plus the content hash recorded in manifests and keys. */
export interface Rubric extends RubricFile {
  /** sha256 (hex, first 16 chars) of the file's bytes. */
  readonly hash: string
  /** Path the rubric was loaded from, relative to the prompts directory. */
  readonly path: string
  readonly min: number
  readonly max: number
}
