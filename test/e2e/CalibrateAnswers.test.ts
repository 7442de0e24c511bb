/**
 * `rag-eval calibrate` on answers, as a user runs it: an answer-correctness run of the shipped sample
 * (heuristic judge), then people's claim verdicts, metric values and preferences against it — the
 * hand-written flat forms and the browser review's labels.jsonl. The expected figures are computed
 * here from the run's own journal (the people agree with the judge on all but one claim), so they
 * hold whatever verdicts the heuristic gives.
 */
import { Either, Schema } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { CalibrationFile } from "../../src/domain/RunFiles.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

const VERDICTS = ["contradicted", "neutral", "entailed"] as const

const setUp = async () => {
  const dir = tempDir("calibrate-answers-")
  const run = await runCli([
    "run",
    "answer-correctness",
    "--input",
    Path.join(repoRoot, "test-sets/answer-correctness/sample.jsonl"),
    "--out",
    dir,
    "--quiet"
  ])
  expect(run.code).toBe(0)
  const runDir = run.stdout.trim().split("\n").at(-1)!.replace(/^run: /, "")
  // The judge's verdicts of the answers' claims against the references, from the journal.
  const checks = fs.readFileSync(Path.join(runDir, "judgments.jsonl"), "utf8").trim().split("\n")
    .map((l) => JSON.parse(l) as { caseId: string; target: string; score: number })
    .filter((j) => /^reference\/answer:\d+$/.test(j.target))
    .slice(0, 6)
  expect(checks.length).toBe(6)
  return { dir, runDir, checks }
}

describe("rag-eval calibrate on an answer-correctness run", () => {
  it("claim verdicts and metric values from a CSV; labels.jsonl by default; calibration.json version 2", async () => {
    const { dir, checks, runDir } = await setUp()
    // Agree with the judge on five claims, give the sixth another verdict.
    const rows = checks.map((j, i) => {
      const n = Number(j.target.split(":")[1])
      const verdict = VERDICTS[i === 5 ? (j.score + 1) % 3 : j.score]
      return `${j.caseId},${n},${verdict},reference`
    })
    const claims = Path.join(dir, "claims.csv")
    fs.writeFileSync(claims, ["id,claim,verdict,against", ...rows, "nope,1,entailed,reference"].join("\n"))
    const r = await runCli(["calibrate", runDir, "--labels", claims, "--resamples", "500"])
    expect(r.stderr).toContain("calibration.json")
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("## Claim verdicts")
    expect(r.stdout).toContain("Pairs: **6**")
    expect(r.stdout).toMatch(/\| Exact agreement \| 0\.8333 \|/)
    expect(r.stdout).toContain(
      "| 8 | nope | claim:answer:1:reference |  | the run has no claim judgments of this case |"
    )
    const file = Schema.decodeUnknownEither(CalibrationFile)(
      JSON.parse(fs.readFileSync(Path.join(runDir, "calibration.json"), "utf8"))
    )
    expect(Either.isRight(file)).toBe(true)
    if (Either.isRight(file)) {
      expect(file.right.calibrationVersion).toBe(2)
      expect(file.right.answers?.claims?.exactAgreement.value).toBeCloseTo(5 / 6, 12)
      expect(file.right.answers?.unpaired.count).toBe(1)
    }

    // The browser review's file in the run directory is read when --labels is not given.
    const labels = [
      {
        caseId: "q1",
        target: { kind: "metric", metric: "f1" },
        label: { value: 1 },
        by: "ann",
        at: "2026-11-28T10:00:00Z"
      },
      {
        caseId: "q2",
        target: { kind: "metric", metric: "f1" },
        label: { value: 0 },
        by: "ann",
        at: "2026-11-28T10:00:01Z"
      },
      {
        caseId: "q4",
        target: { kind: "metric", metric: "f1" },
        label: { value: 0.5 },
        by: "ann",
        at: "2026-11-28T10:00:02Z"
      }
    ]
    fs.writeFileSync(Path.join(runDir, "labels.jsonl"), labels.map((l) => JSON.stringify(l)).join("\n") + "\n")
    const d = await runCli(["calibrate", runDir, "--format", "json", "--resamples", "200"])
    expect(d.code).toBe(0)
    const json = JSON.parse(d.stdout) as { labels: { file: string }; answers: { metrics: Array<{ metric: string }> } }
    expect(json.labels.file).toBe(Path.join(runDir, "labels.jsonl"))
    expect(json.answers.metrics.map((m) => m.metric)).toEqual(["f1"])
  })

  it("bad labels: exit 2 with file, line and field, no calibration.json; --min-kappa gates claim verdicts", async () => {
    const { dir, runDir, checks } = await setUp()
    const bad = Path.join(dir, "bad.csv")
    fs.writeFileSync(bad, "id,claim,verdict\nq1,1,entailed\nq1,2,true\n")
    const r = await runCli(["calibrate", runDir, "--labels", bad])
    expect(r.code).toBe(2)
    expect(r.stderr.trim()).toBe(
      `error: ${bad}:3 (field "verdict"): verdict "true" is not one of contradicted, neutral, entailed`
    )
    expect(fs.existsSync(Path.join(runDir, "calibration.json"))).toBe(false)

    // Every label the opposite of entailed-or-not: κ ≤ 0, below any positive minimum.
    const opposite = Path.join(dir, "opposite.csv")
    fs.writeFileSync(
      opposite,
      [
        "id,claim,verdict",
        ...checks.map((j) => `${j.caseId},${j.target.split(":")[1]},${j.score === 2 ? "neutral" : "entailed"}`)
      ]
        .join("\n")
    )
    const gate = await runCli(["calibrate", runDir, "--labels", opposite, "--min-kappa", "0.2", "--resamples", "200"])
    expect(gate.code).toBe(1)
    expect(gate.stderr).toMatch(/error: claim verdicts: Cohen's κ (-?\d\.\d{4} is below --min-kappa 0\.2|is undefined)/)
    expect(gate.stdout).toContain("## Claim verdicts")
    const metricsOnly = Path.join(dir, "m.csv")
    fs.writeFileSync(metricsOnly, "id,metric,value\nq1,f1,1\n")
    const nothing = await runCli([
      "calibrate",
      runDir,
      "--labels",
      metricsOnly,
      "--min-kappa",
      "0.2",
      "--resamples",
      "50"
    ])
    expect(nothing.code).toBe(1)
    expect(nothing.stderr).toMatch(/no κ to gate/)
  })
})
