/**
 * The retrieve stage. `precomputed` keeps the passages that arrived with the case (the CSV's
 * fragments, a test set's hits); live retrievers (HTTP search endpoint, embedded BM25) plug in here.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { EvalCase } from "../domain/Case.js"
import type { InputError } from "../domain/Errors.js"

export class Retriever extends Context.Tag("rag-eval/Retriever")<Retriever, {
  readonly name: string
  /** Parameters recorded in the manifest (top-k, thresholds…). */
  readonly params: Readonly<Record<string, unknown>>
  readonly retrieve: (c: EvalCase) => Effect.Effect<EvalCase, InputError>
}>() {}

export const precomputed: Retriever["Type"] = {
  name: "precomputed",
  params: {},
  retrieve: Effect.succeed
}
