/**
 * Score stage of answer-correctness: a case's judgments read back as claims with verdicts
 * (`Claims.caseClaims`) and turned into RAGChecker's and AutoNuggetizer's metrics
 * (`metrics/claims.ts`). Each metric is declared once here (name, range, direction) for the
 * per-case file, compare, reports and gates.
 */
import { type EvalCase, recordOrigin } from "../../domain/Case.js"
import type { Judgment } from "../../domain/Judgment.js"
import * as Metric from "../../domain/Metric.js"
import type { MetricSpec } from "../../domain/Metric.js"
import type { PerCaseMetrics, ScoreStage } from "../../engine/Pipeline.js"
import { type ClaimMetrics, claimMetrics } from "../../metrics/claims.js"
import { judgmentTokens, type Tokens } from "../../pricing/Prices.js"
import { allSources, type CaseClaims, caseClaims, type ClaimRubrics, type ClaimSources } from "./Claims.js"

/** The claim metrics, declared once: name, meaning, range and direction. */
export const claimMetricSpecs: ReadonlyArray<MetricSpec> = [
  Metric.fraction("precision", "share of the answer's claims the reference entails"),
  Metric.fraction("recall", "share of the reference's claims the answer entails"),
  Metric.fraction("f1", "harmonic mean of claim precision and recall"),
  Metric.fraction("faithfulness", "share of the answer's claims some context entails"),
  Metric.fraction(
    "ungrounded",
    "mean over the answer's claims of 1 − their best support in a context, the judge's graded support where it gives one (else 1 − faithfulness): the hallucination score without a reference",
    "lower"
  ),
  Metric.fraction("contextRecall", "share of the reference's claims some context entails"),
  Metric.fraction("contextPrecision", "share of contexts that entail at least one reference claim"),
  Metric.fraction("contextUtilization", "of the reference claims the contexts held, the share the answer states"),
  Metric.fraction("hallucination", "share of answer claims that are wrong and in no context", "lower"),
  Metric.count(
    "unsupportedClaims",
    "answer claims that no text of the case (the reference, any context) entails — the count beside the ratios"
  ),
  Metric.fraction(
    "selfKnowledge",
    "share of answer claims that are right but in no context (the model knew them)",
    "none"
  ),
  Metric.fraction(
    "noiseSensitivityRelevant",
    "share of answer claims that are wrong and taken from a relevant context",
    "lower"
  ),
  Metric.fraction(
    "noiseSensitivityIrrelevant",
    "share of answer claims that are wrong and taken only from irrelevant contexts",
    "lower"
  ),
  Metric.fraction("nuggetRecall", "share of nuggets the answer supports fully (strict)"),
  Metric.fraction("nuggetRecallPartial", "nuggets supported, partial support counting ½"),
  Metric.fraction(
    "vitalNuggetRecall",
    "share of vital nuggets the answer supports fully (TREC RAG 2024's primary score)"
  ),
  Metric.fraction("vitalNuggetRecallPartial", "vital nuggets supported, partial support counting ½")
]

/** The per-case verdicts beside the claim metrics: whether the answer abstained, and whether the case passed. */
export const verdictMetricSpecs: ReadonlyArray<MetricSpec> = [
  Metric.fraction(
    "abstained",
    "share of answers that abstain (\"I don't know\", \"the passages do not say\"): words but no claim",
    "none"
  ),
  Metric.fraction("passRate", "share of cases that pass every --pass-if threshold that applies to them")
]

/** The metrics of a case: the claim metrics and the verdicts. */
export interface CorrectnessMetrics extends ClaimMetrics {
  /** 1 when the answer abstains, 0 when it states a claim; null when its claims are unknown. */
  readonly abstained: number | null
  /** 1 when the case passes its thresholds, 0 when it fails one; null when none applies (or it was not judged). */
  readonly passRate: number | null
}

export const correctnessMetricSpecs: ReadonlyArray<MetricSpec> = [...claimMetricSpecs, ...verdictMetricSpecs]

export const claimMetricNames = correctnessMetricSpecs.map((m) => m.name) as ReadonlyArray<keyof CorrectnessMetrics>

/** One threshold of `--pass-if`: a declared per-case metric, a comparison and a value on its scale. */
export interface PassCondition {
  readonly metric: keyof CorrectnessMetrics
  readonly op: ">=" | ">" | "<=" | "<" | "="
  readonly value: number
}

/** The default thresholds (`--pass-if`): F1 ≥ 0.5, faithfulness ≥ 0.5 and no hallucinated claim, each where the case has it. */
export const DEFAULT_PASS_IF = "f1>=0.5,faithfulness>=0.5,hallucination<=0"

const CONDITION = /^\s*([A-Za-z@0-9]+)\s*(>=|<=|>|<|=)\s*(-?\d+(?:\.\d+)?)\s*$/

/** `f1>=0.5,hallucination<=0` → conditions, or the problem with the first one that is not one. */
export const parsePassIf = (text: string): { conditions: ReadonlyArray<PassCondition> } | { problem: string } => {
  const conditions: Array<PassCondition> = []
  for (const part of text.split(",")) {
    if (part.trim() === "") continue
    const m = CONDITION.exec(part)
    if (m === null) {
      return { problem: `"${part.trim()}" is not METRIC OP VALUE (OP one of >=, >, <=, <, =), e.g. f1>=0.5` }
    }
    const name = claimMetricNames.find((n) => n.toLowerCase() === m[1]!.toLowerCase())
    if (name === undefined || name === "passRate") {
      return {
        problem: `"${m[1]}" is not a per-case metric of answer-correctness (one of ${
          claimMetricNames.filter((n) => n !== "passRate").join(", ")
        })`
      }
    }
    conditions.push({ metric: name, op: m[2] as PassCondition["op"], value: Number(m[3]) })
  }
  return conditions.length === 0 ? { problem: "no threshold given" } : { conditions }
}

const holdsFor = (x: number, c: PassCondition): boolean =>
  c.op === ">=" ? x >= c.value : c.op === ">" ? x > c.value : c.op === "<=" ? x <= c.value : c.op === "<" ?
    x < c.value
    : x === c.value

/**
 * A case's verdict: fail when a threshold that applies (its metric is not null) does not hold, pass
 * when every one that applies holds, none when no threshold applies or the case was not judged.
 */
export const passVerdict = (
  metrics: CorrectnessMetrics,
  conditions: ReadonlyArray<PassCondition>,
  unread: boolean
): { readonly pass: boolean; readonly why: string } | undefined => {
  if (unread) return undefined
  const applied = conditions.flatMap((c) => {
    const x = metrics[c.metric]
    return x === null ? [] : [{ c, x, ok: holdsFor(x, c) }]
  })
  if (applied.length === 0) return undefined
  const failed = applied.filter((a) => !a.ok)
  const show = (a: (typeof applied)[number]) =>
    `${a.c.metric} ${Number.isInteger(a.x) ? a.x : a.x.toFixed(2)} ${a.ok ? "" : "not "}${a.c.op} ${a.c.value}`
  return failed.length === 0
    ? { pass: true, why: applied.map(show).join(", ") }
    : { pass: false, why: failed.map(show).join(", ") }
}

/** Metrics a record ranks by, first known wins: F1 against a reference, else faithfulness, else nugget recall. */
export const headlineOf = (m: ClaimMetrics): number | null => m.f1 ?? m.faithfulness ?? m.nuggetRecall

export interface CorrectnessRecord {
  readonly caseId: string
  readonly ordinal: number
  readonly line: number
  readonly iteration: number
  readonly question: string
  readonly answer: string
  readonly reference?: string | undefined
  /** The contexts' texts, in order (what `context:<k>` in the claims refers to). */
  readonly contexts: ReadonlyArray<string>
  readonly source: Readonly<Record<string, unknown>>
  readonly claims: CaseClaims
  readonly metrics: CorrectnessMetrics
  /** Pass or fail by the run's thresholds (`--pass-if`), with why; absent when none applies or the case was not judged. */
  readonly verdict?: { readonly pass: boolean; readonly why: string } | undefined
  /** F1, else faithfulness, else nugget recall: what reports rank the case by (null: none known). */
  readonly score: number | null
  /** Judgments recorded as failed. */
  readonly failed: number
  readonly failures: ReadonlyArray<
    { readonly criterion: string; readonly target: string; readonly reason: string; readonly raw?: string | undefined }
  >
  readonly tokens: Tokens
}

const defaultPassIf: ReadonlyArray<PassCondition> = (parsePassIf(DEFAULT_PASS_IF) as {
  conditions: ReadonlyArray<PassCondition>
}).conditions

export const correctnessCaseMetrics: PerCaseMetrics<CorrectnessRecord> = {
  declared: () => [
    ...correctnessMetricSpecs,
    Metric.fraction("score", "the case's F1, else faithfulness, else nugget recall (what reports rank by)")
  ],
  of: (r) => ({
    caseId: r.caseId,
    line: r.line,
    metrics: { ...r.metrics, score: r.score },
    // A case the judge did not read (not English, for the heuristic judge) is counted apart, not failed.
    failed: r.failed > 0 || (r.score === null && r.claims.unread === undefined)
  }),
  rank: { by: ["score"], keep: 10 }
}

/** The record of one case: claims with verdicts, metrics, failures and tokens. */
export const correctnessRecord = (
  c: EvalCase,
  judgments: ReadonlyArray<Judgment>,
  iteration: number,
  rubrics: ClaimRubrics,
  sources: ClaimSources = allSources,
  passIf: ReadonlyArray<PassCondition> = defaultPassIf
): CorrectnessRecord => {
  const claims = caseClaims(c, judgments, rubrics, sources)
  // One object, the claim metrics' own, extended in place (no copy of its fields: a record is built
  // for every case): the verdict reads the metrics (passRate not yet known), then passRate is set.
  const metrics = claimMetrics(claims.verdicts) as { -readonly [K in keyof CorrectnessMetrics]: CorrectnessMetrics[K] }
  metrics.abstained = claims.abstained === null ? null : +claims.abstained
  metrics.passRate = null
  const verdict = passVerdict(metrics, passIf, claims.unread !== undefined)
  metrics.passRate = verdict === undefined ? null : +verdict.pass
  const failures: CorrectnessRecord["failures"][number][] = []
  for (const j of judgments) {
    if (j.status !== "failed") continue
    failures.push({
      criterion: j.criterion,
      target: j.target,
      reason: j.reason,
      ...(j.raw === undefined ? {} : { raw: j.raw })
    })
  }
  // Written as one literal in the record's field order; an absent reference or verdict is an
  // undefined field, which JSON leaves out as it did the conditional spreads.
  return {
    ...recordOrigin(c, iteration),
    question: c.question,
    answer: c.answer ?? "",
    reference: c.reference,
    contexts: sources.contexts ? c.passages.map((p) => p.text) : [],
    source: c.source,
    claims,
    metrics,
    verdict,
    score: headlineOf(metrics),
    failed: failures.length,
    failures,
    tokens: judgmentTokens(judgments)
  }
}

export const correctnessScore = (
  rubrics: ClaimRubrics,
  passIf: ReadonlyArray<PassCondition> = defaultPassIf
): ScoreStage<CorrectnessRecord> => ({
  perCase: correctnessCaseMetrics,
  grades: (r) => ({ caseId: r.caseId, grades: { ...r.metrics } }),
  score: (c, judgments, iteration) => correctnessRecord(c, judgments, iteration, rubrics, allSources, passIf)
})
