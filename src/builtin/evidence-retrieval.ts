/**
 * evidence-retrieval — retrieval measured against gold evidence spans, no LLM (SPEC §2.5).
 *
 * Input: JSONL (or JSON) of `{ id?, query, gold: ["span", …], chunks: [{ id?, text, score? }, …],
 * latencyMs?, usage? }`. A chunk covers a span when the normalised span is in it or their difflib
 * ratio ≥ --fuzzy-threshold (default 0.7). Metrics: Precision@5, EvidenceRecall@3/@10,
 * PerQueryCoverage@3/@10, FullCoverageRate@3/@10, MAP, MRR, HitRate@10; latency avg/P50/P90/P99
 * per span; cost = tokens / 1000 × --price-per-1k when the input reports tokens.
 *
 * Retrieval: the chunks in the input, pruned by --score-threshold / --top-k, or live with
 * `--retriever http|bm25` (e.g. `--retriever bm25 --corpus test-sets/evidence-retrieval/corpus.jsonl`).
 */
import * as Pipeline from "../engine/Pipeline.js"
import { retrievalOptionNames } from "../engine/PipelineOptions.js"
import * as Stages from "../engine/Stages.js"
import * as EvidenceRetrieval from "../kinds/evidence/EvidenceRetrieval.js"
import * as EvidenceRetrievalReport from "../kinds/evidence/EvidenceRetrievalReport.js"
import * as Retrieval from "../retrieval/RetrievalSetup.js"

export default Pipeline.make({
  name: "evidence-retrieval",
  description:
    "Retrieved chunks checked against gold evidence spans (normalised substring or difflib similarity): precision, evidence recall, coverage, MAP, MRR and hit rate, with latency and cost — no LLM.",
  options: [...retrievalOptionNames, "fuzzyThreshold", "pricePer1k"],
  build: (options) => {
    const settings = EvidenceRetrieval.settingsFromOptions(options)
    // The fuzzy threshold is recorded with the retriever's parameters: another threshold is another run.
    const retrieval = Retrieval.fromOptions(options, { record: { fuzzyThreshold: settings.fuzzyThreshold } })
    return {
      load: retrieval.guard(EvidenceRetrieval.loadQueries({ chunksRequired: !retrieval.live })),
      retrieve: retrieval.retriever,
      judge: Stages.noLlm,
      score: EvidenceRetrieval.evidenceScore(settings),
      aggregate: EvidenceRetrieval.evidenceSummary(settings),
      report: EvidenceRetrievalReport.evidenceReport({ title: "Evidence retrieval evaluation" })
    }
  }
})
