/**
 * `rag-eval calibrate` (SPEC §7): how well a judge's grades agree with human labels. The result is a
 * plain typed object (`Calibration`), rendered as markdown or JSON by `Render.ts` (and later HTML).
 *
 * Pairing, per criterion: an item (query + doc, or case) with a judge grade and a human label is a
 * pair. Nothing is silently dropped: labels without a judgment, judgments without a label, and
 * judgments that failed (no grade; with or without a label) are counted and listed.
 *
 * Agreement (formulas in `src/stats/Kappa.ts`), each with a percentile bootstrap CI over the pairs
 * (`src/stats/Bootstrap.ts`): exact agreement, Cohen's κ on the grades, κ on the binary split at
 * `relevantAt`, quadratic-weighted κ, Krippendorff's α (ordinal, two coders), bias (judge mean −
 * human mean), per-grade precision and recall (humans as the reference), and the confusion matrix.
 *
 * Ranking agreement (retrieval judgments only), with NDCG@10 as trec_eval's `ndcg_cut_10` (linear
 * gain, `src/metrics/registry.ts`):
 * - per query: the items of each query in the judge input's order (a run's hit order, or a qrels
 *   file's line order) are one ranking; its NDCG@10 under the human labels (ideal from every human
 *   label of the query; items without a label gain nothing, as in trec_eval) and under the judge's
 *   grades (ideal from the judge's grades of the query; a failed judgment gains nothing). Kendall's
 *   τ-b and Spearman's ρ between the two per-query vectors, over the queries in both inputs.
 * - per system (`runs`): every TREC run evaluated by `evaluateTrec` (trec_eval's conventions) against
 *   the human labels and against the judge's grades as qrels, both restricted to the queries that
 *   have a label and a judge grade; τ-b and ρ between the systems' mean NDCG@10 (and MAP, relevant ⇔
 *   grade ≥ `relevantAt`) under the two label sets — the figure LLMJudge reports.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { InputError, UsageError } from "../domain/Errors.js"
import type * as RunFiles from "../domain/RunFiles.js"
import { measure, type RankingMetric } from "../metrics/registry.js"
import { unjudgedGrade } from "../metrics/relevance.js"
import { evaluateTrec, type Qrels, type Run } from "../metrics/trec.js"
import { bootstrapTable, defaultBootstrapResamples, type Interval, narrowing } from "../stats/Bootstrap.js"
import {
  bias,
  binaryKappa,
  cohenKappa,
  columnSums,
  type ContingencyTable,
  emptyTable,
  exactAgreement,
  krippendorffAlphaOrdinal,
  means,
  precisionOf,
  quadraticWeightedKappa,
  recallOf,
  rowSums,
  type Value
} from "../stats/Kappa.js"
import { kendallTauB, spearmanRho } from "../stats/RankCorrelation.js"
import {
  type CriterionGrades,
  foldName,
  type GradeKind,
  type GroupGrades,
  lastSegment,
  relevanceCriterion
} from "./Grades.js"
import type { GradeFile } from "./Labels.js"

// ---------------------------------------------------------------------------------------------
// Inputs

/** Where the judge's grades came from. */
export type JudgeSource = RunFiles.Calibration["judge"]

export interface JudgeGrades {
  readonly source: JudgeSource
  readonly kind: GradeKind
  readonly grades: CriterionGrades
  /** Per judge criterion, the rubric ids behind it ("relevance" → `search-relevance/checklist`). */
  readonly rubrics: ReadonlyMap<string, ReadonlyArray<string>>
  /** Rubric id → display name, when known. */
  readonly rubricNames: ReadonlyMap<string, string>
}

/** A TREC run file given with `--runs`, parsed. */
export interface SystemRun {
  readonly file: string
  readonly run: Run
}

export interface CalibrateOptions {
  /** Binary split: relevant ⇔ grade ≥ relevantAt. */
  readonly relevantAt: number
  readonly seed: number
  readonly resamples?: number | undefined
  readonly runs?: ReadonlyArray<SystemRun> | undefined
}

export const defaultCalibrateSeed = 42

/** The default binary threshold: answer-synthesis passes at ≥ 4 (1–5 scales); 0–3 scales at ≥ 2. */
export const defaultRelevantAt = (pipeline: string | undefined): number => (pipeline === "answer-synthesis" ? 4 : 2)

// ---------------------------------------------------------------------------------------------
// Result

// The result's types are those of `calibration.json` (`domain/RunFiles.ts`): what calibrate
// computes is exactly what it writes and what the HTML page reads back.

/** A statistic with its bootstrap CI. */
export type Estimate = typeof RunFiles.Estimate.Type
/** One graded item that did not make a pair. */
export type UnpairedItem = typeof RunFiles.UnpairedItem.Type
export type UnpairedList = typeof RunFiles.UnpairedList.Type
export type GradeRow = typeof RunFiles.GradeRow.Type
export type CriterionCalibration = typeof RunFiles.CriterionCalibration.Type
export type Correlation = typeof RunFiles.Correlation.Type
export type QueryNdcg = typeof RunFiles.QueryNdcg.Type
export type QueryRankingAgreement = typeof RunFiles.QueryRankingAgreement.Type
export type SystemScores = typeof RunFiles.SystemScores.Type
export type SystemRankingAgreement = typeof RunFiles.SystemRankingAgreement.Type
export type Calibration = RunFiles.Calibration

// ---------------------------------------------------------------------------------------------
// Matching label criteria to judged criteria

interface ResolvedLabels {
  /** Judge criterion (or an unmatched label name) → merged labels. */
  readonly byCriterion: Map<
    string,
    { readonly names: Array<string>; readonly grades: GroupGrades; readonly matched: boolean }
  >
}

const resolveCriteria = (
  judge: JudgeGrades,
  labels: GradeFile
): Effect.Effect<ResolvedLabels, InputError | UsageError> =>
  Effect.gen(function*() {
    if (judge.kind !== labels.kind) {
      const what = judge.kind === "retrieval"
        ? `the judge graded retrieved documents (per query and doc id), so the labels must be TREC qrels "qid 0 docid grade", but ${labels.file} is ${labels.format.toUpperCase()} rubric labels (id, criterion, grade)`
        : `the judge graded whole answers per criterion, so the labels must be a CSV / JSONL of id, criterion, grade, but ${labels.file} was read as TREC qrels (give it a .csv, .json or .jsonl extension if it is one)`
      return yield* new UsageError({ problem: what })
    }
    const byCriterion: ResolvedLabels["byCriterion"] = new Map()
    const judged = [...judge.grades.keys()]
    const namesOf = (criterion: string): Set<string> => {
      const names = new Set([foldName(criterion), foldName(lastSegment(criterion))])
      for (const rubric of judge.rubrics.get(criterion) ?? []) {
        names.add(foldName(rubric))
        names.add(foldName(lastSegment(rubric)))
        const display = judge.rubricNames.get(rubric)
        if (display !== undefined) names.add(foldName(display))
      }
      return names
    }
    const aliases = new Map(judged.map((c) => [c, namesOf(c)]))
    // Groups are shared with `labels` until a second spelling is merged into them: copied first then.
    const owned = new WeakSet<Map<string, unknown>>()
    for (const [labelName, groups] of labels.grades) {
      const folded = foldName(labelName)
      const matches = judged.filter((c) => aliases.get(c)!.has(folded))
      if (matches.length > 1) {
        return yield* new UsageError({
          problem: `${labels.file}: criterion "${labelName}" matches several judged criteria: ${
            matches.join(", ")
          }; name it by rubric id`
        })
      }
      const target = matches[0] ?? labelName
      let entry = byCriterion.get(target)
      if (entry === undefined) {
        entry = { names: [], grades: new Map(), matched: matches.length === 1 }
        byCriterion.set(target, entry)
      }
      entry.names.push(labelName)
      if (entry.names.length === 1) {
        for (const [group, items] of groups) entry.grades.set(group, items)
        continue
      }
      // Two spellings of one criterion (e.g. "groundedness" and "rag-answers/groundedness"): merge.
      for (const [group, items] of groups) {
        let merged = entry.grades.get(group)
        if (merged === undefined || !owned.has(merged)) {
          merged = new Map(merged)
          owned.add(merged)
          entry.grades.set(group, merged)
        }
        for (const [item, graded] of items) {
          const earlier = merged.get(item)
          if (earlier !== undefined) {
            return yield* new InputError({
              file: labels.file,
              line: graded.line,
              problem:
                `duplicate label for id "${group}", criterion "${target}" (named "${labelName}" here; first on line ${earlier.line})`
            })
          }
          merged.set(item, graded)
        }
      }
    }
    return { byCriterion }
  })

// ---------------------------------------------------------------------------------------------
// Per criterion

/** The grade values of a confusion matrix: the integer range when short, else the values seen. */
const gradeScale = (values: ReadonlySet<number>): Array<number> => {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return []
  const lo = sorted[0]!
  const hi = sorted.at(-1)!
  if (sorted.every(Number.isInteger) && hi - lo <= 20) return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i)
  return sorted
}

const estimate = (value: Value, ci: Interval | null, undefinedResamples: number): Estimate => ({
  value: value.value,
  ...(value.reason === undefined ? {} : { reason: value.reason }),
  ci: value.value === null ? null : ci,
  undefinedResamples: value.value === null ? 0 : undefinedResamples
})

const calibrateCriterion = (
  criterion: string,
  judged: GroupGrades,
  labelled: GroupGrades,
  labelNames: ReadonlyArray<string>,
  rubrics: ReadonlyArray<string>,
  options: { readonly relevantAt: number; readonly seed: number; readonly resamples: number },
  note: string | undefined
): CriterionCalibration => {
  const human: Array<number> = []
  const judge: Array<number> = []
  const failed: Array<UnpairedItem> = []
  let failedWithLabel = 0
  const withoutLabel: Array<UnpairedItem> = []
  const withoutJudgment: Array<UnpairedItem> = []
  const ref = (id: string, item: string) => (item === "" ? { id } : { id, item })
  for (const [group, items] of judged) {
    const labels = labelled.get(group)
    for (const [item, graded] of items) {
      const label = labels?.get(item)
      if (graded.grade === null) {
        if (label !== undefined) failedWithLabel++
        failed.push({ ...ref(group, item), grade: null, label: label?.grade ?? null, line: graded.line })
      } else if (label !== undefined && label.grade !== null) {
        human.push(label.grade)
        judge.push(graded.grade)
      } else {
        withoutLabel.push({ ...ref(group, item), grade: graded.grade, line: graded.line })
      }
    }
  }
  for (const [group, items] of labelled) {
    const judgedItems = judged.get(group)
    for (const [item, graded] of items) {
      if (judgedItems?.has(item) !== true) {
        withoutJudgment.push({ ...ref(group, item), grade: graded.grade, line: graded.line })
      }
    }
  }

  const scale = gradeScale(new Set([...human, ...judge]))
  const table: ContingencyTable = emptyTable(scale)
  const index = new Map(scale.map((g, i) => [g, i]))
  const k = scale.length
  for (let i = 0; i < human.length; i++) table.counts[index.get(human[i]!)! * k + index.get(judge[i]!)!]! += 1

  const statistics: Array<(t: ContingencyTable) => Value> = [
    exactAgreement,
    cohenKappa,
    (t) => binaryKappa(t, options.relevantAt),
    quadraticWeightedKappa,
    krippendorffAlphaOrdinal,
    bias,
    ...scale.flatMap((_, g) => [(t: ContingencyTable) => precisionOf(t, g), (t: ContingencyTable) => recallOf(t, g)])
  ]
  const boot = bootstrapTable(table, statistics, { seed: options.seed, resamples: options.resamples })
  const est = (i: number) => estimate(statistics[i]!(table), boot.intervals[i] ?? null, boot.undefinedResamples[i] ?? 0)
  const r = rowSums(table)
  const c = columnSums(table)
  const m = means(table)
  const confusion = scale.map((_, h) => Array.from(table.counts.subarray(h * k, (h + 1) * k)))
  return {
    criterion,
    labelNames,
    rubrics,
    pairs: human.length,
    labelsWithoutJudgment: { count: withoutJudgment.length, items: withoutJudgment },
    judgmentsWithoutLabel: { count: withoutLabel.length, items: withoutLabel },
    judgeFailed: { count: failed.length, withLabel: failedWithLabel, items: failed },
    relevantAt: options.relevantAt,
    grades: scale,
    confusion,
    exactAgreement: est(0),
    cohenKappa: est(1),
    binaryKappa: est(2),
    quadraticKappa: est(3),
    krippendorffAlpha: est(4),
    bias: est(5),
    meanJudge: m.judge,
    meanHuman: m.human,
    perGrade: scale.map((grade, g) => ({
      grade,
      judge: c[g]!,
      human: r[g]!,
      precision: est(6 + 2 * g),
      recall: est(7 + 2 * g)
    })),
    ...(note === undefined ? {} : { note }),
    narrowing: { cohenKappa: narrowing(est(1).ci, human.length), binaryKappa: narrowing(est(2).ci, human.length) }
  }
}

// ---------------------------------------------------------------------------------------------
// Ranking agreement

/** trec_eval's ndcg_cut_10 (linear gain) and map, as `parseMetric("ndcg@10")` / `parseMetric("map")` give them. */
const ndcg10: RankingMetric = { name: "ndcg@10", kind: "ndcg", k: 10, gain: "linear" }
const map: RankingMetric = { name: "map", kind: "averagePrecision" }

const correlate = (x: ReadonlyArray<number>, y: ReadonlyArray<number>): Correlation => ({
  n: x.length,
  kendallTauB: kendallTauB(x, y),
  spearmanRho: spearmanRho(x, y)
})

const meanOf = (
  xs: ReadonlyArray<number>
): number | null => (xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length)

const describeOrder = (source: JudgeSource): string =>
  source.kind === "qrels"
    ? `each query's documents in the order of the judge's qrels file (${source.file}), line by line — a pool order, not necessarily a ranking`
    : source.order === "records"
    ? `each query's hits in the run's order (rank 1 first, from records-iteration-${source.run.iteration}.jsonl)`
    : `each query's hits in the order of the run's journal (records-iteration-${source.run.iteration}.jsonl is missing)`

const queryRanking = (source: JudgeSource, judged: GroupGrades, labelled: GroupGrades): QueryRankingAgreement => {
  const queries: Array<QueryNdcg> = []
  let zeroIdealHuman = 0
  let zeroIdealJudge = 0
  let judgeOnlyQueries = 0
  for (const [qid, items] of judged) {
    const labels = labelled.get(qid)
    if (labels === undefined) {
      judgeOnlyQueries++
      continue
    }
    const ranking = [...items.keys()]
    const gold: Array<number> = []
    const humanByDoc = new Map<string, number>()
    for (const [doc, graded] of labels) {
      if (graded.grade === null) continue
      humanByDoc.set(doc, graded.grade)
      gold.push(graded.grade)
    }
    const human = measure(ndcg10, { grades: ranking.map((d) => humanByDoc.get(d) ?? unjudgedGrade), gold })
    const judgeGrades = ranking.map((d) => items.get(d)!.grade ?? unjudgedGrade)
    const judge = measure(ndcg10, { grades: judgeGrades, gold: judgeGrades.filter((g) => g !== unjudgedGrade) })
    if (human.flagged) zeroIdealHuman++
    if (judge.flagged) zeroIdealJudge++
    queries.push({ id: qid, items: ranking.length, human: human.value, judge: judge.value })
  }
  let labelOnlyQueries = 0
  for (const qid of labelled.keys()) if (!judged.has(qid)) labelOnlyQueries++
  return {
    metric: ndcg10.name,
    order: describeOrder(source),
    queries,
    meanHuman: meanOf(queries.map((q) => q.human)),
    meanJudge: meanOf(queries.map((q) => q.judge)),
    zeroIdealHuman,
    zeroIdealJudge,
    correlation: correlate(queries.map((q) => q.human), queries.map((q) => q.judge)),
    judgeOnlyQueries,
    labelOnlyQueries
  }
}

const systemRanking = (
  runs: ReadonlyArray<SystemRun>,
  judged: GroupGrades,
  labelled: GroupGrades,
  relevantAt: number
): SystemRankingAgreement => {
  const humanQrels = new Map<string, Map<string, number>>()
  const judgeQrels = new Map<string, Map<string, number>>()
  for (const [qid, items] of judged) {
    const labels = labelled.get(qid)
    if (labels === undefined) continue
    const j = new Map<string, number>()
    for (const [doc, graded] of items) if (graded.grade !== null) j.set(doc, graded.grade)
    const h = new Map<string, number>()
    for (const [doc, graded] of labels) if (graded.grade !== null) h.set(doc, graded.grade)
    if (j.size === 0 || h.size === 0) continue
    judgeQrels.set(qid, j)
    humanQrels.set(qid, h)
  }
  const metrics = [ndcg10, map]
  const systems = runs.map((system): SystemScores => {
    const human = evaluateTrec({ qrels: humanQrels as Qrels, run: system.run, metrics, relevanceLevel: relevantAt })
    const judge = evaluateTrec({ qrels: judgeQrels as Qrels, run: system.run, metrics, relevanceLevel: relevantAt })
    return {
      file: system.file,
      name: human.runTag ?? system.file,
      human: human.mean,
      judge: judge.mean,
      queriesHuman: human.queries,
      queriesJudge: judge.queries
    }
  })
  const correlation = Object.fromEntries(metrics.map((spec) => [
    spec.name,
    correlate(systems.map((s) => s.human[spec.name] ?? 0), systems.map((s) => s.judge[spec.name] ?? 0))
  ]))
  return { metrics: metrics.map((m) => m.name), relevantAt, queries: humanQrels.size, systems, correlation }
}

// ---------------------------------------------------------------------------------------------
// Entry point

export const calibrate = (
  judge: JudgeGrades,
  labels: GradeFile,
  options: CalibrateOptions
): Effect.Effect<Calibration, InputError | UsageError> =>
  Effect.gen(function*() {
    const resamples = Math.floor(options.resamples ?? defaultBootstrapResamples)
    if (!(resamples >= 1)) {
      return yield* new UsageError({ problem: `--resamples must be a positive integer, got ${options.resamples}` })
    }
    if (!Number.isFinite(options.relevantAt)) {
      return yield* new UsageError({ problem: `--relevant-at must be a number, got ${options.relevantAt}` })
    }
    if (options.runs !== undefined && options.runs.length > 0 && judge.kind !== "retrieval") {
      return yield* new UsageError({
        problem:
          "--runs ranks systems by NDCG@10 / MAP, which needs retrieval judgments (a search-relevance or course-retrieval run, or --judge qrels)"
      })
    }
    const resolved = yield* resolveCriteria(judge, labels)
    const settings = { relevantAt: options.relevantAt, seed: options.seed, resamples }
    const criteria: Array<CriterionCalibration> = []
    for (const [criterion, entry] of resolved.byCriterion) {
      const judged = entry.matched ? judge.grades.get(criterion) ?? new Map() : new Map()
      const note = entry.matched
        ? undefined
        : `no judged criterion is named "${entry.names.join(`", "`)}"; the judge graded: ${
          [...judge.grades.keys()].join(", ") || "nothing"
        }`
      criteria.push(
        calibrateCriterion(
          criterion,
          judged,
          entry.grades,
          entry.names,
          judge.rubrics.get(criterion) ?? [],
          settings,
          note
        )
      )
    }
    // Criteria in the judge's order, then label names that matched nothing.
    const judgedOrder = [...judge.grades.keys()]
    criteria.sort((a, b) => {
      const ia = judgedOrder.indexOf(a.criterion)
      const ib = judgedOrder.indexOf(b.criterion)
      return (ia === -1 ? Infinity : ia) - (ib === -1 ? Infinity : ib)
    })
    const unlabelledCriteria = judgedOrder
      .filter((c) => !resolved.byCriterion.has(c))
      .map((criterion) => {
        let judgments = 0
        for (const items of judge.grades.get(criterion)!.values()) judgments += items.size
        return { criterion, judgments }
      })
    const relevance = resolved.byCriterion.get(relevanceCriterion)
    const judgedRelevance = judge.grades.get(relevanceCriterion)
    const retrieval = judge.kind === "retrieval" && relevance !== undefined && judgedRelevance !== undefined
    return {
      judge: judge.source,
      labels: { file: labels.file, format: labels.format, count: labels.count, negative: labels.negative },
      kind: judge.kind,
      relevantAt: options.relevantAt,
      bootstrap: { resamples, seed: options.seed, level: 0.95, unit: "pair" },
      criteria,
      unlabelledCriteria,
      queryRanking: retrieval ? queryRanking(judge.source, judgedRelevance, relevance.grades) : null,
      systemRanking: retrieval && options.runs !== undefined && options.runs.length > 0
        ? systemRanking(options.runs, judgedRelevance, relevance.grades, options.relevantAt)
        : null
    }
  })

// ---------------------------------------------------------------------------------------------
// The CI gate

/** `--min-kappa`: Cohen's κ on the exact grades of some criterion is below the minimum (exit code 1). */
export class KappaBelowMinimum extends Schema.TaggedError<KappaBelowMinimum>()("KappaBelowMinimum", {
  minimum: Schema.Number,
  failures: Schema.Array(Schema.String)
}) {
  get message(): string {
    return this.failures.join("\n")
  }
}

/**
 * One line per calibrated criterion whose Cohen's κ (exact grades) is below `minimum` — and for
 * claim verdicts and nugget grades, their κ (three values). An undefined κ (no pairs, or one grade
 * only) fails too, and so do labels with no κ at all (metric values, preferences only): a gate must
 * not pass on nothing measured.
 */
export const kappaGateFailures = (calibration: Calibration, minimum: number): ReadonlyArray<string> => {
  const answers = calibration.answers ?? null
  const scales = answers === null
    ? []
    : [["claim verdicts", answers.claims], ["nugget grades", answers.nuggets]] as const
  const answerFailures = scales.flatMap(([name, v]) => {
    if (v === null) return []
    const kappa = v.cohenKappa.value
    if (kappa === null) {
      return [
        `${name}: Cohen's κ is undefined (${
          v.cohenKappa.reason ?? "no value"
        }), so it cannot reach --min-kappa ${minimum}`
      ]
    }
    return kappa < minimum
      ? [`${name}: Cohen's κ ${kappa.toFixed(4)} is below --min-kappa ${minimum} (${v.pairs} pairs)`]
      : []
  })
  const measured = calibration.criteria.length + scales.filter(([, v]) => v !== null).length
  if (measured === 0) {
    return [
      `no κ to gate: the labels hold no grades, claim verdicts or nugget grades, so nothing can reach --min-kappa ${minimum}`
    ]
  }
  return [...gradeFailures(calibration, minimum), ...answerFailures]
}

const gradeFailures = (calibration: Calibration, minimum: number): ReadonlyArray<string> =>
  calibration.criteria.flatMap((c) => {
    const kappa = c.cohenKappa.value
    if (kappa === null) {
      return [
        `${c.criterion}: Cohen's κ is undefined (${
          c.cohenKappa.reason ?? "no value"
        }), so it cannot reach --min-kappa ${minimum}`
      ]
    }
    if (kappa < minimum) {
      return [`${c.criterion}: Cohen's κ ${kappa.toFixed(4)} is below --min-kappa ${minimum} (${c.pairs} pairs)`]
    }
    return []
  })
