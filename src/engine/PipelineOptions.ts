/**
 * The options a pipeline can declare, in one table: each has a flag (`--top-k`), the environment
 * variables that may set it (`RAG_EVAL_TOP_K`, then the names seed documents use, such as
 * `RAG_TOP_K`), a description and a default for `--help`, and a Schema that decodes its text.
 *
 * A pipeline lists the options it takes (`Pipeline.make({ options: […], build: (options) => … })`)
 * and receives them decoded and typed. Where the values come from — flags, a `--config` file, the
 * environment, a run's manifest — is the CLI's business (`src/cli/PipelineSettings.ts`), the one
 * place that reads the environment; nothing here does.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { allOptionNames, type OptionName, optionSpecs } from "./OptionSpecs.js"

export * from "./OptionSpecs.js"

const WholeFromString = Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1))
const NonNegativeWholeFromString = Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(0))
const FiniteFromString = Schema.NumberFromString.pipe(Schema.finite())
const BooleanFromText = Schema.transform(
  Schema.Literal("1", "0", "true", "false", "yes", "no", "on", "off"),
  Schema.Boolean,
  {
    strict: true,
    decode: (s) => s === "1" || s === "true" || s === "yes" || s === "on",
    encode: (b) => (b ? "true" : "false")
  }
)
const ListFromText = Schema.transform(Schema.String, Schema.Array(Schema.String), {
  strict: true,
  decode: (s) => s.split(",").map((f) => f.trim()).filter((f) => f !== ""),
  encode: (a) => a.join(",")
})

/**
 * Every option's decoded type. Each key is optional: an option the run does not set (or the
 * pipeline does not declare) is absent, and the pipeline applies its default.
 */
export const PipelineOptionsSchema = Schema.Struct({
  retriever: Schema.optional(Schema.Literal("precomputed", "http", "bm25")),
  topK: Schema.optional(WholeFromString),
  scoreThreshold: Schema.optional(FiniteFromString),
  prefetchLimit: Schema.optional(WholeFromString),
  rerankTopN: Schema.optional(WholeFromString),
  searchUrl: Schema.optional(Schema.String),
  searchBody: Schema.optional(Schema.String),
  hitsPath: Schema.optional(Schema.String),
  hitId: Schema.optional(Schema.String),
  hitText: Schema.optional(Schema.String),
  hitScore: Schema.optional(Schema.String),
  timingsPath: Schema.optional(Schema.String),
  searchTimeout: Schema.optional(FiniteFromString.pipe(Schema.greaterThan(0))),
  searchRetries: Schema.optional(NonNegativeWholeFromString),
  searchToken: Schema.optional(Schema.Redacted(Schema.String)),
  corpus: Schema.optional(Schema.String),
  fuzzyThreshold: Schema.optional(FiniteFromString.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1))),
  pricePer1k: Schema.optional(FiniteFromString.pipe(Schema.greaterThanOrEqualTo(0))),
  fields: Schema.optional(ListFromText),
  listwise: Schema.optional(BooleanFromText),
  rubrics: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  onlyRubrics: Schema.optional(BooleanFromText),
  passIf: Schema.optional(Schema.String.pipe(Schema.minLength(1)))
})

export type PipelineOptions = Schema.Schema.Type<typeof PipelineOptionsSchema>

/** One value's problem: which option, the text given, what was expected. */
export interface OptionProblem {
  readonly option: OptionName
  readonly value: string
  readonly expected: string
}

/**
 * Decode options given as text (from any source) into typed options. The first invalid value is
 * returned as a problem in words (the caller names where it came from).
 */
export const decodeOptions = (
  raw: Readonly<Partial<Record<OptionName, string>>>
): Either.Either<PipelineOptions, OptionProblem> => {
  const decoded: Record<string, unknown> = {}
  for (const name of allOptionNames) {
    const value = raw[name]
    if (value === undefined) continue
    // One option at a time, with its field of the struct's schema, so a problem names its option.
    const field = PipelineOptionsSchema.fields[name] as unknown as Schema.Schema<unknown, unknown>
    const one = ParseResult.decodeUnknownEither(Schema.Struct({ v: field }))({
      v: name === "searchToken" ? value : value.trim()
    })
    if (Either.isLeft(one)) return Either.left({ option: name, value, expected: optionSpecs[name].expected })
    decoded[name] = (one.right as { readonly v: unknown }).v
  }
  return Either.right(decoded as PipelineOptions)
}

/** The options as recorded (manifest) and shown: secrets left out, lists and booleans as text. */
export const recordedOptions = (
  options: PipelineOptions
): Record<string, string | number | boolean | ReadonlyArray<string>> => {
  const out: Record<string, string | number | boolean | ReadonlyArray<string>> = {}
  for (const name of allOptionNames) {
    const value = options[name]
    if (value === undefined || optionSpecs[name].kind === "secret") continue
    out[name] = value as string | number | boolean | ReadonlyArray<string>
  }
  return out
}
