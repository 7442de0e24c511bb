/**
 * Which retriever a pipeline uses, chosen from the environment (the CLI's retrieval flags map onto
 * the same variables), and the checks that run before the first case.
 *
 * | variable | meaning | default |
 * |---|---|---|
 * | `RAG_EVAL_RETRIEVER` | `precomputed` (hits come with the input), `http`, `bm25` | `precomputed` |
 * | `RAG_TOP_K` | hits kept per query | all (precomputed), 10 (live) |
 * | `RAG_SCORE_THRESHOLD` | hits scored below it are dropped before evaluation | none |
 * | `HYBRID_PREFETCH_LIMIT` | candidates before fusion/rerank (http: `{{prefetchLimit}}`; bm25: cap) | none |
 * | `RERANK_TOP_N` | candidates the reranker re-scores (http: `{{rerankTopN}}`) | none |
 * | `RAG_EVAL_SEARCH_URL` | http: the search endpoint (POST) | required |
 * | `RAG_EVAL_SEARCH_BODY` | http: JSON body template | `{"query": "{{query}}", "top_k": {{topK}}}` |
 * | `RAG_EVAL_HITS_PATH` | http: dot path of the hit list | `hits` |
 * | `RAG_EVAL_HIT_ID`, `RAG_EVAL_HIT_TEXT`, `RAG_EVAL_HIT_SCORE` | http: dot paths in a hit | `id`/`_id`, `text`/…, `score`/`_score` |
 * | `RAG_EVAL_TIMINGS_PATH` | http: dot path of latency sub-spans (ms) in the answer | none |
 * | `RAG_EVAL_SEARCH_TIMEOUT` | http: seconds per request | 30 |
 * | `RAG_EVAL_SEARCH_RETRIES` | http: retries after network errors, 429, 5xx | 1 |
 * | `RAG_EVAL_SEARCH_TOKEN` | http: sent as `Authorization: Bearer …`, never recorded | none |
 * | `RAG_EVAL_CORPUS` | bm25: corpus JSONL of `{ id, text }` | required |
 *
 * An invalid setting is an `InputError` (file "environment", field = the variable) raised by the
 * guarded load stage's column check — before anything is judged or written.
 */
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { EvalCase } from "../domain/Case.js"
import { InputError } from "../domain/Errors.js"
import type { LoadStage } from "../engine/Pipeline.js"
import { precomputed, type Retriever } from "../engine/Retriever.js"
import * as Bm25 from "./Bm25.js"
import * as HttpRetriever from "./HttpRetriever.js"
import { applyParams, type ParamProblem, paramsRecord, type RetrievalParams, validateParams } from "./Params.js"

export type RetrieverKind = "precomputed" | "http" | "bm25"

export interface RetrievalSetup {
  readonly kind: RetrieverKind
  readonly retriever: Retriever["Type"]
  /** Hits come from a live retriever: the input need not carry them. */
  readonly live: boolean
  /** Configuration problems, and preparation (the bm25 corpus): run before the first case. */
  readonly ready: Effect.Effect<void, InputError>
  /** The load stage with `ready` run first in its column check. */
  readonly guard: (load: LoadStage) => LoadStage
}

/** A load stage whose column check first runs the given preparations. */
export const guardLoad = (load: LoadStage, ...ready: ReadonlyArray<Effect.Effect<unknown, InputError>>): LoadStage => ({
  ...load,
  checkColumns: (ctx, columns) => Effect.forEach(ready, (r) => r, { discard: true }).pipe(Effect.zipRight(load.checkColumns(ctx, columns)))
})

/**
 * The precomputed retriever (hits that came with the case) with the score threshold and top-k
 * applied. Counts of dropped hits are added to the case's `retrieval` record (the input's latency
 * and usage, if any, are kept).
 */
export const precomputedWith = (params: RetrievalParams, extra: Readonly<Record<string, unknown>> = {}): Retriever["Type"] => {
  const recorded = { ...paramsRecord(params), ...extra }
  if (params.topK === undefined && params.scoreThreshold === undefined) {
    return Object.keys(recorded).length === 0 ? precomputed : { ...precomputed, params: recorded }
  }
  return {
    name: "precomputed",
    params: recorded,
    retrieve: (c) =>
      Effect.sync((): EvalCase => {
        const applied = applyParams(c.passages, params)
        return {
          ...c,
          passages: applied.passages,
          retrieval: {
            retriever: "precomputed",
            status: "ok",
            ...c.retrieval,
            candidates: applied.candidates,
            belowThreshold: applied.belowThreshold,
            beyondTopK: applied.beyondTopK
          }
        }
      })
  }
}

/** Every case fails with `error`: the retriever of a setup whose configuration is invalid. */
const broken = (error: InputError): Retriever["Type"] => ({ name: "invalid", params: { error: error.message }, retrieve: () => Effect.fail(error) })

const envError = (variable: string, problem: string) => new InputError({ file: "environment", field: variable, problem })

const paramVariables: Readonly<Record<ParamProblem["name"], string>> = {
  topK: "RAG_TOP_K",
  scoreThreshold: "RAG_SCORE_THRESHOLD",
  prefetchLimit: "HYBRID_PREFETCH_LIMIT",
  rerankTopN: "RERANK_TOP_N"
}

/** The environment as a ConfigProvider; empty values count as unset. */
export const envProvider = (env: Readonly<Record<string, string | undefined>>): ConfigProvider.ConfigProvider =>
  ConfigProvider.fromMap(new Map(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1].trim() !== "")))

/** Reads a Config from `env`; a ConfigError becomes an `InputError` naming the variable. */
export const readEnv = <A>(config: Config.Config<A>, env: Readonly<Record<string, string | undefined>>): Either.Either<A, InputError> =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(config, envProvider(env)))).pipe(
    Either.mapLeft((e) => {
      const text = String(e).replace(/^\(|\)$/g, "")
      const variable = /at ([A-Z0-9_]+)/.exec(text)?.[1] ?? "environment"
      return envError(variable, text)
    })
  )

const optional = <A>(c: Config.Config<A>) => Config.map(Config.option(c), Option.getOrUndefined)

const settings = Config.all({
  kind: Config.withDefault(Config.literal("precomputed", "http", "bm25")("RAG_EVAL_RETRIEVER"), "precomputed" as const),
  topK: optional(Config.integer("RAG_TOP_K")),
  scoreThreshold: optional(Config.number("RAG_SCORE_THRESHOLD")),
  prefetchLimit: optional(Config.integer("HYBRID_PREFETCH_LIMIT")),
  rerankTopN: optional(Config.integer("RERANK_TOP_N")),
  url: optional(Config.string("RAG_EVAL_SEARCH_URL")),
  body: optional(Config.string("RAG_EVAL_SEARCH_BODY")),
  hitsPath: optional(Config.string("RAG_EVAL_HITS_PATH")),
  idField: optional(Config.string("RAG_EVAL_HIT_ID")),
  textField: optional(Config.string("RAG_EVAL_HIT_TEXT")),
  scoreField: optional(Config.string("RAG_EVAL_HIT_SCORE")),
  timingsPath: optional(Config.string("RAG_EVAL_TIMINGS_PATH")),
  timeout: optional(Config.number("RAG_EVAL_SEARCH_TIMEOUT")),
  retries: optional(Config.integer("RAG_EVAL_SEARCH_RETRIES")),
  token: optional(Config.redacted("RAG_EVAL_SEARCH_TOKEN")),
  corpus: optional(Config.string("RAG_EVAL_CORPUS"))
})

export interface FromEnvOptions {
  /** The query text of a case for live retrievers (default: its question). */
  readonly query?: ((c: EvalCase) => string) | undefined
  /**
   * Evaluation settings recorded with the retriever's params (e.g. the fuzzy threshold), so that a
   * changed setting makes a different run id rather than overwriting the previous run.
   */
  readonly record?: Readonly<Record<string, unknown>> | undefined
}

const failedSetup = (error: InputError): RetrievalSetup => ({
  kind: "precomputed",
  retriever: broken(error),
  live: false,
  ready: Effect.fail(error),
  guard: (load) => guardLoad(load, Effect.fail(error))
})

/** The retrieval of a pipeline as the environment configures it (see the module comment). */
export const fromEnv = (options: FromEnvOptions = {}, env: Readonly<Record<string, string | undefined>> = process.env): RetrievalSetup => {
  const read = readEnv(settings, env)
  if (Either.isLeft(read)) return failedSetup(read.left)
  const s = read.right
  const checked = validateParams({ topK: s.topK, scoreThreshold: s.scoreThreshold, prefetchLimit: s.prefetchLimit, rerankTopN: s.rerankTopN })
  if (Either.isLeft(checked)) return failedSetup(envError(paramVariables[checked.left.name], checked.left.problem))
  const params = checked.right
  const record = options.record ?? {}
  const withRecord = (r: Retriever["Type"]): Retriever["Type"] => (Object.keys(record).length === 0 ? r : { ...r, params: { ...r.params, ...record } })
  const setup = (kind: RetrieverKind, retriever: Retriever["Type"], ready: Effect.Effect<void, InputError>): RetrievalSetup => ({
    kind,
    retriever: withRecord(retriever),
    live: kind !== "precomputed",
    ready,
    guard: (load) => guardLoad(load, ready)
  })
  switch (s.kind) {
    case "precomputed":
      return setup("precomputed", precomputedWith(params), Effect.void)
    case "bm25": {
      if (s.corpus === undefined) return failedSetup(envError("RAG_EVAL_CORPUS", "RAG_EVAL_RETRIEVER=bm25 needs the corpus file (JSONL of { id, text }) in RAG_EVAL_CORPUS"))
      const bm25 = Bm25.makeWithIndex({ corpus: s.corpus, params, query: options.query })
      return setup("bm25", bm25.retriever, Effect.asVoid(bm25.ready))
    }
    case "http": {
      if (s.url === undefined) return failedSetup(envError("RAG_EVAL_SEARCH_URL", "RAG_EVAL_RETRIEVER=http needs the search endpoint in RAG_EVAL_SEARCH_URL"))
      if (!/^https?:\/\//i.test(s.url)) return failedSetup(envError("RAG_EVAL_SEARCH_URL", `expected an http(s) URL, got "${s.url}"`))
      if (s.body !== undefined) {
        const body = HttpRetriever.checkBody(s.body)
        if (Either.isLeft(body)) return failedSetup(envError("RAG_EVAL_SEARCH_BODY", body.left))
      }
      if (s.timeout !== undefined && !(s.timeout > 0)) return failedSetup(envError("RAG_EVAL_SEARCH_TIMEOUT", `must be a number of seconds > 0 (got ${s.timeout})`))
      if (s.retries !== undefined && s.retries < 0) return failedSetup(envError("RAG_EVAL_SEARCH_RETRIES", `must be 0 or more (got ${s.retries})`))
      const retriever = HttpRetriever.make({
        url: s.url,
        body: s.body,
        hitsPath: s.hitsPath,
        idField: s.idField,
        textField: s.textField,
        scoreField: s.scoreField,
        timingsPath: s.timingsPath,
        timeoutMs: s.timeout === undefined ? undefined : Math.round(s.timeout * 1000),
        retries: s.retries,
        headers: s.token === undefined ? undefined : { authorization: `Bearer ${Redacted.value(s.token)}` },
        params,
        query: options.query
      })
      return setup("http", retriever, Effect.void)
    }
  }
}
