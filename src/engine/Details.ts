/**
 * report.md's bounded details: which cases get them. One rule, folded by the engine while it writes
 * the records (no pass over them afterwards), or by a reporter over records read back when it is
 * given none (`ReportInput.chosen`).
 */
import { byNumbers, Lowest, type LowestItem } from "./CaseFold.js"
import type { CaseValues } from "./Pipeline.js"

/** `--details` default: per-case details in report.md for at most this many cases. */
export const DEFAULT_DETAILS = 100

/** Which records get details: every one (`ordinals` undefined) when at most `limit`, else these ordinals (0-based, input order). */
export interface ChosenDetails {
  readonly total: number
  readonly limit: number
  readonly ordinals: ReadonlySet<number> | undefined
  /** The ranking metrics, for the page's note ("the lowest by score"). */
  readonly by: string | undefined
}

/** A chooser's state (`save`). */
export interface DetailsState {
  readonly failed: ReadonlyArray<number>
  readonly lowest: ReadonlyArray<LowestItem<ReadonlyArray<number>, number>>
  readonly total: number
}

/**
 * Chooses, case by case in input order: the failed first (in input order), then the lowest by the
 * pipeline's ranking metrics (`PerCaseMetrics.rank`; ties in input order). A ranking value that is
 * unknown — null, or not finite (what a records file read back holds as null) — ranks first: a case
 * without its headline value needs a look.
 */
export const detailsChooser = (limit: number, rank: ReadonlyArray<string>, saved?: DetailsState) => {
  const failed: Array<number> = saved === undefined ? [] : [...saved.failed]
  const lowest = new Lowest<ReadonlyArray<number>, number>(limit, byNumbers, saved?.lowest)
  let total = saved?.total ?? 0
  const keyOf = (value: number | null | undefined) =>
    typeof value === "number" && Number.isFinite(value) ? value : -Infinity
  return {
    /** What has been chosen so far (plain data), for `detailsChooser(…, saved)`: a resume's snapshot. */
    save: (): DetailsState => ({ failed: [...failed], lowest: lowest.save(), total }),
    add: (values: CaseValues): void => {
      const ordinal = total++
      if (values.failed) {
        if (failed.length < limit) failed.push(ordinal)
        return
      }
      lowest.add(rank.map((name) => keyOf(values.metrics[name])), ordinal, ordinal)
    },
    result: (): ChosenDetails => {
      if (total <= limit) return { total, limit, ordinals: undefined, by: undefined }
      const ordinals = new Set(failed)
      for (const x of lowest.result()) {
        if (ordinals.size >= limit) break
        ordinals.add(x.item)
      }
      return { total, limit, ordinals, by: rank.length === 0 ? undefined : rank.join(", then ") }
    }
  }
}
