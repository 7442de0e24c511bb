/**
 * CI gates on one scale: `--fail-under` / `--fail-over` parsed, resolved against the run's declared
 * metrics (name, range, direction, unit) and checked against its values. The declarations are the
 * built-in pipelines' own (course-retrieval's, a rubric run's).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { enforceGates, evaluateGates, parseAllGates, parseGates, resolveGates } from "../../src/domain/Gate.js"
import * as Metric from "../../src/domain/Metric.js"
import { courseMetricSpecs } from "../../src/kinds/course/CourseRetrieval.js"

const course = [
  ...courseMetricSpecs,
  Metric.count("failedJudgments", "judgments recorded as failed (never scored)"),
  Metric.count("retrievalFailures", "queries whose retrieval failed (no metrics)")
]
const rubric = [
  Metric.score("rag-answers/groundedness", "mean groundedness on 0–2", 0, 2),
  Metric.fraction("rag-answers/groundedness.normalised", "mean groundedness on 0–1"),
  Metric.score("rag-answers/clarity", "mean clarity on 0–4", 0, 4),
  Metric.fraction("rag-answers/clarity.normalised", "mean clarity on 0–1"),
  Metric.fraction("composite", "mean composite (0–1)"),
  Metric.count("failed", "judgments recorded as failed")
]
const search = [Metric.fraction("ndcg@10", "NDCG@10"), Metric.fraction("map", "MAP")]

const gates = (flag: "--fail-under" | "--fail-over", text: string, specs: ReadonlyArray<Metric.MetricSpec>) =>
  Effect.flatMap(parseGates(flag, text), (t) => resolveGates(t, specs))
const problem = (flag: "--fail-under" | "--fail-over", text: string, specs: ReadonlyArray<Metric.MetricSpec>) =>
  Effect.map(Effect.flip(gates(flag, text, specs)), (e) => e.message)

describe("parsing", () => {
  it.effect("metric=value lists, a % suffix, both flags in order; bad syntax names the part", () =>
    Effect.gen(function*() {
      expect(yield* parseGates("--fail-under", "composite=0.7, ndcg@10=50%")).toEqual([
        { flag: "--fail-under", metric: "composite", value: 0.7, percent: false },
        { flag: "--fail-under", metric: "ndcg@10", value: 50, percent: true }
      ])
      expect((yield* parseAllGates("composite=0.7", "failed=0"))?.map((t) => t.flag)).toEqual([
        "--fail-under",
        "--fail-over"
      ])
      expect(yield* parseAllGates(undefined, undefined)).toBeUndefined()
      expect((yield* Effect.flip(parseGates("--fail-under", "composite=0.7,ndcg@10"))).message).toContain(
        `"ndcg@10" is not metric=number`
      )
      expect((yield* Effect.flip(parseGates("--fail-over", "x=abc"))).message).toContain(
        "--fail-over: \"x=abc\" is not metric=number"
      )
      expect((yield* Effect.flip(parseGates("--fail-under", "x=%"))).message).toContain("not metric=number")
      expect((yield* Effect.flip(parseGates("--fail-under", " , "))).message).toContain("at least one")
    }))
})

describe("resolving against the declared metrics", () => {
  it.effect("names: exact, the only one equal ignoring case, a criterion's last segment", () =>
    Effect.gen(function*() {
      expect((yield* gates("--fail-under", "composite=0.7", rubric))[0]!.metric.name).toBe("composite")
      expect((yield* gates("--fail-under", "MAP=0.5", search))[0]!.metric.name).toBe("map")
      expect((yield* gates("--fail-under", "clarity=3", rubric))[0]!.metric.name).toBe("rag-answers/clarity")
      expect((yield* gates("--fail-under", "clarity.normalised=0.75", rubric))[0]!.metric.name).toBe(
        "rag-answers/clarity.normalised"
      )
    }))

  it.effect("an unknown name: exit-2 error with the nearest declared name and every metric with its scale", () =>
    Effect.gen(function*() {
      const typo = yield* problem("--fail-under", "groundednes=1", rubric)
      expect(typo).toContain(
        `no metric "groundednes" in this run (did you mean rag-answers/groundedness?); its metrics: `
      )
      expect(typo).toContain("composite (a fraction, 0–1, higher is better)")
      expect(typo).toContain("rag-answers/clarity (0–4, higher is better)")
      const far = yield* problem("--fail-under", "ndcg@10=0.5", rubric)
      expect(far).toContain(`no metric "ndcg@10" in this run; its metrics`)
      expect(far).not.toContain("did you mean")
      expect(yield* problem("--fail-under", "averagePrecision=0.5", search)).toContain(`no metric "averagePrecision"`)
      expect(yield* problem("--fail-under", "x=1", [])).toContain("declares no headline metrics")
    }))

  it.effect("direction: --fail-under on lower-is-better is refused naming --fail-over, and the other way round; neither-way metrics take both", () =>
    Effect.gen(function*() {
      const under = yield* problem("--fail-under", "irrelevantRate=0.1", course)
      expect(under).toBe(
        "--fail-under irrelevantRate=0.1: lower is better for irrelevantRate, so its gate is --fail-over irrelevantRate=… (exit 1 when it is above)"
      )
      expect(yield* problem("--fail-under", "failed=1", rubric)).toContain("--fail-over failed=…")
      const over = yield* problem("--fail-over", "ndcg@10=0.9", course)
      expect(over).toContain("higher is better for ndcg@10, so its gate is --fail-under ndcg@10=…")
      expect((yield* gates("--fail-over", "irrelevantRate=0.1", course))[0]!.limit).toBe(0.1)
      expect((yield* gates("--fail-under", "totalCourses=5", course))[0]!.limit).toBe(5)
      expect((yield* gates("--fail-over", "totalCourses=50", course))[0]!.limit).toBe(50)
    }))

  it.effect("scale: a rate is a fraction or an explicit %; a value off the metric's range is refused saying the range", () =>
    Effect.gen(function*() {
      expect((yield* gates("--fail-under", "highlyRelevantRate=50%", course))[0]!.limit).toBe(0.5)
      expect((yield* gates("--fail-under", "highlyRelevantRate=0.5", course))[0]!.limit).toBe(0.5)
      expect(yield* problem("--fail-under", "highlyRelevantRate=50", course))
        .toBe(
          "--fail-under highlyRelevantRate=50: highlyRelevantRate is a fraction, 0–1 (a percentage needs %); write 0.5 or 50%"
        )
      expect(yield* problem("--fail-under", "highlyRelevantRate=150%", course)).toContain("is a fraction, 0–1")
      expect(yield* problem("--fail-under", "groundedness=3", rubric))
        .toBe(
          "--fail-under groundedness=3: rag-answers/groundedness is on 0–2 (or gate rag-answers/groundedness.normalised, on 0–1)"
        )
      expect(yield* problem("--fail-under", "groundedness=80%", rubric)).toContain(
        "rag-answers/groundedness is a score on 0–2, not a rate: give it without %"
      )
      expect(yield* problem("--fail-over", "failed=5%", rubric)).toContain("failed is a count (≥ 0), not a rate")
      expect(yield* problem("--fail-over", "failed=-1", rubric)).toContain("failed is on ≥ 0")
      expect((yield* gates("--fail-under", "groundedness=1.5", rubric))[0]!.limit).toBe(1.5)
    }))
})

describe("checking", () => {
  it.effect("under: below fails, equal passes; over: above fails, equal passes; no value fails; lines say the value as the gate was written", () =>
    Effect.gen(function*() {
      const resolved = yield* gates("--fail-under", "composite=0.7,clarity=3,highlyRelevantRate=50%", [
        ...rubric,
        ...course
      ])
      const over = yield* gates("--fail-over", "irrelevantRate=10%,failed=0", [...rubric, ...course])
      const results = evaluateGates([...resolved, ...over], {
        composite: 0.7,
        "rag-answers/clarity": 2.5,
        highlyRelevantRate: 0.098,
        irrelevantRate: 0.25,
        failed: 0
      })
      expect(results.map((r) => r.met)).toEqual([true, false, false, false, true])
      const failed = yield* Effect.flip(enforceGates(results))
      expect(failed.failures).toEqual([
        "--fail-under: rag-answers/clarity = 2.5, below 3",
        "--fail-under: highlyRelevantRate = 9.8%, below 50%",
        "--fail-over: irrelevantRate = 25%, above 10%"
      ])
      const none = evaluateGates(yield* gates("--fail-over", "failed=0", rubric), { failed: null })
      expect(none[0]!.met).toBe(false)
      expect((yield* Effect.flip(enforceGates(none))).failures).toEqual(["--fail-over: failed = no value, above 0"])
      yield* enforceGates(evaluateGates(yield* gates("--fail-under", "composite=0.5", rubric), { composite: 0.5 }))
    }))
})
