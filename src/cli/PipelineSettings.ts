/**
 * The one place a pipeline's options are gathered: flags (a `--config` file's keys arrive as flags),
 * then the environment, read through Effect `Config` — `RAG_EVAL_*` names first, then the names
 * seed documents use (`RAG_TOP_K`, `RAG_SCORE_THRESHOLD`, `HYBRID_PREFETCH_LIMIT`, `RERANK_TOP_N`).
 * Every value taken from the environment is announced on stderr and recorded (secrets excepted) in
 * the manifest. A flag for an option the pipeline does not take is an error naming the options it
 * does take. Nothing else in rag-eval reads the environment for settings, and nothing writes it.
 */
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { UsageError } from "../domain/Errors.js"
import { maskUrlsIn } from "../domain/Secrets.js"
import { type AnyPipeline, declaredOptions } from "../engine/Pipeline.js"
import {
  allOptionNames,
  decodeOptions,
  type OptionName,
  optionSpecs,
  type PipelineOptions,
  recordedOptions
} from "../engine/PipelineOptions.js"

/** A flag's parsed value (from @effect/cli), as given or not. */
export type FlagValue = Option.Option<string | number | boolean | Redacted.Redacted> | boolean

export interface GatheredOptions {
  readonly options: PipelineOptions
  /** For the manifest: the values (secrets left out) and where each came from. */
  readonly recorded: Readonly<Record<string, unknown>>
  readonly sources: Readonly<Record<string, string>>
}

const flagText = (value: FlagValue): string | undefined => {
  if (typeof value === "boolean") return value ? "true" : undefined
  if (Option.isNone(value)) return undefined
  const v = value.value
  return Redacted.isRedacted(v) ? Redacted.value(v) : String(v)
}

/** "--top-k, --listwise" — a pipeline's options as flags, for messages. */
export const flagList = (names: ReadonlyArray<OptionName>) =>
  names.length === 0 ? "none" : names.map((n) => `--${optionSpecs[n].flag}`).join(", ")

/** The first environment variable of an option that is set (non-empty), read through Config. */
const fromEnvironment = (name: OptionName) =>
  Effect.gen(function*() {
    for (const variable of optionSpecs[name].env) {
      const value = yield* Config.option(Config.string(variable)).pipe(
        Effect.orElseSucceed(() => Option.none<string>())
      )
      if (Option.isSome(value) && value.value.trim() !== "") return Option.some({ variable, value: value.value })
    }
    return Option.none<{ variable: string; value: string }>()
  })

/**
 * The pipeline's options from the flags given and the environment. `flags` maps option names to
 * what the parser got; `quiet` skips the announcements (e.g. `report`, which takes the run's own).
 */
export const gatherOptions = (
  pipeline: AnyPipeline,
  flags: Readonly<Partial<Record<OptionName, FlagValue>>>,
  settings: { readonly announce: boolean } = { announce: true }
) =>
  Effect.gen(function*() {
    const declared = declaredOptions(pipeline)
    const raw: Partial<Record<OptionName, string>> = {}
    const sources: Record<string, string> = {}
    for (const name of allOptionNames) {
      const given = flags[name] === undefined ? undefined : flagText(flags[name]!)
      if (given === undefined) continue
      if (!declared.includes(name)) {
        return yield* new UsageError({
          problem: `--${optionSpecs[name].flag} does not apply to ${pipeline.name} (its options: ${flagList(declared)})`
        })
      }
      raw[name] = given
      sources[name] = `--${optionSpecs[name].flag}`
    }
    for (const name of declared) {
      if (raw[name] !== undefined) continue
      const env = yield* fromEnvironment(name)
      if (Option.isNone(env)) continue
      raw[name] = env.value.value
      sources[name] = `environment ${env.value.variable}`
      if (settings.announce) {
        const spec = optionSpecs[name]
        const shown = spec.kind === "secret" ? "(set)" : maskUrlsIn(env.value.value)
        yield* Console.error(
          `${env.value.variable}${spec.kind === "secret" ? "" : `=${shown}`} from the environment: --${spec.flag}${
            spec.kind === "secret" ? "" : ` ${shown}`
          }`
        )
      }
    }
    const decoded = decodeOptions(raw)
    if (Either.isLeft(decoded)) {
      const p = decoded.left
      const where = sources[p.option]?.startsWith("environment ") === true
        ? `${sources[p.option]!.slice("environment ".length)} (from the environment, for --${
          optionSpecs[p.option].flag
        })`
        : `--${optionSpecs[p.option].flag}`
      const shown = optionSpecs[p.option].kind === "secret" ? "" : ` (got "${p.value}")`
      return yield* new UsageError({ problem: `${where} must be ${p.expected}${shown}` })
    }
    const recorded = recordedOptions(decoded.right)
    return {
      options: decoded.right,
      recorded: Object.fromEntries(
        Object.entries(recorded).map(([k, v]) => [k, typeof v === "string" ? maskUrlsIn(v) : v])
      ),
      sources
    } satisfies GatheredOptions
  })

/** Options as a run recorded them (manifest `options`), decoded again; secrets are not recorded, so absent. */
export const recordedToOptions = (
  recorded: Readonly<Record<string, unknown>>
): Either.Either<PipelineOptions, string> => {
  const raw: Partial<Record<OptionName, string>> = {}
  for (const name of allOptionNames) {
    const v = recorded[name]
    if (v === undefined || v === null) continue
    raw[name] = Array.isArray(v) ? v.join(",") : String(v)
  }
  return Either.mapLeft(decodeOptions(raw), (p) => `option ${p.option} must be ${p.expected} (got "${p.value}")`)
}
