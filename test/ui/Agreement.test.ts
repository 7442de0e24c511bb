/**
 * The agreement the page shows is `rag-eval calibrate`'s: computed on the labelled slice of a run
 * (the labelled cases' journal lines, records and per-case metrics in a temporary run directory),
 * its figures equal calibrate's on the whole run directory — claim verdicts, metric values and
 * preferences against another run (answer-correctness), hit grades (search-relevance) — and the
 * panel's groups are read from them.
 */
import { Effect } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { calibrateRunLabels } from "../../src/calibrate/CalibrateRun.js"
import type { Label } from "../../src/domain/Label.js"
import { AGREEMENT_RESAMPLES, AGREEMENT_SEED, summarise } from "../../src/ui/Agreement.js"
import type { LabelState } from "../../src/ui/LabelLog.js"
import { buildFixtures, type Fixtures, runIdOf } from "./Fixtures.js"
import { post, raw, startServer } from "./Server.js"

let fx: Fixtures

beforeAll(async () => {
  fx = await buildFixtures()
})

const options = { seed: AGREEMENT_SEED, resamples: AGREEMENT_RESAMPLES }

describe("agreement over the labels", () => {
  it("equals calibrate's on the whole run: claims, a metric, preferences against another run; hits", async () => {
    const server = await startServer({ out: fx.out, compareInProcessUpTo: Number.POSITIVE_INFINITY })
    try {
      const a = runIdOf(fx.correctnessA)
      const b = runIdOf(fx.correctnessB)
      const made: Array<Label> = []
      const label = async (run: string, body: unknown) => {
        const r = await post(server.port, `/api/runs/${run}/labels`, body)
        expect(r.status, r.body).toBe(201)
        made.push(r.json().label)
        return r.json().agreement
      }
      for (const caseId of ["q1", "q2", "q7", "q8", "judge-fails-1"]) {
        const c = (await raw(server.port, `/api/runs/${a}/cases/${caseId}`)).json()
        for (const [i, t] of c.targets.filter((x: any) => x.target.kind === "claim").slice(0, 4).entries()) {
          const verdict = t.judged === null || i % 3 === 2 ? "neutral" : t.judged
          await label(a, { caseId, target: t.target, label: { verdict } })
        }
        await label(a, { caseId, target: { kind: "metric", metric: "f1" }, label: { value: (caseId.length % 7) / 7 } })
        await label(a, { caseId, target: { kind: "preference", other: { runId: b } }, label: { preference: 1 } })
      }
      const shown = (await raw(server.port, `/api/runs/${a}/agreement`)).json()
      const whole = await Effect.runPromise(calibrateRunLabels(fx.correctnessA, made, {
        ...options,
        otherRuns: [fx.correctnessB]
      }))
      expect(shown.calibration.answers.claims).toEqual(whole.answers!.claims)
      expect(shown.calibration.answers.metrics).toEqual(whole.answers!.metrics)
      expect(shown.calibration.answers.preferences.rows).toEqual(whole.answers!.preferences!.rows)
      // The same labels left unpaired, for the same reasons (a journal line is the slice's, not the run's).
      const reasons = (u: { readonly items: ReadonlyArray<{ readonly reason: string }> }) =>
        u.items.map((x) => ({ ...x, reason: x.reason.replace(/journal line \d+/, "journal line N") }))
      expect(reasons(shown.calibration.answers.unpaired)).toEqual(reasons(whole.answers!.unpaired))
      expect(shown.calibration.answers.unpaired.count).toBeGreaterThan(0)
      const claims = shown.groups.find((g: any) => g.kind === "claim")
      expect(claims.pairs).toBe(whole.answers!.claims!.pairs)
      expect(claims.headline.estimate.value).toBe(whole.answers!.claims!.cohenKappa.value)
      expect(claims.more).toBe(whole.answers!.claims!.cohenKappa.narrowing.more)
      expect(shown.groups.some((g: any) => g.kind === "metric" && g.title === "Per-case metric: f1")).toBe(true)
      expect(shown.groups.some((g: any) => g.kind === "preference")).toBe(true)

      // Hits of a retrieval run: the grade calibration.
      const s = runIdOf(fx.search)
      const hitLabels: Array<Label> = []
      for (const caseId of ["sr-001", "sr-002", "sr-003"]) {
        const c = (await raw(server.port, `/api/runs/${s}/cases/${caseId}`)).json()
        for (const t of c.targets.filter((x: any) => x.target.kind === "hit")) {
          const r = await post(server.port, `/api/runs/${s}/labels`, {
            caseId,
            target: t.target,
            label: { grade: (t.judged + 1) % 4 === 3 ? 3 : t.judged }
          })
          hitLabels.push(r.json().label)
        }
      }
      const hits = (await raw(server.port, `/api/runs/${s}/agreement`)).json()
      const wholeHits = await Effect.runPromise(calibrateRunLabels(fx.search, hitLabels, options))
      const criterion = wholeHits.criteria.find((c) => c.criterion === "relevance")!
      expect(hits.calibration.criteria[0].cohenKappa).toEqual(criterion.cohenKappa)
      expect(hits.calibration.criteria[0].confusion).toEqual(criterion.confusion)
      expect(hits.groups[0]).toMatchObject({ kind: "hit", pairs: criterion.pairs })
    } finally {
      await server.close()
    }
  })

  it("with no labels, nothing to show and no calibration", () => {
    const state: LabelState = { latest: new Map(), lines: 0, skipped: [], torn: false }
    const a = summarise(undefined, 0, state)
    expect(a).toMatchObject({ labels: 0, groups: [], agreeOnly: null, calibration: null })
  })
})
