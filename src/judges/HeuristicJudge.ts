/**
 * The offline judge: every rubric is scored by the lexical proxy its `heuristic` field names
 * (`Heuristic.ts`). No network, no key, no randomness — and labelled as a heuristic in every report,
 * because its scores are term-overlap proxies, not an LLM's reading.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { HEURISTIC_PROVIDER, heuristicTraits } from "../domain/JudgeTraits.js"
import { type JudgeTask, type ListJudgeTask, noUsage, type Verdict } from "../domain/Judgment.js"
import { listHeuristics, pointHeuristics } from "./claims/ClaimHeuristics.js"
import { heuristics } from "./Heuristic.js"
import { Judge } from "./Judge.js"
import { synthesizeHeuristics } from "./synthesize/Heuristics.js"

export const provider = HEURISTIC_PROVIDER
/**
 * The heuristic's version: its name is in every judgment key and run id, so a run resumed after the
 * heuristic changed judges afresh instead of mixing old and new verdicts. v2: relevance grades from
 * the pool-based relevance model (RelevanceModel.ts). v3: claim checks do not read web addresses;
 * sentences do not end after "et al.", "cf.", "Jr.", "Sr."; a claim naming two things needs a
 * sentence naming both; a figure stated otherwise contradicts when the rest of the claim is supported.
 * v4: an answer's claim checked against a retrieved passage counts the passage's phrases (grounding);
 * a reference's claim or a nugget weighs its terms alike; no clause cut inside "8 minutes and 20 seconds";
 * a negation reaches its own clause of the evidence sentence.
 * v5: texts not in English are not judged (no verdict, the reason given); abstentions are not claims;
 * citation markers of every common form ("(Source 2)", "passage 3") are removed; number words up to
 * ninety-nine and units by one name ("5 TB" = "5 terabytes"); an opening list number is no figure;
 * evidence quoted verbatim; each check names what it found.
 * v6: rules the leave-one-dataset-out protocol does not support are gone (names must agree, names
 * together, a figure conflict judged on the rest of the claim, list items read with their lead-in);
 * each check's value carries its support (answer-correctness' `ungrounded`).
 */
export const model = "lexical-v7"
export const label = "heuristic judge (lexical, deterministic — not an LLM)"

/** Confidence reported when a rubric asks for one and the heuristic computes none: a proxy is never sure. */
const defaultConfidence = 2

/** The scale value nearest to `score` (ties go to the lower value), so a verdict is always a valid choice. */
const nearestScaleValue = (score: number, values: ReadonlyArray<number>): number => {
  let best = values[0] ?? score
  for (const v of values) {
    const d = Math.abs(v - score)
    const bestD = Math.abs(best - score)
    if (d < bestD || (d === bestD && v < best)) best = v
  }
  return best
}

const failed = (reason: string): Verdict => ({
  status: "failed",
  failure: "judge",
  score: null,
  reason,
  usage: noUsage,
  attempts: 0
})

/** Judge one task synchronously (the runner batches local judges; also handy for benchmarks). */
export const verdict = (task: JudgeTask): Verdict => {
  const rubric = task.rubric
  // A user's rubric names no heuristic (the runner refuses it with this judge before the run).
  if (rubric.heuristic === undefined) {
    return failed(`rubric "${rubric.id}" names no heuristic: the heuristic judge cannot judge it (use an LLM provider)`)
  }
  const claims = pointHeuristics[rubric.heuristic] ?? synthesizeHeuristics[rubric.heuristic]
  if (claims !== undefined) return claims(task)
  const heuristic = heuristics[rubric.heuristic]
  if (heuristic === undefined) {
    return failed(
      `unknown heuristic "${rubric.heuristic}" for rubric "${rubric.id}" (known: ${Object.keys(heuristics).join(", ")})`
    )
  }
  const result = heuristic(task.vars, { min: rubric.min, max: rubric.max }, { pool: task.pool })
  if (!Number.isFinite(result.score)) {
    return failed(
      `heuristic "${rubric.heuristic}" produced no finite score for rubric "${rubric.id}": ${result.reason}`
    )
  }
  const clamped = Math.min(rubric.max, Math.max(rubric.min, result.score))
  const score = nearestScaleValue(clamped, rubric.scale.map((v) => v.score))
  const confidence = rubric.confidence
    ? Math.min(5, Math.max(1, Math.round(result.confidence ?? defaultConfidence)))
    : undefined
  return {
    status: "ok",
    score,
    ...(confidence === undefined ? {} : { confidence }),
    reason: result.reason,
    usage: noUsage,
    attempts: 0
  }
}

/**
 * Listwise: a claim check judges its items together (against one text); the other heuristics have
 * no context to share, so each item is judged on its own variables.
 */
export const listVerdicts = (task: ListJudgeTask): ReadonlyArray<Verdict> =>
  (task.rubric.heuristic === undefined ? undefined : listHeuristics[task.rubric.heuristic]?.(task)) ??
    task.items.map((item) => verdict({ ...task, target: item.target, vars: { ...task.vars, ...item.vars } }))

export const make: Effect.Effect<Judge["Type"]> = Effect.sync(() => ({
  provider,
  model,
  label,
  params: {},
  traits: heuristicTraits,
  judge: (task: JudgeTask) => Effect.sync(() => verdict(task)),
  judgeList: (task: ListJudgeTask) => Effect.sync(() => listVerdicts(task)),
  sync: { judge: verdict, judgeList: listVerdicts }
}))

export const layer: Layer.Layer<Judge> = Layer.effect(Judge, make)
