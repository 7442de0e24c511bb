/**
 * Published agreement figures of known judges, set beside `judge-bench`'s own (data, each with its
 * source). `same` says whether a figure was measured on the very items judge-bench ships (the
 * development halves), or on a comparable set (the whole of RAGChecker's meta-evaluation; LLM-AggreFact's
 * ExpertQA test set): a comparable figure shows the range judges reach, not a score to beat to the
 * third decimal.
 */
import type * as Result from "./Result.js"

/** One published figure (`Result.ts` declares its fields). */
export type PublishedFigure = typeof Result.PublishedFigure.Type

const RAGCHECKER_DATA_README =
  "computed from RAGChecker's released outputs (amazon-science/RAGChecker data/meta_evaluation: baseline_ragchecker.json, human_labeled_data.json) on these 140 pairs by meta_eval.py's protocol (judge-bench/README.md)"
const RAGCHECKER_TABLE_2 =
  "Ru et al., RAGChecker, NeurIPS 2024 Datasets and Benchmarks (arXiv:2408.08067), Table 2: all 280 pairs, 10 domains"
const AGGREFACT = "LLM-AggreFact leaderboard, ExpertQA column (llm-aggrefact.github.io; Tang, Laban and Durrett, 2024)"
const MINICHECK = "Tang, Laban and Durrett, MiniCheck, EMNLP 2024 (arXiv:2404.10774), Table 2, ExpertQA column"
const LLMJUDGE_README =
  "Llama-3-8B-Instruct's grades of the same pairs in the public naghmefarzi/llmjudge repository, κ by rag-eval calibrate, pinned in test/e2e/Calibrate.test.ts (docs/judge-quality.md)"
const LLMJUDGE_OVERVIEW =
  "LLMJudge challenge overview (LLM4Eval workshop, SIGIR 2024): 42 LLM label sets on these pairs"

/** RAGChecker meta-evaluation: Pearson r of per-pair metric deltas with the annotators' preferences. */
export const RAGCHECKER: Readonly<Record<"correctness" | "completeness" | "overall", ReadonlyArray<PublishedFigure>>> =
  {
    correctness: [
      { judge: "two annotators with each other", value: 0.682, same: true, source: RAGCHECKER_DATA_README },
      { judge: "RAGChecker (Llama-3-70B) precision", value: 0.389, same: true, source: RAGCHECKER_DATA_README },
      { judge: "token-overlap precision", value: 0.352, same: true, source: RAGCHECKER_DATA_README },
      { judge: "two annotators with each other", value: 0.6367, same: false, source: RAGCHECKER_TABLE_2 },
      { judge: "RAGChecker (Llama-3-70B)", value: 0.4966, same: false, source: RAGCHECKER_TABLE_2 },
      { judge: "RAGAS answer similarity", value: 0.4107, same: false, source: RAGCHECKER_TABLE_2 },
      { judge: "BLEU", value: 0.3889, same: false, source: RAGCHECKER_TABLE_2 }
    ],
    completeness: [
      { judge: "two annotators with each other", value: 0.721, same: true, source: RAGCHECKER_DATA_README },
      { judge: "RAGChecker (Llama-3-70B) recall", value: 0.649, same: true, source: RAGCHECKER_DATA_README },
      { judge: "token-overlap recall", value: 0.64, same: true, source: RAGCHECKER_DATA_README },
      { judge: "two annotators with each other", value: 0.7191, same: false, source: RAGCHECKER_TABLE_2 },
      { judge: "RAGChecker (Llama-3-70B)", value: 0.6067, same: false, source: RAGCHECKER_TABLE_2 },
      { judge: "RAGAS answer similarity", value: 0.5316, same: false, source: RAGCHECKER_TABLE_2 },
      { judge: "ROUGE-L", value: 0.4788, same: false, source: RAGCHECKER_TABLE_2 }
    ],
    overall: [
      { judge: "two annotators with each other", value: 0.746, same: true, source: RAGCHECKER_DATA_README },
      { judge: "RAGChecker (Llama-3-70B) F1", value: 0.638, same: true, source: RAGCHECKER_DATA_README },
      { judge: "token-overlap F1", value: 0.607, same: true, source: RAGCHECKER_DATA_README },
      { judge: "two annotators with each other", value: 0.7009, same: false, source: RAGCHECKER_TABLE_2 },
      { judge: "RAGChecker (Llama-3-70B)", value: 0.6193, same: false, source: RAGCHECKER_TABLE_2 },
      { judge: "RAGAS answer similarity", value: 0.4831, same: false, source: RAGCHECKER_TABLE_2 },
      { judge: "ROUGE-L", value: 0.431, same: false, source: RAGCHECKER_TABLE_2 }
    ]
  }

/** ExpertQA claim support: balanced accuracy against the experts' "Complete". */
export const EXPERTQA_BALANCED_ACCURACY: ReadonlyArray<PublishedFigure> = [
  { judge: "Claude-3.5 Sonnet", value: 0.609, same: false, source: AGGREFACT },
  { judge: "GPT-4o", value: 0.596, same: false, source: AGGREFACT },
  { judge: "Bespoke-MiniCheck-7B", value: 0.592, same: false, source: AGGREFACT },
  { judge: "MiniCheck-Flan-T5-L", value: 0.59, same: false, source: MINICHECK },
  { judge: "Llama-3.1-8B-Instruct", value: 0.578, same: false, source: AGGREFACT },
  { judge: "SummaC-ZS", value: 0.552, same: false, source: MINICHECK }
]

/** LLMJudge relevance grades: Cohen's κ against NIST's four grades, and on relevant (≥ 2) or not. */
export const RELEVANCE: Readonly<Record<"kappa" | "binaryKappa", ReadonlyArray<PublishedFigure>>> = {
  kappa: [
    { judge: "Llama-3-8B-Instruct", value: 0.1044, same: true, source: LLMJUDGE_README },
    { judge: "the best of 42 LLM label sets", value: 0.29, same: true, source: LLMJUDGE_OVERVIEW },
    { judge: "the worst of 42 LLM label sets", value: 0.06, same: true, source: LLMJUDGE_OVERVIEW }
  ],
  binaryKappa: [{ judge: "Llama-3-8B-Instruct", value: 0.1545, same: true, source: LLMJUDGE_README }]
}
