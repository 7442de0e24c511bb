/**
 * What the rubric pipelines fold of their own, beside the engine's fold (each dimension's and the
 * composite's mean, std, min, max and interval, the lowest and failed cases, the failures and counts
 * — `engine/CaseFold.ts`): each dimension's score distribution and mean normalised to 0–1, the
 * composite's histogram, and how often the gate zeroed or reweighted a row.
 */
import * as Metric from "../../domain/Metric.js"
import type { AggregateStage, RunInfo } from "../../engine/Pipeline.js"
import { empty, mean, push, type Welford } from "../../stats/Welford.js"
import { isDimension, type RubricRecord } from "./RubricScore.js"

/** The summary part of the rubric pipelines' own fold (`RunSummary.extra`). */
export interface RubricSummary {
  /** Per dimension (rubric id): count per score value, every value of the scale present (0 when unseen). */
  readonly distributions: Readonly<Record<string, Readonly<Record<string, number>>>>
  /** Per dimension (rubric id): the mean score normalised to 0–1 (score / max); null with none scored. */
  readonly normalised: Readonly<Record<string, number | null>>
  /** Composites in ten buckets [0,0.1) … [0.9,1.0]. */
  readonly histogram: ReadonlyArray<number>
  readonly gated: { readonly zeroed: number; readonly reweighted: number }
}

/** The headline name of a dimension's normalised mean. */
export const normalisedName = (rubricId: string) => `${rubricId}.normalised`

/** Each dimension's normalised mean, declared (the dimension's own mean is the engine's). */
export const normalisedHeadline = (info: RunInfo, only?: (id: string) => boolean) =>
  info.rubrics.filter((r) => isDimension(r) && (only?.(r.id) ?? true)).map((r) =>
    Metric.fraction(normalisedName(r.id), `mean ${r.name} normalised to 0–1 (score / ${r.max})`)
  )

interface State {
  readonly dims: Map<string, { readonly norm: Welford; readonly dist: Map<number, number> }>
  readonly histogram: Array<number>
  zeroed: number
  reweighted: number
}

export const rubricSummary = (): AggregateStage<RubricRecord, RubricSummary> => ({
  start: (info) => {
    let s: State = {
      dims: new Map(
        info.rubrics.filter(isDimension).map((r) => [r.id, {
          norm: empty() as Welford,
          dist: new Map<number, number>(r.scale.map((v) => [v.score, 0]))
        }])
      ),
      histogram: Array(10).fill(0),
      zeroed: 0,
      reweighted: 0
    }
    return {
      add: (record) => {
        for (const d of record.dimensions) {
          const dim = s.dims.get(d.criterion)
          if (dim === undefined || d.score === null) continue
          push(dim.norm, d.normalised!)
          dim.dist.set(d.score, (dim.dist.get(d.score) ?? 0) + 1)
        }
        if (record.gate === "zeroed") s.zeroed++
        if (record.gate === "reweighted") s.reweighted++
        if (record.composite !== null) s.histogram[Math.min(9, Math.floor(record.composite * 10))]!++
      },
      save: () => structuredClone(s),
      restore: (state) => {
        s = structuredClone(state as State)
      },
      finish: () => ({
        distributions: Object.fromEntries(
          [...s.dims].map((
            [id, d]
          ) => [id, Object.fromEntries([...d.dist].sort((a, b) => a[0] - b[0]).map(([k, v]) => [String(k), v]))])
        ),
        normalised: Object.fromEntries([...s.dims].map(([id, d]) => [id, mean(d.norm)])),
        histogram: s.histogram,
        gated: { zeroed: s.zeroed, reweighted: s.reweighted }
      })
    }
  },
  metrics: (x) => Object.fromEntries(Object.entries(x.normalised).map(([id, v]) => [normalisedName(id), v])),
  headline: (info) => normalisedHeadline(info)
})
