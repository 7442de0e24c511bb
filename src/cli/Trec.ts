/**
 * `rag-eval trec --qrels FILE --run FILE [--metrics …] [--per-query] [--json] [--relevance-level N]
 * [--complete]`: evaluate a TREC run against qrels the way trec_eval does (`src/metrics/trec.ts`),
 * and print trec_eval's relational lines (4 decimals, trec_eval measure names) or JSON.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import { InputError, type UsageError } from "../domain/Errors.js"
import { fileReadProblem } from "../io/Files.js"
import { parseMetrics } from "../metrics/registry.js"
import { evaluateTrec, formatTrec, parseQrels, parseRun, type TrecEvaluation, trecToJson } from "../metrics/trec.js"

export const defaultTrecMetrics = "ndcg@10,map,mrr,p@5,p@10,recall@10"

export interface TrecArgs {
  readonly qrels: string
  readonly run: string
  /** Comma-separated metric names (registry forms); default `defaultTrecMetrics`. */
  readonly metrics?: string | undefined
  readonly perQuery?: boolean | undefined
  readonly json?: boolean | undefined
  /** Relevant ⇔ grade ≥ level (trec_eval `-l`, default 1). */
  readonly relevanceLevel?: number | undefined
  /** Average over every qrels query (trec_eval `-c`). */
  readonly complete?: boolean | undefined
}

export interface TrecResult {
  readonly evaluation: TrecEvaluation
  /** What goes to stdout: trec_eval lines or JSON. */
  readonly output: string
  /** Notes for stderr (ignored or missing queries). */
  readonly notes: ReadonlyArray<string>
}

/** Reads a whole text file; a missing, unreadable or directory path is an InputError naming it. */
export const readTextFile = (path: string): Effect.Effect<string, InputError> =>
  Effect.try({
    try: () => fs.readFileSync(path, "utf8"),
    catch: (error) => new InputError({ file: path, problem: fileReadProblem(error) })
  })

const sample = (ids: ReadonlyArray<string>, max = 5) =>
  ids.length <= max ? ids.join(", ") : `${ids.slice(0, max).join(", ")}, … (${ids.length - max} more)`

/** The command's work, without printing: read, parse, evaluate, format. */
export const trec = (args: TrecArgs): Effect.Effect<TrecResult, InputError | UsageError> =>
  Effect.gen(function*() {
    const specs = yield* parseMetrics(args.metrics ?? defaultTrecMetrics, { gold: true })
    const qrelsText = yield* readTextFile(args.qrels)
    const runText = yield* readTextFile(args.run)
    const qrels = yield* parseQrels(qrelsText, args.qrels)
    const run = yield* parseRun(runText, args.run)
    const evaluation = evaluateTrec({
      qrels,
      run,
      metrics: specs,
      relevanceLevel: args.relevanceLevel ?? 1,
      complete: args.complete ?? false
    })
    const notes: Array<string> = []
    if (evaluation.unjudgedQueries.length > 0) {
      notes.push(
        `${evaluation.unjudgedQueries.length} run quer${
          evaluation.unjudgedQueries.length === 1 ? "y has" : "ies have"
        } no qrels and ${evaluation.unjudgedQueries.length === 1 ? "is" : "are"} ignored: ${
          sample(evaluation.unjudgedQueries)
        }`
      )
    }
    if (evaluation.missingQueries.length > 0) {
      notes.push(
        `${evaluation.missingQueries.length} qrels quer${
          evaluation.missingQueries.length === 1 ? "y is" : "ies are"
        } missing from the run: ${sample(evaluation.missingQueries)}` +
          (evaluation.complete ? " (scored 0, --complete)" : " (not averaged; --complete scores them 0)")
      )
    }
    const output = args.json === true
      ? JSON.stringify(trecToJson(evaluation), null, 2)
      : formatTrec(evaluation, { perQuery: args.perQuery === true }).replace(/\n$/, "")
    return { evaluation, output, notes }
  })

export const trecCommand = Command.make(
  "trec",
  {
    qrels: Options.text("qrels").pipe(Options.withDescription("Qrels file: `qid iter docid grade` per line")),
    run: Options.text("run").pipe(Options.withDescription("Run file: `qid Q0 docid rank score tag` per line")),
    metrics: Options.text("metrics").pipe(
      Options.withDescription(`Metrics, comma-separated (default ${defaultTrecMetrics}); trec_eval names work too`),
      Options.withDefault(defaultTrecMetrics)
    ),
    perQuery: Options.boolean("per-query").pipe(
      Options.withDescription("Also print each query's values (trec_eval -q)")
    ),
    json: Options.boolean("json").pipe(
      Options.withDescription("Print JSON (full precision, per-query values included)")
    ),
    relevanceLevel: Options.integer("relevance-level").pipe(
      Options.withDescription("Relevant means grade ≥ N (trec_eval -l; default 1)"),
      Options.withDefault(1)
    ),
    complete: Options.boolean("complete").pipe(
      Options.withDescription("Average over every qrels query; those missing from the run score 0 (trec_eval -c)")
    )
  },
  (flags) =>
    Effect.gen(function*() {
      const result = yield* trec(flags)
      for (const note of result.notes) yield* Console.error(`note: ${note}`)
      yield* Console.log(result.output)
    })
).pipe(Command.withDescription("Evaluate a TREC run file against qrels, like trec_eval"))
