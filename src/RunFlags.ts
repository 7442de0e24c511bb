/**
 * The flags of `rag-eval run`: cheap to load, so `--help` and `--version` do not pull in the
 * runner, the providers or the openai SDK (`RunAction.ts` holds what runs).
 */
import * as Args from "@effect/cli/Args"
import * as Options from "@effect/cli/Options"
import type * as Command from "@effect/cli/Command"
import * as Option from "effect/Option"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Effect from "effect/Effect"
import { isRunId, runIdProblem } from "./domain/RunId.js"
import { secretFlagNames } from "./domain/Secrets.js"
import { PROVIDERS } from "./providers/Names.js"
import { defaultFormats } from "./report/Formats.js"

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
export const model = Options.text("model").pipe(Options.withDescription("Model name (defaults: openai gpt-4o-mini, mistral mistral-small-latest)"), Options.optional)
export const baseUrl = Options.text("base-url").pipe(Options.withDescription("API base URL (required for openai-compatible, e.g. http://127.0.0.1:8000/v1)"), Options.optional)
export const apiKey = Options.redacted("api-key").pipe(
  Options.withDescription("API key (else OPENAI_API_KEY, MISTRAL_API_KEY or API_KEY from the environment)"),
  Options.optional
)
const concurrency = Options.integer("concurrency").pipe(Options.withDescription("Judge calls in flight at once (default 8)"), Options.withDefault(8))
export const rpm = Options.integer("rpm").pipe(Options.withDescription("Requests per minute limit, shared by all workers"), Options.optional)
export const tpm = Options.integer("tpm").pipe(Options.withDescription("Tokens per minute limit (estimated prompt + max output tokens)"), Options.optional)
export const timeout = Options.float("timeout").pipe(Options.withDescription("Per-request timeout in seconds (default 60)"), Options.withDefault(60))
export const maxRetries = Options.integer("max-retries").pipe(Options.withDescription("Retries of a failed call (5xx, timeout, network) before it is recorded as failed (default 3)"), Options.withDefault(3))
const maxFailures = Options.integer("max-failures").pipe(Options.withDescription("Failed judgments tolerated before exit code 1 (default 0)"), Options.withDefault(0))
export const seed = Options.integer("seed").pipe(Options.withDescription("Sampling seed sent to the API (Mistral: random_seed)"), Options.optional)
export const temperature = Options.float("temperature").pipe(Options.withDescription("Sampling temperature sent to the API"), Options.optional)
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
  Options.mapEffect((id) => isRunId(id) ? Effect.succeed(id) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--run-id: ${runIdProblem(id)}`)))),
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

export const runConfig = { pipeline: pipelineArg, input, csv, out, limit, format, csvRaw, provider, model, baseUrl, apiKey, concurrency, rpm, tpm, timeout, maxRetries, maxFailures, seed, temperature, columns, iterations, fresh, runId, retryFailed, noCache, dryRun, prices, priceIn, priceOut, listwise, ...retrievalFlags }

export type RunFlags = Command.Command.ParseConfig<typeof runConfig>

/** Flags of `run` whose value is a secret (every `Options.redacted` above): masked in the recorded command. */
export const secretFlags: ReadonlyArray<string> = secretFlagNames(runConfig)

/** The provider flags `run` and `serve` share (same names, defaults and meaning). */
export const providerFlags = { provider, model, baseUrl, apiKey, rpm, tpm, timeout, maxRetries, seed, temperature }

type ProviderFlagValues = Command.Command.ParseConfig<typeof providerFlags>

/** Parsed provider flags → the judge layer's settings (`concurrency` is each command's own). */
export const judgeSettings = (flags: ProviderFlagValues, concurrency: number) => ({
  provider: Option.getOrElse(flags.provider, () => "heuristic" as const),
  model: Option.getOrUndefined(flags.model),
  baseUrl: Option.getOrUndefined(flags.baseUrl),
  apiKey: Option.getOrUndefined(flags.apiKey),
  concurrency,
  rpm: Option.getOrUndefined(flags.rpm),
  tpm: Option.getOrUndefined(flags.tpm),
  timeoutMs: Math.round(flags.timeout * 1000),
  maxRetries: flags.maxRetries,
  seed: Option.getOrUndefined(flags.seed),
  temperature: Option.getOrUndefined(flags.temperature)
})
