/**
 * `rag-eval compare`, in-process: fake run directories (manifest + records files) with known
 * differences, and two real rag-answers runs (heuristic judge) on the same questions.
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { vi } from "vitest"
import { compare, compareCommand } from "../../src/cli/Compare.js"
import { formatP, formatSigned } from "../../src/compare/Comparison.js"
import * as Metric from "../../src/domain/Metric.js"
import type { MetricSpec } from "../../src/domain/Metric.js"
import { caseMetricsFile, encodeJson, Manifest } from "../../src/domain/RunFiles.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { manifestFixture } from "../support/RunFiles.js"
import { loadPipelineModule, repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

type Rec = Record<string, unknown>

const specsOf: Record<string, ReadonlyArray<MetricSpec>> = {
  "rag-answers": [
    Metric.score("rag-answers/groundedness", "groundedness", 0, 2),
    Metric.score("rag-answers/clarity", "clarity", 0, 4),
    Metric.fraction("composite", "composite")
  ],
  "course-retrieval": [
    Metric.fraction("irrelevantRate", "share graded 0", "lower"),
    Metric.fraction("ndcg@10", "NDCG@10"),
    Metric.count("totalCourses", "courses", "none")
  ],
  "search-relevance": [Metric.fraction("ndcg@10", "NDCG@10")]
}

/** Writes out/<pipeline>/<runId>/ with a manifest (declaring the pipeline's per-case metrics) and one case-metrics file per iteration. */
const writeRun = (
  root: string,
  runId: string,
  iterations: ReadonlyArray<ReadonlyArray<Rec>>,
  pipeline = "rag-answers"
) => {
  const dir = Path.join(root, pipeline, runId)
  fs.mkdirSync(dir, { recursive: true })
  const manifest = manifestFixture({
    runId,
    pipeline: { name: pipeline },
    iterations: iterations.length,
    caseMetricSpecs: specsOf[pipeline]
  })
  fs.writeFileSync(Path.join(dir, "manifest.json"), encodeJson(Manifest, manifest))
  iterations.forEach((rows, i) =>
    fs.writeFileSync(
      Path.join(dir, caseMetricsFile(i + 1)),
      rows.map((r) => JSON.stringify({ line: 2, iteration: i + 1, failed: false, ...r })).join("\n") + "\n"
    )
  )
  return dir
}

/** A rag-answers case: groundedness, clarity and the composite. */
const rubric = (caseId: string, groundedness: number | null, clarity: number | null, iteration = 1): Rec => ({
  caseId,
  iteration,
  metrics: {
    "rag-answers/groundedness": groundedness,
    "rag-answers/clarity": clarity,
    composite: groundedness === null || clarity === null ? null : (groundedness + clarity) / 2
  }
})

// 20 cases: B's groundedness is A's + 0.25 on 18 cases and equal on 2; clarity identical.
const ids = Array.from({ length: 20 }, (_, i) => `c${i + 1}`)
const baseG = ids.map((_, i) => [0, 0.25, 0.5][i % 3]!)
const clarity = ids.map((_, i) => [0.5, 0.75, 1][i % 3]!)
const runA = ids.map((id, i) => rubric(id, baseG[i]!, clarity[i]!))
const runB = ids.map((id, i) => rubric(id, i < 2 ? baseG[i]! : baseG[i]! + 0.25, clarity[i]!))

describe("rag-eval compare", () => {
  it.effect("detects a known difference and reports no difference where there is none", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const a = writeRun(root, "a", [runA])
      const b = writeRun(root, "b", [runB])
      const { comparison, report } = yield* compare({ runA: a, runB: b })
      expect(comparison.cases).toBe(20)
      expect(comparison.metrics.map((m) => m.metric)).toEqual([
        "rag-answers/groundedness",
        "rag-answers/clarity",
        "composite"
      ])
      const g = comparison.metrics[0]!
      expect(g.n).toBe(20)
      expect(g.excluded).toBe(0)
      expect(g.delta).toBeCloseTo(18 * 0.25 / 20, 12)
      expect(g.meanB! - g.meanA!).toBeCloseTo(0.225, 12)
      expect([g.wins, g.ties, g.losses]).toEqual([18, 2, 0])
      expect(g.winner).toBe("B")
      expect(g.tTest.p!).toBeLessThan(1e-6)
      // 18 equal non-zero differences: only the 2 × 2² all-same-sign vectors reach |Σ|, far fewer than 1 in 10,000.
      expect(g.randomisation.p).toBe(1 / 10_001)
      expect(g.bootstrap.lower!).toBeGreaterThan(0.15)
      expect(g.bootstrap.upper!).toBeLessThanOrEqual(0.25)
      expect(g.verdict).toBe(
        "B is better on rag-answers/groundedness: +0.225, p < 0.001 (t-test), < 0.001 (randomisation)"
      )
      const c = comparison.metrics[1]!
      expect(c.winner).toBe("none")
      expect(c.verdict).toBe("no difference on rag-answers/clarity: equal on all 20 cases")
      expect(report).toContain(
        "| rag-answers/groundedness | 20 | 0 | 0.2375 | 0.4625 | +0.225 | [+0.188, +0.250] | < 0.001 | < 0.001 | 18/2/0 |"
      )
      expect(report).toContain("- B is better on rag-answers/groundedness")
    }))

  it.effect("is reproducible with a seed; another seed moves only the randomised numbers", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      // Mixed differences so the Monte Carlo p is not at its floor.
      const noisyB = ids.map((id, i) =>
        rubric(id, Math.min(1, Math.max(0, baseG[i]! + [0.25, -0.25, 0.5, 0, 0.25][i % 5]!)), clarity[i]!)
      )
      const a = writeRun(root, "a", [runA])
      const b = writeRun(root, "b", [noisyB])
      const one = yield* compare({ runA: a, runB: b, metrics: "groundedness", format: "json" })
      const two = yield* compare({ runA: a, runB: b, metrics: "groundedness", format: "json" })
      expect(two.report).toBe(one.report)
      const other = yield* compare({ runA: a, runB: b, metrics: "groundedness", seed: 7 })
      const [m1, m7] = [one.comparison.metrics[0]!, other.comparison.metrics[0]!]
      expect(m7.tTest).toEqual(m1.tTest)
      expect(m7.randomisation.p).not.toBe(m1.randomisation.p)
      expect(Math.abs(m7.randomisation.p! - m1.randomisation.p!)).toBeLessThan(0.02)
      const json = JSON.parse(one.report)
      expect(json.seed).toBe(42)
      expect(json.metrics[0]).toMatchObject({
        metric: "rag-answers/groundedness",
        n: 20,
        randomisation: { permutations: 10_000, exact: false }
      })
    }))

  it.effect("leaves out cases with a null in either run, and says how many", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const withNull = runA.map((r, i) => (i === 3 ? rubric(ids[i]!, null, clarity[i]!) : r))
      const a = writeRun(root, "a", [withNull])
      const b = writeRun(root, "b", [runB])
      const { comparison, report } = yield* compare({ runA: a, runB: b, metrics: "groundedness,composite" })
      for (const m of comparison.metrics) {
        expect(m.n).toBe(19)
        expect(m.excluded).toBe(1)
        expect(m.verdict).toContain("[1 case(s) left out: null in a run]")
      }
      expect(report).toContain("| rag-answers/groundedness | 19 | 1 |")
    }))

  it.effect("refuses runs over different queries, listing ids only in one", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const a = writeRun(root, "a", [runA])
      const b = writeRun(root, "b", [[...runB.filter((r) => r["caseId"] !== "c3"), rubric("c99", 1, 1)]])
      const error = yield* Effect.flip(compare({ runA: a, runB: b }))
      expect(error._tag).toBe("UsageError")
      expect(error.message).toContain("different queries")
      expect(error.message).toContain("1 case(s) only in A (c3)")
      expect(error.message).toContain("1 case(s) only in B (c99)")
      const fewer = writeRun(root, "fewer", [runB.slice(0, 5)])
      const limited = yield* Effect.flip(compare({ runA: a, runB: fewer }))
      expect(limited.message).toContain("15 case(s) only in A (c6, c7, c8, c9, c10, … (10 more))")
    }))

  it.effect("averages iterations per case by default; --iteration picks one", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const a = writeRun(root, "a", [runA, runA.map((r) => ({ ...r, iteration: 2 }))])
      // B: iteration 1 like A, iteration 2 +0.5 on every case → mean +0.25.
      const b = writeRun(root, "b", [runA, ids.map((id, i) => rubric(id, baseG[i]! + 0.5, clarity[i]!, 2))])
      const averaged = yield* compare({ runA: a, runB: b, metrics: "groundedness" })
      expect(averaged.comparison.runB.iterations).toEqual([1, 2])
      expect(averaged.comparison.metrics[0]!.delta).toBeCloseTo(0.25, 12)
      const first = yield* compare({ runA: a, runB: b, metrics: "groundedness", iteration: 1 })
      expect(first.comparison.metrics[0]!.delta).toBe(0)
      const second = yield* compare({ runA: a, runB: b, metrics: "groundedness", iteration: 2 })
      expect(second.comparison.metrics[0]!.delta).toBeCloseTo(0.5, 12)
      const bad = yield* Effect.flip(compare({ runA: a, runB: b, iteration: 3 }))
      expect(bad.message).toContain("iteration(s) 1–2")
    }))

  it.effect("a lower-is-better metric (as declared) reverses the verdict; a count with no direction is compared only when named", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const rec = (id: string, ndcg: number, irrelevant: number) => ({
        caseId: id,
        metrics: { "ndcg@10": ndcg, irrelevantRate: irrelevant, totalCourses: 10 }
      })
      const a = writeRun(
        root,
        "a",
        [ids.map((id, i) => rec(id, 0.5 + (i % 4) * 0.1, 0.4 + (i % 3) * 0.05))],
        "course-retrieval"
      )
      const b = writeRun(root, "b", [
        ids.map((id, i) => rec(id, 0.5 + (i % 4) * 0.1, 0.2 + (i % 3) * 0.05 + (i % 2) * 0.01))
      ], "course-retrieval")
      const { comparison } = yield* compare({ runA: a, runB: b })
      expect(comparison.metrics.map((m) => m.metric)).toEqual(["irrelevantRate", "ndcg@10"])
      const irr = comparison.metrics[0]!
      expect(irr.lowerIsBetter).toBe(true)
      expect(irr.delta!).toBeLessThan(0)
      expect(irr.winner).toBe("B")
      expect(irr.verdict).toMatch(/^B is better on irrelevantRate: -0\.195, .* \(lower is better\)$/)
      expect(comparison.metrics[1]!.lowerIsBetter).toBe(false)
      const named = yield* compare({ runA: a, runB: b, metrics: "totalCourses" })
      expect(named.comparison.metrics.map((m) => m.metric)).toEqual(["totalCourses"])
    }))

  it.effect("--metrics: by full or short name; an unknown name lists what both runs have", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const a = writeRun(root, "a", [runA])
      const b = writeRun(root, "b", [runB])
      const picked = yield* compare({ runA: a, runB: b, metrics: "composite, rag-answers/clarity" })
      expect(picked.comparison.metrics.map((m) => m.metric)).toEqual(["composite", "rag-answers/clarity"])
      const error = yield* Effect.flip(compare({ runA: a, runB: b, metrics: "ndcg@10" }))
      expect(error.message).toBe(
        "metric \"ndcg@10\" is not in both runs; they have: rag-answers/groundedness, rag-answers/clarity, composite"
      )
    }))

  it.effect("bad run directories: missing → InputError, no manifest → UsageError, a bad case-metrics line → file and line", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const a = writeRun(root, "a", [runA])
      const missing = Path.join(root, "nope")
      expect(yield* Effect.flip(compare({ runA: a, runB: missing }))).toMatchObject({
        _tag: "InputError",
        file: missing
      })
      const empty = Path.join(root, "empty")
      fs.mkdirSync(empty)
      const notRun = yield* Effect.flip(compare({ runA: empty, runB: a }))
      expect(notRun._tag).toBe("UsageError")
      expect(notRun.message).toContain("no manifest.json")
      const broken = writeRun(root, "broken", [runB])
      const rows = Path.join(broken, caseMetricsFile(1))
      fs.appendFileSync(rows, "{not json\n")
      expect(yield* Effect.flip(compare({ runA: a, runB: broken }))).toMatchObject({
        _tag: "InputError",
        file: rows,
        line: 21
      })
      const wrong = writeRun(root, "wrong", [runB])
      fs.appendFileSync(
        Path.join(wrong, caseMetricsFile(1)),
        JSON.stringify({ caseId: "c21", metrics: { composite: "high" } }) + "\n"
      )
      expect(yield* Effect.flip(compare({ runA: a, runB: wrong }))).toMatchObject({
        _tag: "InputError",
        file: Path.join(wrong, caseMetricsFile(1)),
        line: 21
      })
      const noRows = writeRun(root, "gone", [runB])
      fs.rmSync(Path.join(noRows, caseMetricsFile(1)))
      const gone = yield* Effect.flip(compare({ runA: a, runB: noRows }))
      expect(gone).toMatchObject({ _tag: "InputError", file: Path.join(noRows, caseMetricsFile(1)) })
      expect(gone.message).toContain("did not finish this iteration, or was made by an older rag-eval")
    }))

  it("formats p-values and deltas for verdicts", () => {
    expect([formatP(0.41), formatP(0.0034), formatP(0.00002), formatP(null)]).toEqual([
      "0.41",
      "0.003",
      "< 0.001",
      "n/a"
    ])
    // What rounds to zero is 0.000: never -0.000 (nor +0.000).
    expect([
      formatSigned(0.0623),
      formatSigned(-0.01),
      formatSigned(0),
      formatSigned(-0.0004),
      formatSigned(-0),
      formatSigned(0.0004)
    ]).toEqual(["+0.062", "-0.010", "0.000", "0.000", "0.000", "0.000"])
  })

  it.effect("two real rag-answers runs on the same questions: the worse answers lose on groundedness; the Command writes --output", () =>
    Effect.gen(function*() {
      const out = tempDir("rag-eval-compare-real-")
      const sample = Path.join(repoRoot, "test-sets/rag-answers/sample.csv")
      // Same questions, history and fragments; each answer replaced by one that ignores the fragments.
      const worse = Path.join(out, "worse.json")
      const pipeline = yield* Effect.promise(() => loadPipelineModule("rag-answers"))
      const a = yield* runWith(pipeline, HeuristicJudge.layer, { input: sample, outRoot: out })
      const cases = yield* Effect.sync(() => {
        const records = fs.readFileSync(Path.join(a.info.runDir, "records-iteration-1.jsonl"), "utf8").trim().split(
          "\n"
        ).map((l) => JSON.parse(l) as Rec)
        return records.map((r) => {
          const source = r["source"] as Record<string, string>
          return {
            ...source,
            "Assistant Answer": "Bananas are a good source of potassium and grow in warm tropical climates."
          }
        })
      })
      fs.writeFileSync(worse, JSON.stringify(cases))
      const b = yield* runWith(pipeline, HeuristicJudge.layer, { input: worse, outRoot: out })
      const { comparison } = yield* compare({ runA: a.info.runDir, runB: b.info.runDir })
      expect(comparison.cases).toBe(12)
      const grounded = comparison.metrics.find((m) => m.metric === "rag-answers/groundedness")!
      expect(grounded.delta!).toBeLessThan(0)
      expect(grounded.winner).toBe("A")
      expect(grounded.verdict).toMatch(/^A is better on rag-answers\/groundedness: -\d\.\d{3}, p = 0\.\d{3} \(t-test\)/)

      const report = Path.join(out, "comparison.md")
      const logged: Array<string> = []
      const log = vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
        logged.push(args.map(String).join(" "))
      })
      yield* Command.run(compareCommand, { name: "rag-eval", version: "0.0.0" })([
        "node",
        "rag-eval",
        a.info.runDir,
        b.info.runDir,
        "--metrics",
        "groundedness,composite",
        "--output",
        report,
        "--seed",
        "3"
      ]).pipe(Effect.provide(NodeContext.layer), Effect.ensuring(Effect.sync(() => log.mockRestore())))
      // 12 cases: 2¹² sign vectors are enumerated, so the other seed gives the same verdict.
      expect(logged[0]).toBe(grounded.verdict)
      expect(logged.at(-1)).toBe(`wrote ${report}`)
      const markdown = fs.readFileSync(report, "utf8")
      expect(markdown).toContain("| rag-answers/groundedness | 12 | 0 |")
      expect(markdown).toContain("seed 3")
    }))
})

describe("compare: refusals, default metrics, verdict wording, --fail-if-worse", () => {
  it.effect("runs of different pipelines are refused, naming both", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const rec = (id: string) => ({ caseId: id, metrics: { "ndcg@10": 0.5 } })
      const a = writeRun(root, "a", [ids.map(rec)], "course-retrieval")
      const b = writeRun(root, "b", [ids.map(rec)], "search-relevance")
      const e = yield* Effect.flip(compare({ runA: a, runB: b }))
      expect(e._tag).toBe("UsageError")
      expect(e.message).toContain("run A is course-retrieval and run B is search-relevance")
    }))

  it.effect("by default the metrics with a direction: a count that is neither better nor worse only when --metrics names it", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const rec = (id: string, i: number) => ({
        caseId: id,
        metrics: { "ndcg@10": 0.5 + (i % 3) * 0.1, irrelevantRate: 0.1, totalCourses: 4 }
      })
      const a = writeRun(root, "a", [ids.map(rec)], "course-retrieval")
      const b = writeRun(root, "b", [ids.map(rec)], "course-retrieval")
      const { comparison } = yield* compare({ runA: a, runB: b })
      expect(comparison.metrics.map((m) => m.metric)).toEqual(["irrelevantRate", "ndcg@10"])
      const named = yield* compare({ runA: a, runB: b, metrics: "totalCourses" })
      expect(named.comparison.metrics.map((m) => m.metric)).toEqual(["totalCourses"])
      // A gated metric is compared even when the default leaves it out.
      const gated = yield* compare({ runA: a, runB: b, failIfWorse: "totalCourses" })
      expect(gated.comparison.metrics.map((m) => m.metric)).toEqual(["irrelevantRate", "ndcg@10", "totalCourses"])
      expect(gated.worse).toEqual([])
    }))

  it.effect("significance is the randomisation test's; the verdict states both p-values and when the t-test or the CI disagrees", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      // Small consistent gains plus one large loss: the bootstrap CI and the tests can disagree.
      const n = 12
      const cids = Array.from({ length: n }, (_, i) => `q${i + 1}`)
      const xa = cids.map(() => 0.5)
      const xb = cids.map((_, i) => (i === 0 ? 0.0 : 0.56))
      const rec = (id: string, x: number) => ({ caseId: id, metrics: { "ndcg@10": x } })
      const a = writeRun(root, "a", [cids.map((id, i) => rec(id, xa[i]!))], "course-retrieval")
      const b = writeRun(root, "b", [cids.map((id, i) => rec(id, xb[i]!))], "course-retrieval")
      const { comparison } = yield* compare({ runA: a, runB: b })
      const m = comparison.metrics[0]!
      expect(m.verdict).toContain("(t-test)")
      expect(m.verdict).toContain("(randomisation)")
      const significant = m.randomisation.p! < 0.05
      expect(m.winner === "none").toBe(!significant)
      const ciExcludes = m.bootstrap.lower! > 0 || m.bootstrap.upper! < 0
      if (ciExcludes !== significant) expect(m.verdict).toMatch(/bootstrap CI .* (excludes|includes) 0/)
      if ((m.tTest.p! < 0.05) !== significant) expect(m.verdict).toContain("the t-test")
      expect(m.verdict).not.toContain("-0.000")
    }))

  it.effect("--fail-if-worse: B significantly worse on a listed metric fails with one line; better or unlisted passes", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      const a = writeRun(root, "a", [runB])
      const b = writeRun(root, "b", [runA])
      const worse = yield* compare({ runA: a, runB: b, failIfWorse: "groundedness" })
      expect(worse.worse).toHaveLength(1)
      expect(worse.worse[0]).toMatch(/^B is significantly worse than A on rag-answers\/groundedness: A is better/)
      const better = yield* compare({ runA: b, runB: a, failIfWorse: "groundedness" })
      expect(better.worse).toEqual([])
      const unknown = yield* Effect.flip(compare({ runA: a, runB: b, failIfWorse: "nosuch" }))
      expect(unknown.message).toContain("nosuch")
    }))

  it.effect("--fail-if-worse with too few paired cases to ever reject is refused (exit 2), naming the minimum and the count; one more case and it fails", () =>
    Effect.gen(function*() {
      const root = tempDir("rag-eval-compare-")
      // Every answer replaced by a useless one: B loses on every case, by different amounts.
      const cases = (n: number, worse: boolean) =>
        Array.from({ length: n }, (_, i) => rubric(`c${i + 1}`, worse ? 0 : 0.5 + i * 0.05, worse ? 0 : 0.75))
      const a5 = writeRun(root, "a5", [cases(5, false)])
      const b5 = writeRun(root, "b5", [cases(5, true)])
      const refused = yield* Effect.flip(compare({ runA: a5, runB: b5, failIfWorse: "composite" }))
      expect(refused._tag).toBe("UsageError")
      expect(refused.message).toContain(
        "--fail-if-worse cannot fail on composite: the randomisation test needs at least 6 paired cases to reach p < 0.05, and these runs have 5"
      )
      // Without the gate the comparison is still made: 0 wins, 5 losses, not significant.
      const plain = yield* compare({ runA: a5, runB: b5, metrics: "composite" })
      expect([plain.comparison.metrics[0]!.wins, plain.comparison.metrics[0]!.losses]).toEqual([0, 5])
      expect(plain.comparison.metrics[0]!.randomisation.p).toBe(0.0625)
      const a6 = writeRun(root, "a6", [cases(6, false)])
      const b6 = writeRun(root, "b6", [cases(6, true)])
      const gated = yield* compare({ runA: a6, runB: b6, failIfWorse: "composite" })
      expect(gated.comparison.metrics.find((m) => m.metric === "composite")!.randomisation.p).toBe(0.03125)
      expect(gated.worse).toHaveLength(1)
      expect(gated.worse[0]).toMatch(/^B is significantly worse than A on composite/)
      // The minimum follows --alpha: at 0.01, 8 cases.
      const strict = yield* Effect.flip(compare({ runA: a6, runB: b6, failIfWorse: "composite", alpha: 0.01 }))
      expect(strict.message).toContain("needs at least 8 paired cases to reach p < 0.01, and these runs have 6")
      // Cases with a null on either side are not paired, and the message says how many were left out.
      const withNull = writeRun(root, "b6null", [
        cases(6, true).map((r, i) => (i === 0 ? rubric("c1", null, null) : r))
      ])
      const left = yield* Effect.flip(compare({ runA: a6, runB: withNull, failIfWorse: "composite" }))
      expect(left.message).toContain("these runs have 5 (1 left out: null in a run)")
    }))
})
