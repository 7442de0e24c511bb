/**
 * Schemas of the browser review's JSON API (`rag-eval ui`, SPEC §7b): what `/api/…` answers and
 * accepts. Responses are encoded through them and `GET /api/openapi.json` is generated from them.
 * Errors have the one shape of `rag-eval serve` (`server/Domain.ts`), `{ "error": { "status",
 * "code", "message", "problems" } }` (a 403 refuses a state-changing request without
 * `X-Requested-By: rag-eval`, or a host name the server does not answer to).
 */
import * as Schema from "effect/Schema"
import { Judged, Label, LabelTarget, LabelValue, MAX_NOTE_LENGTH } from "../domain/Label.js"
import { MetricSpec } from "../domain/Metric.js"
import { Calibration, Estimate, Interval } from "../domain/RunFiles.js"
import {
  apiError,
  BadRequest,
  Forbidden,
  InternalError,
  NotFound,
  PayloadTooLarge,
  Unauthorized,
  Unavailable
} from "../server/Domain.js"

export { BadRequest, Forbidden, InternalError, NotFound, PayloadTooLarge, Unauthorized, Unavailable }

/** The errors the review answers with: serve's, one shape (`server/Domain.ts`). */
export type UiError = BadRequest | Unauthorized | Forbidden | NotFound | PayloadTooLarge | InternalError | Unavailable

/** The error of a status, e.g. `uiError(404, "not_found", "…")`. */
export const uiError = apiError

// ---------------------------------------------------------------------------------------------
// Runs

/** A headline metric of a run: its value (the mean over iterations), its 95% CI when known, its declaration. */
export const HeadlineMetric = Schema.Struct({
  name: Schema.String,
  value: Schema.NullOr(Schema.Number),
  ci: Schema.NullOr(Interval).annotations({
    description:
      "95% bootstrap CI of the mean over cases (iteration 1); null until the run has been opened once, or when it cannot have one"
  }),
  spec: Schema.NullOr(MetricSpec)
}).annotations({ identifier: "HeadlineMetric" })
export type HeadlineMetric = typeof HeadlineMetric.Type

export const RunStatusView = Schema.Literal("complete", "partial", "failed-judgments", "running", "stopped", "failed")
  .annotations({
    description:
      "complete; partial (the summary covers only what the journal held); failed-judgments (complete, with judgments that failed); running, stopped or failed (the manifest's state)"
  })

export const RunSummary = Schema.Struct({
  id: Schema.String.annotations({ description: "The run's id in this API (its run id, unique among the runs served)" }),
  runId: Schema.String,
  pipeline: Schema.String,
  dir: Schema.String.annotations({ description: "The run directory, relative to --out" }),
  startedAt: Schema.String,
  endedAt: Schema.NullOr(Schema.String),
  status: RunStatusView,
  judge: Schema.Struct({
    provider: Schema.String,
    model: Schema.String,
    label: Schema.String,
    heuristic: Schema.Boolean
  }),
  input: Schema.Struct({ path: Schema.String, sha256: Schema.String }),
  cases: Schema.NullOr(Schema.Number),
  iterations: Schema.Number,
  judgments: Schema.Struct({ total: Schema.Number, ok: Schema.Number, failed: Schema.Number }),
  costUsd: Schema.NullOr(Schema.Number),
  target: Schema.NullOr(Schema.String).annotations({ description: "The live system asked (--target), masked" }),
  headline: Schema.NullOr(Schema.String).annotations({ description: "The per-case metric that ranks cases" }),
  metrics: Schema.Array(HeadlineMetric),
  labels: Schema.Number.annotations({ description: "Labels in the run's labels.jsonl (the latest per target)" }),
  source: Schema.Literal("out", "store"),
  note: Schema.optional(Schema.String)
}).annotations({ identifier: "RunSummary" })
export type RunSummary = typeof RunSummary.Type

export const RunList = Schema.Struct({
  runs: Schema.Array(RunSummary),
  /** Directories under --out that look like runs but could not be read, each with why. */
  problems: Schema.Array(Schema.Struct({ dir: Schema.String, problem: Schema.String }))
}).annotations({ identifier: "RunList" })
export type RunList = typeof RunList.Type

export const RunDetail = Schema.Struct({
  run: RunSummary,
  caseMetrics: Schema.Array(MetricSpec),
  iteration: Schema.Number,
  cases: Schema.Number,
  failing: Schema.Number,
  verdictsReady: Schema.Boolean.annotations({
    description: "Whether the pipeline's own pass/fail verdicts of every case are known yet (they count as failing)"
  }),
  notes: Schema.Array(Schema.String)
}).annotations({ identifier: "RunDetail" })
export type RunDetail = typeof RunDetail.Type

// ---------------------------------------------------------------------------------------------
// Cases

export const CaseStatus = Schema.Literal("fail", "warn", "pass", "none")

export const CaseRow = Schema.Struct({
  caseId: Schema.String,
  line: Schema.NullOr(Schema.Number),
  status: CaseStatus,
  metrics: Schema.Record({ key: Schema.String, value: Schema.NullOr(Schema.Number) }),
  question: Schema.NullOr(Schema.String).annotations({ description: "The question (or query), cut to 300 characters" }),
  answer: Schema.NullOr(Schema.String).annotations({ description: "The answer, cut to 300 characters" }),
  labels: Schema.Number
}).annotations({ identifier: "CaseRow" })
export type CaseRow = typeof CaseRow.Type

export const CasePage = Schema.Struct({
  total: Schema.Number.annotations({ description: "Cases matching the filters" }),
  cases: Schema.Number.annotations({ description: "Cases of the iteration" }),
  offset: Schema.Number,
  limit: Schema.Number,
  rows: Schema.Array(CaseRow)
}).annotations({ identifier: "CasePage" })
export type CasePage = typeof CasePage.Type

const optionalNumber = Schema.optional(Schema.NumberFromString)

export const CaseQueryParams = Schema.Struct({
  iteration: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1))),
  offset: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(0))),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 500))),
  sort: Schema.optional(Schema.String).annotations({
    description: "A per-case metric, or `line` (input order, the default)"
  }),
  order: Schema.optional(Schema.Literal("asc", "desc")),
  failing: Schema.optional(Schema.Literal("true", "false")).annotations({
    description: "Only failing cases: a failed judgment or retrieval, no score, or the pipeline's verdict fail"
  }),
  q: Schema.optional(Schema.String).annotations({ description: "Text search in the case's record (case-insensitive)" }),
  metric: Schema.optional(Schema.String).annotations({ description: "Metric of the range filter (min, max)" }),
  min: optionalNumber,
  max: optionalNumber,
  labelled: Schema.optional(Schema.Literal("yes", "no"))
})
export type CaseQueryParams = typeof CaseQueryParams.Type

/** A labelling choice of a target: the value sent, its text, and the key that gives it. */
export const ScaleChoice = Schema.Struct({
  value: LabelValue,
  text: Schema.String,
  key: Schema.String
})

export const CaseTarget = Schema.Struct({
  target: LabelTarget,
  key: Schema.String.annotations({ description: "The target as a stable string (Label.ts targetKey)" }),
  group: Schema.String,
  title: Schema.String,
  text: Schema.optional(Schema.String),
  judged: Judged,
  judgedText: Schema.String,
  reason: Schema.optional(Schema.String),
  evidence: Schema.optional(Schema.String),
  choices: Schema.Array(ScaleChoice).annotations({
    description: "What a person may answer (empty: a number of their own, as for a per-case metric)"
  }),
  label: Schema.optional(Label)
}).annotations({ identifier: "CaseTarget" })
export type CaseTarget = typeof CaseTarget.Type

export const JudgmentView = Schema.Struct({
  criterion: Schema.String,
  target: Schema.String,
  status: Schema.String,
  score: Schema.NullOr(Schema.Number),
  confidence: Schema.optional(Schema.Number),
  reason: Schema.String,
  evidence: Schema.optional(Schema.String),
  raw: Schema.optional(Schema.String),
  attempts: Schema.Number,
  latencyMs: Schema.Number,
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  model: Schema.String
}).annotations({ identifier: "JudgmentView" })
export type JudgmentView = typeof JudgmentView.Type

export const DetailTableView = Schema.Struct({
  caption: Schema.String,
  columns: Schema.Array(Schema.String),
  rows: Schema.Array(Schema.Struct({
    cells: Schema.Array(Schema.NullOr(Schema.Union(Schema.String, Schema.Number))),
    status: Schema.optional(CaseStatus)
  })),
  textColumns: Schema.optional(Schema.Array(Schema.Number))
})

export const CaseView = Schema.Struct({
  runId: Schema.String,
  caseId: Schema.String,
  iteration: Schema.Number,
  line: Schema.NullOr(Schema.Number),
  status: CaseStatus,
  why: Schema.optional(Schema.String),
  fields: Schema.Array(Schema.Tuple(Schema.String, Schema.String)),
  tables: Schema.Array(DetailTableView),
  problem: Schema.optional(Schema.String),
  metrics: Schema.Array(Schema.Struct({ spec: MetricSpec, value: Schema.NullOr(Schema.Number) })),
  targets: Schema.Array(CaseTarget),
  judgments: Schema.Array(JudgmentView),
  system: Schema.Struct({
    latencyMs: Schema.NullOr(Schema.Number),
    ttfbMs: Schema.NullOr(Schema.Number),
    answerStatus: Schema.NullOr(Schema.String),
    judgeInputTokens: Schema.NullOr(Schema.Number),
    judgeOutputTokens: Schema.NullOr(Schema.Number),
    judgeCostUsd: Schema.NullOr(Schema.Number)
  }).annotations({
    description: "Latency of the live system (--target) and the judge's tokens and cost for this case"
  }),
  record: Schema.Unknown.annotations({ description: "The case's record as the run wrote it" })
}).annotations({ identifier: "CaseView" })
export type CaseView = typeof CaseView.Type

// ---------------------------------------------------------------------------------------------
// Labels and agreement

export const LabelRequest = Schema.Struct({
  caseId: Schema.String.pipe(Schema.minLength(1)),
  target: LabelTarget,
  label: LabelValue,
  note: Schema.optional(Schema.String.pipe(Schema.maxLength(MAX_NOTE_LENGTH))),
  iteration: Schema.optional(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))).annotations({
    description: "The iteration whose judgment is labelled (default 1)"
  })
}).annotations({ identifier: "LabelRequest", parseOptions: { onExcessProperty: "error" } })
export type LabelRequest = typeof LabelRequest.Type

export const AgreementGroup = Schema.Struct({
  kind: Schema.Literal("grade", "hit", "claim", "nugget", "metric", "preference"),
  title: Schema.String,
  pairs: Schema.Number,
  headline: Schema.Struct({ statistic: Schema.String, estimate: Estimate }),
  second: Schema.Struct({ statistic: Schema.String, estimate: Estimate }),
  /** Labels more (at the same agreement) that would narrow the headline's 95% CI to ±0.1; null: cannot be told yet. */
  more: Schema.NullOr(Schema.Number),
  moreNote: Schema.optional(Schema.String)
}).annotations({ identifier: "AgreementGroup" })
export type AgreementGroup = typeof AgreementGroup.Type

export const Agreement = Schema.Struct({
  labels: Schema.Number,
  groups: Schema.Array(AgreementGroup),
  /** Labels that only say right or wrong with nothing to pair: the share that agree. */
  agreeOnly: Schema.NullOr(Schema.Struct({ labels: Schema.Number, agreed: Schema.Number, share: Estimate })),
  /** Labels that made no pair, each with why. */
  unpaired: Schema.Array(Schema.Struct({ caseId: Schema.String, target: Schema.String, reason: Schema.String })),
  file: Schema.Struct({
    lines: Schema.Number,
    skipped: Schema.Array(Schema.Struct({ line: Schema.Number, problem: Schema.String })),
    torn: Schema.Boolean
  }),
  bootstrap: Schema.Struct({ resamples: Schema.Number, seed: Schema.Number }),
  /** calibrate's whole result over the labelled cases (calibration.json's shape). */
  calibration: Schema.NullOr(Calibration)
}).annotations({ identifier: "Agreement" })
export type Agreement = typeof Agreement.Type

export const LabelCreated = Schema.Struct({ label: Label, agreement: Agreement }).annotations({
  identifier: "LabelCreated"
})

export const LabelList = Schema.Struct({
  labels: Schema.Array(Label),
  lines: Schema.Number,
  skipped: Schema.Array(Schema.Struct({ line: Schema.Number, problem: Schema.String })),
  torn: Schema.Boolean
}).annotations({ identifier: "LabelList" })
export type LabelList = typeof LabelList.Type

export const QueueItem = Schema.Struct({
  caseId: Schema.String,
  reason: Schema.String,
  kind: Schema.Literal("stratum", "iterations", "judges"),
  value: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "QueueItem" })

export const ReviewQueue = Schema.Struct({
  metric: Schema.NullOr(Schema.String),
  items: Schema.Array(QueueItem),
  unlabelled: Schema.Number,
  notes: Schema.Array(Schema.String)
}).annotations({ identifier: "ReviewQueue" })
export type ReviewQueue = typeof ReviewQueue.Type

export const QueueParams = Schema.Struct({
  size: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 500))),
  seed: Schema.optional(Schema.NumberFromString.pipe(Schema.int())),
  iteration: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)))
})

// ---------------------------------------------------------------------------------------------
// Compare

export const MetricComparisonView = Schema.Struct({
  metric: Schema.String,
  lowerIsBetter: Schema.Boolean,
  n: Schema.Number,
  excluded: Schema.Number,
  meanA: Schema.NullOr(Schema.Number),
  meanB: Schema.NullOr(Schema.Number),
  delta: Schema.NullOr(Schema.Number),
  ci: Schema.Struct({ lower: Schema.NullOr(Schema.Number), upper: Schema.NullOr(Schema.Number) }),
  pTTest: Schema.NullOr(Schema.Number),
  pRandomisation: Schema.NullOr(Schema.Number),
  wins: Schema.Number,
  ties: Schema.Number,
  losses: Schema.Number,
  winner: Schema.Literal("A", "B", "none", "too-few"),
  verdict: Schema.String
}).annotations({ identifier: "MetricComparison" })

export const ChangedCase = Schema.Struct({
  caseId: Schema.String,
  a: Schema.NullOr(Schema.Number),
  b: Schema.NullOr(Schema.Number),
  change: Schema.NullOr(Schema.Number).annotations({
    description: "B − A in the better direction (negative: worse); null when either is null"
  }),
  question: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ChangedCase" })

export const Comparison = Schema.Struct({
  a: RunSummary,
  b: RunSummary,
  cases: Schema.Number,
  alpha: Schema.Number,
  seed: Schema.Number,
  metrics: Schema.Array(MetricComparisonView).annotations({
    description: "The metrics tested so far (compare's tests run in the background, one metric at a time)"
  }),
  pending: Schema.Array(Schema.String).annotations({ description: "Metrics whose tests are still running" }),
  failed: Schema.Array(Schema.Struct({ metric: Schema.String, problem: Schema.String })),
  onlyInA: Schema.Array(Schema.String),
  onlyInB: Schema.Array(Schema.String),
  metric: Schema.String.annotations({ description: "The metric the cases are ordered by (worst change first)" }),
  changed: Schema.Struct({
    total: Schema.Number,
    worse: Schema.Number,
    better: Schema.Number,
    offset: Schema.Number,
    rows: Schema.Array(ChangedCase)
  })
}).annotations({ identifier: "Comparison" })
export type Comparison = typeof Comparison.Type

export const CompareParams = Schema.Struct({
  a: Schema.String,
  b: Schema.String,
  metric: Schema.optional(Schema.String),
  offset: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(0))),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 500)))
})

export const Health = Schema.Struct({
  status: Schema.Literal("ok"),
  version: Schema.String,
  runs: Schema.Number,
  user: Schema.String,
  readOnly: Schema.Boolean
}).annotations({ identifier: "UiHealth" })
