/**
 * The command line: `rag-eval run <pipeline> …`. Flags are parsed here and turned into Layers
 * (judge/provider, retriever, journal, reporters, progress) in one place; the runner never sees flags.
 */
import { Args, Command, Options, ValidationError } from "@effect/cli"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as Path from "node:path"
import { UsageError } from "./domain/Errors.js"
import { judgeLayer, PROVIDERS, type ProviderName } from "./JudgeLayer.js"
import { Judge } from "./judges/Judge.js"
import { loadPipeline } from "./pipeline/LoadPipeline.js"
import { precomputed, Retriever } from "./pipeline/Retriever.js"
import { checkFailures, estimate, run, type RunOptions } from "./pipeline/Runner.js"
import { loadPriceFile, formatUsd, type Price, priceFor } from "./pricing/Prices.js"
import * as JudgmentCache from "./store/JudgmentCache.js"
import { parseColumnMapping } from "./load/CaseMapping.js"
import * as Progress from "./report/Progress.js"
import { defaultFormats, layer as reportersLayer, parseFormats } from "./report/Reporter.js"
import * as JudgmentJournal from "./store/JudgmentJournal.js"
import { compareCommand } from "./commands/Compare.js"
import { trecCommand } from "./commands/Trec.js"
import { reportRun } from "./ReportCommand.js"
import { serveCommand } from "./server/ServeCommand.js"
import * as TestSet from "./testset/BuildTestSet.js"
import { VERSION } from "./version.js"

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
const provider = Options.choice("provider", PROVIDERS).pipe(
  Options.withDescription("Judge provider (default: heuristic — offline, deterministic, no API key)"),
  Options.optional
)
const model = Options.text("model").pipe(Options.withDescription("Model name (defaults: openai gpt-4o-mini, mistral mistral-small-latest)"), Options.optional)
const baseUrl = Options.text("base-url").pipe(Options.withDescription("API base URL (required for openai-compatible, e.g. http://127.0.0.1:8000/v1)"), Options.optional)
const apiKey = Options.redacted("api-key").pipe(
  Options.withDescription("API key (else OPENAI_API_KEY, MISTRAL_API_KEY or API_KEY from the environment)"),
  Options.optional
)
const concurrency = Options.integer("concurrency").pipe(Options.withDescription("Judge calls in flight at once (default 8)"), Options.withDefault(8))
const rpm = Options.integer("rpm").pipe(Options.withDescription("Requests per minute limit, shared by all workers"), Options.optional)
const tpm = Options.integer("tpm").pipe(Options.withDescription("Tokens per minute limit (estimated prompt + max output tokens)"), Options.optional)
const timeout = Options.float("timeout").pipe(Options.withDescription("Per-request timeout in seconds (default 60)"), Options.withDefault(60))
const maxRetries = Options.integer("max-retries").pipe(Options.withDescription("Retries of a failed call (5xx, timeout, network) before it is recorded as failed (default 3)"), Options.withDefault(3))
const maxFailures = Options.integer("max-failures").pipe(Options.withDescription("Failed judgments tolerated before exit code 1 (default 0)"), Options.withDefault(0))
const seed = Options.integer("seed").pipe(Options.withDescription("Sampling seed sent to the API (Mistral: random_seed)"), Options.optional)
const temperature = Options.float("temperature").pipe(Options.withDescription("Sampling temperature sent to the API"), Options.optional)
const columns = Options.text("columns").pipe(
  Options.withDescription("Rename input columns, e.g. question=Query,answer=Response (keys: question, answer, history, fragments, id)"),
  Options.optional
)
const iterations = Options.integer("iterations").pipe(Options.withDescription("Judge every case N times, to measure stability (default 1)"), Options.withDefault(1))
const fresh = Options.boolean("fresh").pipe(Options.withDescription("Start the run over, discarding its journal"))
const runId = Options.text("run-id").pipe(Options.withDescription("Name the run (default: derived from pipeline, input, judge and prompts)"), Options.optional)
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
const retrievalFlags = {
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

const retrievalEnv: Readonly<Record<keyof typeof retrievalFlags, string>> = {
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

const applyRetrievalFlags = (flags: { readonly [K in keyof typeof retrievalFlags]: Option.Option<string | number | Redacted.Redacted> }) =>
  Effect.sync(() => {
    for (const key of Object.keys(retrievalEnv) as Array<keyof typeof retrievalFlags>) {
      const value = flags[key]
      if (Option.isSome(value)) {
        process.env[retrievalEnv[key]] = Redacted.isRedacted(value.value) ? Redacted.value(value.value) : String(value.value)
      }
    }
  })

const runCommand = Command.make(
  "run",
  { pipeline: pipelineArg, input, csv, out, limit, format, provider, model, baseUrl, apiKey, concurrency, rpm, tpm, timeout, maxRetries, maxFailures, seed, temperature, columns, iterations, fresh, runId, retryFailed, noCache, dryRun, prices, priceIn, priceOut, ...retrievalFlags },
  (flags) =>
    Effect.gen(function*() {
      const file = Option.orElse(flags.input, () => flags.csv)
      if (Option.isNone(file)) {
        return yield* new UsageError({ problem: "give the test cases with --input FILE (or --csv FILE)" })
      }
      if (Option.isSome(flags.input) && Option.isSome(flags.csv)) {
        return yield* new UsageError({ problem: "give either --input or --csv, not both" })
      }
      if (flags.concurrency < 1) return yield* new UsageError({ problem: "--concurrency must be at least 1" })
      if (flags.maxFailures < 0) return yield* new UsageError({ problem: "--max-failures must be 0 or more" })
      if (Option.isSome(flags.limit) && flags.limit.value < 1) return yield* new UsageError({ problem: "--limit must be at least 1" })
      const reporters = yield* parseFormats(flags.format)
      const columnMapping = Option.isSome(flags.columns) ? yield* parseColumnMapping(flags.columns.value) : undefined
      yield* applyRetrievalFlags(flags)
      const pipeline = yield* loadPipeline(flags.pipeline)
      const providerName: ProviderName = Option.getOrElse(flags.provider, () => "heuristic" as const)
      if (Option.isNone(flags.provider)) {
        yield* Console.error("no --provider given: using the heuristic judge (offline, deterministic lexical proxies, not an LLM)")
      }
      const judge = judgeLayer({
        provider: providerName,
        model: Option.getOrUndefined(flags.model),
        baseUrl: Option.getOrUndefined(flags.baseUrl),
        apiKey: Option.getOrUndefined(flags.apiKey),
        concurrency: flags.concurrency,
        rpm: Option.getOrUndefined(flags.rpm),
        tpm: Option.getOrUndefined(flags.tpm),
        timeoutMs: Math.round(flags.timeout * 1000),
        maxRetries: flags.maxRetries,
        seed: Option.getOrUndefined(flags.seed),
        temperature: Option.getOrUndefined(flags.temperature)
      })
      const table = Option.isSome(flags.prices) ? yield* loadPriceFile(flags.prices.value) : undefined
      const services = Layer.mergeAll(
        judge,
        Layer.succeed(Retriever, pipeline.retrieve ?? precomputed),
        JudgmentJournal.layerFile,
        flags.noCache ? JudgmentCache.layerNone : JudgmentCache.layerFile(JudgmentCache.cacheDir(flags.out)),
        reportersLayer(reporters),
        Progress.layerStderr
      )
      const price = (provider: string, model: string): Price | undefined =>
        priceFor(provider, model, { table, flag: { input: Option.getOrUndefined(flags.priceIn), output: Option.getOrUndefined(flags.priceOut) } })
      const runOptions = (judgeInfo: { provider: string; model: string }): RunOptions => ({
        input: file.value,
        outRoot: flags.out,
        limit: Option.getOrUndefined(flags.limit),
        iterations: flags.iterations,
        concurrency: flags.concurrency,
        maxFailures: flags.maxFailures,
        command: commandLine(),
        pipelineFile: flags.pipeline,
        runId: Option.getOrUndefined(flags.runId),
        fresh: flags.fresh,
        retryFailed: flags.retryFailed,
        columns: columnMapping,
        price: price(judgeInfo.provider, judgeInfo.model),
        manifestExtra: { version: VERSION }
      })
      const judgeInfo = yield* Judge.pipe(Effect.provide(judge))
      if (flags.dryRun) {
        const e = yield* estimate(pipeline, runOptions(judgeInfo)).pipe(Effect.provide(services))
        yield* Console.log([
          `dry run: ${pipeline.name} with ${judgeInfo.label}`,
          `  judge calls:       ${e.calls.toLocaleString("en-US")}${e.alreadyDone > 0 ? ` (${e.alreadyDone.toLocaleString("en-US")} more already in the journal or cache)` : ""}`,
          `  estimated tokens:  ${e.inputTokens.toLocaleString("en-US")} in / ${e.outputTokens.toLocaleString("en-US")} out (≈ 4 characters a token, ${150} output tokens a call)`,
          `  estimated cost:    ${formatUsd(e.cost.usd)}`,
          `  run directory:     ${displayPath(e.runDir)} (${fs.existsSync(e.runDir) ? "exists: a real run resumes it" : "not created"})`
        ].join("\n"))
        return
      }
      const outcome = yield* run(pipeline, runOptions(judgeInfo)).pipe(Effect.provide(services))
      const j = outcome.judgments
      const reused = [j.reused > 0 ? `${j.reused} reused from the journal` : "", j.cached > 0 ? `${j.cached} from the cache` : ""].filter((x) => x !== "")
      yield* Console.error(
        `${j.total} judgments: ${j.ok} ok, ${j.failed} failed${reused.length > 0 ? `, ${reused.join(", ")}` : ""}; tokens ${outcome.tokens.input} in / ${outcome.tokens.output} out; cost ${formatUsd(outcome.cost.usd)}`
      )
      for (const f of outcome.files) yield* Console.log(`wrote ${displayPath(f)}`)
      yield* Console.log(`run: ${displayPath(outcome.info.runDir)}`)
      yield* checkFailures(outcome, flags.maxFailures)
    })
).pipe(Command.withDescription("Run a pipeline over a test set and write its reports"))

/** Relative to the working directory when inside it, else absolute. */
const displayPath = (path: string) => {
  const relative = Path.relative(process.cwd(), path)
  return relative === "" || relative.startsWith("..") || Path.isAbsolute(relative) ? Path.resolve(path) : relative
}

/** The command line as typed, with any --api-key value masked (it must never reach a file). */
const commandLine = () => {
  const args = process.argv.slice(2)
  return ["rag-eval", ...args.map((a, i) => (args[i - 1] === "--api-key" ? "<redacted>" : a.startsWith("--api-key=") ? "--api-key=<redacted>" : a))].join(" ")
}

const reportCommand = Command.make(
  "report",
  {
    runDir: Args.text({ name: "run-dir" }).pipe(Args.withDescription("A run directory, out/<pipeline>/<run-id>")),
    format: Options.text("format").pipe(
      Options.withDescription("Reports to write: markdown, csv, json, comma-separated (default markdown,csv)"),
      Options.withDefault(defaultFormats.join(","))
    )
  },
  ({ runDir, format }) =>
    Effect.gen(function*() {
      const reporters = yield* parseFormats(format)
      const outcome = yield* reportRun(runDir, reporters)
      for (const f of outcome.files) yield* Console.log(`wrote ${displayPath(f)}`)
      yield* Console.log(`run: ${displayPath(outcome.info.runDir)}`)
    })
).pipe(Command.withDescription("Re-render a run's reports from its journal, without calling any judge"))

const buildTestSetCommand = Command.make(
  "build-test-set",
  {
    logs: Options.text("logs").pipe(Options.withDescription("Query-log JSONL: one { queryLogId, question, answer, context, timestamp… } per line")),
    name: Options.text("name").pipe(Options.withDescription("Test-set name (letters, digits, . _ -)")),
    version: Options.text("version").pipe(Options.withDescription("Test-set version, e.g. 1")),
    description: Options.text("description").pipe(Options.withDescription("What the test set is for"), Options.optional),
    output: Options.text("output").pipe(Options.withDescription("Output file (default test-sets/answer-synthesis/<name>-v<version>.json)"), Options.optional),
    overwrite: Options.boolean("overwrite").pipe(Options.withDescription("Replace an existing output file"))
  },
  (flags) =>
    Effect.gen(function*() {
      const result = yield* TestSet.buildTestSet({
        logs: flags.logs,
        name: flags.name,
        version: flags.version,
        description: Option.getOrUndefined(flags.description),
        out: Option.getOrUndefined(flags.output),
        overwrite: flags.overwrite
      })
      yield* Console.error(`${result.read} log lines read, ${result.duplicates} duplicate queryLogId(s) dropped, ${result.testSet.cases.length} cases`)
      yield* Console.log(`wrote ${displayPath(result.written)}`)
    })
).pipe(Command.withDescription("Build a versioned answer-synthesis test set from a query-log JSONL, de-duplicated by a hash of queryLogId"))

export const root = Command.make("rag-eval").pipe(
  Command.withDescription("Evaluate RAG answers and retrieval with LLM judges or the offline heuristic judge"),
  Command.withSubcommands([runCommand, reportCommand, buildTestSetCommand, trecCommand, compareCommand, serveCommand])
)

export const cli = Command.run(root, { name: "rag-eval", version: VERSION })


/** How the process ends: the code `bin.ts` exits with, after the message is printed. */
export class ExitCode extends Data.TaggedError("ExitCode")<{ readonly code: number }> {}

const fail = (code: number, message: string) => Console.error(message).pipe(Effect.zipRight(Effect.fail(new ExitCode({ code }))))

/**
 * Run the CLI and map every failure to a message and an exit code:
 * 0 ok · 1 judgments failed beyond --max-failures (or an internal error) · 2 bad input or usage.
 */
export const main = (argv: ReadonlyArray<string>) =>
  cli(argv).pipe(
    Effect.catchIf(ValidationError.isValidationError, () => Effect.fail(new ExitCode({ code: 2 }))),
    Effect.catchTags({
      InputError: (e) => fail(2, `error: ${e.message}`),
      UsageError: (e) => fail(2, `error: ${e.message}`),
      OutputError: (e) => fail(2, `error: ${e.message}`),
      TooManyFailures: (e) => fail(1, `error: ${e.message}`),
      Stopped: (e) => fail(130, `${e.message}\nrun the same command again to resume (it skips what is done)`)
    }),
    Effect.catchAllDefect((defect) => fail(1, `internal error: ${defect instanceof Error ? defect.stack ?? defect.message : String(defect)}`))
  )
