/**
 * The built-in evidence-retrieval pipeline, as a file: `rag-eval run pipelines/evidence-retrieval.ts` is the same as
 * `rag-eval run evidence-retrieval`. Its definition is src/builtin/evidence-retrieval.ts; copy that file here (importing from
 * "rag-eval") to change it.
 */
import { Builtin } from "rag-eval"

export default Builtin.evidenceRetrieval
