/**
 * The generate stage (the engine's `Generator` port, `engine/Generator.ts`): a case's answer (and retrieved passages) asked of the live system under test
 * (`--target`), before it is judged. A pipeline opts in by declaring which case fields a target
 * fills (`Pipeline.generate`: the answer, and the passages when the target gives them); the engine
 * does the rest, the same for every pipeline:
 *
 * - **which cases**: those without an answer, or every case with `--regenerate`;
 * - **a keyed result, journaled before it is judged**: a target's answer is a result of the same kind
 *   as a judgment — one line of a journal (the run directory's `target/judgments.jsonl`, the same
 *   store, durability and torn-line rules as the judgments'), keyed by the case and the target's
 *   identity (`TargetConfig.identity`: URL without credentials, preset, body template, header names,
 *   paths; and the model). A resume, and every later iteration, reads it back: the system is never
 *   asked the same case twice. The identity is also part of the run's identity, so a changed
 *   template is a new run;
 * - **what a resume keeps**: an answer, or a failure of that case (a 4xx, a body that is not JSON, no
 *   answer at the path) unless `--retry-failed`; a case that kept failing transiently (5xx, timeouts,
 *   network, 429s past `--max-wait`) is asked again;
 * - **the calls**: through a rate gate of their own (`--target-concurrency`, `--target-rpm`, one
 *   shared pause on a 429), retried on 5xx / timeouts / network errors (`target/Retry.ts`); the first
 *   call goes alone (the preflight): a 401, a 404 or a refused connection stops the run with one line
 *   (exit 2) before the other cases are asked, and so does one met later;
 * - **replay** (`rag-eval report`): the journal only; **estimate** (`--dry-run`): counts the calls.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import type { EvalCase, Generated, Passage } from "../domain/Case.js"
import { FatalJudgeError, type OutputError, UsageError } from "../domain/Errors.js"
import { type Judgment, noUsage, type Verdict } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import { type GenerateContext, Generator, type RunGenerating, type TargetDescription } from "../engine/Generator.js"
import { canonicalJson, toJudgment } from "../engine/JudgmentKey.js"
import { keeps } from "../engine/Judgments.js"
import type { Generates, Pipeline } from "../engine/Pipeline.js"
import { Shutdown } from "../engine/Shutdown.js"
import { sha256 } from "../judges/Prompt.js"
import { ProviderError } from "../providers/LlmProvider.js"
import * as RateGate from "../providers/RateGate.js"
import { withGenerated } from "./GeneratedView.js"
import { inputOf } from "./Request.js"
import { withRetries } from "./Retry.js"
import { TargetClient, type TargetResponse } from "./TargetClient.js"
import { describe, identity, type TargetConfig } from "./TargetConfig.js"
import type { TargetError } from "./TargetError.js"

/** The journal line's `criterion` and `provider` for a target's answer. */
export const TARGET_CRITERION = "target"

/** How a run asks its target, beside the target itself. */
export interface TargetRunSettings {
  /** Ask every case, also those whose input has an answer. */
  readonly regenerate: boolean
  /** Calls in flight at once. Default 4. */
  readonly concurrency: number
  /** Requests per minute (paced), when given. */
  readonly rpm?: number | undefined
  /** Retries after 5xx, timeouts and network errors. */
  readonly maxRetries: number
  /** How long one call may wait out 429s. */
  readonly maxWaitMs: number
}

/** The hash a target's answers are keyed by (see the module comment). */
export const targetHash = (config: TargetConfig): string =>
  sha256(canonicalJson({ target: identity(config), model: config.model ?? null }))

/** The key of one case's answer from a target. */
export const targetKey = (hash: string, caseId: string): string =>
  sha256(canonicalJson({ result: TARGET_CRITERION, case: caseId, target: hash }))

export const describeTarget = (config: TargetConfig, settings: TargetRunSettings): TargetDescription => ({
  config: describe(config),
  identity: targetHash(config),
  regenerate: settings.regenerate,
  concurrency: settings.concurrency,
  ...(settings.rpm === undefined ? {} : { rpm: settings.rpm })
})

/** Whether a case is asked of the target. */
export const needsAnswer = (c: EvalCase, regenerate: boolean): boolean =>
  regenerate || c.answer === undefined || c.answer.trim() === ""

/** What a journal line holds of an answer (`Judgment.value`). */
interface StoredAnswer {
  readonly answer: string
  readonly contexts?: ReadonlyArray<string> | undefined
  readonly contextsNote?: string | undefined
  readonly ttfbMs: number
  readonly streamed: boolean
  readonly events?: number | undefined
  readonly status: number
}

const asStored = (r: TargetResponse): StoredAnswer => ({
  answer: r.answer,
  ...(r.contexts === undefined ? {} : { contexts: r.contexts }),
  ...(r.contextsNote === undefined ? {} : { contextsNote: r.contextsNote }),
  ttfbMs: r.ttfbMs,
  streamed: r.streamed,
  ...(r.events === undefined ? {} : { events: r.events }),
  status: r.status
})

/** The case with the target's answer (and passages, when the pipeline lets the target fill them). */
const answered = (c: EvalCase, fills: Generates, a: StoredAnswer, latencyMs: number): EvalCase => {
  const passages: ReadonlyArray<Passage> | undefined = fills.contexts === true && a.contexts !== undefined
    ? a.contexts.map((text, i) => ({ id: String(i + 1), rank: i + 1, text }))
    : undefined
  const generated: Generated = {
    status: "ok",
    latencyMs,
    ttfbMs: a.ttfbMs,
    streamed: a.streamed,
    ...(a.contextsNote === undefined ? {} : { contextsNote: a.contextsNote })
  }
  return { ...c, answer: a.answer, ...(passages === undefined ? {} : { passages }), generated }
}

const unanswered = (c: EvalCase, reason: string): EvalCase => ({
  ...c,
  answer: "",
  generated: { status: "failed", reason }
})
const skipped = (c: EvalCase): EvalCase => ({ ...c, generated: { status: "skipped" } })

/** A journaled line back as the case it answered. */
const fromLine = (c: EvalCase, fills: Generates, j: Judgment): EvalCase =>
  j.status === "ok" ? answered(c, fills, j.value as StoredAnswer, j.latencyMs) : unanswered(c, j.reason)

/** Stands in for a rubric in the journal line (only its id is read). */
const targetRubric = { id: TARGET_CRITERION } as Rubric

/**
 * The pipeline with the target's facts (`GeneratedView.ts`). Its records and summary carry more than
 * `R` and `X` say (a record's `generated`, the summary's `target`): only the wrapped stages read them.
 */
const decorator = (description: TargetDescription) => <R, X>(pipeline: Pipeline<R, X>): Pipeline<R, X> =>
  withGenerated(pipeline, description) as Pipeline<R, X>

/** The core of every mode: which cases, the journal, the key. `ask` makes a call (live) or counts one (estimate). */
const opener = (
  description: TargetDescription,
  ask:
    | ((
      c: EvalCase,
      fills: Generates,
      record: (j: Judgment) => Effect.Effect<void, OutputError>,
      counts: RunGenerating["counts"]
    ) => Effect.Effect<EvalCase, OutputError>)
    | undefined,
  fatal: () => FatalJudgeError | undefined
) =>
(run: GenerateContext): Effect.Effect<RunGenerating> =>
  Effect.sync(() => {
    const counts = { asked: 0, reused: 0, failed: 0 }
    const journal = run.journal
    const made = run.remember === true ? new Map<string, Judgment>() : undefined
    const record = (j: Judgment) => {
      made?.set(j.key, j)
      return journal === undefined ? Effect.void : journal.append([j])
    }
    const generate = (c: EvalCase, fills: Generates): Effect.Effect<EvalCase, OutputError | UsageError> =>
      Effect.suspend((): Effect.Effect<EvalCase, OutputError | UsageError> => {
        if (!needsAnswer(c, description.regenerate)) return Effect.succeed(c)
        const key = targetKey(description.identity, c.id)
        const now = made?.get(key)
        if (now !== undefined && (now.status === "ok" || now.failure === "judge")) {
          return Effect.succeed(fromLine(c, fills, now))
        }
        if (journal !== undefined && keeps(journal.state(key), run.retryFailed)) {
          const line = journal.judgment(key)
          if (line !== undefined) {
            counts.reused++
            if (line.status === "failed") counts.failed++
            return Effect.succeed(fromLine(c, fills, line))
          }
        }
        if (ask === undefined) {
          if (run.partial === true) return Effect.succeed(skipped(c))
          return Effect.fail(
            new UsageError({
              problem:
                `the target's answer to case ${c.id} is not in the run's journal (target/judgments.jsonl); resume the run with its original command, then report (or render what the journal holds with report --partial)`
            })
          )
        }
        return ask(c, fills, record, counts)
      })
    return { generate, fatal, counts }
  })

// ---------------------------------------------------------------------------------------------
// Live

/**
 * One call through the gate: the gate speaks `ProviderError` (it learns from 429s), so the target's
 * error is carried across it and handed back as it was.
 */
const throughGate = (
  gate: RateGate.RateGate["Type"],
  call: Effect.Effect<TargetResponse, TargetError>
): Effect.Effect<TargetResponse | RateGate.GateStopped, TargetError> =>
  Effect.suspend(() => {
    let response: TargetResponse | undefined
    let error: TargetError | undefined
    const attempt = call.pipe(
      Effect.map((r) => {
        response = r
        return { text: "", usage: noUsage }
      }),
      Effect.mapError((e) => {
        error = e
        return new ProviderError({
          kind: e.kind === "rate_limited" ? "rate_limited" : "rejected",
          status: e.status,
          retryAfterMs: e.retryAfterMs,
          detail: e.detail
        })
      })
    )
    // A call the gate never started (the run is stopping) is not an error of the target: no retry.
    return gate.run(0, Effect.withSpan(attempt, "TargetClient.call", { kind: "client" })).pipe(
      Effect.map((): TargetResponse | RateGate.GateStopped => response!),
      Effect.catchAll((e) => (e._tag === "GateStopped" ? Effect.succeed(e) : Effect.fail(error!)))
    )
  })

export const makeLive = (config: TargetConfig, settings: TargetRunSettings) =>
  Effect.gen(function*() {
    const client = yield* TargetClient
    const shutdown = yield* Shutdown
    const description = describeTarget(config, settings)
    const gate = yield* RateGate.make({
      concurrency: settings.concurrency,
      rpm: settings.rpm,
      maxPauseMs: settings.maxWaitMs,
      stop: shutdown.requested
    })
    let fatal: FatalJudgeError | undefined
    const stopping = () => fatal !== undefined || shutdown.stopping()
    // The preflight: the first call goes alone; the others wait for it to land.
    const preflightDone = Deferred.unsafeMake<void>(FiberId.none)
    let preflightTaken = false

    const call = (
      c: EvalCase,
      fills: Generates,
      record: (j: Judgment) => Effect.Effect<void, OutputError>,
      counts: RunGenerating["counts"]
    ): Effect.Effect<EvalCase, OutputError> =>
      Effect.gen(function*() {
        if (stopping()) return skipped(c)
        const outcome = yield* Effect.either(
          withRetries(throughGate(gate, client.call(inputOf(c))), {
            maxRetries: settings.maxRetries,
            maxWaitMs: settings.maxWaitMs,
            gatePauses: true
          })
        )
        if (outcome._tag === "Right" && outcome.right instanceof RateGate.GateStopped) return skipped(c)
        if (outcome._tag === "Left") {
          const e = outcome.left
          if (e.fatal) {
            fatal ??= new FatalJudgeError({ line: e.message, kind: `target ${e.kind}`, status: e.status })
            yield* gate.halt
            yield* shutdown.request
            return skipped(c)
          }
          // The case's own failure is kept (asked again with --retry-failed); one that kept failing
          // transiently is asked again on the next resume.
          const verdict: Verdict = {
            status: "failed",
            failure: e.retryable ? "transport" : "judge",
            score: null,
            reason: e.message,
            usage: noUsage,
            attempts: 1
          }
          yield* record(
            toJudgment(
              targetKey(description.identity, c.id),
              { caseId: c.id, ordinal: c.ordinal, iteration: 0, rubric: targetRubric, target: "answer" },
              verdict,
              { provider: TARGET_CRITERION, model: description.config.url },
              0
            )
          )
          counts.asked++
          counts.failed++
          return unanswered(c, e.message)
        }
        const r = outcome.right as TargetResponse
        const verdict: Verdict = {
          status: "ok",
          score: null,
          reason: "",
          value: asStored(r),
          usage: noUsage,
          attempts: 1
        }
        const line = toJudgment(
          targetKey(description.identity, c.id),
          { caseId: c.id, ordinal: c.ordinal, iteration: 0, rubric: targetRubric, target: "answer" },
          verdict,
          { provider: TARGET_CRITERION, model: description.config.url },
          r.latencyMs
        )
        // Journaled before it is judged: a crash from here on never asks the system again.
        yield* record({ ...line, latencyMs: r.latencyMs })
        counts.asked++
        return answered(c, fills, asStored(r), r.latencyMs)
      })

    const ask = (
      c: EvalCase,
      fills: Generates,
      record: (j: Judgment) => Effect.Effect<void, OutputError>,
      counts: RunGenerating["counts"]
    ): Effect.Effect<EvalCase, OutputError> =>
      Effect.suspend(() => {
        if (!preflightTaken) {
          preflightTaken = true
          return call(c, fills, record, counts).pipe(Effect.ensuring(Deferred.succeed(preflightDone, undefined)))
        }
        return Deferred.await(preflightDone).pipe(Effect.zipRight(call(c, fills, record, counts)))
      })

    return Generator.of({
      mode: "live",
      description,
      concurrency: settings.concurrency,
      open: opener(description, ask, () => fatal),
      gate: gate.stats,
      decorate: decorator(description)
    })
  })

/** Asking the target (`--target`): needs its client and the run's Shutdown. */
export const layerLive = (
  config: TargetConfig,
  settings: TargetRunSettings
): Layer.Layer<Generator, never, TargetClient | Shutdown> => Layer.scoped(Generator, makeLive(config, settings))

/** `--dry-run`: what is not in the journal is a call counted; the case goes on with the answer it has (empty when none). */
export const layerEstimate = (config: TargetConfig, settings: TargetRunSettings): Layer.Layer<Generator> => {
  const description = describeTarget(config, settings)
  const count = (c: EvalCase, _fills: Generates, _record: unknown, counts: RunGenerating["counts"]) =>
    Effect.sync(() => {
      counts.asked++
      return { ...c, answer: c.answer ?? "" }
    })
  return Layer.succeed(Generator, {
    mode: "estimate",
    description,
    concurrency: settings.concurrency,
    open: opener(description, count, () => undefined),
    decorate: decorator(description)
  })
}

/** `rag-eval report`: the answers from the run's journal only. */
export const layerReplay = (description: TargetDescription): Layer.Layer<Generator> =>
  Layer.succeed(Generator, {
    mode: "replay",
    description,
    concurrency: description.concurrency,
    open: opener(description, undefined, () => undefined),
    decorate: decorator(description)
  })
