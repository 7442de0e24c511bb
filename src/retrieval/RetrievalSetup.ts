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
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import type { EvalCase } from "../domain/Case.js"
import { InputError } from "../domain/Errors.js"
import type { LoadStage } from "../engine/Pipeline.js"
import {
  decodeOptions,
  type OptionName,
  optionSpecs,
  type PipelineOptions,
  retrievalOptionNames
} from "../engine/PipelineOptions.js"
import { precomputed, type Retriever } from "../engine/Retriever.js"
import * as Bm25 from "./Bm25.js"
import * as HttpRetriever from "./HttpRetriever.js"
import { applyParams, paramsRecord, type RetrievalParams, validateParams } from "./Params.js"

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
  checkColumns: (ctx, columns) =>
    Effect.forEach(ready, (r) => r, { discard: true }).pipe(Effect.zipRight(load.checkColumns(ctx, columns)))
})

/**
 * The precomputed retriever (hits that came with the case) with the score threshold and top-k
 * applied. Counts of dropped hits are added to the case's `retrieval` record (the input's latency
 * and usage, if any, are kept).
 */
export const precomputedWith = (
  params: RetrievalParams,
  extra: Readonly<Record<string, unknown>> = {}
): Retriever["Type"] => {
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
const broken = (error: InputError): Retriever["Type"] => ({
  name: "invalid",
  params: { error: error.message },
  retrieve: () => Effect.fail(error)
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

/** Where an option's problem is reported: the flag (`--search-url`), or the environment variable. */
export type OptionPlace = (option: OptionName) => { readonly file: string; readonly field?: string | undefined }

const atFlag: OptionPlace = (option) => ({ file: `--${optionSpecs[option].flag}` })

/**
 * The retrieval a pipeline's options configure (see the module comment for what each means).
 * Problems (a live retriever without its endpoint or corpus, a malformed body template, prefetch or
 * rerank settings on precomputed hits) fail `ready`, so the run stops before any case is judged.
 */
export const fromOptions = (
  o: PipelineOptions,
  options: FromEnvOptions = {},
  place: OptionPlace = atFlag
): RetrievalSetup => {
  const problem = (option: OptionName, text: string) => new InputError({ ...place(option), problem: text })
  const params = {
    topK: o.topK,
    scoreThreshold: o.scoreThreshold,
    prefetchLimit: o.prefetchLimit,
    rerankTopN: o.rerankTopN
  }
  const checked = validateParams(params)
  if (Either.isLeft(checked)) return failedSetup(problem(checked.left.name, checked.left.problem))
  const record = options.record ?? {}
  const withRecord = (
    r: Retriever["Type"]
  ): Retriever["Type"] => (Object.keys(record).length === 0 ? r : { ...r, params: { ...r.params, ...record } })
  const setup = (
    kind: RetrieverKind,
    retriever: Retriever["Type"],
    ready: Effect.Effect<void, InputError>
  ): RetrievalSetup => ({
    kind,
    retriever: withRecord(retriever),
    live: kind !== "precomputed",
    ready,
    guard: (load) => guardLoad(load, ready)
  })
  const kind = o.retriever ?? "precomputed"
  if (kind === "precomputed") {
    // Settings that only a live retriever uses would be silently ignored on precomputed hits.
    const live = (Object.keys(optionSpecs) as Array<OptionName>).find((n) =>
      optionSpecs[n].liveOnly === true && o[n] !== undefined
    )
    if (live !== undefined) {
      return failedSetup(
        problem(
          live,
          `--${
            optionSpecs[live].flag
          } applies only to a live retriever (--retriever http or bm25); the hits here come with the test set`
        )
      )
    }
    return setup("precomputed", precomputedWith(params), Effect.void)
  }
  if (kind === "bm25") {
    if (o.corpus === undefined) {
      return failedSetup(
        problem("corpus", "--retriever bm25 needs the corpus file (JSONL of { id, text }): --corpus FILE")
      )
    }
    const bm25 = Bm25.makeWithIndex({ corpus: o.corpus, params, query: options.query })
    return setup("bm25", bm25.retriever, Effect.asVoid(bm25.ready))
  }
  if (o.searchUrl === undefined) {
    return failedSetup(problem("searchUrl", "--retriever http needs the search endpoint: --search-url URL"))
  }
  if (!/^https?:\/\//i.test(o.searchUrl)) {
    return failedSetup(problem("searchUrl", `expected an http(s) URL, got "${o.searchUrl}"`))
  }
  if (o.searchBody !== undefined) {
    const body = HttpRetriever.checkBody(o.searchBody)
    if (Either.isLeft(body)) return failedSetup(problem("searchBody", body.left))
  }
  const retriever = HttpRetriever.make({
    url: o.searchUrl,
    body: o.searchBody,
    hitsPath: o.hitsPath,
    idField: o.hitId,
    textField: o.hitText,
    scoreField: o.hitScore,
    timingsPath: o.timingsPath,
    timeoutMs: o.searchTimeout === undefined ? undefined : Math.round(o.searchTimeout * 1000),
    retries: o.searchRetries,
    headers: o.searchToken === undefined ? undefined : { authorization: `Bearer ${Redacted.value(o.searchToken)}` },
    params,
    query: options.query
  })
  return setup("http", retriever, Effect.void)
}

/**
 * Options from environment-style variables (`RAG_EVAL_*` names and their aliases), as text; the
 * first variable set (non-empty) wins. `env` is always given: nothing here reads the process
 * environment (the CLI's config layer does, once).
 */
export const optionsFromVariables = (
  env: Readonly<Record<string, string | undefined>>,
  names: ReadonlyArray<OptionName> = Object.keys(optionSpecs) as Array<OptionName>
) => {
  const raw: Partial<Record<OptionName, string>> = {}
  const from: Partial<Record<OptionName, string>> = {}
  for (const name of names) {
    for (const variable of optionSpecs[name].env) {
      const value = env[variable]
      if (value !== undefined && value.trim() !== "") {
        raw[name] = value
        from[name] = variable
        break
      }
    }
  }
  return { raw, from }
}

/** Typed options from environment-style variables; an invalid value names its variable. */
export const decodeVariables = (
  env: Readonly<Record<string, string | undefined>>,
  names?: ReadonlyArray<OptionName>
): Either.Either<{ readonly options: PipelineOptions; readonly place: OptionPlace }, InputError> => {
  const { raw, from } = optionsFromVariables(env, names)
  const place: OptionPlace = (option) => ({ file: "environment", field: from[option] ?? optionSpecs[option].env[0] })
  return Either.map(
    Either.mapLeft(
      decodeOptions(raw),
      (p) => new InputError({ ...place(p.option), problem: `must be ${p.expected} (got "${p.value}")` })
    ),
    (options) => ({ options, place })
  )
}

/** The retrieval environment-style variables configure (tests and library callers; the CLI decodes options itself). */
export const fromEnv = (options: FromEnvOptions, env: Readonly<Record<string, string | undefined>>): RetrievalSetup => {
  const decoded = decodeVariables(env, retrievalOptionNames)
  if (Either.isLeft(decoded)) return failedSetup(decoded.left)
  return fromOptions(decoded.right.options, options, decoded.right.place)
}
