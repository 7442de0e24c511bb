/**
 * The built-in answer-correctness pipeline, as a file: `rag-eval run pipelines/answer-correctness.ts` is the same as
 * `rag-eval run answer-correctness`. Its definition is src/builtin/answer-correctness.ts; copy that file here (importing from
 * "rag-eval") to change it.
 */
import { Builtin } from "rag-eval"

export default Builtin.answerCorrectness
