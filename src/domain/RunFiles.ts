/**
 * The files a run writes, typed once: `manifest.json` (how the run was made, and its state),
 * `summary.json` (the authoritative summary: metrics with their declarations), the per-case metric
 * rows (`case-metrics-iteration-N.jsonl`) and `calibration.json` (`rag-eval calibrate`). Writers
 * encode through these schemas and every reader decodes through them: `report`, `resume`,
 * `compare`, `calibrate`, the HTML page and `--help` read what the run says, never guess it.
 */
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, UsageError } from "./Errors.js"
import { MetricSpec } from "./Metric.js"

// ---------------------------------------------------------------------------------------------
// Shared pieces

export const PriceFields = Schema.Struct({
  input: Schema.Number,
  output: Schema.Number,
  batchInput: Schema.optional(Schema.Number),
  batchOutput: Schema.optional(Schema.Number),
  cachedInput: Schema.optional(Schema.Number)
})

export const CostFields = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cachedInputTokens: Schema.optional(Schema.Number),
  batchInputTokens: Schema.optional(Schema.Number),
  batchOutputTokens: Schema.optional(Schema.Number),
  batchCachedInputTokens: Schema.optional(Schema.Number),
  usd: Schema.NullOr(Schema.Number),
  listUsd: Schema.optional(Schema.Number),
  savingUsd: Schema.optional(Schema.Number),
  price: Schema.NullOr(PriceFields)
})

const Params = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const JudgeFields = Schema.Struct({
  provider: Schema.String,
  model: Schema.String,
  label: Schema.String,
  params: Params,
  /** Part of every judgment key when the judge's server is not the provider's public API. */
  endpoint: Schema.optional(Schema.String)
})

export const InputFields = Schema.Struct({
  path: Schema.String,
  sha256: Schema.String,
  rows: Schema.Number,
  cases: Schema.Number,
  columns: Schema.Array(Schema.String)
})

// ---------------------------------------------------------------------------------------------
// manifest.json

export const RunStatus = Schema.Literal("running", "stopped", "submitted", "complete", "failed")
export type RunStatus = typeof RunStatus.Type

/**
 * The live system a run asked for its answers (`--target`), as recorded: the URL with its
 * credentials and secret query values masked, header names with `<redacted>` values — never a
 * secret. `identity` is the hash the answers are keyed by (`target/Generate.ts`).
 */
export const TargetFields = Schema.Struct({
  config: Schema.Struct({
    url: Schema.String,
    preset: Schema.String,
    body: Schema.String,
    headers: Schema.Record({ key: Schema.String, value: Schema.String }),
    answer: Schema.String,
    contexts: Schema.optional(Schema.String),
    delta: Schema.optional(Schema.String),
    model: Schema.optional(Schema.String),
    timeoutMs: Schema.Number
  }),
  identity: Schema.String,
  regenerate: Schema.Boolean,
  concurrency: Schema.Number,
  rpm: Schema.optional(Schema.Number),
  /** This invocation's calls: made, answers reused from the journal, cases that failed. */
  calls: Schema.optional(Schema.Struct({ asked: Schema.Number, reused: Schema.Number, failed: Schema.Number })),
  /** The target's rate gate over this invocation. */
  rateLimited: Schema.optional(Schema.Number)
})

export const Manifest = Schema.Struct({
  tool: Schema.Literal("rag-eval"),
  version: Schema.optional(Schema.String),
  /** The `run` command's arguments as given (secrets masked): what `resume` replays. */
  argv: Schema.optional(Schema.Array(Schema.String)),
  /** The pipeline's options when it ran (secrets are never recorded). */
  options: Schema.optional(Params),
  optionSources: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  /** Before options were recorded: the pipeline's settings as environment variables. */
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  node: Schema.optional(Schema.String),
  command: Schema.String,
  cwd: Schema.optional(Schema.String),
  pipeline: Schema.Struct({ name: Schema.String, file: Schema.optional(Schema.String) }),
  runId: Schema.String,
  /** sha256 of everything that makes the run this run (pipeline, input, judge, prompts, settings). */
  identity: Schema.String,
  input: InputFields,
  /** `--columns` renames; null for a role unmapped with `role=` (e.g. `history=`). */
  columns: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.NullOr(Schema.String) })),
  limit: Schema.optional(Schema.Number),
  iterations: Schema.Number,
  judgmentsPerIteration: Schema.Number,
  concurrency: Schema.Number,
  maxFailures: Schema.optional(Schema.Number),
  judge: JudgeFields,
  retriever: Schema.Struct({ name: Schema.String, params: Params }),
  target: Schema.optional(TargetFields),
  price: Schema.optional(Schema.NullOr(PriceFields)),
  prompts: Schema.Array(
    Schema.Struct({ id: Schema.String, version: Schema.String, hash: Schema.String, path: Schema.String })
  ),
  preflight: Schema.optional(
    Schema.Struct({
      structuredOutput: Schema.String,
      inputTokens: Schema.Number,
      outputTokens: Schema.Number,
      latencyMs: Schema.Number
    })
  ),
  structuredOutput: Schema.optional(Schema.String),
  store: Schema.optional(Schema.String),
  cluster: Schema.optional(Schema.Boolean),
  startedAt: Schema.String,
  status: RunStatus,
  stoppedAt: Schema.optional(Schema.String),
  stoppedBy: Schema.optional(Schema.String),
  endedAt: Schema.optional(Schema.String),
  counts: Schema.optional(Schema.Struct({
    cases: Schema.optional(Schema.Number),
    judgments: Schema.Number,
    ok: Schema.Number,
    failed: Schema.Number,
    reusedFromJournal: Schema.optional(Schema.Number),
    fromCache: Schema.optional(Schema.Number)
  })),
  tokens: Schema.optional(Schema.Struct({ input: Schema.Number, output: Schema.Number })),
  cost: Schema.optional(CostFields),
  rateControl: Schema.optional(Schema.Struct({
    concurrency: Schema.Struct({ max: Schema.Number, min: Schema.Number, final: Schema.Number }),
    rateLimited: Schema.Number,
    pacedRpm: Schema.optional(Schema.Number)
  })),
  batch: Schema.optional(Schema.Struct({
    repair: Schema.Literal("sync", "batch"),
    judgmentsCollected: Schema.optional(Schema.Number),
    callsResubmitted: Schema.optional(Schema.Number),
    note: Schema.optional(Schema.String),
    batches: Schema.Array(
      Schema.Struct({ id: Schema.String, file: Schema.String, requests: Schema.Number, status: Schema.String })
    )
  })),
  /** The pipeline's headline metrics and per-case metrics, declared (name, range, direction). */
  metricSpecs: Schema.optional(Schema.Array(MetricSpec)),
  caseMetricSpecs: Schema.optional(Schema.Array(MetricSpec)),
  /** Every file the run wrote, relative to its directory (when it ended). */
  files: Schema.optional(Schema.Array(Schema.String))
})
export type Manifest = typeof Manifest.Type

// ---------------------------------------------------------------------------------------------
// Per-case metrics

/** One case's metrics in one iteration (`case-metrics-iteration-N.jsonl`), as the pipeline's score stage declares them. */
export const CaseMetrics = Schema.Struct({
  caseId: Schema.String,
  /** The case's line in the input. */
  line: Schema.Number,
  iteration: Schema.Number,
  /** Per declared metric; null when the case cannot have it (a failed judgment, no reference…), never 0. */
  metrics: Schema.Record({ key: Schema.String, value: Schema.NullOr(Schema.Number) }),
  /** Something failed for this case: a judgment recorded as failed, a failed retrieval, no headline value. */
  failed: Schema.Boolean
})
export type CaseMetrics = typeof CaseMetrics.Type

export const caseMetricsFile = (iteration: number) => `case-metrics-iteration-${iteration}.jsonl`

// ---------------------------------------------------------------------------------------------
// summary.json

/**
 * 4: `metrics[name]` is `{ mean, n, ci }` (the engine's fold), `rankBy` replaces `headline`, and each
 * iteration's summary is the engine's (`RunSummary`). Version 3 files (`metrics[name]` a number) are
 * still read: `headlineOf` gives the values of either.
 */
export const SUMMARY_VERSION = 4

export const MetricAcrossIterations = Schema.Struct({
  mean: Schema.NullOr(Schema.Number),
  std: Schema.NullOr(Schema.Number),
  perIteration: Schema.Array(Schema.NullOr(Schema.Number))
})

export const Agreement = Schema.Struct({
  units: Schema.Number,
  exactAgreement: Schema.NullOr(Schema.Number),
  krippendorffAlpha: Schema.NullOr(Schema.Number),
  krippendorffAlphaNote: Schema.optional(Schema.String)
})

/** A headline metric in summary.json (version 4). */
export const HeadlineValue = Schema.Struct({
  mean: Schema.NullOr(Schema.Number),
  /** Cases with a value (null: the metric is not a mean of cases, or the run has several iterations). */
  n: Schema.NullOr(Schema.Number),
  /** 95% bootstrap interval of the mean (null: fewer than two cases, not a mean of cases, or several iterations). */
  ci: Schema.NullOr(Schema.Struct({ lower: Schema.Number, upper: Schema.Number }))
})
export type HeadlineValue = typeof HeadlineValue.Type

export const Summary = Schema.Struct({
  summaryVersion: Schema.Number,
  authoritative: Schema.Literal(true),
  partial: Schema.Boolean,
  /** The run: `RunInfo` with prompts as id, version and hash (their texts are in `prompts/`). */
  run: Schema.Struct({
    pipeline: Schema.String,
    description: Schema.String,
    runId: Schema.String,
    runDir: Schema.String,
    judge: JudgeFields,
    rubrics: Schema.Array(
      Schema.Struct({
        id: Schema.String,
        version: Schema.String,
        name: Schema.String,
        hash: Schema.String,
        path: Schema.String,
        min: Schema.Number,
        max: Schema.Number
      })
    ),
    input: InputFields,
    iterations: Schema.Number,
    concurrency: Schema.Number,
    limit: Schema.optional(Schema.Number),
    retriever: Schema.Struct({ name: Schema.String, params: Params }),
    price: Schema.optional(Schema.NullOr(PriceFields))
  }),
  judgments: Schema.Struct({ total: Schema.Number, ok: Schema.Number, failed: Schema.Number }),
  cost: CostFields,
  /**
   * Headline metrics: the mean over iterations (the value with one iteration); from version 4 with the
   * cases it is over and its 95% interval (null: not a mean of cases, or several iterations).
   */
  metrics: Schema.Record({ key: Schema.String, value: Schema.Union(Schema.NullOr(Schema.Number), HeadlineValue) }),
  /** What each headline metric is: range, direction, unit (what gates and `compare` go by). */
  metricSpecs: Schema.Array(MetricSpec),
  /** The per-case metrics of `case-metrics-iteration-N.jsonl`. */
  caseMetricSpecs: Schema.Array(MetricSpec),
  /** The per-case metrics that rank cases (lowest first) in reports, when the pipeline has them. */
  rankBy: Schema.optional(Schema.Array(Schema.String)),
  /** Version 3: the per-case metric that ranked cases. */
  headline: Schema.optional(Schema.String),
  metricsAcrossIterations: Schema.Record({ key: Schema.String, value: MetricAcrossIterations }),
  agreement: Schema.Record({ key: Schema.String, value: Agreement }),
  /** Each iteration's full summary, as its pipeline shapes it. */
  iterations: Schema.Array(Schema.Unknown)
})
export type Summary = typeof Summary.Type

/** The headline metrics' values of a summary of any version (3: numbers; 4: `{ mean, n, ci }`). */
export const headlineOf = (summary: Pick<Summary, "metrics">): Readonly<Record<string, number | null>> =>
  Object.fromEntries(
    Object.entries(summary.metrics).map(([k, v]) => [k, v === null || typeof v === "number" ? v : v.mean])
  )

// ---------------------------------------------------------------------------------------------
// calibration.json

export const Interval = Schema.Struct({ lower: Schema.Number, upper: Schema.Number })

/** A statistic with its bootstrap CI. */
export const Estimate = Schema.Struct({
  value: Schema.NullOr(Schema.Number),
  /** Why `value` is null. */
  reason: Schema.optional(Schema.String),
  /** Percentile bootstrap CI; null when the value is null. */
  ci: Schema.NullOr(Interval),
  /** Resamples where the statistic was undefined (left out of the CI). */
  undefinedResamples: Schema.Number
})

/**
 * How many labelled units (labelled items, or pairs of answers) the CI would need to be no wider
 * than ±`halfWidth`, and how many more than now (`stats/Bootstrap.ts` `narrowing`); null without a CI.
 */
export const Narrowing = Schema.Struct({
  halfWidth: Schema.Number,
  needed: Schema.NullOr(Schema.Number),
  more: Schema.NullOr(Schema.Number),
  reason: Schema.optional(Schema.String)
})

/** A headline statistic: its estimate, and the labels it would need to be known to ±0.1. */
export const Headline = Schema.Struct({ ...Estimate.fields, narrowing: Narrowing })
export type Headline = typeof Headline.Type

/** A statistic without a CI (why it is null when it is). */
export const Value = Schema.Struct({ value: Schema.NullOr(Schema.Number), reason: Schema.optional(Schema.String) })

/** One graded item that did not make a pair. */
export const UnpairedItem = Schema.Struct({
  /** Query id (retrieval) or case id (rubric). */
  id: Schema.String,
  /** Doc id (retrieval); absent for a case-level judgment. */
  item: Schema.optional(Schema.String),
  /** The grade this side gave (null: the judgment failed). */
  grade: Schema.NullOr(Schema.Number),
  /** For a failed judgment: the human label of the item, if any. */
  label: Schema.optional(Schema.NullOr(Schema.Number)),
  /** Line in the file it came from (the labels file, or the judge's qrels / journal). */
  line: Schema.Number
})

export const UnpairedList = Schema.Struct({ count: Schema.Number, items: Schema.Array(UnpairedItem) })

export const GradeRow = Schema.Struct({
  grade: Schema.Number,
  /** Items the judge gave this grade (column sum). */
  judge: Schema.Number,
  /** Items the humans gave this grade (row sum). */
  human: Schema.Number,
  precision: Estimate,
  recall: Estimate
})

export const CriterionCalibration = Schema.Struct({
  /** The judge's criterion ("relevance", or a rubric id); for labels matching none, the labels' name. */
  criterion: Schema.String,
  /** The names the labels used for it. */
  labelNames: Schema.Array(Schema.String),
  /** Rubric ids behind the judge's criterion (empty when the labels match no judged criterion). */
  rubrics: Schema.Array(Schema.String),
  pairs: Schema.Number,
  labelsWithoutJudgment: UnpairedList,
  judgmentsWithoutLabel: UnpairedList,
  /** Judgments that failed; `withLabel` of them had a human label. */
  judgeFailed: Schema.Struct({ ...UnpairedList.fields, withLabel: Schema.Number }),
  relevantAt: Schema.Number,
  /** The grade values of the confusion matrix (ascending). */
  grades: Schema.Array(Schema.Number),
  /** confusion[h][j]: items the humans graded grades[h] and the judge grades[j]. */
  confusion: Schema.Array(Schema.Array(Schema.Number)),
  exactAgreement: Estimate,
  cohenKappa: Estimate,
  binaryKappa: Estimate,
  quadraticKappa: Estimate,
  krippendorffAlpha: Estimate,
  /** Judge mean − human mean. */
  bias: Estimate,
  meanJudge: Schema.NullOr(Schema.Number),
  meanHuman: Schema.NullOr(Schema.Number),
  perGrade: Schema.Array(GradeRow),
  /** When the labels name a criterion the judge did not judge. */
  note: Schema.optional(Schema.String),
  /** The pairs κ would need to be known to ±0.1 (version 2). */
  narrowing: Schema.optional(Schema.Struct({ cohenKappa: Narrowing, binaryKappa: Narrowing }))
})

export const Correlation = Schema.Struct({ n: Schema.Number, kendallTauB: Value, spearmanRho: Value })

export const QueryNdcg = Schema.Struct({
  id: Schema.String,
  /** Items in the query's ranking (the judge input's items). */
  items: Schema.Number,
  human: Schema.Number,
  judge: Schema.Number
})

export const QueryRankingAgreement = Schema.Struct({
  metric: Schema.String,
  /** How the ranking of each query was obtained. */
  order: Schema.String,
  queries: Schema.Array(QueryNdcg),
  meanHuman: Schema.NullOr(Schema.Number),
  meanJudge: Schema.NullOr(Schema.Number),
  /** Queries whose NDCG is 0 by convention (nothing relevant to rank: IDCG = 0), per side. */
  zeroIdealHuman: Schema.Number,
  zeroIdealJudge: Schema.Number,
  correlation: Correlation,
  /** Judged queries without any label, and labelled queries the judge did not grade. */
  judgeOnlyQueries: Schema.Number,
  labelOnlyQueries: Schema.Number
})

export const SystemScores = Schema.Struct({
  file: Schema.String,
  /** The run's tag (trec_eval `runid`), or the file name. */
  name: Schema.String,
  /** Metric → mean under the human labels / the judge's grades. */
  human: Schema.Record({ key: Schema.String, value: Schema.Number }),
  judge: Schema.Record({ key: Schema.String, value: Schema.Number }),
  /** Queries averaged over (trec_eval num_q), per side. */
  queriesHuman: Schema.Number,
  queriesJudge: Schema.Number
})

export const SystemRankingAgreement = Schema.Struct({
  metrics: Schema.Array(Schema.String),
  relevantAt: Schema.Number,
  /** Queries with both labels and judge grades, to which both qrels were restricted. */
  queries: Schema.Number,
  systems: Schema.Array(SystemScores),
  /** Metric → correlation of the systems' means under the two label sets. */
  correlation: Schema.Record({ key: Schema.String, value: Correlation })
})

export const RunSource = Schema.Struct({
  dir: Schema.String,
  runId: Schema.String,
  pipeline: Schema.String,
  judge: Schema.UndefinedOr(Schema.String),
  status: Schema.UndefinedOr(Schema.String),
  iteration: Schema.Number,
  iterations: Schema.Number
})

/** Where the judge's grades came from. */
export const JudgeSource = Schema.Union(
  Schema.Struct({
    kind: Schema.Literal("run"),
    run: RunSource,
    order: Schema.Literal("records", "journal"),
    tornLastLine: Schema.Boolean,
    otherLines: Schema.Number
  }),
  Schema.Struct({ kind: Schema.Literal("qrels"), file: Schema.String, negative: Schema.Number })
)

// Answers: people's claim verdicts, nugget grades, metric values and preferences (calibrationVersion 2)

/** A label that made no pair, and why (`calibrate` lists every one: nothing is dropped silently). */
export const UnpairedLabel = Schema.Struct({
  /** Line in the labels file (or 1-based position of an in-memory label). */
  line: Schema.Number,
  caseId: Schema.String,
  /** What the label is about (`Label.ts` `targetKey`: `claim:answer:2:reference`, `metric:f1`…). */
  target: Schema.String,
  by: Schema.optional(Schema.String),
  reason: Schema.String
})
export type UnpairedLabel = typeof UnpairedLabel.Type

export const UnpairedLabels = Schema.Struct({ count: Schema.Number, items: Schema.Array(UnpairedLabel) })

/** Agreement on one three-value scale (claim verdicts, nugget support): humans as the reference. */
export const VerdictAgreement = Schema.Struct({
  /** What was paired: "every claim check", or a part (answer claims against the reference…). */
  name: Schema.String,
  pairs: Schema.Number,
  exactAgreement: Estimate,
  cohenKappa: Headline,
  /** Cohen's κ of "positive or not" (entailed / support against the rest). */
  binaryKappa: Estimate,
  /** Mean recall over the values the humans gave (scikit-learn's balanced_accuracy_score). */
  balancedAccuracy: Headline,
  /** The same on "positive or not": (true-positive rate + true-negative rate) / 2. */
  binaryBalancedAccuracy: Headline
})

export const VerdictCalibration = Schema.Struct({
  ...VerdictAgreement.fields,
  /** The scale, in score order (0, 1, 2). */
  scale: Schema.Array(Schema.String),
  /** The value the binary split calls positive (entailed, support). */
  positive: Schema.String,
  /** confusion[h][j]: pairs the humans gave scale[h] and the judge scale[j]. */
  confusion: Schema.Array(Schema.Array(Schema.Number)),
  perValue: Schema.Array(Schema.Struct({
    value: Schema.String,
    judge: Schema.Number,
    human: Schema.Number,
    precision: Estimate,
    recall: Estimate
  })),
  /** The same figures on each part with pairs (claims: by side and the text checked against). */
  parts: Schema.Array(VerdictAgreement)
})
export type VerdictCalibration = typeof VerdictCalibration.Type

/** A per-case metric of the run against people's values of it, case by case. */
export const MetricAgreement = Schema.Struct({
  metric: Schema.String,
  pairs: Schema.Number,
  pearson: Headline,
  kendallTauB: Headline,
  meanJudge: Schema.NullOr(Schema.Number),
  meanHuman: Schema.NullOr(Schema.Number)
})
export type MetricAgreement = typeof MetricAgreement.Type

/** One metric's per-pair deltas against people's preferences on one aspect (RAGChecker's meta-evaluation). */
export const PreferenceAgreement = Schema.Struct({
  /** What people compared (`correctness`…); null: not said (overall). */
  aspect: Schema.NullOr(Schema.String),
  metric: Schema.String,
  /** The metric's direction: a lower-is-better metric's delta is negated, so agreement is always r > 0. */
  direction: Schema.String,
  /** Pairs of answers (the bootstrap's units) and labels on them (annotators × pairs). */
  pairs: Schema.Number,
  labels: Schema.Number,
  /** Pairs whose delta was missing (the metric null for either answer) and got the median delta. */
  filled: Schema.Number,
  pearson: Headline,
  kendallTauB: Headline
})
export type PreferenceAgreement = typeof PreferenceAgreement.Type

export const RunRef = Schema.Struct({ dir: Schema.String, runId: Schema.String })

export const PreferenceCalibration = Schema.Struct({
  /** The runs whose answers the preferences compare (this run first). */
  runs: Schema.Array(RunRef),
  rows: Schema.Array(PreferenceAgreement)
})

/** Labels that only say whether the judge was right (`{ agree }`), with no value of their own to pair. */
export const AgreeOnly = Schema.Struct({
  labels: Schema.Number,
  agreed: Schema.Number,
  /** Share of them that agree, with a bootstrap CI over the labels. */
  share: Estimate
})

export const AnswerCalibration = Schema.Struct({
  /** Labels read, per kind of target. */
  labels: Schema.Struct({
    claim: Schema.Number,
    nugget: Schema.Number,
    metric: Schema.Number,
    preference: Schema.Number
  }),
  claims: Schema.NullOr(VerdictCalibration),
  nuggets: Schema.NullOr(VerdictCalibration),
  metrics: Schema.Array(MetricAgreement),
  preferences: Schema.NullOr(PreferenceCalibration),
  agreeOnly: Schema.NullOr(AgreeOnly),
  /** Labels of these kinds that made no pair, each with the reason. */
  unpaired: UnpairedLabels
})
export type AnswerCalibration = typeof AnswerCalibration.Type

export const GradeKind = Schema.Literal("retrieval", "rubric")
export const GradeFileFormat = Schema.Literal("qrels", "csv", "json", "jsonl")

/**
 * `calibration.json`'s version: 1 (absent) grades only; 2 adds `answers` (claim verdicts, nugget
 * grades, metric values, preferences) and `narrowing` on headline statistics. Readers of version 1
 * files see `answers` absent.
 */
export const CALIBRATION_VERSION = 2

export const Calibration = Schema.Struct({
  calibrationVersion: Schema.optional(Schema.Number),
  judge: JudgeSource,
  labels: Schema.Struct({
    file: Schema.String,
    format: GradeFileFormat,
    count: Schema.Number,
    negative: Schema.Number
  }),
  kind: GradeKind,
  relevantAt: Schema.Number,
  bootstrap: Schema.Struct({
    resamples: Schema.Number,
    seed: Schema.Number,
    level: Schema.Number,
    unit: Schema.Literal("pair")
  }),
  criteria: Schema.Array(CriterionCalibration),
  /** Judged criteria no label names (not calibrated), with their judgment counts. */
  unlabelledCriteria: Schema.Array(Schema.Struct({ criterion: Schema.String, judgments: Schema.Number })),
  /** Retrieval only. */
  queryRanking: Schema.NullOr(QueryRankingAgreement),
  /** With `runs` only. */
  systemRanking: Schema.NullOr(SystemRankingAgreement),
  /** People's labels on answers (version 2); absent or null when there were none. */
  answers: Schema.optional(Schema.NullOr(AnswerCalibration))
})
export type Calibration = typeof Calibration.Type

/** `calibration.json`: the calibration and, for a reader, how each statistic was computed. */
export const CalibrationFile = Schema.Struct({
  ...Calibration.fields,
  methods: Schema.Record({ key: Schema.String, value: Schema.String })
})
export type CalibrationFile = typeof CalibrationFile.Type

// ---------------------------------------------------------------------------------------------
// Reading and writing

/** A run file's JSON, encoded through its schema. */
export const encodeJson = <A, I>(schema: Schema.Schema<A, I>, value: A, space?: number): string =>
  JSON.stringify(Schema.encodeSync(schema)(value), null, space)

/** A decoding problem in words: each issue's path and message (at most three), not the schema's type. */
export const describeIssues = (e: ParseResult.ParseError): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(e)
  const shown = issues.slice(0, 3).map((i) => (i.path.length === 0 ? i.message : `${i.path.join(".")}: ${i.message}`))
  return shown.join("; ") + (issues.length > 3 ? ` (and ${issues.length - 3} more)` : "")
}

/** A run file's JSON text decoded through its schema; a problem names the file. */
export const decodeJson = <A, I>(
  schema: Schema.Schema<A, I>,
  text: string,
  file: string,
  what: string
): Effect.Effect<A, InputError> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (e) => new InputError({ file, problem: `not valid JSON: ${e instanceof Error ? e.message : String(e)}` })
  }).pipe(Effect.flatMap((json) =>
    Schema.decodeUnknown(schema)(json).pipe(Effect.mapError((e) =>
      new InputError({ file, problem: `not ${what}: ${describeIssues(e)}` })
    ))
  ))

/** A run file read and decoded through its schema; a missing or unreadable file names itself. */
export const readJsonFile = <A, I>(
  schema: Schema.Schema<A, I>,
  file: string,
  what: string
): Effect.Effect<A, InputError> =>
  Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: (e) =>
      new InputError({
        file,
        problem: (e as NodeJS.ErrnoException).code === "ENOENT"
          ? "file not found"
          : `cannot read it: ${(e as Error).message}`
      })
  }).pipe(Effect.flatMap((text) => decodeJson(schema, text, file, what)))

/**
 * A run directory's manifest, decoded: a missing directory, a file given instead, no manifest, bad
 * JSON or another shape each fail naming the path. `fileHint` is what to say when a file is given
 * (calibrate also takes a judge's qrels file).
 */
export const readManifest = (
  dir: string,
  fileHint = "give a run directory, out/<pipeline>/<run-id>"
): Effect.Effect<Manifest, InputError | UsageError> =>
  Effect.gen(function*() {
    if (!fs.existsSync(dir)) return yield* new InputError({ file: dir, problem: "no such run directory" })
    if (!fs.statSync(dir).isDirectory()) return yield* new UsageError({ problem: `${dir} is a file; ${fileHint}` })
    const path = Path.join(dir, "manifest.json")
    if (!fs.existsSync(path)) {
      return yield* new UsageError({
        problem: `${dir} is not a run directory (no manifest.json); give out/<pipeline>/<run-id>`
      })
    }
    return yield* readJsonFile(Manifest, path, "a rag-eval manifest")
  })
