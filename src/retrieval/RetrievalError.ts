/**
 * A live retrieval that did not give hits: the endpoint timed out, answered with a non-2xx status,
 * sent something that is not JSON, or JSON without hits where they were expected.
 *
 * It never fails the run. The retriever turns it into the case's `retrieval` record (status
 * `failed`, this error's kind and message) with no passages, so the case is reported as a retrieval
 * failure and left out of every metric — a failed retrieval is unknown, not a score of 0.
 */
import * as Schema from "effect/Schema"

export class RetrievalError extends Schema.TaggedError<RetrievalError>()("RetrievalError", {
  retriever: Schema.String,
  kind: Schema.Literal("timeout", "status", "json", "shape", "network"),
  problem: Schema.String,
  /** HTTP status for `status` errors. */
  status: Schema.optional(Schema.Number),
  cause: Schema.optional(Schema.Defect)
}) {
  get message(): string {
    return `${this.retriever} retrieval failed (${this.kind}): ${this.problem}`
  }
}
