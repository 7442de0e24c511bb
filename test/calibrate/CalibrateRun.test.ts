/**
 * The browser review's entry, `calibrateRunLabels(runDir, labels)`: labels in memory, as
 * `labels.jsonl` holds them, against a real run directory (a search-relevance run of the sample,
 * heuristic judge) — hit grades go to the grade calibration, agreement-only labels are counted apart,
 * and two people's grades of one hit need `by`.
 */
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { calibrateRunLabels } from "../../src/calibrate/CalibrateRun.js"
import type { Label } from "../../src/domain/Label.js"
import { cli } from "../support/ChildCli.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

let runDir = ""
/** The judge's grade of each hit of query sr-001, from the run's journal. */
const judged = new Map<string, number>()

beforeAll(async () => {
  const r = await cli([
    "run",
    "search-relevance",
    "--input",
    Path.join(repoRoot, "test-sets/search-relevance/sample.jsonl"),
    "--out",
    tempDir("calibrate-run-"),
    "--quiet"
  ])
  expect(r.code).toBe(0)
  runDir = r.stdout.trim().split("\n").at(-1)!.replace(/^run: /, "")
  for (const line of fs.readFileSync(Path.join(runDir, "judgments.jsonl"), "utf8").trim().split("\n")) {
    const j = JSON.parse(line) as { caseId: string; target: string; score: number }
    if (j.caseId === "sr-001") judged.set(j.target.slice("hit:".length), j.score)
  }
}, 120_000)

const hit = (hitId: string, label: Label["label"], extra: Partial<Label> = {}): Label => ({
  caseId: "sr-001",
  target: { kind: "hit", hitId },
  label,
  by: "ann",
  at: "2026-11-28T10:00:00Z",
  ...extra
})

describe("calibrateRunLabels (labels in memory, as the browser review holds them)", () => {
  it("hit grades pair with the run's; an agreement with the judged grade is that grade; a bare disagreement is counted apart", async () => {
    const [a, b, c] = ["a", "b", "c"]
    const labels: Array<Label> = [
      hit(a, { grade: judged.get(a)! }),
      hit(b, { grade: (judged.get(b)! + 1) % 4 }),
      hit(c, { agree: true }, { judged: judged.get(c)! }),
      hit("d", { agree: false }, { judged: judged.get("d")! })
    ]
    const calibration = await Effect.runPromise(calibrateRunLabels(runDir, labels, { resamples: 100 }))
    const relevance = calibration.criteria.find((k) => k.criterion === "relevance")!
    expect(relevance.pairs).toBe(3)
    expect(relevance.exactAgreement.value).toBeCloseTo(2 / 3, 12)
    expect(calibration.answers?.agreeOnly).toMatchObject({ labels: 1, agreed: 0 })
    expect(calibration.labels.count).toBe(4)
    expect(calibration.calibrationVersion).toBe(2)
  })

  it("two people's grades of one hit: an InputError naming both lines and --by; with `by`, one person's", async () => {
    const labels = [hit("a", { grade: 3 }), hit("a", { grade: 0 }, { by: "bob" })]
    const both = await Effect.runPromise(Effect.either(calibrateRunLabels(runDir, labels, { resamples: 50 })))
    expect(Either.isLeft(both) && both.left.message).toMatch(
      /:2: two people labelled hit "a" of case "sr-001" \(ann on line 1, bob here\).*--by NAME/
    )
    const bob = await Effect.runPromise(calibrateRunLabels(runDir, labels, { resamples: 50, by: "bob" }))
    expect(bob.criteria.find((k) => k.criterion === "relevance")!.pairs).toBe(1)
  })
})
