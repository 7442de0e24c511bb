/**
 * The flags of `rag-eval run`: cheap to load, so `--help` and `--version` do not pull in the
 * runner, the providers or the openai SDK (`RunAction.ts` holds what runs).
 */
import * as Args from "@effect/cli/Args"
import type * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { builtinNames, builtinsTaking, targetPipelines } from "../builtin/index.js"
import { isRunId, runIdProblem } from "../domain/RunId.js"
import { secretFlagNames } from "../domain/Secrets.js"
import { type OptionName, optionSpecs } from "../engine/OptionSpecs.js"
import { baseUrlProblem } from "../providers/Endpoint.js"
import { PROVIDERS } from "../providers/Names.js"
import { defaultFormats, formatsHelp } from "../report/Formats.js"
import { urlProblem } from "../target/TargetConfig.js"

const pipelineArg = Args.text({ name: "pipeline" }).pipe(
  Args.withDescription(
    `A built-in pipeline by name (${
      builtinNames.join(", ")
    }: \`rag-eval pipelines\` lists them) or a pipeline file, e.g. ./my-pipeline.ts`
  )
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
const limit = Options.integer("limit").pipe(
  Options.withDescription("Evaluate only the first N cases"),
  Options.optional
)
const format = Options.text("format").pipe(
  Options.withDescription(formatsHelp),
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
const positive = (flag: string) =>
  checked((n: number) => Number.isFinite(n) && n > 0 ? undefined : `${flag} must be greater than 0 (got ${n})`)
const atLeast = (flag: string, min: number) =>
  checked((n: number) => n >= min ? undefined : `${flag} must be at least ${min} (got ${n})`)

/** `--max-wait`: a duration, "90s", "10m", "1h" or a number of seconds, in milliseconds. */
export const parseWait = (text: string): number | undefined => {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$/i.exec(text)
  if (m === null) return undefined
  const unit = (m[2] ?? "s").toLowerCase()
  const ms = Number(m[1]) * (unit === "ms" ? 1 : unit === "s" ? 1000 : unit === "h" ? 3_600_000 : 60_000)
  return ms > 0 ? ms : undefined
}

export const model = Options.text("model").pipe(
  Options.withDescription("Model name (defaults: openai gpt-4o-mini, mistral mistral-small-latest)"),
  Options.optional
)
export const baseUrl = Options.text("base-url").pipe(
  Options.withDescription(
    "API base URL (required for openai-compatible, e.g. http://127.0.0.1:8000/v1); part of the run id and of every judgment key"
  ),
  checked(baseUrlProblem),
  Options.optional
)
export const apiKey = Options.redacted("api-key").pipe(
  Options.withDescription("API key (else OPENAI_API_KEY, MISTRAL_API_KEY or API_KEY from the environment)"),
  Options.optional
)
export const concurrency = Options.integer("concurrency").pipe(
  Options.withDescription(
    "Most judge calls in flight at once (default 8); with --adaptive the level moves between 1 and this"
  ),
  atLeast("--concurrency", 1),
  Options.withDefault(8)
)
export const rpm = Options.integer("rpm").pipe(
  Options.withDescription(
    "Requests per minute: starts are paced evenly (a token bucket) at 95% of this, so network jitter never breaks the limit, shared by all workers"
  ),
  positive("--rpm"),
  Options.optional
)
export const tpm = Options.integer("tpm").pipe(
  Options.withDescription(
    "Tokens per minute (estimated prompt + output tokens, corrected by each reply's usage), paced like --rpm"
  ),
  positive("--tpm"),
  Options.optional
)
export const burst = Options.integer("burst").pipe(
  Options.withDescription(
    "Requests that may start at once under --rpm (default 1: starts evenly spread; a larger burst lets a stalled process release several at once)"
  ),
  positive("--burst"),
  Options.optional
)
export const adaptive = Options.choiceWithValue(
  "adaptive",
  [["true", true], ["false", false], ["on", true], ["off", false]] as const
).pipe(
  Options.withDescription(
    "Adaptive concurrency (AIMD: halve on a 429, one more after a run of successes) and learning the server's limit from 429s and x-ratelimit-* headers; --adaptive false pins --concurrency (default true)"
  ),
  Options.withDefault(true)
)
export const maxWait = Options.text("max-wait").pipe(
  Options.withDescription(
    "How long each judgment may wait out rate limits, counted from when it first met a 429 or the pause one set, before it is recorded as failed, e.g. 90s, 10m, 1h (default 10m); also caps any Retry-After"
  ),
  checked((text: string) =>
    parseWait(text) === undefined
      ? `--max-wait must be a duration greater than 0 such as 90s, 10m or 1h (got "${text}")`
      : undefined
  ),
  Options.withDefault("10m")
)
/** `--trace-otlp URL`: export the run's spans to an OpenTelemetry collector (engine/Tracing.ts, docs/tracing.md). */
export const traceOtlp = Options.text("trace-otlp").pipe(
  Options.withDescription(
    "Export the run as OpenTelemetry spans (stages, judgments, provider and target calls, rate-limit waits, journal writes) over OTLP/HTTP to a collector, e.g. http://localhost:4318 (/v1/traces is added to a bare URL); no secret is ever in a span"
  ),
  Options.optional
)
export const noPreflight = Options.boolean("no-preflight").pipe(
  Options.withDescription(
    "Skip the one minimal request made before judging (it reports a bad key, model or URL in under a second, and falls back from json_schema answers when the server does not support them)"
  )
)
export const timeout = Options.float("timeout").pipe(
  Options.withDescription("Per-request timeout in seconds (default 60)"),
  positive("--timeout"),
  Options.withDefault(60)
)
export const maxRetries = Options.integer("max-retries").pipe(
  Options.withDescription(
    "Retries of a call that failed with a 5xx, a timeout or a network error before the judgment is recorded as failed (default 3); 429s are waited out instead (--max-wait)"
  ),
  atLeast("--max-retries", 0),
  Options.withDefault(3)
)
const maxFailures = Options.integer("max-failures").pipe(
  Options.withDescription("Failed judgments tolerated before exit code 1 (default 0)"),
  Options.withDefault(0)
)
export const seed = Options.integer("seed").pipe(
  Options.withDescription("Sampling seed sent to the API (Mistral: random_seed)"),
  Options.optional
)
export const temperature = Options.float("temperature").pipe(
  Options.withDescription("Sampling temperature sent to the API (openai and mistral: 0 to 2)"),
  checked((t: number) => t >= 0 ? undefined : `--temperature must be 0 or more (got ${t})`),
  Options.optional
)
/** Shared by `run` and `report`. */
export const csvRaw = Options.boolean("csv-raw").pipe(
  Options.withDescription(
    "Write report.csv cells as they are: do not prefix cells starting with = + - @ tab or CR with ' (spreadsheet formula protection)"
  )
)
const columns = Options.text("columns").pipe(
  Options.withDescription(
    "Rename input columns, e.g. question=Query,answer=Response (keys: question, answer, history, fragments or contexts, id, reference, nuggets)"
  ),
  Options.optional
)
const iterations = Options.integer("iterations").pipe(
  Options.withDescription("Judge every case N times, to measure stability (default 1)"),
  Options.withDefault(1)
)
export const fresh = Options.boolean("fresh").pipe(
  Options.withDescription("Start the run over, discarding its journal")
)
const runId = Options.text("run-id").pipe(
  Options.withDescription(
    "Name the run (default: derived from pipeline, input, judge and prompts); 1-128 letters, digits, . _ -, starting with a letter or digit"
  ),
  checked((id: string) => isRunId(id) ? undefined : `--run-id: ${runIdProblem(id)}`),
  Options.optional
)
export const retryFailed = Options.boolean("retry-failed").pipe(
  Options.withDescription("On resume, judge again the judgments recorded as failed")
)
export const noCache = Options.boolean("no-cache").pipe(
  Options.withDescription(
    "Do not reuse judgments cached by earlier runs under --out (the run's own journal is still used)"
  )
)
const dryRun = Options.boolean("dry-run").pipe(
  Options.withDescription("Print the calls, estimated tokens and cost, without calling anything or writing files")
)
export const prices = Options.text("prices").pipe(
  Options.withDescription(
    "JSON price table { \"model\": { \"input\": USD per 1M tokens, \"output\": … } } overriding the built-in one"
  ),
  Options.optional
)
export const priceIn = Options.float("price-in").pipe(
  Options.withDescription("Price of the judge model's input tokens, USD per 1M"),
  Options.optional
)
export const priceOut = Options.float("price-out").pipe(
  Options.withDescription("Price of the judge model's output tokens, USD per 1M"),
  Options.optional
)
// --- the live system under test (src/target/, the engine's Generator port)
const targetFlags = {
  target: Options.text("target").pipe(
    Options.withDescription(
      `Ask this live RAG endpoint (http(s) URL) for each case's answer before judging it: POST a body from --target-body, read the answer at --target-answer (${
        targetPipelines.join(", ")
      }, and a pipeline of yours that declares \`generate\`; docs/target.md)`
    ),
    checked((url: string) => urlProblem(url.trim())),
    Options.optional
  ),
  targetPreset: Options.choice("target-preset", ["generic", "openai-chat"]).pipe(
    Options.withDescription(
      "Defaults for --target's body and answer path: generic ({\"question\": …} → $.answer) or openai-chat (an OpenAI-compatible chat endpoint, streamed)"
    ),
    Options.optional
  ),
  targetBody: Options.text("target-body").pipe(
    Options.withDescription(
      "The request body: a JSON template with {{question}}, {{history}}, {{id}}, {{messages}}, {{model}} or any input field (default {\"question\": \"{{question}}\"})"
    ),
    Options.optional
  ),
  targetHeader: Options.text("target-header").pipe(
    Options.withDescription(
      "A header sent to --target, \"Name: value\" (repeatable); ${NAME} in the value is read from the environment — put tokens there: 'Authorization: Bearer ${RAG_TOKEN}'"
    ),
    Options.repeated
  ),
  targetAnswer: Options.text("target-answer").pipe(
    Options.withDescription(
      "JSON path of the answer in --target's response (default $.answer; openai-chat: $.choices[0].message.content)"
    ),
    Options.optional
  ),
  targetContexts: Options.text("target-contexts").pipe(
    Options.withDescription(
      "JSON path of the retrieved passages' texts in --target's response, e.g. $.sources[*].text (they replace the input's)"
    ),
    Options.optional
  ),
  targetDelta: Options.text("target-delta").pipe(
    Options.withDescription(
      "In a streamed (SSE) answer, the JSON path of each event's piece (openai-chat: $.choices[0].delta.content)"
    ),
    Options.optional
  ),
  targetModel: Options.text("target-model").pipe(
    Options.withDescription("`model` in the openai-chat preset's body, and {{model}} in any template"),
    Options.optional
  ),
  targetTimeout: Options.integer("target-timeout").pipe(
    Options.withDescription(
      "Milliseconds one call to --target may take, a streamed answer read to its end included (default 120000)"
    ),
    positive("--target-timeout"),
    Options.optional
  ),
  targetRpm: Options.integer("target-rpm").pipe(
    Options.withDescription("Requests per minute to --target (its own pace, apart from the judge's --rpm)"),
    positive("--target-rpm"),
    Options.optional
  ),
  targetConcurrency: Options.integer("target-concurrency").pipe(
    Options.withDescription("Calls to --target in flight at once (default 4)"),
    atLeast("--target-concurrency", 1),
    Options.withDefault(4)
  ),
  regenerate: Options.boolean("regenerate").pipe(
    Options.withDescription(
      "With --target: ask the live system for every case, also those whose input already has an answer"
    )
  )
}
// --- end of the live system under test

// --- store / cluster (src/cluster/, src/store/PostgresStore.ts)
export const store = Options.text("store").pipe(
  Options.withDescription(
    "Keep the journal and cache in PostgreSQL, postgres://user:password@host:5432/db (default: files in the run directory); `rag-eval store migrate` creates the schema"
  ),
  Options.optional
)
const cluster = Options.boolean("cluster").pipe(
  Options.withDescription("Send judge calls in batches to the cluster's runners (`rag-eval runner`) through --store")
)
// --- end store / cluster

/** A pipeline option's flag, built from the option table (`src/engine/OptionSpecs.ts`). */
const optionFlag = (name: OptionName) => {
  const spec = optionSpecs[name]
  const description = `${spec.description}${spec.defaultText === undefined ? "" : ` (default ${spec.defaultText})`} [${
    spec.env.join(", ")
  }]`
  switch (spec.kind) {
    case "integer":
      return Options.integer(spec.flag).pipe(Options.withDescription(description), Options.optional)
    case "number":
      return Options.float(spec.flag).pipe(Options.withDescription(description), Options.optional)
    case "choice":
      return Options.choice(spec.flag, spec.choices ?? []).pipe(Options.withDescription(description), Options.optional)
    case "secret":
      return Options.redacted(spec.flag).pipe(Options.withDescription(description), Options.optional)
    default:
      return Options.text(spec.flag).pipe(Options.withDescription(description), Options.optional)
  }
}

/**
 * The options pipelines may declare, as flags. Which apply depends on the pipeline: the CLI refuses
 * one the pipeline does not take (`rag-eval run <pipeline> --help` lists its own).
 */
export const pipelineOptionFlags = {
  retriever: optionFlag("retriever") as Options.Options<Option.Option<string>>,
  topK: optionFlag("topK") as Options.Options<Option.Option<number>>,
  scoreThreshold: optionFlag("scoreThreshold") as Options.Options<Option.Option<number>>,
  prefetchLimit: optionFlag("prefetchLimit") as Options.Options<Option.Option<number>>,
  rerankTopN: optionFlag("rerankTopN") as Options.Options<Option.Option<number>>,
  searchUrl: optionFlag("searchUrl") as Options.Options<Option.Option<string>>,
  searchBody: optionFlag("searchBody") as Options.Options<Option.Option<string>>,
  hitsPath: optionFlag("hitsPath") as Options.Options<Option.Option<string>>,
  hitId: optionFlag("hitId") as Options.Options<Option.Option<string>>,
  hitText: optionFlag("hitText") as Options.Options<Option.Option<string>>,
  hitScore: optionFlag("hitScore") as Options.Options<Option.Option<string>>,
  timingsPath: optionFlag("timingsPath") as Options.Options<Option.Option<string>>,
  searchTimeout: optionFlag("searchTimeout") as Options.Options<Option.Option<number>>,
  searchRetries: optionFlag("searchRetries") as Options.Options<Option.Option<number>>,
  searchToken: optionFlag("searchToken") as Options.Options<Option.Option<Redacted.Redacted>>,
  corpus: optionFlag("corpus") as Options.Options<Option.Option<string>>,
  fuzzyThreshold: optionFlag("fuzzyThreshold") as Options.Options<Option.Option<number>>,
  pricePer1k: optionFlag("pricePer1k") as Options.Options<Option.Option<number>>,
  fields: optionFlag("fields") as Options.Options<Option.Option<string>>,
  listwise: Options.boolean("listwise").pipe(
    Options.withDescription(
      `${optionSpecs.listwise.description} (${builtinsTaking("listwise").join(", ")}) [${
        optionSpecs.listwise.env.join(", ")
      }]`
    )
  ),
  rubrics: optionFlag("rubrics") as Options.Options<Option.Option<string>>,
  passIf: optionFlag("passIf") as Options.Options<Option.Option<string>>,
  onlyRubrics: Options.boolean("only-rubrics").pipe(
    Options.withDescription(
      `${optionSpecs.onlyRubrics.description} (${builtinsTaking("onlyRubrics").join(", ")}) [${
        optionSpecs.onlyRubrics.env.join(", ")
      }]`
    )
  )
} satisfies Record<OptionName, unknown>

// The Batch API and the budget cap
export const batchFlags = {
  batch: Options.boolean("batch").pipe(
    Options.withDescription(
      "Judge through the provider's Batch API (openai, mistral, openai-compatible servers with /v1/batches): half price, results within 24 h; resumable like any run"
    )
  ),
  detach: Options.boolean("detach").pipe(
    Options.withDescription(
      "With --batch: submit the batches and exit; the same command later collects them (and waits if they are not finished)"
    )
  ),
  batchRepair: Options.choice("batch-repair", ["batch", "sync"]).pipe(
    Options.withDescription("With --batch: ask a malformed reply again in the next batch (default) or synchronously"),
    Options.withDefault("batch" as const)
  ),
  batchPoll: Options.float("batch-poll").pipe(
    Options.withDescription(
      "With --batch: first wait between status checks, seconds (default 10; doubles up to 5 minutes)"
    ),
    positive("--batch-poll"),
    Options.withDefault(10)
  ),
  maxCost: Options.float("max-cost").pipe(
    Options.withDescription(
      "Stop starting calls (and batches) once what this invocation spent plus the calls in flight would pass USD; the run stops resumable, exit 1"
    ),
    positive("--max-cost"),
    Options.optional
  )
}
// ---

// Reports and CI gates, shared by `run` and `report`
export const failUnder = Options.text("fail-under").pipe(
  Options.withDescription(
    "CI gate: exit 1 when a higher-is-better metric of summary.json is below its value, on the scale the summary prints: composite=0.7,ndcg@10=0.5; a rate is a fraction or N% (one line per unmet gate; an unknown name, a value off the metric's scale or a lower-is-better metric: exit 2 before the run)"
  ),
  Options.optional
)
export const failOver = Options.text("fail-over").pipe(
  Options.withDescription(
    "CI gate: exit 1 when a lower-is-better metric of summary.json is above its value: irrelevantRate=0.1 (or 10%), failed=0"
  ),
  Options.optional
)
export const details = Options.integer("details").pipe(
  Options.withDescription(
    "report.md: per-case details for at most N cases, the failed then the lowest (default 100); every case stays in report.csv / .json / .html"
  ),
  atLeast("--details", 0),
  Options.withDefault(100)
)
export const json = Options.boolean("json").pipe(
  Options.withDescription(
    "Print one JSON summary object on stdout (run dir, counts, headline metrics, cost, thresholds met) instead of the `wrote …` lines"
  )
)
export const quiet = Options.boolean("quiet").pipe(
  Options.withAlias("q"),
  Options.withDescription("No progress and no notes on stderr; errors only")
)
export const reportingFlags = { failUnder, failOver, details, json, quiet }

/** Values @effect/cli reads after a boolean flag as its value (`--quiet true`). */
const BOOLEAN_VALUES = new Set(["true", "1", "y", "yes", "on", "false", "0", "n", "no", "off"])

/**
 * The command line as far as a local judge's records go: without `--quiet` (what stderr shows) and
 * `--concurrency` (how many judgments at once: a local judge's records are the same), so a run
 * killed under `--quiet` in CI keeps its records when resumed by hand (`HeldRecords.ts`). Every other
 * flag stays: one that changes nothing written still only costs the records being made again.
 */
export const recordsArgv = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const kept: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === "--quiet" || a === "-q") {
      if (BOOLEAN_VALUES.has(argv[i + 1] ?? "")) i++
    } else if (a === "--concurrency") i++
    else if (!a.startsWith("--quiet=") && !a.startsWith("--concurrency=")) kept.push(a)
  }
  return kept
}
// ---- end of reports and CI gates ----

/** `--config FILE`: flags from a JSON or YAML file (see `ConfigFile.ts`); read before parsing. */
const config = Options.text("config").pipe(
  Options.withDescription(
    "Read flags from a JSON or YAML file whose keys are the long flag names (e.g. {\"provider\": \"openai\", \"top-k\": 5}); flags on the command line win; secrets are refused there"
  ),
  Options.optional
)

export const runConfig = {
  pipeline: pipelineArg,
  input,
  csv,
  out,
  limit,
  format,
  csvRaw,
  provider,
  model,
  baseUrl,
  apiKey,
  concurrency,
  rpm,
  tpm,
  burst,
  adaptive,
  maxWait,
  noPreflight,
  timeout,
  maxRetries,
  maxFailures,
  seed,
  temperature,
  columns,
  iterations,
  fresh,
  runId,
  retryFailed,
  noCache,
  dryRun,
  prices,
  priceIn,
  priceOut,
  config,
  store,
  cluster,
  traceOtlp,
  ...pipelineOptionFlags,
  ...reportingFlags,
  ...batchFlags,
  ...targetFlags
}

export type RunFlags = Command.Command.ParseConfig<typeof runConfig>

/**
 * Flags of `run` whose value is a secret (every `Options.redacted` above): masked in the recorded
 * command. So is every `--target-header` value: it should say `${NAME}`, but may hold a token as typed.
 */
export const secretFlags: ReadonlyArray<string> = [...secretFlagNames(runConfig), "--target-header"]

/** The provider flags `run` and `serve` share (same names, defaults and meaning). */
export const providerFlags = {
  provider,
  model,
  baseUrl,
  apiKey,
  rpm,
  tpm,
  burst,
  adaptive,
  maxWait,
  noPreflight,
  timeout,
  maxRetries,
  seed,
  temperature
}

type ProviderFlagValues = Command.Command.ParseConfig<typeof providerFlags>

/** Temperatures the hosted APIs accept; local servers take any temperature ≥ 0. */
const TEMPERATURE_RANGE: Readonly<Record<string, readonly [number, number]>> = { openai: [0, 2], mistral: [0, 2] }

/** What is wrong with a combination of provider flags (each flag alone was checked as it was parsed). */
export const providerFlagsProblem = (flags: ProviderFlagValues): string | undefined => {
  const provider = Option.getOrElse(flags.provider, () => "heuristic")
  const range = TEMPERATURE_RANGE[provider]
  if (
    range !== undefined && Option.isSome(flags.temperature) &&
    (flags.temperature.value < range[0] || flags.temperature.value > range[1])
  ) {
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
