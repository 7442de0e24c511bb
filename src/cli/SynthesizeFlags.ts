/**
 * `rag-eval synthesize`'s flags (`SynthesizeCommand.ts` declares the command, `SynthesizeAction.ts`
 * holds what runs): cheap to load, and read by both without either importing the other.
 */
import type * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { json, providerFlags, quiet, store } from "./RunFlags.js"

// The provider flags run and serve take, but --seed: the synthesis has its own (below), which also
// chooses the chunks.
const { seed: _runSeed, ...sharedProviderFlags } = providerFlags

export const synthesizeConfig = {
  docs: Options.text("docs").pipe(
    Options.withDescription(
      "Documents: a folder (read recursively), a file or a glob, repeatable — .md, .txt, .html, .jsonl ({id, text, title?, url?} a line), .pdf; other, binary or non-UTF-8 files are listed and skipped"
    ),
    Options.repeated
  ),
  size: Options.integer("size").pipe(
    Options.withDescription("Items the test set should hold (default 50)"),
    Options.withDefault(50)
  ),
  out: Options.text("out").pipe(
    Options.withDescription(
      "The test set to write (.jsonl, answer-correctness's input); corpus.jsonl, the conversions and <name>.report.md/.html go beside it"
    )
  ),
  work: Options.text("work").pipe(
    Options.withDescription(
      "Where the synthesis keeps its work — chunks, waves, journals — to resume from: <work>/synthesize/<id>/ (default out)"
    ),
    Options.withDefault("out")
  ),
  mix: Options.text("mix").pipe(
    Options.withDescription(
      "Question types and their weights, e.g. single-hop=50,multi-hop=20,unanswerable=30 (types: single-hop, multi-hop, comparison, procedure, unanswerable, conversational; default 35/20/10/10/15/10, offline 60/15/0/5/10/10)"
    ),
    Options.optional
  ),
  personas: Options.text("personas").pipe(
    Options.withDescription(
      "Who asks: a .json list (texts or {name, description}) or a text file, one persona a line; candidates are written for each in turn"
    ),
    Options.optional
  ),
  chunkTokens: Options.integer("chunk-tokens").pipe(
    Options.withDescription(
      "Largest chunk, in tokens (≈ 4 characters a token; default 300); chunks end at headings and paragraphs"
    ),
    Options.withDefault(300)
  ),
  seed: Options.integer("seed").pipe(
    Options.withDescription("Seed of the choice of chunks (default 1), also sent to the API as the sampling seed"),
    Options.withDefault(1)
  ),
  maxCandidates: Options.integer("max-candidates").pipe(
    Options.withDescription(
      "Candidates written at most, over every wave (default 4 × --size): the call budget (each costs up to 5 calls)"
    ),
    Options.optional
  ),
  as: Options.text("as").pipe(
    Options.withDescription(
      "Also write the set for other pipelines, comma-separated: evidence-retrieval, search-relevance (queries + qrels), rag-answers (CSV)"
    ),
    Options.optional
  ),
  overwrite: Options.boolean("overwrite").pipe(
    Options.withDescription("Replace an --out file this synthesis did not write")
  ),
  dryRun: Options.boolean("dry-run").pipe(
    Options.withDescription(
      "Chunk the documents and price the first wave (calls, tokens, cost); call nothing, write nothing"
    )
  ),
  fresh: Options.boolean("fresh").pipe(Options.withDescription("Start the synthesis over, discarding its journals")),
  retryFailed: Options.boolean("retry-failed").pipe(
    Options.withDescription("On resume, ask again the judgments recorded as failed")
  ),
  noCache: Options.boolean("no-cache").pipe(
    Options.withDescription("Do not reuse judgments cached by earlier runs under --work")
  ),
  concurrency: Options.integer("concurrency").pipe(
    Options.withDescription("Most calls in flight at once (default 8)"),
    Options.withDefault(8)
  ),
  maxCost: Options.float("max-cost").pipe(
    Options.withDescription(
      "Stop once the synthesis has spent USD (needs a price: built in, --prices or --price-in/--price-out); the set then holds what passed"
    ),
    Options.optional
  ),
  prices: Options.text("prices").pipe(
    Options.withDescription("JSON price table { \"model\": { \"input\": USD per 1M tokens, \"output\": … } }"),
    Options.optional
  ),
  priceIn: Options.float("price-in").pipe(Options.withDescription("Input price, USD per 1M tokens"), Options.optional),
  priceOut: Options.float("price-out").pipe(
    Options.withDescription("Output price, USD per 1M tokens"),
    Options.optional
  ),
  batch: Options.boolean("batch").pipe(
    Options.withDescription(
      "Write and check through the provider's Batch API (half price; each round of a wave is a batch)"
    )
  ),
  batchPoll: Options.float("batch-poll").pipe(
    Options.withDescription("With --batch: first wait between status checks, seconds (default 10)"),
    Options.withDefault(10)
  ),
  cluster: Options.boolean("cluster").pipe(
    Options.withDescription("Send the calls to the cluster's runners through --store")
  ),
  store,
  ...sharedProviderFlags,
  json,
  quiet
}

export type SynthesizeFlags = Command.Command.ParseConfig<typeof synthesizeConfig>
