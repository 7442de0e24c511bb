/**
 * course-retrieval — graded relevance of retrieved courses, with PROXY ranking metrics (SPEC §2.3).
 *
 * Input: a test set `{ version, name, description, cases: [{ id, question, skill, retrievedCourses:
 * [{ subjectCode, subjectName, cleanedLearningOutcomes }] }] }`. Every course is judged 0–3 for the
 * skill in the question's context (one judgment per course); per case and averaged: totalCourses,
 * averageRelevance, highlyRelevantRate, irrelevantRate, NDCG@5/@10 (linear gain, ideal = the judge's
 * own grades) and Precision@5/@10 (relevant = grade ≥ 2), with interpretation bands.
 *
 * Options: the retrieval options (by default the courses in the test set, pruned by --score-threshold
 * / --top-k; `--retriever http|bm25` retrieves live, searching for the case's skill) and
 * `--listwise` (a case's courses in one call).
 */
import * as Pipeline from "../engine/Pipeline.js"
import { retrievalOptionNames } from "../engine/PipelineOptions.js"
import * as CourseRetrieval from "../kinds/course/CourseRetrieval.js"
import * as CourseRetrievalReport from "../kinds/course/CourseRetrievalReport.js"
import * as Retrieval from "../retrieval/RetrievalSetup.js"

const rubric = "course-retrieval/relevance"

export default Pipeline.make({
  name: "course-retrieval",
  description:
    "Retrieved courses graded 0–3 for the learner's skill (in the context of their question), with proxy NDCG@5/@10 and Precision@5/@10 over the judge's grades.",
  options: [...retrievalOptionNames, "listwise"],
  build: (options) => {
    const retrieval = Retrieval.fromOptions(options, { query: CourseRetrieval.skillQuery })
    return {
      load: retrieval.guard(CourseRetrieval.loadTestSet({ coursesRequired: !retrieval.live })),
      retrieve: retrieval.retriever,
      judge: CourseRetrieval.judgeCourses(rubric, {
        listwise: options.listwise === true ? CourseRetrieval.listwiseRubric : undefined
      }),
      score: CourseRetrieval.courseScore(),
      aggregate: CourseRetrieval.courseSummary(),
      report: CourseRetrievalReport.courseReport({ title: "Course retrieval evaluation" })
    }
  }
})
