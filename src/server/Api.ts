/**
 * The HTTP API of `rag-eval serve` (SPEC §8) as an `HttpApi` definition: the handlers (`Http.ts`)
 * implement it and `GET /openapi.json` is generated from it.
 *
 * The evaluation endpoints read their own body (`handleRaw`) so that the size limit (413) is
 * enforced while the bytes stream in and malformed JSON is a 400 of the API's error shape; their
 * payload schemas here still document the request in the OpenAPI document.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { isRecord } from "effect/Predicate"
import * as Schema from "effect/Schema"
import { VERSION } from "../domain/Version.js"
import {
  BadRequest,
  Health,
  InternalError,
  NotFound,
  PayloadTooLarge,
  SearchBatchRequest,
  SearchBatchResponse,
  SearchRequest,
  SearchResponse,
  TooManyRequests,
  Unauthorized,
  Unavailable,
  UpstreamFailed
} from "./Domain.js"

/** Bearer token check, active when the server has a token (`--token-env`). */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("rag-eval/server/Authorization", {
  failure: Unauthorized,
  security: {
    bearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(
        OpenApi.Description,
        "Required when the server was started with a token (the variable named by --token-env, default RAG_EVAL_TOKEN)"
      )
    )
  }
}) {}

export const searchPath = "/v1/eval/search"
/** `:` is the router's parameter marker; `::` is a literal colon. */
export const searchBatchPath = "/v1/eval/search::batch"

export class EvalGroup extends HttpApiGroup.make("eval")
  .add(
    HttpApiEndpoint.post("search", searchPath)
      .setPayload(SearchRequest)
      .addSuccess(SearchResponse)
      .annotate(OpenApi.Summary, "Judge every hit of one query and compute NDCG, MAP and MRR")
      .annotate(
        OpenApi.Description,
        "Each hit is graded 0–3 by the checklist relevance judge (relevant = grade ≥ 2). `eval.fields` chooses the hit fields the judge reads, `eval.debug` adds justifications and confidences, `eval.k` cuts NDCG at k, `eval.gain` is exponential (default) or linear. Judgments are cached: asking again costs nothing."
      )
  )
  .add(
    HttpApiEndpoint.post("searchBatch", searchBatchPath)
      .setPayload(SearchBatchRequest)
      .addSuccess(SearchBatchResponse)
      .annotate(
        OpenApi.Summary,
        "Evaluate several queries in one request (judged concurrently), with per-query results and mean metrics"
      )
  )
  .addError(BadRequest)
  .addError(PayloadTooLarge)
  .addError(TooManyRequests)
  .addError(UpstreamFailed)
  .middleware(Authorization)
  .annotate(OpenApi.Title, "evaluation")
{}

export class SystemGroup extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/health").addSuccess(Health).annotate(
      OpenApi.Summary,
      "Liveness, the judge in use and the evaluation slots"
    )
  )
  .add(
    HttpApiEndpoint.get("openapi", "/openapi.json").addSuccess(Schema.Unknown).annotate(
      OpenApi.Summary,
      "This document"
    )
  )
  .annotate(OpenApi.Title, "system")
{}

const decodeErrorRef = "#/components/schemas/HttpApiDecodeError"

/**
 * A 400 schema without HttpApi's built-in decode error, which this server never sends (it answers
 * `BadRequest`); undefined when nothing is left.
 */
const withoutDecodeError = (schema: unknown): unknown => {
  if (isRecord(schema) && schema.$ref === decodeErrorRef) return undefined
  if (!isRecord(schema) || !Array.isArray(schema.anyOf)) return schema
  const rest = schema.anyOf.filter((s) => !(isRecord(s) && s.$ref === decodeErrorRef))
  return rest.length === 0 ? undefined : rest.length === 1 ? rest[0] : { ...schema, anyOf: rest }
}

/**
 * The generated document, corrected where the generator cannot know better: the batch path's
 * escaped colon, and the built-in decode error (every decode problem is a `BadRequest` here).
 */
export const fixOpenApi = (spec: Record<string, unknown>): Record<string, unknown> => {
  const paths: Record<string, unknown> = {}
  for (const [path, item] of Object.entries(isRecord(spec.paths) ? spec.paths : {})) {
    const fixedPath = path === "/v1/eval/search:{batch}" ? "/v1/eval/search:batch" : path
    if (!isRecord(item)) {
      paths[fixedPath] = item
      continue
    }
    const fixedItem: Record<string, unknown> = {}
    for (const [method, op] of Object.entries(item)) {
      if (!isRecord(op) || !isRecord(op.responses)) {
        fixedItem[method] = op
        continue
      }
      const responses: Record<string, unknown> = {}
      for (const [status, response] of Object.entries(op.responses)) {
        const content = isRecord(response) && isRecord(response.content) ? response.content : undefined
        const json = content !== undefined && isRecord(content["application/json"])
          ? content["application/json"]
          : undefined
        if (status === "400" && json !== undefined && isRecord(response)) {
          const schema = withoutDecodeError(json.schema)
          if (schema !== undefined) {
            responses[status] = { ...response, content: { ...content, "application/json": { ...json, schema } } }
          }
        } else {
          responses[status] = response
        }
      }
      fixedItem[method] = { ...op, responses }
    }
    paths[fixedPath] = fixedItem
  }
  const components = isRecord(spec.components) ? spec.components : {}
  const schemas = isRecord(components.schemas) ? { ...components.schemas } : {}
  delete schemas.HttpApiDecodeError
  delete schemas.Issue
  delete schemas.PropertyKey
  return { ...spec, paths, components: { ...components, schemas } }
}

export class Api extends HttpApi.make("rag-eval")
  .add(EvalGroup)
  .add(SystemGroup)
  .addError(NotFound)
  .addError(InternalError)
  .addError(Unavailable)
  .annotate(OpenApi.Title, "rag-eval")
  .annotate(OpenApi.Version, VERSION)
  .annotate(
    OpenApi.Description,
    "Search-relevance evaluation with an LLM judge (or the offline heuristic judge): a query and its ranked hits in, per-hit relevance grades and NDCG / MAP / MRR out. Every error is `{ \"error\": { \"status\", \"code\", \"message\", \"problems\": [{ \"path\", \"message\" }] } }`."
  )
  .annotate(OpenApi.Transform, fixOpenApi)
{}
