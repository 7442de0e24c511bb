/**
 * The evaluation behind `POST /v1/eval/search`: a query and its ranked hits → one relevance
 * judgment per hit (the checklist rubric, through the `Judge` and the shared `JudgmentCache`) →
 * NDCG@k, MAP and MRR (relevant = grade ≥ 2).
 *
 * Judgments are keyed exactly as the CLI's search-relevance pipeline keys them — pipeline
 * `search-relevance`, case id = the request's `id` (default "1", the id the CLI gives the first line
 * of an input without ids), iteration 1, target `hit:<id>`, variables `query` (trimmed) and
 * `passage` (the chosen fields of the hit), prompt hash, provider, model and parameters — so a
 * judgment cached by the server is reused by the CLI and the other way round, and asking the server
 * twice costs one judgment. As in the runner, only LLM judgments go through the cache: the
 * heuristic judge is cheaper to run than to look up.
 *
 * Per query (grades g_i in rank order):
 *   NDCG@k = DCG@k / IDCG@k, DCG@k = Σ_{i≤k} gain(g_i) / log2(i + 1), gain = 2^g − 1 (default) or g;
 *            IDCG from the judged grades sorted descending (proxy); IDCG = 0 → 0
 *   MAP    = AP = Σ_k P@k · rel(k) / R, R = relevant hits in the list (proxy)
 *   MRR    = 1 / rank of the first relevant hit, 0 if none
 * A batch reports each query's result and the mean of each metric over the queries.
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { InputError } from "../domain/Errors.js"
import type { JudgeTraits } from "../domain/JudgeTraits.js"
import { type Judgment, noUsage, type Usage as TokenUsage } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import { toJudgment } from "../engine/JudgmentKey.js"
import { Judgments, type Plan, type RunJudging, type Sink } from "../engine/Judgments.js"
import type { ListSpec, TaskSpec } from "../engine/Pipeline.js"
import { loadRubric } from "../judges/Prompt.js"
import { groupSizes, hitTarget, LISTWISE_MAX_HITS } from "../kinds/graded-hits/GradedHits.js"
import { defaultRubric, hitText, listwiseRubric, searchRanking } from "../kinds/search/SearchRelevance.js"
import { measure, type RankingMetric } from "../metrics/registry.js"
import { judgedRelevantAt } from "../metrics/relevance.js"
import { noTokens } from "../pricing/Prices.js"
import {
  apiError,
  defaultFields,
  type Gain,
  type Hit,
  type HitResult,
  type InternalError,
  type Problem,
  type SearchBatchResponse,
  type SearchMetrics,
  type SearchRequest,
  type SearchResponse,
  type UpstreamFailed
} from "./Domain.js"
import type { FairShare } from "./FairShare.js"

/** The pipeline name in judgment keys: the CLI's search-relevance pipeline. */
export const pipelineName = "search-relevance"
/** The case id of a request without `id` (the CLI's id for the first line of an input without ids). */
export const defaultCaseId = "1"

/** A validated request, ready to judge. */
export interface PreparedQuery {
  readonly caseId: string
  /** Trimmed, as the CLI loader trims it (same judgment key). */
  readonly query: string
  readonly hits: ReadonlyArray<Hit>
  /** The text the judge reads for each hit. */
  readonly passages: ReadonlyArray<string>
  readonly debug: boolean
  readonly k: number | undefined
  readonly gain: Gain
  /** Where this query sits in the request, for problem paths: "" or "requests[3]." */
  readonly path: string
}

const join = (prefix: string, rest: string) => (prefix === "" ? rest : `${prefix}.${rest}`)

/**
 * What the schema cannot check: every hit has at least one of the chosen fields. `path` prefixes
 * problem paths (e.g. `requests[2]`).
 */
export const prepare = (
  request: SearchRequest,
  path = "",
  serverFields: ReadonlyArray<string> = defaultFields
): Either.Either<PreparedQuery, ReadonlyArray<Problem>> => {
  const fields = request.eval?.fields ?? serverFields
  const problems: Array<Problem> = []
  const passages: Array<string> = []
  request.hits.forEach((hit, i) => {
    const text = hitText(hit, fields)
    if (text === undefined) {
      problems.push({
        path: join(path, `hits[${i}]`),
        message: `has none of the fields the judge reads (${
          fields.map((f) => `"${f}"`).join(", ")
        }); choose others with eval.fields`
      })
    } else {
      passages.push(text)
    }
  })
  if (problems.length > 0) return Either.left(problems)
  return Either.right({
    caseId: request.id ?? defaultCaseId,
    query: (typeof request.query === "string" ? request.query : request.query.inputs.text).trim(),
    hits: request.hits,
    passages,
    debug: request.eval?.debug ?? false,
    k: request.eval?.k,
    gain: request.eval?.gain ?? "exponential",
    path: path === "" ? "" : `${path}.`
  })
}

/**
 * NDCG@k (k undefined: every hit; the request's gain), MAP and MRR of one ranking's grades, by the
 * metric registry as the search-relevance pipeline computes them (relevant ⇔ grade ≥ `judgedRelevantAt`).
 */
export const searchMetrics = (
  grades: ReadonlyArray<number>,
  options: { readonly k?: number | undefined; readonly gain: Gain }
): SearchMetrics => {
  const value = (metric: RankingMetric) => measure(metric, { grades }, { threshold: judgedRelevantAt }).value
  const ndcg: RankingMetric = {
    name: options.k === undefined ? "ndcg" : `ndcg@${options.k}`,
    kind: "ndcg",
    gain: options.gain,
    ...(options.k === undefined ? {} : { k: options.k })
  }
  return { ndcg: value(ndcg), map: value(searchRanking.map), mrr: value(searchRanking.mrr) }
}

/** The mean of each metric (0 for no queries). */
export const meanMetrics = (all: ReadonlyArray<SearchMetrics>): SearchMetrics => {
  const mean = (
    pick: (m: SearchMetrics) => number
  ) => (all.length === 0 ? 0 : all.reduce((s, m) => s + pick(m), 0) / all.length)
  return { ndcg: mean((m) => m.ndcg), map: mean((m) => m.map), mrr: mean((m) => m.mrr) }
}

export class Evaluator extends Context.Tag("rag-eval/server/Evaluator")<Evaluator, {
  readonly judge: {
    readonly provider: string
    readonly model: string
    readonly label: string
    readonly traits: JudgeTraits
  }
  readonly rubric: { readonly id: string; readonly hash: string }
  /** Hit fields the judge reads when a request does not choose them. */
  readonly fields: ReadonlyArray<string>
  /** Judge and score one query. Fails when a judgment failed (502; 500 for the local judge). */
  readonly evaluate: (query: PreparedQuery) => Effect.Effect<SearchResponse, UpstreamFailed | InternalError>
  /** Several queries, judged concurrently (the judge's gate bounds the calls in flight). */
  readonly evaluateBatch: (
    queries: ReadonlyArray<PreparedQuery>
  ) => Effect.Effect<SearchBatchResponse, UpstreamFailed | InternalError>
}>() {}

interface Judged {
  readonly judgment: Judgment
  /** Tokens this request paid for (0 when the judgment came from the cache). */
  readonly spent: TokenUsage
}

export interface EvaluatorOptions {
  readonly promptsDir?: string | undefined
  /** Judge a query's hits in one call (at most `LISTWISE_MAX_HITS` a call), as `run --listwise` does: the same keys, so the cache is shared. */
  readonly listwise?: boolean | undefined
  /** Hit fields the judge reads when a request does not say (`eval.fields` wins); default ["text"]. */
  readonly fields?: ReadonlyArray<string> | undefined
  /** Shares the LLM judge's calls fairly between requests (`FairShare.ts`); without it, first come first served. */
  readonly fairShare?: FairShare | undefined
}

export const make = (options: EvaluatorOptions = {}): Effect.Effect<
  Evaluator["Type"],
  InputError,
  Judgments | FileSystem.FileSystem
> =>
  Effect.gen(function*() {
    const judgments = yield* Judgments
    const judge = judgments.identity
    const rubric: Rubric = yield* loadRubric(
      options.listwise === true ? listwiseRubric : defaultRubric,
      options.promptsDir
    )
    const rubrics = new Map([[rubric.id, rubric]])

    /**
     * The judging core for one request: no journal (a server has no run), the shared cache, and a
     * fatal provider error failing the judgments it met rather than stopping the server. One fair
     * share of the judge per request: its calls take turns with other requests' calls.
     */
    const openCore = Effect.suspend(() => {
      const client = judge.traits.runsLocally ? undefined : options.fairShare?.client()
      return judgments.open({
        pipeline: pipelineName,
        runId: "serve",
        rubrics,
        retryFailed: false,
        latchFatal: false,
        around: client === undefined ? undefined : (call) => client.run(call)
      })
    })
    const sink = (): Sink => ({ state: { done: 0, failed: 0, reused: 0 }, tokens: noTokens() })
    /** The server is stopping: the judgments it did not start fail with that reason (a 502). */
    const shuttingDown = (plan: Plan): ReadonlyArray<Judgment> =>
      plan.keys.map((key, i) =>
        toJudgment(
          key,
          { ...plan.task, target: plan.list ? plan.task.items[i]!.target : plan.task.target },
          {
            status: "failed",
            failure: "transport",
            score: null,
            reason: "the server is shutting down",
            usage: noUsage,
            attempts: 0
          },
          judge,
          0
        )
      )
    const judgePlan = (core: RunJudging, plan: Plan, caseId: string): Effect.Effect<ReadonlyArray<Judged>> =>
      core.judge(plan, { id: caseId, ordinal: 0 }, sink()).pipe(
        // Without a journal nothing is written but the cache (which never fails a call): these cannot happen.
        Effect.orDie,
        Effect.map((js) =>
          (js ?? shuttingDown(plan)).map((j) => ({ judgment: j, spent: j.fromCache === true ? noUsage : j.usage }))
        )
      )

    /** A query's hits, pointwise: one spec (and key) per hit, as the CLI's search-relevance plans them. */
    const pointSpecs = (q: PreparedQuery): ReadonlyArray<TaskSpec> =>
      q.hits.map((hit, i) => ({
        rubric: rubric.id,
        target: hitTarget(hit),
        vars: { query: q.query, passage: q.passages[i]! },
        pool: q.passages
      }))

    /**
     * A query's hits as the CLI's listwise search-relevance judges them: groups of at most
     * `LISTWISE_MAX_HITS`, each one call, each hit its own judgment under the CLI's key.
     */
    const listSpecs = (q: PreparedQuery): ReadonlyArray<ListSpec> => {
      const items = q.hits.map((hit, i) => ({ target: hitTarget(hit), vars: { passage: q.passages[i]! } }))
      let start = 0
      return groupSizes(items.length, LISTWISE_MAX_HITS).map((size) => ({
        rubric: rubric.id,
        vars: { query: q.query },
        items: items.slice(start, start += size),
        pool: q.passages
      }))
    }

    /**
     * Judge every hit of every query; a call asked twice in one request (the same keys) is judged
     * once. Tokens are attributed per query to the first query that needed the judgment (cache hits
     * cost nothing).
     */
    const judgeAll = (queries: ReadonlyArray<PreparedQuery>) =>
      Effect.gen(function*() {
        const core = yield* openCore
        const perQuery = queries.map((q) =>
          (options.listwise === true ? listSpecs(q) : pointSpecs(q)).map((spec) =>
            core.plan({ id: q.caseId, ordinal: 0 }, 1, spec)
          )
        )
        const unique = new Map<string, Plan>()
        for (const row of perQuery) {
          for (const plan of row) if (!unique.has(plan.keys.join(","))) unique.set(plan.keys.join(","), plan)
        }
        const judgedPlans = yield* Effect.forEach([...unique.values()], (plan) =>
          judgePlan(core, plan, plan.task.caseId), { concurrency: judge.traits.runsLocally ? 1 : "unbounded" })
        const judged = new Map<string, Judged>()
        ;[...unique.values()].forEach((plan, i) =>
          plan.keys.forEach((key, j) =>
            judged.set(key, judgedPlans[i]![j]!)
          )
        )
        return attribute(perQuery.map((row) => row.flatMap((plan) => plan.keys)), judged)
      })

    /** Each query's judgments, with the tokens it paid for (a judgment shared by queries counts once, for the first). */
    const attribute = (keysPerQuery: ReadonlyArray<ReadonlyArray<string>>, judged: ReadonlyMap<string, Judged>) => {
      const attributed = new Set<string>()
      return keysPerQuery.map((row) => {
        let inputTokens = 0
        let outputTokens = 0
        const judgments = row.map((key) => {
          const j = judged.get(key)!
          if (!attributed.has(key)) {
            attributed.add(key)
            inputTokens += j.spent.inputTokens
            outputTokens += j.spent.outputTokens
          }
          return j.judgment
        })
        return { judgments, usage: { inputTokens, outputTokens } }
      })
    }

    /** The error when any judgment failed: 502 naming each failed hit (500 if the local judge failed). */
    const failure = (
      queries: ReadonlyArray<PreparedQuery>,
      perQuery: ReadonlyArray<{ readonly judgments: ReadonlyArray<Judgment> }>
    ) => {
      const problems: Array<Problem> = []
      let total = 0
      perQuery.forEach(({ judgments }, qi) => {
        total += judgments.length
        judgments.forEach((j, i) => {
          if (j.status !== "ok" || j.score === null) {
            problems.push({ path: `${queries[qi]!.path}hits[${i}]`, message: j.reason })
          }
        })
      })
      if (problems.length === 0) return undefined
      const message = `the judge (${judge.label}) failed on ${problems.length} of ${total} hit${
        total === 1 ? "" : "s"
      }: ${problems[0]!.message}`
      return judge.traits.runsLocally
        ? apiError(500, "judge_failed", message, problems)
        : apiError(502, "upstream_failed", message, problems)
    }

    const respond = (q: PreparedQuery, judgments: ReadonlyArray<Judgment>, usage: TokenUsage): SearchResponse => {
      const grades = judgments.map((j) => j.score ?? 0)
      const hits = q.hits.map((hit, index): HitResult => {
        const j = judgments[index]!
        const grade = grades[index]!
        return {
          index,
          fields: hit,
          score: grade,
          relevant: grade >= judgedRelevantAt,
          ...(q.debug
            ? { justification: j.reason, ...(j.confidence === undefined ? {} : { confidence: j.confidence }) }
            : {})
        }
      })
      return {
        metrics: searchMetrics(grades, { k: q.k, gain: q.gain }),
        hits,
        usage: { evaluation_input_tokens: usage.inputTokens, evaluation_output_tokens: usage.outputTokens }
      }
    }

    const evaluateBatch = (queries: ReadonlyArray<PreparedQuery>) =>
      Effect.flatMap(judgeAll(queries), (perQuery) => {
        const failed = failure(queries, perQuery)
        if (failed !== undefined) return Effect.fail(failed)
        const results = queries.map((q, i) => respond(q, perQuery[i]!.judgments, perQuery[i]!.usage))
        const total = (pick: (r: SearchResponse) => number) => results.reduce((s, r) => s + pick(r), 0)
        return Effect.succeed<SearchBatchResponse>({
          metrics: meanMetrics(results.map((r) => r.metrics)),
          results,
          usage: {
            evaluation_input_tokens: total((r) => r.usage.evaluation_input_tokens),
            evaluation_output_tokens: total((r) => r.usage.evaluation_output_tokens)
          }
        })
      })

    return Evaluator.of({
      judge: { provider: judge.provider, model: judge.model, label: judge.label, traits: judge.traits },
      rubric: { id: rubric.id, hash: rubric.hash },
      fields: options.fields ?? defaultFields,
      evaluate: (q) => Effect.map(evaluateBatch([q]), (batch) => batch.results[0]!),
      evaluateBatch
    })
  })
