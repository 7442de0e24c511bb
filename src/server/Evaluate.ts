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
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { InputError } from "../domain/Errors.js"
import { type Judgment, type JudgeTask, type ListJudgeTask, noUsage, type Usage as TokenUsage, type Verdict } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import { Judge } from "../judges/Judge.js"
import { loadRubric } from "../judges/Prompt.js"
import { averagePrecision } from "../metrics/averagePrecision.js"
import { ndcg } from "../metrics/ndcg.js"
import { reciprocalRank } from "../metrics/reciprocalRank.js"
import { groupSizes, hitTarget, LISTWISE_MAX_HITS } from "../kinds/graded-hits/GradedHits.js"
import { taskKey, toJudgment } from "../engine/Runner.js"
import { defaultRubric, hitText, listwiseRubric, RELEVANT_AT } from "../kinds/search/SearchRelevance.js"
import { listKeys } from "../engine/JudgmentKey.js"
import type { ListSpec } from "../engine/Pipeline.js"
import type { EvalCase } from "../domain/Case.js"
import { JudgmentCache } from "../store/JudgmentCache.js"
import type { Client, FairShare } from "./FairShare.js"
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
export const prepare = (request: SearchRequest, path = "", serverFields: ReadonlyArray<string> = defaultFields): Either.Either<PreparedQuery, ReadonlyArray<Problem>> => {
  const fields = request.eval?.fields ?? serverFields
  const problems: Array<Problem> = []
  const passages: Array<string> = []
  request.hits.forEach((hit, i) => {
    const text = hitText(hit, fields)
    if (text === undefined) {
      problems.push({
        path: join(path, `hits[${i}]`),
        message: `has none of the fields the judge reads (${fields.map((f) => `"${f}"`).join(", ")}); choose others with eval.fields`
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

/** NDCG@k (k undefined: every hit), MAP and MRR of one ranking's grades; relevant = grade ≥ 2. */
export const searchMetrics = (grades: ReadonlyArray<number>, options: { readonly k?: number | undefined; readonly gain: Gain }): SearchMetrics => ({
  ndcg: ndcg(grades, options.k === undefined ? { gain: options.gain } : { k: options.k, gain: options.gain }).value,
  map: averagePrecision(grades, { threshold: RELEVANT_AT }),
  mrr: reciprocalRank(grades, { threshold: RELEVANT_AT })
})

/** The mean of each metric (0 for no queries). */
export const meanMetrics = (all: ReadonlyArray<SearchMetrics>): SearchMetrics => {
  const mean = (pick: (m: SearchMetrics) => number) => (all.length === 0 ? 0 : all.reduce((s, m) => s + pick(m), 0) / all.length)
  return { ndcg: mean((m) => m.ndcg), map: mean((m) => m.map), mrr: mean((m) => m.mrr) }
}

export class Evaluator extends Context.Tag("rag-eval/server/Evaluator")<Evaluator, {
  readonly judge: { readonly provider: string; readonly model: string; readonly label: string; readonly local: boolean }
  readonly rubric: { readonly id: string; readonly hash: string }
  /** Hit fields the judge reads when a request does not choose them. */
  readonly fields: ReadonlyArray<string>
  /** Judge and score one query. Fails when a judgment failed (502; 500 for the local judge). */
  readonly evaluate: (query: PreparedQuery) => Effect.Effect<SearchResponse, UpstreamFailed | InternalError>
  /** Several queries, judged concurrently (the judge's gate bounds the calls in flight). */
  readonly evaluateBatch: (queries: ReadonlyArray<PreparedQuery>) => Effect.Effect<SearchBatchResponse, UpstreamFailed | InternalError>
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
  Judge | JudgmentCache | FileSystem.FileSystem
> =>
  Effect.gen(function*() {
    const judge = yield* Judge
    const cache = yield* JudgmentCache
    const rubric: Rubric = yield* loadRubric(options.listwise === true ? listwiseRubric : defaultRubric, options.promptsDir)

    const task = (q: PreparedQuery, index: number) => {
      const hit = q.hits[index]!
      const vars = { query: q.query, passage: q.passages[index]! }
      const target = hitTarget(hit)
      // `pool` (the query's hit texts) is for the heuristic judge's statistics; not part of the key.
      const judgeTask: JudgeTask = { pipeline: pipelineName, caseId: q.caseId, ordinal: 0, iteration: 1, rubric, target, vars, pool: q.passages }
      const key = taskKey(judge, judgeTask)
      return { key, task: judgeTask }
    }

    const judgeOne = (key: string, t: JudgeTask, client: Client | undefined): Effect.Effect<Judged> =>
      Effect.gen(function*() {
        if (!judge.local) {
          const cached = yield* cache.get(key)
          if (Option.isSome(cached)) return { judgment: { ...cached.value, caseId: t.caseId }, spent: noUsage }
        }
        const started = performance.now()
        // A stop or a misconfigured provider fails this hit with the reason (a 502 that names it).
        const v = yield* (client === undefined ? judge.judge(t) : client.run(judge.judge(t))).pipe(
          Effect.catchTags({
            FatalJudgeError: (e) => Effect.succeed<Verdict>({ status: "failed", failure: "transport", score: null, reason: e.line, usage: noUsage, attempts: 1 }),
            JudgeStopped: () => Effect.succeed<Verdict>({ status: "failed", failure: "transport", score: null, reason: "the server is shutting down", usage: noUsage, attempts: 0 }),
            // The server passes no repair checkpoint, so nothing is journaled and this cannot happen.
            OutputError: (e) => Effect.die(e)
          })
        )
        const judgment = toJudgment(key, t, v, judge, performance.now() - started)
        if (!judge.local) yield* cache.put(judgment)
        return { judgment, spent: v.usage }
      })

    /**
     * Judge every hit of every query; a key asked twice in one request is judged once. Tokens are
     * attributed per query to the first query that needed the judgment (cache hits cost nothing).
     */
    /**
     * A query's hits as the CLI's listwise search-relevance judges them: groups of at most
     * `LISTWISE_MAX_HITS`, each one call, each hit its own judgment under the CLI's key.
     */
    const lists = (q: PreparedQuery) => {
      const items = q.hits.map((hit, i) => ({ target: hitTarget(hit), vars: { passage: q.passages[i]! } }))
      let start = 0
      return groupSizes(items.length, LISTWISE_MAX_HITS).map((size) => {
        const spec: ListSpec = { rubric: rubric.id, vars: { query: q.query }, items: items.slice(start, start += size), pool: q.passages }
        const keys = listKeys(pipelineName, judge, rubric, { id: q.caseId } as EvalCase, 1, spec)
        const task: ListJudgeTask = { pipeline: pipelineName, caseId: q.caseId, ordinal: 0, iteration: 1, rubric, vars: spec.vars, items: spec.items, pool: q.passages }
        return { keys, task }
      })
    }

    /** One list: from the cache when every item is there, else one call; a failure fails each item with its reason. */
    const judgeList = (keys: ReadonlyArray<string>, t: ListJudgeTask, client: Client | undefined): Effect.Effect<ReadonlyArray<Judged>> =>
      Effect.gen(function*() {
        if (!judge.local) {
          const hits = yield* Effect.forEach(keys, (key) => cache.get(key))
          if (hits.every(Option.isSome)) return hits.map((h) => ({ judgment: { ...h.value, caseId: t.caseId }, spent: noUsage }))
        }
        const started = performance.now()
        const failedAll = (reason: string, attempts: number) => t.items.map((): Verdict => ({ status: "failed", failure: "transport", score: null, reason, usage: noUsage, attempts }))
        const verdicts = yield* (client === undefined ? judge.judgeList(t) : client.run(judge.judgeList(t))).pipe(
          Effect.catchTags({
            FatalJudgeError: (e) => Effect.succeed(failedAll(e.line, 1)),
            JudgeStopped: () => Effect.succeed(failedAll("the server is shutting down", 0)),
            OutputError: (e) => Effect.die(e)
          })
        )
        const latency = performance.now() - started
        return yield* Effect.forEach(t.items, (item, i) =>
          Effect.gen(function*() {
            const v = verdicts[i] ?? { status: "failed" as const, score: null, reason: "the judge returned no verdict for this hit", usage: noUsage, attempts: 0 }
            const judgment = toJudgment(keys[i]!, { ...t, target: item.target }, v, judge, latency)
            if (!judge.local) yield* cache.put(judgment)
            return { judgment, spent: v.usage }
          }))
      })

    const judgeAll = (queries: ReadonlyArray<PreparedQuery>) =>
      Effect.gen(function*() {
        // One client per request: its calls take turns with other requests' calls.
        const client = judge.local ? undefined : options.fairShare?.client()
        if (options.listwise === true) {
          const perQuery = queries.map(lists)
          const unique = new Map<string, { keys: ReadonlyArray<string>; task: ListJudgeTask }>()
          for (const row of perQuery) for (const l of row) if (!unique.has(l.keys.join(","))) unique.set(l.keys.join(","), l)
          const judgedLists = yield* Effect.forEach([...unique.values()], (l) => judgeList(l.keys, l.task, client), { concurrency: judge.local ? 1 : "unbounded" })
          const judged = new Map<string, Judged>()
          ;[...unique.values()].forEach((l, i) => l.keys.forEach((key, j) => judged.set(key, judgedLists[i]![j]!)))
          return attribute(perQuery.map((row) => row.flatMap((l) => l.keys)), judged)
        }
        const tasks = queries.map((q) => q.hits.map((_, i) => task(q, i)))
        const unique = new Map<string, JudgeTask>()
        for (const row of tasks) for (const t of row) if (!unique.has(t.key)) unique.set(t.key, t.task)
        const judged = new Map(yield* Effect.forEach(
          [...unique],
          ([key, t]) => Effect.map(judgeOne(key, t, client), (j) => [key, j] as const),
          { concurrency: judge.local ? 1 : "unbounded" }
        ))
        return attribute(tasks.map((row) => row.map((t) => t.key)), judged)
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
    const failure = (queries: ReadonlyArray<PreparedQuery>, perQuery: ReadonlyArray<{ readonly judgments: ReadonlyArray<Judgment> }>) => {
      const problems: Array<Problem> = []
      let total = 0
      perQuery.forEach(({ judgments }, qi) => {
        total += judgments.length
        judgments.forEach((j, i) => {
          if (j.status !== "ok" || j.score === null) problems.push({ path: `${queries[qi]!.path}hits[${i}]`, message: j.reason })
        })
      })
      if (problems.length === 0) return undefined
      const message = `the judge (${judge.label}) failed on ${problems.length} of ${total} hit${total === 1 ? "" : "s"}: ${problems[0]!.message}`
      return judge.local ? apiError(500, "judge_failed", message, problems) : apiError(502, "upstream_failed", message, problems)
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
          relevant: grade >= RELEVANT_AT,
          ...(q.debug ? { justification: j.reason, ...(j.confidence === undefined ? {} : { confidence: j.confidence }) } : {})
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
      judge: { provider: judge.provider, model: judge.model, label: judge.label, local: judge.local },
      rubric: { id: rubric.id, hash: rubric.hash },
      fields: options.fields ?? defaultFields,
      evaluate: (q) => Effect.map(evaluateBatch([q]), (batch) => batch.results[0]!),
      evaluateBatch
    })
  })

export const layer = (options: EvaluatorOptions = {}) => Layer.effect(Evaluator, make(options))
