/**
 * Token prices, per million tokens, by model. Built-in defaults for common OpenAI and Mistral
 * models (list prices as of 2025; check your contract), overridable by a JSON file
 * (`--prices prices.json`: `{ "model": { "input": 0.15, "output": 0.6 } }`) or by flags
 * (`--price-in`, `--price-out`). Local providers (heuristic, ollama) cost 0; an unknown model on a
 * paid provider has no price: its cost is reported as unknown, never as 0.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { InputError } from "../domain/Errors.js"

export interface Price {
  /** USD per 1M input tokens. */
  readonly input: number
  /** USD per 1M output tokens. */
  readonly output: number
}

export const builtInPrices: Readonly<Record<string, Price>> = {
  "gpt-4o-mini": { input: 0.15, output: 0.6 },
  "gpt-4o": { input: 2.5, output: 10 },
  "gpt-4.1": { input: 2, output: 8 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4 },
  "o3-mini": { input: 1.1, output: 4.4 },
  "o4-mini": { input: 1.1, output: 4.4 },
  "o3": { input: 2, output: 8 },
  "mistral-small-latest": { input: 0.1, output: 0.3 },
  "mistral-medium-latest": { input: 0.4, output: 2 },
  "mistral-large-latest": { input: 2, output: 6 },
  "ministral-8b-latest": { input: 0.1, output: 0.1 },
  "open-mistral-nemo": { input: 0.15, output: 0.15 }
}

const LOCAL_PROVIDERS = new Set(["heuristic", "ollama"])

export const PriceFile = Schema.Record({ key: Schema.String, value: Schema.Struct({ input: Schema.Number, output: Schema.Number }) })

export const loadPriceFile = (path: string): Effect.Effect<Readonly<Record<string, Price>>, InputError> =>
  Effect.try({
    try: () => JSON.parse(fs.readFileSync(path, "utf8")) as unknown,
    catch: (e) => new InputError({ file: path, problem: `cannot read prices: ${(e as Error).message}` })
  }).pipe(Effect.flatMap((json) =>
    Schema.decodeUnknown(PriceFile)(json).pipe(
      Effect.mapError((e) => new InputError({ file: path, problem: `expected { "model": { "input": USD per 1M, "output": USD per 1M } }: ${e.message}` }))
    )
  ))

/** The price of a provider's model: flags win, then the file, then the built-in table. */
export const priceFor = (
  provider: string,
  model: string,
  overrides: { readonly table?: Readonly<Record<string, Price>> | undefined; readonly flag?: Partial<Price> | undefined } = {}
): Price | undefined => {
  const base = overrides.table?.[model] ?? builtInPrices[model] ?? (LOCAL_PROVIDERS.has(provider) ? { input: 0, output: 0 } : undefined)
  const flag = overrides.flag
  if (flag?.input !== undefined || flag?.output !== undefined) {
    return { input: flag.input ?? base?.input ?? 0, output: flag.output ?? base?.output ?? 0 }
  }
  return base
}

export interface Cost {
  readonly inputTokens: number
  readonly outputTokens: number
  /** USD; null when the model has no known price. */
  readonly usd: number | null
  readonly price: Price | null
}

export const cost = (tokens: { readonly input: number; readonly output: number }, price: Price | undefined): Cost => ({
  inputTokens: tokens.input,
  outputTokens: tokens.output,
  usd: price === undefined ? null : (tokens.input * price.input + tokens.output * price.output) / 1_000_000,
  price: price ?? null
})

export const formatUsd = (usd: number | null) => (usd === null ? "unknown (no price for this model: use --prices or --price-in/--price-out)" : `$${usd < 0.01 && usd > 0 ? usd.toFixed(6) : usd.toFixed(4)}`)
