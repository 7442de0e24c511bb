/**
 * The agreement the page shows is calibrate's over the labels: per kind of label (rubric grades per
 * criterion, hits, claims, nuggets), Cohen's κ and exact agreement equal to the statistics of the
 * same pairs (`stats/Kappa.ts`), "wrong" without a value counted and not paired, labels of other
 * runs left out, per-case metric and preference labels pending; and the labels more a ±0.1
 * interval needs, by hand.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import type { Label } from "../../src/domain/Label.js"
import { labelKey } from "../../src/domain/Label.js"
import { cohenKappa, exactAgreement, tableOf } from "../../src/stats/Kappa.js"
import { agreement, moreLabelsFor } from "../../src/ui/Agreement.js"
import type { LabelState } from "../../src/ui/LabelLog.js"

const at = "2026-11-28T10:00:00.000Z"

const state = (labels: ReadonlyArray<Label>): LabelState => ({
  latest: new Map(labels.map((l) => [labelKey(l), l])),
  lines: labels.length,
  skipped: [],
  torn: false
})

const grade = (caseId: string, criterion: string, judged: number, human: number | "agree" | "wrong"): Label => ({
  runId: "r1",
  caseId,
  target: { kind: "grade", criterion },
  label: human === "agree" ? { agree: true } : human === "wrong" ? { agree: false } : { grade: human },
  judged,
  by: "ann",
  at
})

const run = { runId: "r1", pipeline: "rag-answers", dir: "rag-answers/r1", judge: "heuristic judge" }

describe("agreement over the labels", () => {
  it("per rubric criterion: κ and exact agreement are those of the pairs; agree means the judge's value", async () => {
    const judged = [2, 1, 0, 2, 1, 2, 0, 1]
    const human = [2, 1, 1, 2, 0, 2, 0, 2]
    const labels = judged.map((j, i) =>
      grade(`c${i}`, "rag-answers/groundedness", j, human[i] === j ? "agree" : human[i]!)
    )
    const a = await Effect.runPromise(agreement(state(labels), run, { resamples: 500 }))
    expect(a.groups).toHaveLength(1)
    const g = a.groups[0]!
    expect(g.kind).toBe("grade")
    expect(g.calibration.pairs).toBe(8)
    const table = tableOf(human, judged)
    expect(g.headline.statistic).toBe("Cohen's κ")
    expect(g.headline.estimate.value).toBeCloseTo(cohenKappa(table).value!, 12)
    expect(g.exactAgreement.value).toBeCloseTo(exactAgreement(table).value!, 12)
    expect(g.exactAgreement.value).toBeCloseTo(5 / 8, 12)
    expect(g.headline.estimate.ci).not.toBeNull()
  })

  it("groups by kind and criterion; 'wrong' without a value is counted, not paired; other runs' labels left out; metrics and preferences pending", async () => {
    const labels: Array<Label> = [
      grade("c1", "rag-answers/clarity", 3, 3),
      grade("c2", "rag-answers/clarity", 2, "wrong"),
      grade("c1", "rag-answers/groundedness", 2, 1),
      { ...grade("c3", "rag-answers/clarity", 1, 0), runId: "another-run" },
      {
        runId: "r1",
        caseId: "c1",
        target: { kind: "claim", side: "answer", index: 1, against: "reference" },
        label: { verdict: "neutral" },
        judged: "entailed",
        by: "ann",
        at
      },
      {
        runId: "r1",
        caseId: "c1",
        target: { kind: "hit", hitId: "d1" },
        label: { grade: 3 },
        judged: 3,
        by: "ann",
        at
      },
      {
        runId: "r1",
        caseId: "c1",
        target: { kind: "metric", metric: "composite" },
        label: { value: 0.4 },
        judged: 0.8,
        by: "ann",
        at
      },
      {
        runId: "r1",
        caseId: "c1",
        target: { kind: "preference", other: { runId: "r2" } },
        label: { preference: 1 },
        judged: 0.1,
        by: "ann",
        at
      }
    ]
    const a = await Effect.runPromise(agreement(state(labels), run, { resamples: 200 }))
    expect(a.labels).toBe(7)
    const byTitle = new Map(a.groups.map((g) => [`${g.kind}:${g.calibration.criterion}`, g]))
    const clarity = byTitle.get("grade:rag-answers/clarity")!
    expect(clarity.labels).toBe(2)
    expect(clarity.disagreedWithoutValue).toBe(1)
    expect(clarity.calibration.pairs).toBe(1)
    expect(byTitle.get("grade:rag-answers/groundedness")!.calibration.pairs).toBe(1)
    const claims = byTitle.get("claim:claim verdict")!
    // entailed (2) judged, neutral (1) said: one pair, no agreement.
    expect(claims.calibration.grades).toEqual([1, 2])
    expect(claims.calibration.confusion).toEqual([[0, 1], [0, 0]])
    expect(claims.exactAgreement.value).toBe(0)
    expect(byTitle.get("hit:relevance")!.exactAgreement.value).toBe(1)
    expect(a.pending.map((p) => [p.kind, p.labels])).toEqual([["metric", 1], ["preference", 1]])
  })

  it("labels more for ±0.1: n · (half-width / 0.1)² in all, 0 when already narrower, unknown without an interval", () => {
    const estimate = (lower: number, upper: number) => ({ value: 0.5, ci: { lower, upper }, undefinedResamples: 0 })
    // Half-width 0.3 on 20 pairs: 20 · 9 = 180 in all, 160 more.
    expect(moreLabelsFor(estimate(0.2, 0.8), 20)).toBe(160)
    expect(moreLabelsFor(estimate(0.45, 0.55), 20)).toBe(0)
    expect(moreLabelsFor({ value: null, ci: null, undefinedResamples: 0 }, 20)).toBeNull()
    expect(moreLabelsFor(estimate(0.2, 0.8), 1)).toBeNull()
  })
})
