import { Columns, Pipeline, Reports, Scoring, Stages, Summary } from "rag-eval"
import { dims } from "./dims.js"
const dimensions = dims.map((rubric) => ({ rubric, weight: 1 }))
export default Pipeline.make({
  name: "mine", description: "groundedness only",
  load: Stages.loadRows({ columns: Columns.ragAnswersColumns }),
  judge: Stages.judgeAnswer(dims),
  score: Scoring.rubricScore({ dimensions }),
  aggregate: Summary.rubricSummary({ lowest: 3 }),
  report: Reports.rubricReport({ dimensions, title: "Mine" })
})
