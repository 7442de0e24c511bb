/**
 * People's answer labels against a run's judge, on hand-made judgments whose figures are computed
 * by hand (claims: κ, balanced accuracy; metrics: r; preferences: RAGChecker's protocol with the
 * median fill). Targets are built with `judges/claims/Targets.ts`, the module the pipelines write
 * them with, so a change of their format fails here.
 */
import { describe, expect, it } from "vitest"
import { type AnswerInputs, calibrateAnswers, type RunMetrics } from "../../src/calibrate/Answers.js"
import type { LabelLine } from "../../src/calibrate/LabelFile.js"
import { addClaimJudgment, contextsVerdict, parseClaimTarget, type RunClaims } from "../../src/calibrate/RunClaims.js"
import type { Label, LabelTarget, LabelValue } from "../../src/domain/Label.js"
import { claimRef, claimTarget, contextOf, extractionTarget } from "../../src/judges/claims/Targets.js"
import { pearson } from "../../src/stats/RankCorrelation.js"

const judge = (claims: RunClaims, caseId: string, target: string, score: number | null, value?: unknown, line = 1) =>
  addClaimJudgment(
    claims,
    { caseId, status: score === null ? "failed" : "ok", score, reason: "r", value },
    parseClaimTarget(target)!,
    line
  )

let line = 0
const label = (caseId: string, target: LabelTarget, value: LabelValue, extra: Partial<Label> = {}): LabelLine => ({
  line: ++line,
  label: { caseId, target, label: value, by: "ann", at: "", ...extra }
})
const claim = (
  caseId: string,
  index: number,
  verdict: "entailed" | "neutral" | "contradicted",
  against: "reference" | "contexts" | { context: number } = "reference",
  text?: string
) =>
  label(caseId, { kind: "claim", side: "answer", index, against, ...(text === undefined ? {} : { text }) }, {
    verdict
  })

const options = { seed: 1, resamples: 200 }

describe("claim targets", () => {
  it("parses what Targets.ts writes, and nothing else", () => {
    expect(parseClaimTarget(extractionTarget("reference"))).toEqual({ kind: "extraction", side: "reference" })
    expect(parseClaimTarget(claimTarget(claimRef("answer", 2, "reference")))).toEqual({
      kind: "check",
      side: "answer",
      index: 3,
      against: "reference"
    })
    expect(parseClaimTarget(claimTarget(claimRef("reference", 0, contextOf(1))))).toEqual({
      kind: "check",
      side: "reference",
      index: 1,
      against: "context:2"
    })
    expect(parseClaimTarget(claimTarget(claimRef("nugget", 4, "answer")))).toEqual({ kind: "nugget", index: 5 })
    for (const other of ["answer", "hit:d1", "claims:question", "reference/answer:0"]) {
      expect(parseClaimTarget(other)).toBeUndefined()
    }
  })

  it("the contexts together: entailed if one entails, else contradicted if one contradicts, else neutral", () => {
    const claims: RunClaims = new Map()
    judge(claims, "c", claimTarget(claimRef("answer", 0, contextOf(0))), 1)
    judge(claims, "c", claimTarget(claimRef("answer", 0, contextOf(1))), 0)
    judge(claims, "c", claimTarget(claimRef("answer", 1, contextOf(0))), 0)
    judge(claims, "c", claimTarget(claimRef("answer", 1, contextOf(1))), 2)
    judge(claims, "c", claimTarget(claimRef("answer", 2, contextOf(0))), null)
    judge(claims, "c", claimTarget(claimRef("answer", 2, contextOf(1))), 1)
    const c = claims.get("c")!
    expect(contextsVerdict(c, "answer", 1)?.score).toBe(0)
    expect(contextsVerdict(c, "answer", 2)?.score).toBe(2)
    expect(contextsVerdict(c, "answer", 3)?.score).toBeNull()
    expect(contextsVerdict(c, "answer", 4)).toBeUndefined()
  })
})

describe("claim verdicts", () => {
  // Ten claims of five cases, verdicts against the reference (human → judge):
  // contradicted → contradicted, neutral · neutral → neutral, neutral, entailed, entailed ·
  // entailed → neutral, entailed, entailed, entailed.
  const human = [0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
  const judged = [0, 1, 1, 1, 2, 2, 1, 2, 2, 2]
  const names = ["contradicted", "neutral", "entailed"] as const
  const claims: RunClaims = new Map()
  const labels: Array<LabelLine> = []
  human.forEach((h, i) => {
    const caseId = `c${Math.floor(i / 2)}`
    const n = i % 2
    if (n === 0) judge(claims, caseId, extractionTarget("answer"), 2, [`claim ${i}`, `claim ${i + 1}`])
    judge(claims, caseId, claimTarget(claimRef("answer", n, "reference")), judged[i]!)
    labels.push(claim(caseId, n + 1, names[h]!))
  })

  it("κ, balanced accuracy, per-verdict precision and recall, the confusion matrix — by hand", () => {
    const a = calibrateAnswers({ runId: "r", claims, labels }, options)
    const v = a.claims!
    expect(v.pairs).toBe(10)
    expect(v.confusion).toEqual([[1, 1, 0], [0, 2, 2], [0, 1, 3]])
    // p_o = 0.6, p_e = (2·1 + 4·4 + 4·5)/100 = 0.38
    expect(v.cohenKappa.value).toBeCloseTo((0.6 - 0.38) / 0.62, 12)
    expect(v.balancedAccuracy.value).toBeCloseTo((1 / 2 + 2 / 4 + 3 / 4) / 3, 12)
    expect(v.binaryBalancedAccuracy.value).toBeCloseTo((3 / 4 + 4 / 6) / 2, 12)
    expect(v.perValue.map((p) => [p.value, p.judge, p.human, p.precision.value, p.recall.value])).toEqual([
      ["contradicted", 1, 2, 1, 0.5],
      ["neutral", 4, 4, 0.5, 0.5],
      ["entailed", 5, 4, 0.6, 0.75]
    ])
    expect(v.cohenKappa.ci).not.toBeNull()
    expect(v.cohenKappa.narrowing.halfWidth).toBe(0.1)
    expect(a.unpaired.count).toBe(0)
  })

  it("nothing dropped: every label that makes no pair is listed with why", () => {
    const more = new Map(claims)
    judge(more, "f", extractionTarget("answer"), null)
    judge(more, "g", extractionTarget("answer"), 1, ["The sky is blue."])
    judge(more, "g", claimTarget(claimRef("answer", 0, "reference")), null, undefined, 9)
    const extra = [
      claim("zz", 1, "entailed"),
      claim("f", 1, "entailed"),
      claim("c0", 3, "entailed"),
      claim("c0", 1, "entailed", "reference", "Something else entirely"),
      claim("c0", 1, "entailed", "contexts"),
      claim("g", 1, "neutral"),
      label("c0", { kind: "claim", side: "answer", index: 1, against: "reference" }, { value: 1 }),
      label("c0", { kind: "claim", side: "answer", index: 1, against: "reference" }, { verdict: "neutral" }, {
        runId: "elsewhere"
      })
    ]
    const a = calibrateAnswers({ runId: "r", claims: more, labels: [...labels, ...extra] }, options)
    expect(a.claims!.pairs).toBe(10)
    expect(a.unpaired.items.map((u) => u.reason)).toEqual([
      "the run has no claim judgments of this case",
      expect.stringMatching(/^the judge's extraction of the answer's claims failed/),
      "the judge extracted 2 answer claim(s), not 3",
      `the judge's answer claim 1 reads differently ("claim 0") and no other reads "Something else entirely"`,
      "the run did not check this claim against any context",
      "the judge's check failed: no verdict (journal line 9)",
      "a claim label gives a verdict, this one gives value",
      "made on run elsewhere's claims, without the claim's text to find it in this run"
    ])
    expect(a.labels.claim).toBe(18)
  })

  it("a label with the claim's text finds the judge's claim that reads the same", () => {
    const a = calibrateAnswers({
      runId: "r",
      claims,
      labels: [claim("c0", 1, "neutral", "reference", "Claim 1.")]
    }, options)
    // "claim 1" is the judge's second claim of c0, judged neutral.
    expect(a.claims!.confusion).toEqual([[0, 0, 0], [0, 1, 0], [0, 0, 0]])
  })
})

const metricsRun = (runId: string, rows: Record<string, Record<string, number | null>>): RunMetrics => ({
  dir: `out/${runId}`,
  runId,
  cases: new Map(Object.entries(rows)),
  metrics: [{ name: "f1", direction: "higher" }, { name: "hallucination", direction: "lower" }, {
    name: "claims",
    direction: "none"
  }]
})

describe("metric values", () => {
  it("Pearson's r of the run's values with the people's, by case; a null value is unpaired", () => {
    const run = metricsRun("r", {
      a: { f1: 0.2, hallucination: 0 },
      b: { f1: 0.5, hallucination: 0.5 },
      c: { f1: 0.9, hallucination: 0 },
      d: { f1: null, hallucination: 1 }
    })
    const labels = [
      label("a", { kind: "metric", metric: "F1" }, { value: 0 }),
      label("b", { kind: "metric", metric: "f1" }, { value: 1 }),
      label("c", { kind: "metric", metric: "f1" }, { value: 1 }),
      label("d", { kind: "metric", metric: "f1" }, { value: 1 }),
      label("a", { kind: "metric", metric: "recall" }, { value: 1 }),
      label("a", { kind: "metric", metric: "f1" }, { agree: true }, { judged: 0.2, by: "bob" })
    ]
    const a = calibrateAnswers({ runId: "r", claims: new Map(), metrics: run, labels }, options)
    expect(a.metrics).toHaveLength(1)
    // bob's agreement counts as his value 0.2 of case a
    expect(a.metrics[0]!.pairs).toBe(4)
    expect(a.metrics[0]!.pearson.value).toBeCloseTo(pearson([0.2, 0.2, 0.5, 0.9], [0, 0.2, 1, 1]).value!, 12)
    expect(a.unpaired.items.map((u) => u.reason)).toEqual([
      "the run's f1 of this case is null (the case cannot have it)",
      "the run has no per-case metric \"recall\" (it has f1, hallucination, claims)"
    ])
  })
})

describe("preferences (RAGChecker's meta-evaluation protocol)", () => {
  it("delta = metric(B) − metric(A), negated when lower is better, the median for a missing one, repeated per label", () => {
    const run = metricsRun("r", {
      p1: { f1: 0.2, hallucination: 0.5 },
      q1: { f1: 0.8, hallucination: 0 },
      p2: { f1: 0.6, hallucination: 0 },
      q2: { f1: 0.5, hallucination: 0.25 },
      p3: { f1: null, hallucination: 0 },
      q3: { f1: 0.4, hallucination: 0 },
      p4: { f1: 0.3, hallucination: 1 },
      q4: { f1: 0.9, hallucination: 0 }
    })
    const pref = (a: string, b: string, p: -2 | -1 | 0 | 1 | 2, by = "ann") =>
      label(a, { kind: "preference", other: { runId: "r", caseId: b } }, { preference: p }, { by })
    const labels = [
      pref("p1", "q1", 2),
      pref("p1", "q1", 1, "bob"),
      pref("p2", "q2", -1),
      pref("p3", "q3", 0),
      // Written the other way round: B, A with the preference negated is the same label.
      pref("q4", "p4", -2)
    ]
    const a = calibrateAnswers({ runId: "r", claims: new Map(), metrics: run, labels }, options)
    const rows = a.preferences!.rows
    expect(rows.map((r) => r.metric)).toEqual(["f1", "hallucination"])
    // f1 deltas: 0.6, −0.1, missing → median(0.6, −0.1, 0.6) = 0.6, 0.6; repeated per label
    const f1 = rows[0]!
    expect([f1.pairs, f1.labels, f1.filled]).toEqual([4, 5, 1])
    expect(f1.pearson.value).toBeCloseTo(pearson([0.6, 0.6, -0.1, 0.6, 0.6], [2, 1, -1, 0, 2]).value!, 12)
    // hallucination: lower is better, so delta = −(B − A): 0.5, −0.25, 0, 1
    expect(rows[1]!.pearson.value).toBeCloseTo(pearson([0.5, 0.5, -0.25, 0, 1], [2, 1, -1, 0, 2]).value!, 12)
    expect(rows[1]!.direction).toBe("lower")
    expect(a.preferences!.runs).toEqual([{ dir: "out/r", runId: "r" }])
  })

  it("across runs: B's answer is the other run's; a run not given is unpaired, naming the flag", () => {
    const a = metricsRun("a", { c1: { f1: 0.2, hallucination: 0 }, c2: { f1: 0.5, hallucination: 0 } })
    const b = metricsRun("b", { c1: { f1: 0.7, hallucination: 0 }, c2: { f1: 0.4, hallucination: 0 } })
    const across = (caseId: string, p: -2 | -1 | 0 | 1 | 2, runId = "b") =>
      label(caseId, { kind: "preference", other: { runId } }, { preference: p })
    const inputs: AnswerInputs = {
      runId: "a",
      claims: new Map(),
      metrics: a,
      others: [b],
      labels: [across("c1", 2), across("c2", -1), across("c1", 1, "c")]
    }
    const result = calibrateAnswers(inputs, options)
    const f1 = result.preferences!.rows.find((r) => r.metric === "f1")!
    expect(f1.pairs).toBe(2)
    expect(f1.pearson.value).toBeCloseTo(1, 12)
    expect(result.unpaired.items.map((u) => u.reason)).toEqual([
      "compares with run c: give its directory with --runs DIR"
    ])
  })
})

describe("agree-only labels", () => {
  it("a disagreement on a three-value scale has no value to pair: counted with the share that agree", () => {
    const claims: RunClaims = new Map()
    judge(claims, "c", extractionTarget("answer"), 1, ["x"])
    judge(claims, "c", claimTarget(claimRef("answer", 0, "reference")), 1)
    const on = { kind: "claim", side: "answer", index: 1, against: "reference" } as const
    const a = calibrateAnswers({
      runId: "r",
      claims,
      labels: [
        label("c", on, { agree: false }, { judged: "neutral" }),
        label("c", on, { agree: true }, { judged: "neutral", by: "bob" }),
        label("c", on, { agree: true }, { by: "eve" })
      ]
    }, options)
    // bob's agreement carries his verdict (neutral): a pair. ann's disagreement and eve's bare agreement do not.
    expect(a.claims!.pairs).toBe(1)
    expect(a.agreeOnly).toMatchObject({ labels: 2, agreed: 1, share: { value: 0.5 } })
  })
})
