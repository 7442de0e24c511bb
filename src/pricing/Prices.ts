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
import { thousands } from "../domain/Numbers.js"

export interface Price {
  /** USD per 1M input tokens. */
  readonly input: number
  /** USD per 1M output tokens. */
  readonly output: number
  /** USD per 1M input tokens through the provider's Batch API (`--batch`); default `input`. */
  readonly batchInput?: number | undefined
  /** USD per 1M output tokens through the Batch API; default `output`. */
  readonly batchOutput?: number | undefined
  /**
   * USD per 1M input tokens served from the provider's prompt cache; default `input` (no discount
   * assumed). Through the Batch API a cached token costs this × batchInput / input.
   */
  readonly cachedInput?: number | undefined
}

/**
 * A list price with the Batch API at half of it, as OpenAI and Mistral publish, and a cached-input
 * price: OpenAI's published one per model; Mistral bills cached prompt tokens at 10% of input.
 */
const listed = (input: number, output: number, cachedInput?: number): Price => ({
  input,
  output,
  batchInput: input / 2,
  batchOutput: output / 2,
  ...(cachedInput === undefined ? {} : { cachedInput })
})

export const builtInPrices: Readonly<Record<string, Price>> = {
  "gpt-4o-mini": listed(0.15, 0.6, 0.075),
  "gpt-4o": listed(2.5, 10, 1.25),
  "gpt-4.1": listed(2, 8, 0.5),
  "gpt-4.1-mini": listed(0.4, 1.6, 0.1),
  "gpt-4.1-nano": listed(0.1, 0.4, 0.025),
  "o3-mini": listed(1.1, 4.4, 0.55),
  "o4-mini": listed(1.1, 4.4, 0.275),
  "o3": listed(2, 8, 0.5),
  "mistral-small-latest": listed(0.1, 0.3, 0.1 / 10),
  "mistral-medium-latest": listed(0.4, 2, 0.4 / 10),
  "mistral-large-latest": listed(2, 6, 2 / 10),
  "ministral-8b-latest": listed(0.1, 0.1, 0.1 / 10),
  "open-mistral-nemo": listed(0.15, 0.15, 0.15 / 10)
}

const LOCAL_PROVIDERS = new Set(["heuristic", "ollama"])

export const PriceFile = Schema.Record({
  key: Schema.String,
  value: Schema.Struct({
    input: Schema.Number,
    output: Schema.Number,
    batchInput: Schema.optional(Schema.Number),
    batchOutput: Schema.optional(Schema.Number),
    cachedInput: Schema.optional(Schema.Number)
  })
})

export const loadPriceFile = (path: string): Effect.Effect<Readonly<Record<string, Price>>, InputError> =>
  Effect.try({
    try: () => JSON.parse(fs.readFileSync(path, "utf8")) as unknown,
    catch: (e) => new InputError({ file: path, problem: `cannot read prices: ${(e as Error).message}` })
  }).pipe(Effect.flatMap((json) =>
    Schema.decodeUnknown(PriceFile)(json).pipe(
      Effect.mapError((e) =>
        new InputError({
          file: path,
          problem:
            `expected { "model": { "input": USD per 1M, "output": USD per 1M[, "batchInput", "batchOutput", "cachedInput"] } }: ${e.message}`
        })
      )
    )
  ))

/** The price of a provider's model: flags win, then the file, then the built-in table. */
export const priceFor = (
  provider: string,
  model: string,
  overrides: {
    readonly table?: Readonly<Record<string, Price>> | undefined
    readonly flag?: Partial<Price> | undefined
  } = {}
): Price | undefined => {
  const base = overrides.table?.[model] ?? builtInPrices[model] ??
    (LOCAL_PROVIDERS.has(provider) ? { input: 0, output: 0 } : undefined)
  const flag = overrides.flag
  if (flag?.input !== undefined || flag?.output !== undefined) {
    // A flag changes the list price: the discounts keep their ratio to it.
    const input = flag.input ?? base?.input ?? 0
    const output = flag.output ?? base?.output ?? 0
    const ratio = (discounted: number | undefined, list: number | undefined, next: number) =>
      discounted === undefined || list === undefined || list === 0 ? undefined : (discounted / list) * next
    const batchInput = ratio(base?.batchInput, base?.input, input)
    const batchOutput = ratio(base?.batchOutput, base?.output, output)
    const cachedInput = ratio(base?.cachedInput, base?.input, input)
    return {
      input,
      output,
      ...(batchInput === undefined ? {} : { batchInput }),
      ...(batchOutput === undefined ? {} : { batchOutput }),
      ...(cachedInput === undefined ? {} : { cachedInput })
    }
  }
  return base
}

/**
 * Tokens spent: `input`/`output` are every token; the others are parts of them (absent: none) —
 * `cachedInput` of `input` served from the prompt cache (either mode), `batchInput`/`batchOutput`
 * spent through the Batch API, `batchCachedInput` of `batchInput` served from the cache.
 */
export interface Tokens {
  readonly input: number
  readonly output: number
  readonly cachedInput?: number | undefined
  readonly batchInput?: number | undefined
  readonly batchOutput?: number | undefined
  readonly batchCachedInput?: number | undefined
}

export type MutableTokens = { -readonly [K in keyof Tokens]-?: number }
export const noTokens = (): MutableTokens => ({
  input: 0,
  output: 0,
  cachedInput: 0,
  batchInput: 0,
  batchOutput: 0,
  batchCachedInput: 0
})

/** Add a judgment's usage to `acc` (its `via` says whether it went through a batch). */
export const addUsageTo = (
  acc: MutableTokens,
  usage: {
    readonly inputTokens: number
    readonly outputTokens: number
    readonly cachedInputTokens?: number | undefined
  },
  via: "batch" | undefined
): void => {
  const cached = usage.cachedInputTokens ?? 0
  acc.input += usage.inputTokens
  acc.output += usage.outputTokens
  acc.cachedInput += cached
  if (via === "batch") {
    acc.batchInput += usage.inputTokens
    acc.batchOutput += usage.outputTokens
    acc.batchCachedInput += cached
  }
}

/** The tokens a case's judgments spent, zero parts left out. */
export const judgmentTokens = (
  judgments: Iterable<{ readonly usage: Parameters<typeof addUsageTo>[1]; readonly via?: "batch" | undefined }>
): Tokens => {
  const acc = noTokens()
  for (const j of judgments) addUsageTo(acc, j.usage, j.via)
  return compactTokens(acc)
}

/** Sum of token counts (the parts only when some are non-zero, so synchronous runs' files keep their shape). */
export const sumTokens = (all: ReadonlyArray<Tokens>): Tokens => {
  const acc = noTokens()
  for (const t of all) {
    acc.input += t.input
    acc.output += t.output
    acc.cachedInput += t.cachedInput ?? 0
    acc.batchInput += t.batchInput ?? 0
    acc.batchOutput += t.batchOutput ?? 0
    acc.batchCachedInput += t.batchCachedInput ?? 0
  }
  return compactTokens(acc)
}

/** The token counts with zero parts left out. */
export const compactTokens = (t: Tokens): Tokens => {
  const out: Record<string, number> = { input: t.input, output: t.output }
  for (const k of ["cachedInput", "batchInput", "batchOutput", "batchCachedInput"] as const) {
    if ((t[k] ?? 0) > 0) out[k] = t[k]!
  }
  return out as unknown as Tokens
}

export interface Cost {
  readonly inputTokens: number
  readonly outputTokens: number
  /** Of the input tokens, served from the prompt cache (present when some were). */
  readonly cachedInputTokens?: number | undefined
  /** Of the tokens, spent through the Batch API (present when some were). */
  readonly batchInputTokens?: number | undefined
  readonly batchOutputTokens?: number | undefined
  readonly batchCachedInputTokens?: number | undefined
  /** USD; null when the model has no known price. */
  readonly usd: number | null
  /** What the same tokens cost at the list price, synchronous and uncached (present when it differs from `usd`). */
  readonly listUsd?: number | undefined
  /** `listUsd - usd`: what the Batch API and the prompt cache saved (present when positive). */
  readonly savingUsd?: number | undefined
  readonly price: Price | null
}

/** USD of tokens at a price: synchronous and batch parts at their prices, cached input at the cached price. */
export const usdOf = (tokens: Tokens, price: Price): number => {
  const batchIn = tokens.batchInput ?? 0
  const batchOut = tokens.batchOutput ?? 0
  const batchCached = tokens.batchCachedInput ?? 0
  const syncCached = (tokens.cachedInput ?? 0) - batchCached
  const syncIn = tokens.input - batchIn
  const pBatchIn = price.batchInput ?? price.input
  const pCached = price.cachedInput ?? price.input
  const pBatchCached = price.input === 0 ? pBatchIn : pCached * pBatchIn / price.input
  return ((syncIn - syncCached) * price.input + syncCached * pCached +
    (batchIn - batchCached) * pBatchIn + batchCached * pBatchCached +
    (tokens.output - batchOut) * price.output + batchOut * (price.batchOutput ?? price.output)) / 1_000_000
}

export const cost = (tokens: Tokens, price: Price | undefined): Cost => {
  const usd = price === undefined ? null : usdOf(tokens, price)
  const listUsd = price === undefined ? null : (tokens.input * price.input + tokens.output * price.output) / 1_000_000
  const saving = usd === null || listUsd === null ? 0 : listUsd - usd
  return {
    inputTokens: tokens.input,
    outputTokens: tokens.output,
    ...((tokens.cachedInput ?? 0) > 0 ? { cachedInputTokens: tokens.cachedInput } : {}),
    ...((tokens.batchInput ?? 0) > 0 || (tokens.batchOutput ?? 0) > 0
      ? {
        batchInputTokens: tokens.batchInput ?? 0,
        batchOutputTokens: tokens.batchOutput ?? 0,
        ...((tokens.batchCachedInput ?? 0) > 0 ? { batchCachedInputTokens: tokens.batchCachedInput } : {})
      }
      : {}),
    usd,
    ...(saving > 1e-12 ? { listUsd: listUsd!, savingUsd: saving } : {}),
    price: price ?? null
  }
}

/** The tokens a cost was computed from (to add costs up). */
export const tokensOfCost = (c: Cost): Tokens => ({
  input: c.inputTokens,
  output: c.outputTokens,
  cachedInput: c.cachedInputTokens,
  batchInput: c.batchInputTokens,
  batchOutput: c.batchOutputTokens,
  batchCachedInput: c.batchCachedInputTokens
})

/** "cached 42.0% of input tokens; saved $0.0123 (Batch API and prompt cache)" — empty when neither applies. */
export const savingNote = (c: Cost): string => {
  const parts: Array<string> = []
  if ((c.cachedInputTokens ?? 0) > 0 && c.inputTokens > 0) {
    parts.push(`${(100 * c.cachedInputTokens! / c.inputTokens).toFixed(1)}% of input tokens cached`)
  }
  if ((c.batchInputTokens ?? 0) > 0 || (c.batchOutputTokens ?? 0) > 0) {
    parts.push(
      `${thousandsOf(c.batchInputTokens ?? 0)} in / ${thousandsOf(c.batchOutputTokens ?? 0)} out through the Batch API`
    )
  }
  if (c.savingUsd !== undefined) {
    parts.push(`saved ${formatUsd(c.savingUsd)} of ${formatUsd(c.listUsd ?? null)} at the list price`)
  }
  return parts.join("; ")
}

const thousandsOf = (n: number) => thousands(Math.round(n))

export const formatUsd = (
  usd: number | null
) => (usd === null
  ? "unknown (no price for this model: use --prices or --price-in/--price-out)"
  : `$${usd < 0.01 && usd > 0 ? usd.toFixed(6) : usd.toFixed(4)}`)
