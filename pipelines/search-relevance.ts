/**
 * search-relevance — a query and its ranked hits → per-hit relevance judgments and NDCG / MAP / MRR
 * (SPEC §2.4): the HTTP API's workflow, in bulk.
 *
 * Input: JSONL (or JSON) of `{ id?, query: "…" | { inputs: { text } }, hits: [{ id, text, … }],
 * eval?: { fields: [...] } }`. The judge answers a checklist (yes/no questions per grade) and gives
 * a grade 0–3, a confidence 1–5 and a justification; relevant = grade ≥ 2. NDCG uses exponential
 * gain (2^grade − 1). `eval.fields` (or RAG_EVAL_FIELDS, comma-separated) chooses which hit fields
 * the judge reads. Retrieval from the environment (`src/retrieval/RetrievalSetup.ts`). `--listwise`
 * (RAG_EVAL_LISTWISE) judges a query's hits in one call.
 */
import { GradedHits, Pipeline, Retrieval, SearchRelevance, SearchRelevanceReport } from "rag-eval"

const rubric = "search-relevance/checklist"
const fields = SearchRelevance.fieldsFromEnv()
const retrieval = Retrieval.fromEnv({ record: fields === undefined ? {} : { fields } })

export default Pipeline.make({
  name: "search-relevance",
  description: "Every ranked hit of every query graded 0–3 by a checklist judge (with confidence and justification); NDCG (exponential gain), MAP and MRR with relevant = grade ≥ 2.",
  load: retrieval.guard(SearchRelevance.loadRequests({ hitsRequired: !retrieval.live, fields })),
  retrieve: retrieval.retriever,
  judge: SearchRelevance.judgeSearchHits(rubric, {
    fields,
    // --listwise (RAG_EVAL_LISTWISE): a query's hits in one call, with the listwise checklist.
    listwise: GradedHits.listwiseFromEnv() ? SearchRelevance.listwiseRubric : undefined
  }),
  score: SearchRelevance.searchScore(),
  aggregate: SearchRelevance.searchSummary(),
  report: SearchRelevanceReport.searchReport({ title: "Search relevance evaluation" })
})
