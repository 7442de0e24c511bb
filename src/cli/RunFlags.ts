/**
 * The flags of `rag-eval run`: cheap to load, so `--help` and `--version` do not pull in the
 * runner, the providers or the openai SDK (`RunAction.ts` holds what runs).
 */
import * as Args from "@effect/cli/Args"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import type * as Command from "@effect/cli/Command"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { baseUrlProblem } from "../providers/Endpoint.js"
import { isRunId, runIdProblem } from "../domain/RunId.js"
import { secretFlagNames } from "../domain/Secrets.js"
import { PROVIDERS } from "../providers/Names.js"
import { defaultFormats } from "../report/Formats.js"

const pipelineArg = Args.text({ name: "pipeline" }).pipe(
  Args.withDescription("Pipeline file, e.g. pipelines/rag-answers.ts")
)

const input = Options.text("input").pipe(
  Options.withAlias("i"),
  Options.withDescription("Test cases: .csv, .json (array, or {cases:[…]}) or .jsonl, chosen by extension"),
  Options.optional
)
const csv = Options.text("csv").pipe(Options.withDescription("Same as --input, for a CSV file"), Options.optional)
const out = Options.text("out").pipe(
  Options.withDescription("Output root; results go to <out>/<pipeline>/<run-id>/ (default out)"),
  Options.withDefault("out")
)
const limit = Options.integer("limit").pipe(Options.withDescription("Evaluate only the first N cases"), Options.optional)
const format = Options.text("format").pipe(
  Options.withDescription("Reports to write: markdown, csv, json, comma-separated (default markdown,csv)"),
  Options.withDefault(defaultFormats.join(","))
)
export const provider = Options.choice("provider", PROVIDERS).pipe(
  Options.withDescription("Judge provider (default: heuristic — offline, deterministic, no API key)"),
  Options.optional
)
/**
 * A flag value checked as it is parsed: `problem` says what is wrong (undefined when nothing is), and
 * the CLI reports it naming the flag, with exit code 2, before anything is loaded or written.
 */
const checked = <A>(problem: (value: A) => string | undefined) => (self: Options.Options<A>): Options.Options<A> =>
  Options.mapEffect(self, (value) => {
    const wrong = problem(value)
    return wrong === undefined ? Effect.succeed(value) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(wrong)))
  })
const positive = (flag: string) => checked((n: number) => Number.isFinite(n) && n > 0 ? undefined : `${flag} must be greater than 0 (got ${n})`)
const atLeast = (flag: string, min: number) => checked((n: number) => n >= min ? undefined : `${flag} must be at least ${min} (got ${n})`)

/** `--max-wait`: a duration, "90s", "10m", "1h" or a number of seconds, in milliseconds. */
export const parseWait = (text: string): number | undefined => {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$/i.exec(text)
  if (m === null) return undefined
  const unit = (m[2] ?? "s").toLowerCase()
  const ms = Number(m[1]) * (unit === "ms" ? 1 : unit === "s" ? 1000 : unit === "h" ? 3_600_000 : 60_000)
  return ms > 0 ? ms : undefined
}

export const model = Options.text("model").pipe(Options.withDescription("Model name (defaults: openai gpt-4o-mini, mistral mistral-small-latest)"), Options.optional)
export const baseUrl = Options.text("base-url").pipe(
  Options.withDescription("API base URL (required for openai-compatible, e.g. http://127.0.0.1:8000/v1); part of the run id and of every judgment key"),
  checked(baseUrlProblem),
  Options.optional
)
export const apiKey = Options.redacted("api-key").pipe(
  Options.withDescription("API key (else OPENAI_API_KEY, MISTRAL_API_KEY or API_KEY from the environment)"),
  Options.optional
)
const concurrency = Options.integer("concurrency").pipe(
  Options.withDescription("Most judge calls in flight at once (default 8); with --adaptive the level moves between 1 and this"),
  atLeast("--concurrency", 1),
  Options.withDefault(8)
)
export const rpm = Options.integer("rpm").pipe(
  Options.withDescription("Requests per minute: starts are paced evenly (a token bucket) at 95% of this, so network jitter never breaks the limit, shared by all workers"),
  positive("--rpm"),
  Options.optional
)
export const tpm = Options.integer("tpm").pipe(
  Options.withDescription("Tokens per minute (estimated prompt + output tokens, corrected by each reply's usage), paced like --rpm"),
  positive("--tpm"),
  Options.optional
)
export const burst = Options.integer("burst").pipe(
  Options.withDescription("Requests that may start at once under --rpm (default: one second's worth)"),
  positive("--burst"),
  Options.optional
)
export const adaptive = Options.choiceWithValue("adaptive", [["true", true], ["false", false], ["on", true], ["off", false]] as const).pipe(
  Options.withDescription("Adaptive concurrency (AIMD: halve on a 429, one more after a run of successes) and learning the server's limit from 429s and x-ratelimit-* headers; --adaptive false pins --concurrency (default true)"),
  Options.withDefault(true)
)
export const maxWait = Options.text("max-wait").pipe(
  Options.withDescription("How long one judgment may wait out rate limits (429s) before it is recorded as failed, e.g. 90s, 10m, 1h (default 10m); also caps any Retry-After"),
  checked((text: string) => parseWait(text) === undefined ? `--max-wait must be a duration greater than 0 such as 90s, 10m or 1h (got "${text}")` : undefined),
  Options.withDefault("10m")
)
export const noPreflight = Options.boolean("no-preflight").pipe(
  Options.withDescription("Skip the one minimal request made before judging (it reports a bad key, model or URL in under a second, and falls back from json_schema answers when the server does not support them)")
)
export const timeout = Options.float("timeout").pipe(Options.withDescription("Per-request timeout in seconds (default 60)"), positive("--timeout"), Options.withDefault(60))
export const maxRetries = Options.integer("max-retries").pipe(
  Options.withDescription("Retries of a call that failed with a 5xx, a timeout or a network error before the judgment is recorded as failed (default 3); 429s are waited out instead (--max-wait)"),
  atLeast("--max-retries", 0),
  Options.withDefault(3)
)
const maxFailures = Options.integer("max-failures").pipe(Options.withDescription("Failed judgments tolerated before exit code 1 (default 0)"), Options.withDefault(0))
export const seed = Options.integer("seed").pipe(Options.withDescription("Sampling seed sent to the API (Mistral: random_seed)"), Options.optional)
export const temperature = Options.float("temperature").pipe(
  Options.withDescription("Sampling temperature sent to the API (openai and mistral: 0 to 2)"),
  checked((t: number) => t >= 0 ? undefined : `--temperature must be 0 or more (got ${t})`),
  Options.optional
)
/** Shared by `run` and `report`. */
export const csvRaw = Options.boolean("csv-raw").pipe(Options.withDescription("Write report.csv cells as they are: do not prefix cells starting with = + - @ tab or CR with ' (spreadsheet formula protection)"))
const columns = Options.text("columns").pipe(
  Options.withDescription("Rename input columns, e.g. question=Query,answer=Response (keys: question, answer, history, fragments, id)"),
  Options.optional
)
const iterations = Options.integer("iterations").pipe(Options.withDescription("Judge every case N times, to measure stability (default 1)"), Options.withDefault(1))
const fresh = Options.boolean("fresh").pipe(Options.withDescription("Start the run over, discarding its journal"))
const runId = Options.text("run-id").pipe(
  Options.withDescription("Name the run (default: derived from pipeline, input, judge and prompts); 1-128 letters, digits, . _ -, starting with a letter or digit"),
  checked((id: string) => isRunId(id) ? undefined : `--run-id: ${runIdProblem(id)}`),
  Options.optional
)
const retryFailed = Options.boolean("retry-failed").pipe(Options.withDescription("On resume, judge again the judgments recorded as failed"))
const noCache = Options.boolean("no-cache").pipe(Options.withDescription("Do not reuse judgments cached by earlier runs under --out (the run's own journal is still used)"))
const dryRun = Options.boolean("dry-run").pipe(Options.withDescription("Print the calls, estimated tokens and cost, without calling anything or writing files"))
const prices = Options.text("prices").pipe(Options.withDescription("JSON price table { \"model\": { \"input\": USD per 1M tokens, \"output\": … } } overriding the built-in one"), Options.optional)
const priceIn = Options.float("price-in").pipe(Options.withDescription("Price of the judge model's input tokens, USD per 1M"), Options.optional)
const priceOut = Options.float("price-out").pipe(Options.withDescription("Price of the judge model's output tokens, USD per 1M"), Options.optional)

/**
 * Retrieval settings. Pipelines read them from the environment (so the same pipeline file works
 * when driven by env vars alone); a flag sets its variable before the pipeline is loaded.
 */
export const retrievalFlags = {
  retriever: Options.choice("retriever", ["precomputed", "http", "bm25"]).pipe(Options.withDescription("Retriever for retrieval pipelines: hits in the test set (default), an HTTP search endpoint, or an embedded BM25 index over --corpus [RAG_EVAL_RETRIEVER]"), Options.optional),
  topK: Options.integer("top-k").pipe(Options.withDescription("Keep the first N hits of each query [RAG_TOP_K]"), Options.optional),
  scoreThreshold: Options.float("score-threshold").pipe(Options.withDescription("Drop hits scoring below this before evaluation [RAG_SCORE_THRESHOLD]"), Options.optional),
  prefetchLimit: Options.integer("prefetch-limit").pipe(Options.withDescription("Hybrid/BM25 prefetch size, recorded and sent to http [HYBRID_PREFETCH_LIMIT]"), Options.optional),
  rerankTopN: Options.integer("rerank-top-n").pipe(Options.withDescription("Candidates the reranker re-scores, recorded and sent to http [RERANK_TOP_N]"), Options.optional),
  searchUrl: Options.text("search-url").pipe(Options.withDescription("--retriever http: the search endpoint to POST each query to [RAG_EVAL_SEARCH_URL]"), Options.optional),
  searchBody: Options.text("search-body").pipe(Options.withDescription("--retriever http: JSON body template, e.g. {\"query\": \"{{query}}\", \"top_k\": {{topK}}} [RAG_EVAL_SEARCH_BODY]"), Options.optional),
  hitsPath: Options.text("hits-path").pipe(Options.withDescription("--retriever http: JSON path of the hit list in the response, e.g. result.hits [RAG_EVAL_HITS_PATH]"), Options.optional),
  hitId: Options.text("hit-id").pipe(Options.withDescription("--retriever http: field of a hit's id [RAG_EVAL_HIT_ID]"), Options.optional),
  hitText: Options.text("hit-text").pipe(Options.withDescription("--retriever http: field of a hit's text [RAG_EVAL_HIT_TEXT]"), Options.optional),
  hitScore: Options.text("hit-score").pipe(Options.withDescription("--retriever http: field of a hit's score [RAG_EVAL_HIT_SCORE]"), Options.optional),
  searchTimeout: Options.float("search-timeout").pipe(Options.withDescription("--retriever http: timeout per search, seconds [RAG_EVAL_SEARCH_TIMEOUT]"), Options.optional),
  searchRetries: Options.integer("search-retries").pipe(Options.withDescription("--retriever http: retries of a failed search [RAG_EVAL_SEARCH_RETRIES]"), Options.optional),
  searchToken: Options.redacted("search-token").pipe(Options.withDescription("--retriever http: bearer token for the search endpoint, never recorded [RAG_EVAL_SEARCH_TOKEN]"), Options.optional),
  corpus: Options.text("corpus").pipe(Options.withDescription("--retriever bm25: corpus JSONL of {id, text} [RAG_EVAL_CORPUS]"), Options.optional),
  fuzzyThreshold: Options.float("fuzzy-threshold").pipe(Options.withDescription("evidence-retrieval: similarity at which a chunk covers a gold span (default 0.7) [RAG_EVAL_FUZZY_THRESHOLD]"), Options.optional),
  pricePer1k: Options.float("price-per-1k").pipe(Options.withDescription("evidence-retrieval: USD per 1K tokens for the cost report [RAG_EVAL_PRICE_PER_1K]"), Options.optional),
  fields: Options.text("fields").pipe(Options.withDescription("search-relevance: hit fields the judge sees, e.g. text,title (a case's eval.fields wins) [RAG_EVAL_FIELDS]"), Options.optional)
}

/** Listwise judging, for the pipelines that grade hits; sets RAG_EVAL_LISTWISE before the pipeline loads. */
const listwise = Options.boolean("listwise").pipe(Options.withDescription("course-retrieval, search-relevance: judge the hits of a query in one call (at most 20 a call, each hit still graded on its own) instead of one call per hit; fewer prompt tokens [RAG_EVAL_LISTWISE]"))

/** The environment variable each retrieval flag sets. */
export const retrievalEnv: Readonly<Record<keyof typeof retrievalFlags, string>> = {
  retriever: "RAG_EVAL_RETRIEVER",
  topK: "RAG_TOP_K",
  scoreThreshold: "RAG_SCORE_THRESHOLD",
  prefetchLimit: "HYBRID_PREFETCH_LIMIT",
  rerankTopN: "RERANK_TOP_N",
  searchUrl: "RAG_EVAL_SEARCH_URL",
  searchBody: "RAG_EVAL_SEARCH_BODY",
  hitsPath: "RAG_EVAL_HITS_PATH",
  hitId: "RAG_EVAL_HIT_ID",
  hitText: "RAG_EVAL_HIT_TEXT",
  hitScore: "RAG_EVAL_HIT_SCORE",
  searchTimeout: "RAG_EVAL_SEARCH_TIMEOUT",
  searchRetries: "RAG_EVAL_SEARCH_RETRIES",
  searchToken: "RAG_EVAL_SEARCH_TOKEN",
  corpus: "RAG_EVAL_CORPUS",
  fuzzyThreshold: "RAG_EVAL_FUZZY_THRESHOLD",
  pricePer1k: "RAG_EVAL_PRICE_PER_1K",
  fields: "RAG_EVAL_FIELDS"
}

/**
 * The environment a pipeline file reads its settings from (retrieval, --listwise, fields…), as
 * recorded in the manifest so `rag-eval report` loads the pipeline as the run did. The search token
 * is a secret: never recorded.
 */
export const pipelineEnvKeys: ReadonlyArray<string> = [
  ...Object.values(retrievalEnv).filter((k) => k !== "RAG_EVAL_SEARCH_TOKEN"),
  "RAG_EVAL_LISTWISE"
]

// --- issue 15: the Batch API and the budget cap
const batchFlags = {
  batch: Options.boolean("batch").pipe(Options.withDescription("Judge through the provider's Batch API (openai, mistral, openai-compatible servers with /v1/batches): half price, results within 24 h; resumable like any run")),
  detach: Options.boolean("detach").pipe(Options.withDescription("With --batch: submit the batches and exit; the same command later collects them (and waits if they are not finished)")),
  batchRepair: Options.choice("batch-repair", ["batch", "sync"]).pipe(Options.withDescription("With --batch: ask a malformed reply again in the next batch (default) or synchronously"), Options.withDefault("batch" as const)),
  batchPoll: Options.float("batch-poll").pipe(Options.withDescription("With --batch: first wait between status checks, seconds (default 10; doubles up to 5 minutes)"), positive("--batch-poll"), Options.withDefault(10)),
  maxCost: Options.float("max-cost").pipe(Options.withDescription("Stop starting calls (and batches) once what this invocation spent plus the calls in flight would pass USD; the run stops resumable, exit 1"), positive("--max-cost"), Options.optional)
}
// ---

export const runConfig = { pipeline: pipelineArg, input, csv, out, limit, format, csvRaw, provider, model, baseUrl, apiKey, concurrency, rpm, tpm, burst, adaptive, maxWait, noPreflight, timeout, maxRetries, maxFailures, seed, temperature, columns, iterations, fresh, runId, retryFailed, noCache, dryRun, prices, priceIn, priceOut, listwise, ...retrievalFlags, ...batchFlags }

export type RunFlags = Command.Command.ParseConfig<typeof runConfig>

/** Flags of `run` whose value is a secret (every `Options.redacted` above): masked in the recorded command. */
export const secretFlags: ReadonlyArray<string> = secretFlagNames(runConfig)

/** The provider flags `run` and `serve` share (same names, defaults and meaning). */
export const providerFlags = { provider, model, baseUrl, apiKey, rpm, tpm, burst, adaptive, maxWait, noPreflight, timeout, maxRetries, seed, temperature }

type ProviderFlagValues = Command.Command.ParseConfig<typeof providerFlags>

/** Temperatures the hosted APIs accept; local servers take any temperature ≥ 0. */
const TEMPERATURE_RANGE: Readonly<Record<string, readonly [number, number]>> = { openai: [0, 2], mistral: [0, 2] }

/** What is wrong with a combination of provider flags (each flag alone was checked as it was parsed). */
export const providerFlagsProblem = (flags: ProviderFlagValues): string | undefined => {
  const provider = Option.getOrElse(flags.provider, () => "heuristic")
  const range = TEMPERATURE_RANGE[provider]
  if (range !== undefined && Option.isSome(flags.temperature) && (flags.temperature.value < range[0] || flags.temperature.value > range[1])) {
    return `--temperature must be between ${range[0]} and ${range[1]} for ${provider} (got ${flags.temperature.value})`
  }
  return undefined
}

/** Parsed provider flags → the judge layer's settings (`concurrency` is each command's own). */
export const judgeSettings = (flags: ProviderFlagValues, concurrency: number) => ({
  provider: Option.getOrElse(flags.provider, () => "heuristic" as const),
  model: Option.getOrUndefined(flags.model),
  baseUrl: Option.getOrUndefined(flags.baseUrl),
  apiKey: Option.getOrUndefined(flags.apiKey),
  concurrency,
  rpm: Option.getOrUndefined(flags.rpm),
  tpm: Option.getOrUndefined(flags.tpm),
  burst: Option.getOrUndefined(flags.burst),
  adaptive: flags.adaptive,
  maxWaitMs: parseWait(flags.maxWait) ?? 10 * 60_000,
  preflight: !flags.noPreflight,
  timeoutMs: Math.round(flags.timeout * 1000),
  maxRetries: flags.maxRetries,
  seed: Option.getOrUndefined(flags.seed),
  temperature: Option.getOrUndefined(flags.temperature)
})
