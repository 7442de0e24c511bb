/**
 * The built-in search-relevance pipeline, as a file: `rag-eval run pipelines/search-relevance.ts` is the same as
 * `rag-eval run search-relevance`. Its definition is src/builtin/search-relevance.ts; copy that file here (importing from
 * "rag-eval") to change it.
 */
import { Builtin } from "rag-eval"

export default Builtin.searchRelevance
