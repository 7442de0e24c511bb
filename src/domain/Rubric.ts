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

/**
 * What a rubric asks the judge for: a `score` on its scale (the default), `claims` — the atomic
 * claims of a text, as a list (what a later judgment of the same case is built from) — or an
 * `object` matching the rubric's own JSON `schema` (a test-set item a generator writes).
 */
export const RubricOutput = Schema.Literal("score", "claims", "object")
export type RubricOutput = typeof RubricOutput.Type

export const RubricFile = Schema.Struct({
  /** Stable id, e.g. `rag-answers/groundedness`. Part of every judgment key. */
  id: Schema.String,
  version: Schema.String,
  name: Schema.String,
  description: Schema.String,
  output: Schema.optionalWith(RubricOutput, { default: () => "score" as const }),
  /**
   * An `object` rubric's answer: a JSON schema (the subset providers' structured outputs take: every
   * property required, no additional properties), sent as the answer format and checked on decoding.
   */
  schema: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** Every allowed score with its meaning, lowest first (at least two); none for a `claims` rubric. */
  scale: Schema.optionalWith(Schema.Array(ScaleValue), { default: () => [] }),
  /**
   * Which heuristic stands in for this rubric when `--provider heuristic` (see `judges/Heuristic.ts`).
   * A user's own rubric has none: the heuristic judge has no model of an arbitrary criterion.
   */
  heuristic: Schema.optional(Schema.String),
  /** Its weight in a composite (a user's rubric beside the built-in ones; default 1). */
  weight: Schema.optional(
    Schema.Number.pipe(
      Schema.finite(),
      Schema.greaterThan(0),
      Schema.annotations({ message: () => "a weight is a number > 0" })
    )
  ),
  /** Ask the judge for a 1–5 confidence too (checklist relevance judge). */
  confidence: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** Ask the judge to quote the sentence of the data that decides its verdict (a claim check's evidence). */
  evidence: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** Listwise rubrics: the name of an item's number in the answer (`hit`, `claim`…). Default `hit`. */
  itemKey: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^[a-z][a-z_]*$/)), { default: () => "hit" }),
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
  /** The scale's lowest and highest scores (0 for a `claims` rubric, which has none). */
  readonly min: number
  readonly max: number
}

/**
 * A user's own rubrics (`--rubrics DIR`; see `judges/UserRubrics.ts`): the directory, the rubric ids
 * its files stand for (also in `judge.rubrics`), the variables the pipeline gives their templates,
 * and what is wrong with the directory, if anything (the runner refuses the run with it).
 */
export interface UserRubrics {
  readonly dir: string
  readonly ids: ReadonlyArray<string>
  readonly variables: ReadonlyArray<string>
  readonly problem?: string | undefined
}
