/**
 * What the rest of rag-eval needs to know about a judge, declared by the judge itself
 * (`Judge.traits`) rather than inferred from its provider's name. Each behaviour that depends on the
 * kind of judge reads exactly one trait:
 *
 * | Trait | What follows from it | Where |
 * |---|---|---|
 * | `runsLocally` | verdicts are made in-process, free and at once: never cached (redoing is cheaper than a lookup), journaled a batch at a time, no repair checkpoint, no `--batch`, no paid call in `--dry-run`, no fair share or parallel calls in `serve`, nothing to send to `--cluster` | `engine/Judgments.ts`, `engine/Runner.ts`, `engine/Estimate.ts`, `server/Evaluate.ts`, `cluster/RunSetup.ts`, `cli/RunAction.ts` |
 * | `deterministic` | the same task always gets the same verdict: `--iterations` > 1 measures nothing | `cli/RunAction.ts` |
 * | `languageModel` | false for lexical proxies: reports say so (the banner), a user's own rubrics cannot be judged, `synthesize` uses its extractive mix and generator | `report/Sections.ts`, the kinds' reports, `engine/Validate.ts`, `synthesize/`, `judgebench/`, `ui/` |
 *
 * A judge known only by the provider name a run recorded (`report`'s replay, the review UI, flags
 * before a judge is built) gets its traits from `traitsOfProvider`: the one place a name says what
 * kind of judge it was.
 */

export interface JudgeTraits {
  /** In-process and synchronous, free: no network, no key, no rate limit. */
  readonly runsLocally: boolean
  /** The same task always gets the same verdict. */
  readonly deterministic: boolean
  /** Verdicts come from a language model (false: lexical proxies, labelled as such in every report). */
  readonly languageModel: boolean
}

/** The provider name of the offline heuristic judge (`judges/HeuristicJudge.ts`). */
export const HEURISTIC_PROVIDER = "heuristic"

/** The offline heuristic judge: lexical proxies, in-process, deterministic. */
export const heuristicTraits: JudgeTraits = { runsLocally: true, deterministic: true, languageModel: false }

/** An LLM judge over a provider's API (`judges/LlmJudge.ts`), whatever the server. */
export const llmTraits: JudgeTraits = { runsLocally: false, deterministic: false, languageModel: true }

/** The traits of the judge a provider name stands for (a recorded run, or `--provider` before the judge is built). */
export const traitsOfProvider = (provider: string): JudgeTraits =>
  provider === HEURISTIC_PROVIDER ? heuristicTraits : llmTraits
