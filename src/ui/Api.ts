/**
 * The browser review's HTTP API (`rag-eval ui`) as an `HttpApi` definition — the stack of `rag-eval
 * serve` — from which `GET /api/openapi.json` is generated. The page itself (`/`, `/assets/…`) is
 * served by the same router, from the bundle built with the CLI (`PageAssets.ts`).
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { VERSION } from "../domain/Version.js"
import { fixOpenApi } from "../server/Api.js"
import {
  Agreement,
  BadRequest,
  CasePage,
  CaseQueryParams,
  CaseView,
  CompareParams,
  Comparison,
  Forbidden,
  Health,
  InternalError,
  LabelCreated,
  LabelList,
  LabelRequest,
  NotFound,
  PayloadTooLarge,
  QueueParams,
  ReviewQueue,
  RunDetail,
  RunList,
  Unauthorized,
  Unavailable
} from "./Domain.js"

const RunId = Schema.Struct({ id: Schema.String })

export class RunsGroup extends HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.get("listRuns", "/api/runs")
      .setUrlParams(Schema.Struct({
        pipeline: Schema.optional(Schema.String),
        q: Schema.optional(Schema.String)
      }))
      .addSuccess(RunList)
      .annotate(OpenApi.Summary, "Every run under --out, newest first, with its id, status, judge and headline metrics")
  )
  .add(
    HttpApiEndpoint.get("getRun", "/api/runs/:id")
      .setPath(RunId)
      .setUrlParams(Schema.Struct({ iteration: CaseQueryParams.fields.iteration }))
      .addSuccess(RunDetail)
      .annotate(OpenApi.Summary, "A run: its summary, per-case metrics, cases and failing cases of an iteration")
  )
  .add(
    HttpApiEndpoint.get("listCases", "/api/runs/:id/cases")
      .setPath(RunId)
      .setUrlParams(CaseQueryParams)
      .addSuccess(CasePage)
      .annotate(OpenApi.Summary, "A page of a run's cases, filtered and sorted")
      .annotate(
        OpenApi.Description,
        "Filters: failing=true, q (text search in the record), metric with min/max (a range), labelled=yes|no. Sort by a per-case metric (sort, order=asc|desc) or input order (sort=line). offset, limit (1–500, default 50)."
      )
  )
  .add(
    HttpApiEndpoint.get("getCase", "/api/runs/:id/cases/:caseId")
      .setPath(Schema.Struct({ id: Schema.String, caseId: Schema.String }))
      .setUrlParams(Schema.Struct({ iteration: CaseQueryParams.fields.iteration }))
      .addSuccess(CaseView)
      .annotate(
        OpenApi.Summary,
        "A case: its question, answer, reference and passages, each judgment to label with the judge's verdict, reason and evidence, the judge's replies, its metrics"
      )
  )
  .add(
    HttpApiEndpoint.get("queue", "/api/runs/:id/queue")
      .setPath(RunId)
      .setUrlParams(QueueParams)
      .addSuccess(ReviewQueue)
      .annotate(
        OpenApi.Summary,
        "Cases to label next: where iterations or two judges disagree, then a sample stratified by the headline metric"
      )
  )
  .add(
    HttpApiEndpoint.get("agreement", "/api/runs/:id/agreement")
      .setPath(RunId)
      .addSuccess(Agreement)
      .annotate(OpenApi.Summary, "The judge's agreement with the run's labels so far (calibrate's figures, with CIs)")
  )
  .add(
    HttpApiEndpoint.get("listLabels", "/api/runs/:id/labels")
      .setPath(RunId)
      .addSuccess(LabelList)
      .annotate(OpenApi.Summary, "The run's labels (labels.jsonl), the latest per case and target")
  )
  .add(
    HttpApiEndpoint.post("addLabel", "/api/runs/:id/labels")
      .setPath(RunId)
      .setPayload(LabelRequest)
      .addSuccess(LabelCreated, { status: 201 })
      .annotate(
        OpenApi.Summary,
        "Label a judgment: { caseId, target, label, note? }; needs the header X-Requested-By: rag-eval. Written (fsynced) before the answer"
      )
  )
  .add(
    HttpApiEndpoint.get("compare", "/api/compare")
      .setUrlParams(CompareParams)
      .addSuccess(Comparison)
      .annotate(
        OpenApi.Summary,
        "Two runs over the same cases: compare's paired tests per metric, and the cases ordered by change, worst first"
      )
  )
  .addError(BadRequest)
  .addError(NotFound)
  .addError(PayloadTooLarge)
  .annotate(OpenApi.Title, "review")
{}

export class SystemGroup extends HttpApiGroup.make("system")
  .add(HttpApiEndpoint.get("health", "/api/health").addSuccess(Health).annotate(OpenApi.Summary, "Liveness"))
  .add(
    HttpApiEndpoint.get("openapi", "/api/openapi.json").addSuccess(Schema.Unknown).annotate(
      OpenApi.Summary,
      "This document"
    )
  )
  .annotate(OpenApi.Title, "system")
{}

/** The page: HTML, script and style, bundled at build time. */
export class PageGroup extends HttpApiGroup.make("page")
  .add(HttpApiEndpoint.get("index", "/").addSuccess(Schema.String))
  .add(
    HttpApiEndpoint.get("asset", "/assets/:name").setPath(Schema.Struct({ name: Schema.String })).addSuccess(
      Schema.String
    )
  )
  .annotate(OpenApi.Exclude, true)
{}

export class UiApi extends HttpApi.make("rag-eval-ui")
  .add(RunsGroup)
  .add(SystemGroup)
  .add(PageGroup)
  .addError(BadRequest)
  .addError(PayloadTooLarge)
  .addError(Unauthorized)
  .addError(Forbidden)
  .addError(NotFound)
  .addError(InternalError)
  .addError(Unavailable)
  .annotate(OpenApi.Title, "rag-eval ui")
  .annotate(OpenApi.Version, VERSION)
  .annotate(
    OpenApi.Description,
    "Review, compare and label a team's evaluation runs. Every error is `{ \"error\": { \"status\", \"code\", \"message\", \"problems\": [{ \"path\", \"message\" }] } }`. State-changing requests need the header `X-Requested-By: rag-eval`; with a token, every request needs `Authorization: Bearer <token>` (or the session cookie the page gets)."
  )
  .annotate(OpenApi.Transform, fixOpenApi)
{}
