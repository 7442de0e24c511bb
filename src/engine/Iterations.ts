/**
 * Final metrics across iterations (`final-metrics.json`): every headline metric as mean ± std over
 * the iterations, and per criterion the agreement between iterations — exact-agreement rate and
 * Krippendorff's alpha (ordinal) — with the cases whose grade changed listed as unstable.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { OutputError } from "../domain/Errors.js"
import { inline } from "../domain/Markdown.js"
import { readJsonLines } from "../io/Files.js"
import { addUnit, type Agreement, emptyAgreement, finishAgreement, meanStd } from "../stats/Agreement.js"
import { headlineValues } from "./Headline.js"
import type { Pipeline, RunInfo, RunSummary } from "./Pipeline.js"

export interface FinalMetrics {
  readonly iterations: number
  readonly metrics: Readonly<
    Record<
      string,
      { readonly mean: number | null; readonly std: number | null; readonly perIteration: ReadonlyArray<number | null> }
    >
  >
  readonly agreement: Readonly<Record<string, Agreement>>
  /** Cases whose grade for a criterion differed between iterations (at most `maxUnstable`). */
  readonly unstable: ReadonlyArray<
    { readonly caseId: string; readonly criterion: string; readonly grades: ReadonlyArray<number | null> }
  >
  readonly unstableCount: number
}

const MAX_UNSTABLE = 100

export const finalMetrics = <R, X>(
  pipeline: Pipeline<R, X>,
  info: RunInfo,
  summaries: ReadonlyArray<RunSummary<R, X>>,
  recordFiles: ReadonlyArray<string>
): Effect.Effect<FinalMetrics, OutputError> =>
  Effect.gen(function*() {
    const perIteration = summaries.map((s) => headlineValues(pipeline, info, s))
    const names = [...new Set(perIteration.flatMap((m) => Object.keys(m)))]
    const metrics = Object.fromEntries(names.map((name) => {
      const values = perIteration.map((m) => m[name] ?? null)
      const { mean, std } = meanStd(values)
      return [name, { mean, std, perIteration: values }]
    }))

    // Agreement needs two iterations at least; one would only cost a full pass over the records.
    const gradesOf = recordFiles.length < 2 ? undefined : pipeline.score.grades
    const accumulators = new Map<string, ReturnType<typeof emptyAgreement>>()
    const unstable: Array<FinalMetrics["unstable"][number]> = []
    let unstableCount = 0
    /** One case's grades by criterion, one per iteration (null: not graded in that iteration). */
    const addCase = (caseId: string, criteria: ReadonlyMap<string, Array<number | null>>) => {
      for (const [criterion, grades] of criteria) {
        let acc = accumulators.get(criterion)
        if (acc === undefined) accumulators.set(criterion, acc = emptyAgreement())
        addUnit(acc, grades)
        const known = grades.filter((g) => g !== null)
        if (known.length >= 2 && known.some((g) => g !== known[0])) {
          unstableCount++
          if (unstable.length < MAX_UNSTABLE) unstable.push({ caseId, criterion, grades })
        }
      }
    }
    const gradesInto = (criteria: Map<string, Array<number | null>>, record: R, i: number) => {
      for (const [criterion, grade] of Object.entries(gradesOf!(record).grades)) {
        let list = criteria.get(criterion)
        if (list === undefined) criteria.set(criterion, list = Array(recordFiles.length).fill(null))
        list[i] = grade
      }
    }
    if (gradesOf !== undefined) {
      // Every iteration's records are the same cases in input order (a whole run): read them side by
      // side, a case at a time, so memory does not grow with the cases. Files that differ (a
      // partial report leaves out other cases in each iteration) are read one after another instead,
      // every case's grades held until the last.
      const misaligned = Symbol("misaligned")
      type Row = ReadonlyArray<R | undefined>
      const sideBySide = recordFiles.slice(1).reduce(
        (zipped: Stream.Stream<Row, OutputError>, file, k) =>
          Stream.zipAllWith(zipped, {
            other: readJsonLines<R>(file),
            // One file ended before another: not the same cases.
            onSelf: (rs): Row => [...rs, undefined],
            onOther: (r): Row => [...Array<undefined>(k + 1).fill(undefined), r],
            onBoth: (rs, r): Row => [...rs, r]
          }),
        Stream.map(readJsonLines<R>(recordFiles[0]!), (r): Row => [r])
      )
      const aligned = yield* sideBySide.pipe(
        Stream.runForEach((row) =>
          Effect.suspend(() => {
            if (row.some((r) => r === undefined)) return Effect.fail(misaligned)
            const records = row as ReadonlyArray<R>
            const caseId = gradesOf(records[0]!).caseId
            if (records.some((r) => gradesOf(r).caseId !== caseId)) return Effect.fail(misaligned)
            const criteria = new Map<string, Array<number | null>>()
            records.forEach((r, i) => gradesInto(criteria, r, i))
            addCase(caseId, criteria)
            return Effect.void
          })
        ),
        Effect.as(true),
        Effect.catchIf((e): e is typeof misaligned => e === misaligned, () => Effect.succeed(false))
      )
      if (!aligned) {
        accumulators.clear()
        unstable.length = 0
        unstableCount = 0
        const byCase = new Map<string, Map<string, Array<number | null>>>()
        for (let i = 0; i < recordFiles.length; i++) {
          yield* readJsonLines<R>(recordFiles[i]!).pipe(Stream.runForEach((record) =>
            Effect.sync(() => {
              const { caseId } = gradesOf(record)
              let criteria = byCase.get(caseId)
              if (criteria === undefined) byCase.set(caseId, criteria = new Map())
              gradesInto(criteria, record, i)
            })
          ))
        }
        for (const [caseId, criteria] of byCase) addCase(caseId, criteria)
      }
    }
    const agreement = Object.fromEntries([...accumulators].map(([criterion, acc]) => [criterion, finishAgreement(acc)]))
    return { iterations: summaries.length, metrics, agreement, unstable, unstableCount }
  })

/** Markdown section for the final report. */
export const finalMarkdown = (f: FinalMetrics, costs: ReadonlyArray<string>): string => {
  const n = (x: number | null, d = 3) => (x === null ? "—" : x.toFixed(d))
  const lines = [
    `# Final metrics across ${f.iterations} iterations`,
    "",
    "| Metric | Mean | Std | Per iteration |",
    "|---|---|---|---|",
    ...Object.entries(f.metrics).map(([k, m]) =>
      `| ${inline(k, 200)} | ${n(m.mean)} | ${n(m.std)} | ${m.perIteration.map((v) => n(v)).join(" · ")} |`
    ),
    "",
    "## Agreement between iterations",
    "",
    "| Criterion | Units | Exact agreement | Krippendorff's α (ordinal) |",
    "|---|---|---|---|",
    ...Object.entries(f.agreement).map(([k, a]) =>
      `| ${inline(k, 200)} | ${a.units} | ${
        a.exactAgreement === null ? "—" : `${(a.exactAgreement * 100).toFixed(1)}%`
      } | ${
        a.krippendorffAlpha === null
          ? `— (${inline(a.krippendorffAlphaNote ?? "undefined", 200)})`
          : n(a.krippendorffAlpha)
      } |`
    ),
    "",
    `## Unstable cases (${f.unstableCount})`,
    "",
    ...(f.unstable.length === 0 ? ["Every grade was the same in every iteration."] : [
      "| Case | Criterion | Grades by iteration |",
      "|---|---|---|",
      ...f.unstable.map((u) =>
        `| ${inline(u.caseId, 200)} | ${inline(u.criterion, 200)} | ${
          u.grades.map((g) => (g === null ? "failed" : String(g))).join(" → ")
        } |`
      ),
      f.unstableCount > f.unstable.length ? `\n(first ${f.unstable.length} of ${f.unstableCount} listed)` : ""
    ]),
    "",
    "## Cost",
    "",
    ...costs,
    ""
  ]
  return lines.join("\n")
}
