/**
 * The built-in rag-answers pipeline, as a file: `rag-eval run pipelines/rag-answers.ts` is the same as
 * `rag-eval run rag-answers`. Its definition is src/builtin/rag-answers.ts; copy that file here (importing from
 * "rag-eval") to change it.
 */
import { Builtin } from "rag-eval"

export default Builtin.ragAnswers
