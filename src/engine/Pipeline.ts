/**
 * A pipeline is a composition of stages — load → retrieve → judge → score → aggregate — plus the
 * report view of its results. Pipeline files in `pipelines/` build one with `Pipeline.make` from
 * the library's stages and do no I/O of their own; the runner (`Runner.ts`) drives it.
 */
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { EvalCase } from "../domain/Case.js"
import type { CaseDetail } from "../domain/CaseDetail.js"
import type { CsvCell } from "../domain/CsvCell.js"
import type { InputError, OutputError } from "../domain/Errors.js"
import type { JudgeTraits } from "../domain/JudgeTraits.js"
import type { Judgment, ListItem } from "../domain/Judgment.js"
import type { MetricSpec } from "../domain/Metric.js"
import type { Rubric, UserRubrics } from "../domain/Rubric.js"
import type { Tokens } from "../pricing/Prices.js"
import type { OptionName, PipelineOptions } from "./PipelineOptions.js"
import type { Retriever } from "./Retriever.js"

/** What the load stage needs to know about the run. */
export interface LoadContext {
  readonly file: string
  /** Column/field renames from `--columns` (e.g. `{ question: "Query" }`). */
  readonly columns?: Readonly<Record<string, string | undefined>> | undefined
  /**
   * The answers come from a target (`--target`): the input need not hold the fields the pipeline's
   * `generate` declares (the answer, the passages); a case may leave them out.
   */
  readonly generated?: boolean | undefined
  /**
   * The first cases are not wanted (a resume past the records it kept). Given only to a stage that
   * `skips`: its stream starts at case `skip`, ordinals going on from it. Any other stage's stream is
   * read from the start and the engine drops them.
   */
  readonly skip?: number | undefined
}

/** The load stage: a validating pre-pass (run before any judge call) and the case stream. */
export interface LoadStage {
  /** Human description for `--help` and reports, e.g. "CSV with columns …". */
  readonly describe: string
  /** Check the file's columns/keys before anything is judged. */
  readonly checkColumns: (ctx: LoadContext, columns: ReadonlyArray<string>) => Effect.Effect<void, InputError>
  readonly cases: (ctx: LoadContext) => Stream.Stream<EvalCase, InputError>
  /**
   * `cases` honours `LoadContext.skip` (one case a row: `readRows`'s `skip` passes the rows over
   * without parsing them — a resume of a million-case run reads past 500,000 kept cases in about a
   * second instead of seven).
   */
  readonly skips?: boolean | undefined
}

/** One judgment a case needs: which rubric, on what target, with which template variables. */
export interface TaskSpec {
  readonly rubric: string
  readonly target: string
  readonly vars: Readonly<Record<string, string>>
  /** See `JudgeTask.pool`: the query's hit texts for the heuristic judge; never part of the key. */
  readonly pool?: ReadonlyArray<string> | undefined
}

/**
 * Several judgments made in one call (listwise): a listwise rubric applied to every item in
 * context. Each item is still its own judgment (journaled, cached and scored by its target); its key
 * covers the whole list, since a grade given in context depends on the other items.
 */
export interface ListSpec {
  readonly rubric: string
  /** Variables shared by the items (the query…). */
  readonly vars: Readonly<Record<string, string>>
  readonly items: ReadonlyArray<ListItem>
  /** See `JudgeTask.pool`: the query's hit texts for the heuristic judge; never part of the key. */
  readonly pool?: ReadonlyArray<string> | undefined
}

export type JudgeSpec = TaskSpec | ListSpec

export const isListSpec = (spec: JudgeSpec): spec is ListSpec => "items" in spec

/** Judgments a spec stands for. */
export const specJudgments = (spec: JudgeSpec): number => isListSpec(spec) ? spec.items.length : 1

/**
 * The judge stage: which judgments a (retrieved) case needs. Empty for pipelines without an LLM.
 *
 * A chained stage builds later judgments from the results of earlier ones of the same case (claims
 * extracted, then checked): `tasks` gives the first round, `next` each following round from every
 * judgment made so far, until it returns none. Every judgment of every round is keyed by its own
 * inputs, so the journal, the cache, resume, `--batch` (a round per batch) and `--cluster` treat it
 * like any other; the engine needs nothing else from the stage.
 */
export interface JudgeStage {
  /** Rubric ids used; loaded (and hashed) before the run starts. */
  readonly rubrics: ReadonlyArray<string>
  /**
   * The rubrics a run with these `--columns` renames uses, when that depends on them (claim rubrics
   * only when a reference column is named): what the run loads, hashes and names in its identity.
   * Default: all of `rubrics`.
   */
  readonly rubricsFor?: ((columns: LoadContext["columns"]) => ReadonlyArray<string>) | undefined
  /** The first round of judgments. */
  readonly tasks: (c: EvalCase) => ReadonlyArray<JudgeSpec>
  /**
   * The next round, from the judgments made so far (in the order of their specs, round by round);
   * empty when the case needs no more. Deterministic: a resume replays the same rounds.
   */
  readonly next?: ((c: EvalCase, earlier: ReadonlyArray<Judgment>) => ReadonlyArray<JudgeSpec>) | undefined
  /**
   * Every spec of every round, with stand-in inputs for the rounds that depend on results (e.g. the
   * text to decompose standing in for its claims): what progress counts and `--dry-run` prices
   * before anything is judged. Defaults to `tasks` (a stage without `next`).
   */
  readonly planned?: ((c: EvalCase) => ReadonlyArray<JudgeSpec>) | undefined
}

/** The rubrics a run uses (see `JudgeStage.rubricsFor`). */
export const runRubrics = (stage: JudgeStage, columns: LoadContext["columns"]): ReadonlyArray<string> =>
  stage.rubricsFor?.(columns) ?? stage.rubrics

export const plannedSpecs = (stage: JudgeStage, c: EvalCase): ReadonlyArray<JudgeSpec> =>
  (stage.planned ?? stage.tasks)(c)

/**
 * Everything known about the run that scoring and reports may show. Deliberately holds no clock
 * time or command line, so re-running an evaluation gives byte-identical results files (those
 * live in `manifest.json`).
 */
export interface RunInfo {
  readonly pipeline: string
  readonly description: string
  readonly runId: string
  readonly runDir: string
  readonly judge: {
    readonly provider: string
    readonly model: string
    readonly label: string
    readonly params: Readonly<Record<string, unknown>>
    /** What the judge declares of itself (not written to the manifest: `traitsOfProvider` restores it). */
    readonly traits: JudgeTraits
  }
  readonly rubrics: ReadonlyArray<Rubric>
  readonly input: {
    readonly path: string
    readonly sha256: string
    readonly rows: number
    readonly cases: number
    /** The input's columns (CSV header, or the keys of JSON objects), in order. */
    readonly columns: ReadonlyArray<string>
  }
  readonly iterations: number
  readonly concurrency: number
  readonly limit?: number | undefined
  readonly retriever: { readonly name: string; readonly params: Readonly<Record<string, unknown>> }
  /** The judge model's price (USD per 1M tokens); null when unknown. */
  readonly price?: { readonly input: number; readonly output: number } | null | undefined
}

/** A record's case (id, input line), its metrics (each declared in `PerCaseMetrics.declared`) and whether it failed. */
export interface CaseValues {
  readonly caseId: string
  readonly line: number
  /** Null when the case cannot have the metric (a failed judgment, a failed retrieval…), never 0. */
  readonly metrics: Readonly<Record<string, number | null>>
  /** A judgment recorded as failed, a failed retrieval, or no headline value. */
  readonly failed: boolean
}

/**
 * The metrics every case has, as ranx keeps per-query scores: declared once (name, range,
 * direction), computed from each record, written to `case-metrics-iteration-N.jsonl` — what
 * `compare` pairs cases by, and reports rank and flag cases by. The engine folds them (`CaseFold.ts`):
 * the mean of each, with its interval, is a headline metric of the same name, by construction.
 */
export interface PerCaseMetrics<R> {
  declared(info: RunInfo): ReadonlyArray<MetricSpec>
  of(record: R): CaseValues
  /**
   * The metrics that rank cases, lowest first (ties by the next): what the summaries' lowest cases,
   * report.md's bounded details and the HTML page's lowest table go by — `composite`, `ndcg@10`…;
   * `keep`: how many lowest cases the summary holds (default 10). Absent: no lowest cases.
   */
  readonly rank?: { readonly by: ReadonlyArray<string>; readonly keep?: number | undefined } | undefined
}

/** The score stage: per case (and iteration), its judgments → one record, and the record's metrics. */
export interface ScoreStage<R> {
  score(
    c: EvalCase,
    judgments: ReadonlyArray<Judgment>,
    iteration: number,
    rubrics: ReadonlyMap<string, Rubric>
  ): R
  /** The grades of a record, by criterion (or criterion and hit), for agreement across iterations. */
  grades?(record: R): { readonly caseId: string; readonly grades: Readonly<Record<string, number | null>> }
  /** The case's metrics: what the engine folds into the summary and `compare` pairs cases by. */
  readonly perCase: PerCaseMetrics<R>
}

/** One iteration's running state of a kind's own fold: records in, the kind's summary part out. */
export interface Accumulator<R, X> {
  add(record: R, values: CaseValues): void
  finish(): X
  /**
   * Both or neither: the state so far as plain data (structured-cloneable: numbers, strings, arrays,
   * plain objects, Maps, typed arrays — `v8.serialize`), and going on from such a state. With them a
   * resumed run restores the fold from its last snapshot instead of folding every kept record again
   * (`engine/HeldRecords.ts`); without them it folds them again (slower, same result).
   */
  save?(): unknown
  restore?(state: unknown): void
}

/**
 * What a kind folds of its own, beside the engine's fold (`CaseFold.ts`: means, intervals, the
 * lowest and failed cases, the failures, the counts): claim verdict counts, grade histograms, the
 * low-score analysis… An online fold (constant memory in the number of cases); its state is the
 * accumulator's own. Its result is the summary's `extra`.
 */
export interface AggregateStage<R, X> {
  start(info: RunInfo): Accumulator<R, X>
  /**
   * Headline metrics of the kind's own — those that are not the mean of a per-case metric (micro
   * recall, counts, normalised means) — each declared in `headline` with its range and direction.
   */
  metrics?(extra: X): Readonly<Record<string, number | null>>
  headline?(info: RunInfo): ReadonlyArray<MetricSpec>
  /** What the kind adds to `low-scores-iteration-N.json`, beside the engine's lists. */
  lowScores?(extra: X): Readonly<Record<string, unknown>>
}

/** A failure a summary lists: a judgment (with the judge's raw reply) or a retrieval. */
export interface ListedFailure {
  readonly caseId: string
  readonly line?: number | undefined
  /** The rubric of a failed judgment. */
  readonly criterion?: string | undefined
  /** What it judged (`hit:<id>`, a claim…). */
  readonly target?: string | undefined
  readonly query?: string | undefined
  readonly reason: string
  readonly raw?: string | undefined
}

/** A per-case metric over the run's cases (those that have it). */
export interface MetricStats {
  readonly name: string
  /** Cases with a value; the others cannot have the metric (a failed judgment, no reference…). */
  readonly n: number
  readonly mean: number | null
  /** Sample standard deviation (n − 1); 0 for one value, null for none. */
  readonly std: number | null
  readonly min: number | null
  readonly max: number | null
  /** 95% bootstrap interval of the mean; null with fewer than two values. */
  readonly ci: { readonly lower: number; readonly upper: number } | null
}

/** The engine's summary of one iteration, with the kind's own part (`extra`). */
export interface RunSummary<R = unknown, X = unknown> {
  readonly cases: number
  /** Cases that failed (a failed judgment or retrieval, no headline value). */
  readonly failedCases: number
  readonly judgments: { readonly ok: number; readonly failed: number }
  readonly tokens: Tokens
  /** Per declared per-case metric, in declaration order. */
  readonly metrics: Readonly<Record<string, MetricStats>>
  /** The lowest cases by the ranking metrics (known values only), lowest first; bounded. */
  readonly lowest: ReadonlyArray<R>
  /** The first failed cases, in input order; bounded. */
  readonly failed: ReadonlyArray<R>
  /** The first failed judgments, in input order; bounded (every one is in judgments.jsonl). */
  readonly failures: ReadonlyArray<ListedFailure>
  readonly extra: X
}

/** A data file of a run (`qrels.txt`): its name in the run directory and its text. */
export interface DataFile {
  readonly name: string
  readonly content: Stream.Stream<string, OutputError>
}

/** A case as report.md shows it: the text of its heading and its block (escaped by the view). */
export interface CaseMarkdown {
  readonly title: string
  readonly body: string
}

/**
 * How a pipeline's results are shown. report.md and report.html are one skeleton each, drawn from the
 * engine's summary and these declarations (`report/MarkdownReport.ts`, `report/Html.ts`): the view
 * gives its title, what its heuristic judge measures, its own sections, how a case looks, and its CSV
 * columns, over records streamed from disk.
 */
export interface ReportView<R, X> {
  readonly title: string
  /** What the heuristic judge measures in this pipeline, for the judge banner ("claims are sentences…"). */
  readonly heuristic?: string | undefined
  /**
   * The kind's own report.md sections: `before` the headline metrics (notices, criteria, definitions)
   * and `after` them (distributions, claim counts, latency, cost, analyses).
   */
  sections?(
    info: RunInfo,
    summary: RunSummary<R, X>
  ): { readonly before?: ReadonlyArray<string> | undefined; readonly after?: ReadonlyArray<string> | undefined }
  /** A case in report.md (the failed and lowest cases, and the per-case details). */
  caseMarkdown(info: RunInfo, record: R): CaseMarkdown
  /** One row per case before the details (the retrieval kinds' per-query table); cells escaped by the view. */
  readonly caseTable?: {
    readonly header: ReadonlyArray<string>
    row(record: R): ReadonlyArray<string>
  } | undefined
  /** The CSV's columns after `case_id` and `line`: known before the first record (the CSV is written as the records leave). */
  csvHeader(info: RunInfo): ReadonlyArray<string>
  /**
   * Text cells are neutralised against CSV injection; numbers the view computed are `Csv.csvNumber` cells.
   * Given the record as the score stage built it while the records leave (the CSV is written then),
   * or as read back from its JSON (a resume keeping records, `report`): the row must be the same
   * (`test/report/CsvLines.test.ts` holds every built-in view to it).
   */
  csvRow(info: RunInfo, record: R): ReadonlyArray<CsvCell>
  /** The pipeline's own rows of the run-parameter table (after the run's: pipeline, input, judge…). */
  parameters?(info: RunInfo, summary: RunSummary<R, X>): ReadonlyArray<readonly [string, string]>
  /** Failures of cases that are not judgments (a failed retrieval), for the reports' failure sections. */
  caseFailures?(summary: RunSummary<R, X>): ReadonlyArray<ListedFailure>
  /** Metrics set by convention for some cases (NDCG with IDCG = 0), with how many. */
  flagged?(summary: RunSummary<R, X>): Readonly<Record<string, number>>
  /**
   * What is set by convention for the case, one sentence each (`ndcg@10: IDCG = 0 (no hit graded
   * above 0), set to 0`): the HTML page marks the case flagged (amber) and says why.
   */
  caseFlags?(record: R): ReadonlyArray<string>
  /**
   * The pipeline's own verdict on the case, when it has one (answer-synthesis: both scores ≥ 4), and
   * why: the HTML page colours the case (red / green) and "only failing" keeps the failed. Undefined
   * when undecided. A failed judgment or retrieval is failing whatever the verdict.
   */
  caseVerdict?(record: R): { readonly pass: boolean; readonly why: string } | undefined
  /**
   * What the HTML page shows of the case in its folded block (per-hit text, grade and reason; claims
   * and verdicts…), as data the page escapes. Without it the block shows the case's metrics and the
   * CSV's text cells.
   */
  caseDetail?(record: R): CaseDetail
  /**
   * Data files written from every record of the run, whatever the formats chosen (`qrels.txt`): a
   * name and a stream of its text. Named in the manifest.
   */
  dataFiles?(info: RunInfo, iteration: number, records: Stream.Stream<R, OutputError>): ReadonlyArray<DataFile>
}

/** A user's own rubrics (`--rubrics DIR`): declared in `domain/Rubric.ts`, named here for pipeline authors. */
export type { UserRubrics }

/**
 * The case fields a pipeline lets the live system under test fill (`--target`): always the answer;
 * the retrieved passages too when `contexts` is set (and the target is given `--target-contexts`),
 * replacing the input's (see `target/Generate.ts`).
 */
export interface Generates {
  readonly answer: true
  readonly contexts?: boolean | undefined
}

/**
 * A pipeline: how a test set is read (`load`), judged (`judge`) and scored (`score`: a record and its
 * per-case metrics) — the engine folds the records into the summary and derives the headline
 * metrics — plus, optionally, what the kind folds of its own (`aggregate`) and how its results are
 * shown (`report`; by default from the per-case metrics). `R` is its record, `X` the summary part of
 * its own fold.
 */
export interface Pipeline<R = unknown, X = unknown> {
  readonly name: string
  readonly description: string
  readonly load: LoadStage
  /** Rubrics of the user's, loaded from their directory (the rest from the prompts search path). */
  readonly userRubrics?: UserRubrics | undefined
  /** Defaults to the precomputed retriever (passages that came with the case). */
  readonly retrieve?: Retriever["Type"] | undefined
  /**
   * The case fields the live system under test may fill (`--target`): its answer, and its retrieved
   * passages when `contexts` is set. Absent: the pipeline judges only what its input holds, and
   * `--target` is refused. See `Generate.ts`.
   */
  readonly generate?: Generates | undefined
  readonly judge: JudgeStage
  readonly score: ScoreStage<R>
  readonly aggregate?: AggregateStage<R, X> | undefined
  /** How its results are shown; absent: from its per-case metrics (`DefaultView.ts`). */
  readonly report?: ReportView<R, X> | undefined
}

/** A pipeline's stages, as its `build` returns them. */
export type PipelineStages<R, X> = Omit<Pipeline<R, X>, "name" | "description">

/**
 * A pipeline that takes options: it lists the options it accepts (see `PipelineOptions.ts`) and
 * builds its stages from their decoded values. The CLI refuses an option the pipeline does not
 * list, and `rag-eval run <pipeline> --help` shows the ones it does.
 */
export interface PipelineDefinition<R = unknown, X = unknown> {
  readonly name: string
  readonly description: string
  readonly options: ReadonlyArray<OptionName>
  readonly build: (options: PipelineOptions) => PipelineStages<R, X>
}

/**
 * What a pipeline file exports: a pipeline, or a definition that builds one from options. Its record
 * and summary types are the file's own; the engine is generic in them (the stages' methods take
 * them as they were built).
 */
export type AnyPipeline = Pipeline<unknown, unknown> | PipelineDefinition<unknown, unknown>

/**
 * `export default Pipeline.make({ … })`: with `options` and `build`, a pipeline that takes options;
 * with the stages themselves, one that takes none.
 */
export function make<R, X>(pipeline: PipelineDefinition<R, X>): PipelineDefinition<R, X>
export function make<R, X>(pipeline: Pipeline<R, X>): Pipeline<R, X>
export function make<R, X>(pipeline: Pipeline<R, X> | PipelineDefinition<R, X>) {
  return pipeline
}

export const isDefinition = <R, X>(p: Pipeline<R, X> | PipelineDefinition<R, X>): p is PipelineDefinition<R, X> =>
  "build" in p && typeof p.build === "function"

/** The options a pipeline accepts (none for a pipeline given as its stages). */
export const declaredOptions = (p: AnyPipeline): ReadonlyArray<OptionName> => (isDefinition(p) ? p.options : [])

/** The pipeline with its options applied. */
export const instantiate = <R, X>(
  p: Pipeline<R, X> | PipelineDefinition<R, X>,
  options: PipelineOptions
): Pipeline<R, X> =>
  isDefinition(p) ? { name: p.name, description: p.description, ...p.build(options) } : p as Pipeline<R, X>
