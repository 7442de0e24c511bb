/**
 * search-relevance — a query and its ranked hits → per-hit relevance judgments and NDCG / MAP / MRR
 * (SPEC §2.4): the HTTP API's workflow, in bulk.
 *
 * Input: JSONL (or JSON) of `{ id?, query: "…" | { inputs: { text } }, hits: [{ id, text, … }],
 * eval?: { fields: [...] } }`. The judge answers a checklist (yes/no questions per grade) and gives
 * a grade 0–3, a confidence 1–5 and a justification; relevant = grade ≥ 2. NDCG uses exponential
 * gain (2^grade − 1). Options: `--fields` (the hit fields the judge reads; a case's `eval.fields`
 * wins), the retrieval options, and `--listwise` (a query's hits in one call).
 */
import * as Pipeline from "../engine/Pipeline.js"
import { retrievalOptionNames } from "../engine/PipelineOptions.js"
import * as SearchRelevance from "../kinds/search/SearchRelevance.js"
import * as SearchRelevanceReport from "../kinds/search/SearchRelevanceReport.js"
import * as Retrieval from "../retrieval/RetrievalSetup.js"

const rubric = "search-relevance/checklist"

export default Pipeline.make({
  name: "search-relevance",
  description:
    "Every ranked hit of every query graded 0–3 by a checklist judge (with confidence and justification); NDCG (exponential gain), MAP and MRR with relevant = grade ≥ 2.",
  options: [...retrievalOptionNames, "listwise", "fields"],
  build: (options) => {
    const fields = options.fields === undefined || options.fields.length === 0 ? undefined : options.fields
    // The fields are recorded with the retriever's parameters: other fields, another run.
    const retrieval = Retrieval.fromOptions(options, { record: fields === undefined ? {} : { fields } })
    return {
      load: retrieval.guard(SearchRelevance.loadRequests({ hitsRequired: !retrieval.live, fields })),
      retrieve: retrieval.retriever,
      judge: SearchRelevance.judgeSearchHits(rubric, {
        fields,
        listwise: options.listwise === true ? SearchRelevance.listwiseRubric : undefined
      }),
      score: SearchRelevance.searchScore(),
      aggregate: SearchRelevance.searchSummary(),
      report: SearchRelevanceReport.searchReport({ title: "Search relevance evaluation" })
    }
  }
})
