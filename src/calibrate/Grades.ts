/**
 * Grades as `rag-eval calibrate` holds them, for both sides (the judge's and the human labels):
 * criterion → group → item → grade, where a group is a query (qrels `qid`, a run's case id) or a
 * rubric case id, and an item is a document (qrels `docid`, a hit id) or `""` for a judgment of the
 * whole case (an answer). Maps keep insertion order: the order items were listed in, which is the
 * ranking used when no `--runs` are given. One small object per grade; no line text is kept.
 */

/** One grade and where it came from. `grade` is null for a judgment that failed (no grade). */
export interface Graded {
  readonly grade: number | null
  /** 1-based line in its file (qrels, CSV / JSONL labels, or the run's journal). */
  readonly line: number
}

export type ItemGrades = Map<string, Graded>
export type GroupGrades = Map<string, ItemGrades>
export type CriterionGrades = Map<string, GroupGrades>

/** What kind of items were graded: documents per query (qrels), or whole cases per criterion. */
export type GradeKind = "retrieval" | "rubric"

/** The criterion of a qrels file and of the retrieval pipelines' per-hit judgments. */
export const relevanceCriterion = "relevance"

/** Adds a grade, replacing an earlier one for the same item (the later wins, keeping the first position). */
export const putGrade = (
  grades: CriterionGrades,
  criterion: string,
  group: string,
  item: string,
  graded: Graded
): Graded | undefined => {
  let groups = grades.get(criterion)
  if (groups === undefined) grades.set(criterion, groups = new Map())
  let items = groups.get(group)
  if (items === undefined) groups.set(group, items = new Map())
  const previous = items.get(item)
  items.set(item, graded)
  return previous
}

/** A criterion name folded for matching: lowercase, runs of spaces, `_` and `-` as one `-`. */
export const foldName = (name: string): string => name.trim().toLowerCase().replace(/[\s_-]+/g, "-")

/** The last segment of a rubric id: `rag-answers/groundedness` → `groundedness`. */
export const lastSegment = (id: string): string => id.slice(id.lastIndexOf("/") + 1)
