/**
 * The table of pipeline options (see `PipelineOptions.ts`): flags, environment variables, help text.
 * Plain data, cheap to load: the CLI builds its flags and `--help` from it without loading Schema.
 */
export type OptionKind = "boolean" | "integer" | "number" | "text" | "choice" | "list" | "secret"

export interface OptionSpec {
  /** Long flag name, without the dashes. */
  readonly flag: string
  /** Environment variables, the `RAG_EVAL_*` name first, then accepted aliases. */
  readonly env: ReadonlyArray<string>
  readonly kind: OptionKind
  readonly description: string
  /** Shown by `--help` and `rag-eval pipelines`; the value a pipeline gets when the option is not set. */
  readonly defaultText?: string | undefined
  readonly choices?: ReadonlyArray<string> | undefined
  /** What a valid value is, in words, for error messages. */
  readonly expected: string
  /** Options that only mean something with a live retriever (http or bm25). */
  readonly liveOnly?: boolean | undefined
}

/** The table of options (see the module comment). */
const specs = {
  retriever: {
    flag: "retriever",
    env: ["RAG_EVAL_RETRIEVER"],
    kind: "choice",
    choices: ["precomputed", "http", "bm25"],
    description:
      "Where hits come from: the test set (precomputed), an HTTP search endpoint (http), or an embedded BM25 index over --corpus (bm25)",
    defaultText: "precomputed",
    expected: "one of precomputed, http, bm25"
  },
  topK: {
    flag: "top-k",
    env: ["RAG_EVAL_TOP_K", "RAG_TOP_K"],
    kind: "integer",
    description: "Keep the first N hits of each query",
    defaultText: "all (precomputed), 10 (live)",
    expected: "a whole number ≥ 1"
  },
  scoreThreshold: {
    flag: "score-threshold",
    env: ["RAG_EVAL_SCORE_THRESHOLD", "RAG_SCORE_THRESHOLD"],
    kind: "number",
    description: "Drop hits scoring below this before evaluation",
    expected: "a number"
  },
  prefetchLimit: {
    flag: "prefetch-limit",
    env: ["RAG_EVAL_PREFETCH_LIMIT", "HYBRID_PREFETCH_LIMIT"],
    kind: "integer",
    description: "Candidates fetched before fusion/rerank (http: sent as {{prefetchLimit}}; bm25: a cap)",
    expected: "a whole number ≥ 1",
    liveOnly: true
  },
  rerankTopN: {
    flag: "rerank-top-n",
    env: ["RAG_EVAL_RERANK_TOP_N", "RERANK_TOP_N"],
    kind: "integer",
    description: "Candidates the reranker re-scores (http: sent as {{rerankTopN}})",
    expected: "a whole number ≥ 1",
    liveOnly: true
  },
  searchUrl: {
    flag: "search-url",
    env: ["RAG_EVAL_SEARCH_URL"],
    kind: "text",
    description: "--retriever http: the search endpoint each query is POSTed to",
    expected: "an http(s) URL",
    liveOnly: true
  },
  searchBody: {
    flag: "search-body",
    env: ["RAG_EVAL_SEARCH_BODY"],
    kind: "text",
    description: "--retriever http: JSON body template",
    defaultText: "{\"query\": \"{{query}}\", \"top_k\": {{topK}}}",
    expected: "a JSON template",
    liveOnly: true
  },
  hitsPath: {
    flag: "hits-path",
    env: ["RAG_EVAL_HITS_PATH"],
    kind: "text",
    description: "--retriever http: dot path of the hit list in the response",
    defaultText: "hits",
    expected: "a dot path",
    liveOnly: true
  },
  hitId: {
    flag: "hit-id",
    env: ["RAG_EVAL_HIT_ID"],
    kind: "text",
    description: "--retriever http: field of a hit's id",
    defaultText: "id or _id",
    expected: "a dot path",
    liveOnly: true
  },
  hitText: {
    flag: "hit-text",
    env: ["RAG_EVAL_HIT_TEXT"],
    kind: "text",
    description: "--retriever http: field of a hit's text",
    defaultText: "text, content, …",
    expected: "a dot path",
    liveOnly: true
  },
  hitScore: {
    flag: "hit-score",
    env: ["RAG_EVAL_HIT_SCORE"],
    kind: "text",
    description: "--retriever http: field of a hit's score",
    defaultText: "score or _score",
    expected: "a dot path",
    liveOnly: true
  },
  timingsPath: {
    flag: "timings-path",
    env: ["RAG_EVAL_TIMINGS_PATH"],
    kind: "text",
    description: "--retriever http: dot path of latency sub-spans (ms) in the response",
    expected: "a dot path",
    liveOnly: true
  },
  searchTimeout: {
    flag: "search-timeout",
    env: ["RAG_EVAL_SEARCH_TIMEOUT"],
    kind: "number",
    description: "--retriever http: seconds per search",
    defaultText: "30",
    expected: "a number of seconds > 0",
    liveOnly: true
  },
  searchRetries: {
    flag: "search-retries",
    env: ["RAG_EVAL_SEARCH_RETRIES"],
    kind: "integer",
    description: "--retriever http: retries after network errors, 429 and 5xx",
    defaultText: "1",
    expected: "a whole number ≥ 0",
    liveOnly: true
  },
  searchToken: {
    flag: "search-token",
    env: ["RAG_EVAL_SEARCH_TOKEN"],
    kind: "secret",
    description: "--retriever http: bearer token for the search endpoint (never recorded)",
    expected: "a token",
    liveOnly: true
  },
  corpus: {
    flag: "corpus",
    env: ["RAG_EVAL_CORPUS"],
    kind: "text",
    description: "--retriever bm25: corpus JSONL of { id, text }",
    expected: "a file path",
    liveOnly: true
  },
  fuzzyThreshold: {
    flag: "fuzzy-threshold",
    env: ["RAG_EVAL_FUZZY_THRESHOLD"],
    kind: "number",
    description: "Similarity at which a chunk covers a gold span",
    defaultText: "0.7",
    expected: "a number in (0, 1]"
  },
  pricePer1k: {
    flag: "price-per-1k",
    env: ["RAG_EVAL_PRICE_PER_1K"],
    kind: "number",
    description: "USD per 1K tokens, for the cost report",
    expected: "a price ≥ 0"
  },
  fields: {
    flag: "fields",
    env: ["RAG_EVAL_FIELDS"],
    kind: "list",
    description: "Hit fields the judge sees, e.g. text,title (a case's eval.fields wins)",
    defaultText: "text",
    expected: "comma-separated field names"
  },
  rubrics: {
    flag: "rubrics",
    env: ["RAG_EVAL_RUBRICS"],
    kind: "text",
    description:
      "A directory of your own rubric files (the built-in format, one criterion a file): each is judged as an extra dimension beside the built-in ones (weight 1 in the composite unless the file gives \"weight\"); needs an LLM provider",
    expected: "a directory of rubric .json files"
  },
  passIf: {
    flag: "pass-if",
    env: ["RAG_EVAL_PASS_IF"],
    kind: "text",
    description:
      "answer-correctness: the thresholds a case passes by, METRIC OP VALUE joined by commas (OP one of >=, >, <=, <, =); a threshold applies to a case that has the metric",
    defaultText: "f1>=0.5,faithfulness>=0.5,hallucination<=0",
    expected: "thresholds such as f1>=0.5,hallucination<=0"
  },
  onlyRubrics: {
    flag: "only-rubrics",
    env: ["RAG_EVAL_ONLY_RUBRICS"],
    kind: "boolean",
    description: "With --rubrics: judge your rubrics alone, without the built-in dimensions",
    defaultText: "false",
    expected: "true or false"
  },
  listwise: {
    flag: "listwise",
    env: ["RAG_EVAL_LISTWISE"],
    kind: "boolean",
    description:
      "Judge the hits of a query in one call (at most 20 a call, each hit still graded on its own) instead of one call per hit; fewer prompt tokens",
    defaultText: "false",
    expected: "true or false"
  }
} satisfies Record<string, OptionSpec>

export type OptionName = keyof typeof specs

export const optionSpecs: { readonly [K in OptionName]: OptionSpec } = specs

/** The retrieval options, for pipelines whose hits may come from a live retriever. */
export const retrievalOptionNames: ReadonlyArray<OptionName> = [
  "retriever",
  "topK",
  "scoreThreshold",
  "prefetchLimit",
  "rerankTopN",
  "searchUrl",
  "searchBody",
  "hitsPath",
  "hitId",
  "hitText",
  "hitScore",
  "timingsPath",
  "searchTimeout",
  "searchRetries",
  "searchToken",
  "corpus"
]

export const allOptionNames = Object.keys(optionSpecs) as ReadonlyArray<OptionName>
