/**
 * evidence-retrieval — retrieval measured against gold evidence spans, no LLM (SPEC §2.5).
 *
 * Input: JSONL (or JSON) of `{ id?, query, gold: ["span", …], chunks: [{ id?, text, score? }, …],
 * latencyMs?, usage? }`. A chunk covers a span when the normalised span is in it or their difflib
 * ratio ≥ RAG_EVAL_FUZZY_THRESHOLD (default 0.7). Metrics: Precision@5, EvidenceRecall@3/@10,
 * PerQueryCoverage@3/@10, FullCoverageRate@3/@10, MAP, MRR, HitRate@10; latency avg/P50/P90/P99
 * per span; cost = tokens / 1000 × RAG_EVAL_PRICE_PER_1K when the input reports tokens.
 *
 * Retrieval from the environment (`src/retrieval/RetrievalSetup.ts`): the chunks in the input, pruned
 * by RAG_SCORE_THRESHOLD / RAG_TOP_K when set, or live with RAG_EVAL_RETRIEVER=http|bm25 (e.g.
 * RAG_EVAL_RETRIEVER=bm25 RAG_EVAL_CORPUS=test-sets/evidence-retrieval/corpus.jsonl).
 */
import { EvidenceRetrieval, EvidenceRetrievalReport, Pipeline, Retrieval, Stages } from "rag-eval"

const { settings, ready } = EvidenceRetrieval.settingsFromEnv()
// The fuzzy threshold is recorded with the retriever's parameters: another threshold is another run.
const retrieval = Retrieval.fromEnv({ record: { fuzzyThreshold: settings.fuzzyThreshold } })

export default Pipeline.make({
  name: "evidence-retrieval",
  description: "Retrieved chunks checked against gold evidence spans (normalised substring or difflib similarity): precision, evidence recall, coverage, MAP, MRR and hit rate, with latency and cost — no LLM.",
  load: Retrieval.guardLoad(retrieval.guard(EvidenceRetrieval.loadQueries({ chunksRequired: !retrieval.live })), ready),
  retrieve: retrieval.retriever,
  judge: Stages.noLlm,
  score: EvidenceRetrieval.evidenceScore(settings),
  aggregate: EvidenceRetrieval.evidenceSummary(settings),
  report: EvidenceRetrievalReport.evidenceReport({ title: "Evidence retrieval evaluation" })
})
