/**
 * The built-in course-retrieval pipeline, as a file: `rag-eval run pipelines/course-retrieval.ts` is the same as
 * `rag-eval run course-retrieval`. Its definition is src/builtin/course-retrieval.ts; copy that file here (importing from
 * "rag-eval") to change it.
 */
import { Builtin } from "rag-eval"

export default Builtin.courseRetrieval
