/**
 * The built-in answer-synthesis pipeline, as a file: `rag-eval run pipelines/answer-synthesis.ts` is the same as
 * `rag-eval run answer-synthesis`. Its definition is src/builtin/answer-synthesis.ts; copy that file here (importing from
 * "rag-eval") to change it.
 */
import { Builtin } from "rag-eval"

export default Builtin.answerSynthesis
