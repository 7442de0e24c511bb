/**
 * course-retrieval — graded relevance of retrieved courses, with PROXY ranking metrics (SPEC §2.3).
 *
 * Input: a test set `{ version, name, description, cases: [{ id, question, skill, retrievedCourses:
 * [{ subjectCode, subjectName, cleanedLearningOutcomes }] }] }`. Every course is judged 0–3 for the
 * skill in the question's context (one judgment per course); per case and averaged: totalCourses,
 * averageRelevance, highlyRelevantRate, irrelevantRate, NDCG@5/@10 (linear gain, ideal = the judge's
 * own grades) and Precision@5/@10 (relevant = grade ≥ 2), with interpretation bands.
 *
 * Retrieval comes from the environment (see `src/retrieval/RetrievalSetup.ts`): by default the
 * courses in the test set, pruned by RAG_SCORE_THRESHOLD / RAG_TOP_K when set; RAG_EVAL_RETRIEVER=http
 * or bm25 retrieves live, searching for the case's skill. `--listwise` (RAG_EVAL_LISTWISE) judges a
 * case's courses in one call.
 */
import { CourseRetrieval, CourseRetrievalReport, GradedHits, Pipeline, Retrieval } from "rag-eval"

const rubric = "course-retrieval/relevance"
const retrieval = Retrieval.fromEnv({ query: CourseRetrieval.skillQuery })

export default Pipeline.make({
  name: "course-retrieval",
  description: "Retrieved courses graded 0–3 for the learner's skill (in the context of their question), with proxy NDCG@5/@10 and Precision@5/@10 over the judge's grades.",
  load: retrieval.guard(CourseRetrieval.loadTestSet({ coursesRequired: !retrieval.live })),
  retrieve: retrieval.retriever,
  // --listwise (RAG_EVAL_LISTWISE): a case's courses in one call, with the listwise rubric.
  judge: CourseRetrieval.judgeCourses(rubric, { listwise: GradedHits.listwiseFromEnv() ? CourseRetrieval.listwiseRubric : undefined }),
  score: CourseRetrieval.courseScore(),
  aggregate: CourseRetrieval.courseSummary(),
  report: CourseRetrievalReport.courseReport({ title: "Course retrieval evaluation" })
})
