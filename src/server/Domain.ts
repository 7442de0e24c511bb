/**
 * Schemas of the HTTP API (SPEC §8) and its errors.
 *
 * Requests are decoded with these schemas (every problem listed, with its path); responses are
 * encoded with them; `GET /openapi.json` is generated from them. Every error has one JSON shape,
 * `{ "error": { "status", "code", "message", "problems": [{ "path", "message" }] } }` — one class
 * per HTTP status, because HttpApi picks the status from the error's schema.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

const NonEmptyString = Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }))

// ---------------------------------------------------------------------------------------------
// Request

export const QueryInputs = Schema.Struct({
  text: Schema.String.pipe(Schema.filter((s) => s.trim() !== "" || "the query text is empty"))
})

/** `{ "inputs": { "text": "…" } }`; other keys (an integrated-inference query's `top_k`…) are ignored. */
export const QueryObject = Schema.Struct(
  { inputs: QueryInputs },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

/** The query: `{ "inputs": { "text": "…" } }`, or its text alone (`"query": "…"`, as `rag-eval run` accepts). */
export const Query = Schema.Union(
  Schema.String.pipe(Schema.filter((s) => s.trim() !== "" || "the query text is empty")),
  QueryObject
).annotations({
  description: "The query text, or { \"inputs\": { \"text\": \"…\" } }",
  message: () => ({
    message: "expected the query text (a non-empty string) or { \"inputs\": { \"text\": \"…\" } }",
    override: true
  })
})

export const Gain = Schema.Literal("exponential", "linear").annotations({
  description: "NDCG gain: exponential (2^grade − 1, the default) or linear (grade)"
})
export type Gain = typeof Gain.Type

export const defaultFields: ReadonlyArray<string> = ["text"]

export const EvalOptions = Schema.Struct({
  fields: Schema.optionalWith(
    Schema.NonEmptyArray(NonEmptyString).annotations({
      message: () => ({
        message: "expected a non-empty array of field names, e.g. [\"title\", \"text\"]",
        override: true
      })
    }),
    { exact: true }
  ).annotations({
    description:
      "Hit fields the judge reads (default [\"text\"]); one field is shown as its value, several as `field: value` lines"
  }),
  debug: Schema.optionalWith(Schema.Boolean, { exact: true }).annotations({
    description: "Add each hit's justification and confidence (default false)"
  }),
  k: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }).annotations({
    description: "Cut-off of NDCG@k (default: every hit)"
  }),
  gain: Schema.optionalWith(Gain, { exact: true })
}).annotations({ identifier: "EvalOptions", parseOptions: { onExcessProperty: "error" } })
export type EvalOptions = typeof EvalOptions.Type

/** A string field: "expected a string" when it is anything else. */
const StringField = Schema.String.annotations({ message: () => "expected a string" })

/**
 * A ranked hit: an `id`, an optional `text` (a string: it is what the judge reads by default) and any
 * other fields (`title`…), echoed back in the response.
 */
export const Hit = Schema.Struct(
  {
    id: StringField.pipe(Schema.minLength(1, { message: () => "must not be empty" })),
    text: Schema.optionalWith(StringField, { exact: true })
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
).annotations({ identifier: "Hit" })
export type Hit = typeof Hit.Type

export const SearchRequest = Schema.Struct({
  id: Schema.optionalWith(NonEmptyString, { exact: true }).annotations({
    description: "Optional query id; part of the judgment key, as a case id is in the CLI (default \"1\")"
  }),
  query: Query,
  eval: Schema.optionalWith(EvalOptions, { exact: true }),
  hits: Schema.Array(Hit).annotations({
    description: "The ranked hits, best first",
    message: () => "expected an array of hits ({ \"id\": \"…\", \"text\": \"…\" })"
  })
}).annotations({ identifier: "SearchRequest", parseOptions: { onExcessProperty: "error" } })
export type SearchRequest = typeof SearchRequest.Type

export const SearchBatchRequest = Schema.Struct({
  requests: Schema.Array(SearchRequest).pipe(Schema.minItems(1, { message: () => "give at least one request" }))
}).annotations({ identifier: "SearchBatchRequest", parseOptions: { onExcessProperty: "error" } })
export type SearchBatchRequest = typeof SearchBatchRequest.Type

// ---------------------------------------------------------------------------------------------
// Response

export const SearchMetrics = Schema.Struct({
  ndcg: Schema.Number.annotations({
    description: "NDCG@k (proxy: ideal = the judged grades sorted); 0 when no hit has a grade above 0"
  }),
  map: Schema.Number.annotations({
    description: "Average precision, relevant = grade ≥ 2, R = relevant hits in the list"
  }),
  mrr: Schema.Number.annotations({ description: "Reciprocal rank of the first hit with grade ≥ 2; 0 if none" })
}).annotations({ identifier: "SearchMetrics" })
export type SearchMetrics = typeof SearchMetrics.Type

export const HitResult = Schema.Struct({
  index: Schema.Int.annotations({ description: "Position of the hit in the request (0-based)" }),
  fields: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({ description: "The hit as sent" }),
  score: Schema.Int.annotations({
    description: "Relevance grade: 3 highly, 2 moderately, 1 partially, 0 not relevant"
  }),
  relevant: Schema.Boolean.annotations({ description: "grade ≥ 2" }),
  justification: Schema.optionalWith(Schema.String, { exact: true }).annotations({
    description: "The judge's justification (debug only)"
  }),
  confidence: Schema.optionalWith(Schema.Int, { exact: true }).annotations({
    description: "The judge's confidence 1–5 (debug only)"
  })
}).annotations({ identifier: "HitResult" })
export type HitResult = typeof HitResult.Type

export const Usage = Schema.Struct({
  evaluation_input_tokens: Schema.Int,
  evaluation_output_tokens: Schema.Int
}).annotations({
  identifier: "Usage",
  description: "Judge tokens spent by this request (judgments reused from the cache cost nothing)"
})
export type Usage = typeof Usage.Type

export const SearchResponse = Schema.Struct({
  metrics: SearchMetrics,
  hits: Schema.Array(HitResult),
  usage: Usage
}).annotations({ identifier: "SearchResponse" })
export type SearchResponse = typeof SearchResponse.Type

export const SearchBatchResponse = Schema.Struct({
  metrics: SearchMetrics.annotations({ description: "Mean of each metric over the requests" }),
  results: Schema.Array(SearchResponse).annotations({ description: "One result per request, in request order" }),
  usage: Usage
}).annotations({ identifier: "SearchBatchResponse" })
export type SearchBatchResponse = typeof SearchBatchResponse.Type

export const Health = Schema.Struct({
  status: Schema.Literal("ok"),
  version: Schema.String,
  judge: Schema.Struct({ provider: Schema.String, model: Schema.String, label: Schema.String }),
  rubric: Schema.Struct({ id: Schema.String, hash: Schema.String }),
  evaluations: Schema.Struct({
    running: Schema.Int,
    waiting: Schema.Int,
    concurrency: Schema.Int,
    queue: Schema.Int
  })
}).annotations({ identifier: "Health" })
export type Health = typeof Health.Type

// ---------------------------------------------------------------------------------------------
// Errors: one body shape, one class per status

export const Problem = Schema.Struct({
  path: Schema.String.annotations({ description: "Where in the request, e.g. hits[0].id (empty: the whole body)" }),
  message: Schema.String
}).annotations({ identifier: "Problem" })
export type Problem = typeof Problem.Type

/**
 * The body of an error of one status. `status` is a literal so that each error class is told apart
 * when the API encodes a failure (class schemas are checked by shape).
 */
export const errorFields = <S extends number>(status: S) => ({
  error: Schema.Struct({
    status: Schema.Literal(status),
    code: Schema.String.annotations({
      description: "Stable machine-readable reason, e.g. invalid_request, payload_too_large"
    }),
    message: Schema.String,
    problems: Schema.Array(Problem).annotations({
      description: "Each problem with its path (empty when there is none to list)"
    })
  })
})

export interface ErrorDetail {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly problems: ReadonlyArray<Problem>
}

export class BadRequest extends Schema.Class<BadRequest>("BadRequest")(
  errorFields(400),
  HttpApiSchema.annotations({
    status: 400,
    description: "Malformed JSON or a schema violation; `problems` lists each one"
  })
) {}
export class Unauthorized extends Schema.Class<Unauthorized>("Unauthorized")(
  errorFields(401),
  HttpApiSchema.annotations({
    status: 401,
    description: "Missing or wrong bearer token (only when the server has one)"
  })
) {}
export class Forbidden extends Schema.Class<Forbidden>("Forbidden")(
  errorFields(403),
  HttpApiSchema.annotations({
    status: 403,
    description:
      "Refused: a state-changing request without X-Requested-By: rag-eval, or a Host the server does not answer to (rag-eval ui)"
  })
) {}
export class NotFound extends Schema.Class<NotFound>("NotFound")(
  errorFields(404),
  HttpApiSchema.annotations({ status: 404, description: "No such route" })
) {}
export class PayloadTooLarge extends Schema.Class<PayloadTooLarge>("PayloadTooLarge")(
  errorFields(413),
  HttpApiSchema.annotations({
    status: 413,
    description: "The body is over --max-body, or the request has more hits than --max-hits"
  })
) {}
export class TooManyRequests extends Schema.Class<TooManyRequests>("TooManyRequests")(
  errorFields(429),
  HttpApiSchema.annotations({
    status: 429,
    description: "Every evaluation slot is busy; retry after the Retry-After header's seconds"
  })
) {}
export class InternalError extends Schema.Class<InternalError>("InternalError")(
  errorFields(500),
  HttpApiSchema.annotations({ status: 500, description: "A bug in rag-eval" })
) {}
export class UpstreamFailed extends Schema.Class<UpstreamFailed>("UpstreamFailed")(
  errorFields(502),
  HttpApiSchema.annotations({
    status: 502,
    description: "The LLM judge failed (after its retries) on at least one hit; `problems` names each"
  })
) {}
export class Unavailable extends Schema.Class<Unavailable>("Unavailable")(
  errorFields(503),
  HttpApiSchema.annotations({ status: 503, description: "The server is shutting down" })
) {}

export type ApiError =
  | BadRequest
  | Unauthorized
  | Forbidden
  | NotFound
  | PayloadTooLarge
  | TooManyRequests
  | InternalError
  | UpstreamFailed
  | Unavailable

const classes = {
  400: BadRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  413: PayloadTooLarge,
  429: TooManyRequests,
  500: InternalError,
  502: UpstreamFailed,
  503: Unavailable
} as const
export type ErrorStatus = keyof typeof classes

/** The error of a status, e.g. `apiError(400, "invalid_json", "…")`. */
export const apiError = <S extends ErrorStatus>(
  status: S,
  code: string,
  message: string,
  problems: ReadonlyArray<Problem> = []
): InstanceType<(typeof classes)[S]> => {
  // Each class's `status` is the literal of its own key, so the props fit the class picked.
  const ErrorClass = classes[status] as unknown as new(
    props: { readonly error: ErrorDetail }
  ) => InstanceType<(typeof classes)[S]>
  return new ErrorClass({ error: { status, code, message, problems } })
}
