import { describe, expect, it } from "vitest"
import { detailsChooser } from "../../src/engine/Details.js"
import type { CaseValues } from "../../src/engine/Pipeline.js"

const values = (score: number | null, failed = false, ordinal = 0): CaseValues => ({
  caseId: `c${ordinal}`,
  line: ordinal + 1,
  metrics: { score },
  failed
})

const choose = (cases: ReadonlyArray<CaseValues>, limit: number, rank: ReadonlyArray<string> = ["score"]) => {
  const chooser = detailsChooser(limit, rank)
  for (const c of cases) chooser.add(c)
  return chooser.result()
}

describe("report.md's choice of cases with details", () => {
  it("every case when at most --details; else the failed first (input order), then the lowest (ties in input order)", () => {
    expect(choose([values(0.5), values(0.2)], 2)).toEqual({ total: 2, limit: 2, ordinals: undefined, by: undefined })
    const cases = [values(0.9), values(0.1), values(0.5, true), values(0.1), values(null), values(0.3, true)]
    const chosen = choose(cases, 4)
    expect(chosen.total).toBe(6)
    expect(chosen.by).toBe("score")
    // Failed 2 and 5; then the unknown score (4), then 0.1 at ordinal 1 before the one at 3.
    expect([...chosen.ordinals!]).toEqual([2, 5, 4, 1])
    expect([...choose(cases, 3).ordinals!]).toEqual([2, 5, 4])
  })

  it("chooses the same cases from the live records as from records read back (not finite ranks as unknown, like JSON's null)", () => {
    let seed = 11
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
    const specials = [NaN, Infinity, -Infinity, null, -0, 0, 1]
    const cases = Array.from({ length: 3000 }, (_, i): CaseValues => {
      const pick = random()
      const score = pick < 0.15 ? specials[Math.floor(random() * specials.length)]! : Math.round(random() * 20) / 20
      return {
        caseId: `c${i}`,
        line: i + 1,
        metrics: { score, f1: random() < 0.5 ? null : random() },
        failed: random() < 0.02
      }
    })
    const readBack = cases.map((c) => JSON.parse(JSON.stringify(c)) as CaseValues)
    for (const limit of [0, 1, 10, 100, 2999, 3000]) {
      for (const rank of [["score"], ["score", "f1"], []]) {
        const live = choose(cases, limit, rank)
        const back = choose(readBack, limit, rank)
        expect(live.total).toBe(3000)
        expect(live.ordinals === undefined ? undefined : [...live.ordinals]).toEqual(
          back.ordinals === undefined ? undefined : [...back.ordinals]
        )
      }
    }
  })
})
