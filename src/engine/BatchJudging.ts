/**
 * `--batch`: the judgments a run still needs go through the provider's Batch API (half price,
 * within 24 h) instead of one synchronous call each. A phase before the normal judging pass:
 *
 * 1. plan every case as synchronous judging does, through the judging core (same keys: results are
 *    interchangeable, and `compare`, `calibrate` and `report` see the same journal); keep the calls
 *    the journal and the cache do not hold — for a chained judge stage, those of each case's first
 *    round not done, planned again as batches bring in the rounds before (a round per batch);
 * 2. render them into JSONL request files (`custom_id` = the call's first judgment key; at most
 *    `maxRequests` requests and `maxBytes` a file), upload, create the batches — each step in the
 *    ledger (`store/BatchLedger.ts`) the moment it exists;
 * 3. poll with backoff (on the Effect `Clock`); download each finished batch's output and error
 *    files and turn every reply into verdicts through the judge's own call readers (its `calls` port,
 *    `judges/CallReader.ts`): same decoding, same repair rules, same failed verdicts as a synchronous
 *    call; the core journals them (marked `via: "batch"`, priced at the batch price); then the batch
 *    is closed in the ledger;
 * 4. a reply that does not decode is journaled as an attempt (as the synchronous judge does) and
 *    asked again with the repair prompt — in the next batch (`--batch-repair batch`, the default) or
 *    synchronously by the normal pass (`--batch-repair sync`), which continues from that attempt;
 * 5. what a batch did not answer (it expired, failed, or a request errored) is resubmitted
 *    (reported), at most `maxSubmissions` times; then it is a transport failure (asked again on resume).
 *
 * Then the normal pass runs over a journal that holds everything: records, reports and the manifest
 * are written as for any run. `--detach` returns once nothing more can be submitted while batches
 * are still running; the same command later collects them. Ctrl+C or `kill -9` at any point: the
 * same command resumes from the ledger and never submits a call twice.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { EvalCase } from "../domain/Case.js"
import { FatalJudgeError, type InputError, type OutputError } from "../domain/Errors.js"
import { addUsage, noUsage, type Verdict } from "../domain/Judgment.js"
import { thousands } from "../domain/Numbers.js"
import { type BatchCalls, type CallReader, truncate, unusable } from "../judges/CallReader.js"
import type { BatchStatus } from "../providers/BatchApi.js"
import type { ProviderError } from "../providers/LlmProvider.js"
import * as BatchLedger from "../store/BatchLedger.js"
import { type OpenedJournal, State } from "../store/JudgmentJournal.js"
import { CaseRounds, type Plan, promptChars, type RunJudging } from "./Judgments.js"
import type { Pipeline } from "./Pipeline.js"
import type { Progress } from "./Progress.js"
import type { Retriever } from "./Retriever.js"
import type { BatchOptions, RunOptions } from "./RunTypes.js"
import { limitCases, loadContext } from "./Validate.js"

export interface BatchPhaseContext<R, S> {
  readonly pipeline: Pipeline<R, S>
  readonly options: RunOptions
  readonly batch: BatchOptions
  readonly runId: string
  readonly runDir: string
  readonly retriever: Retriever["Type"]
  readonly journal: OpenedJournal
  readonly progress: Progress["Type"]
  /** The judging core, opened for the run: plans, what is done, recording, stopping, the budget. */
  readonly core: RunJudging
  /** The judge's calls as data (its `calls` port); a judge without one has no Batch API. */
  readonly calls: BatchCalls
}

/** One batch as the manifest records it. */
export interface BatchRecord {
  readonly id: string
  readonly file: string
  readonly requests: number
  readonly status: string
}

export interface BatchPhase {
  /** `done`: nothing left in flight; `detached`: batches still running (`--detach`); `stopped`: Ctrl+C or `--max-cost`. */
  readonly outcome: "done" | "detached" | "stopped"
  /** Judgment keys journaled from batch output by this invocation. */
  readonly collected: ReadonlySet<string>
  /** Calls in batches still running. */
  readonly inFlight: number
  readonly openBatches: number
  /** Every batch of the run (from the ledger), for the manifest. */
  readonly batches: ReadonlyArray<BatchRecord>
  /** Calls resubmitted because a batch did not answer them. */
  readonly resubmitted: number
}

/** How many times a call may be submitted before it is recorded as a transport failure. */
const DEFAULT_MAX_SUBMISSIONS = 3

export const runBatchPhase = <R, S>(
  ctx: BatchPhaseContext<R, S>
): Effect.Effect<BatchPhase, OutputError | FatalJudgeError | InputError> =>
  Effect.acquireUseRelease(
    BatchLedger.open(ctx.runDir, { fresh: ctx.options.fresh }),
    (ledger) => phase(ctx, ledger),
    (ledger) => Effect.sync(() => ledger.close())
  )

const phase = <R, S>(ctx: BatchPhaseContext<R, S>, ledger: BatchLedger.BatchLedger) =>
  Effect.gen(function*() {
    const { pipeline, options, batch, retriever, journal, progress, core, calls } = ctx
    const api = batch.api
    const budget = core.budget
    const maxSubmissions = batch.maxSubmissions ?? DEFAULT_MAX_SUBMISSIONS
    const totalAsks = calls.asks
    const collected = new Set<string>()
    let resubmitted = 0
    const stopping = () => core.stopping()

    // 1. The calls the journal and the cache do not hold, by their first key (the custom_id): of each
    //    case the first round not done (a chained stage's later rounds wait for the batches before).
    const plans = new Map<string, Plan>()
    const frontier = (c: EvalCase, iteration: number) =>
      new CaseRounds(pipeline.judge, c).walkEffect((spec) => {
        const plan = core.plan(c, iteration, spec)
        return Effect.map(core.lookup(plan), (js) => {
          if (js === undefined) plans.set(plan.keys[0]!, plan)
          return js
        })
      })
    const planAll = Effect.gen(function*() {
      plans.clear()
      for (let iteration = 1; iteration <= options.iterations; iteration++) {
        yield* limitCases(pipeline.load.cases(loadContext(options)), options.limit).pipe(
          Stream.mapEffect((c) => retriever.retrieve(c)),
          Stream.runForEach((c) => frontier(c, iteration))
        )
      }
    })
    yield* planAll
    /** A chained stage: what the batches brought in since the last planning may open later rounds. */
    let collectedAtPlanning = 0
    const planAgain = Effect.suspend(() => {
      if (pipeline.judge.next === undefined || collected.size === collectedAtPlanning) return Effect.void
      collectedAtPlanning = collected.size
      return planAll
    })
    const done = (plan: Plan) => plan.keys.every((k) => core.kept(journal.state(k)))

    /** Provider calls of the batch API: transient failures retried with backoff; the rest stop the run. */
    const retrying = <A>(what: string, self: Effect.Effect<A, ProviderError>): Effect.Effect<A, FatalJudgeError> =>
      self.pipe(
        Effect.retry(
          Schedule.exponential("1 second").pipe(
            Schedule.jittered,
            Schedule.union(Schedule.spaced("60 seconds")),
            Schedule.intersect(Schedule.recurs(batch.maxRetries ?? 5)),
            Schedule.whileInput((e: ProviderError) => e.retryable)
          )
        ),
        Effect.mapError((e) =>
          new FatalJudgeError({
            line: e.kind === "not_found"
              ? `${core.identity.provider} answered 404 to ${what} (${e.detail}): this server has no Batch API there; run without --batch`
              : `${core.identity.provider} batch API: ${what} failed: ${e.message}${
                e.retryable ? " (after retries; run the same command again to resume)" : ""
              }`,
            kind: e.kind,
            status: e.status
          })
        )
      )

    // --- Replies into judgments (the judge's own readers and repair rules), recorded by the core
    const journalVerdicts = (plan: Plan, verdicts: ReadonlyArray<Verdict>) =>
      Effect.map(core.record(plan, verdicts, 0, "batch"), (js) => {
        for (const j of js) collected.add(j.key)
      })

    const readerOf = (plan: Plan): CallReader<unknown> => calls.reader(plan.task)

    /** A chat completion from a batch: a verdict, or an attempt journaled for a repair. */
    const onReply = (plan: Plan, body: unknown, estimate: number) =>
      Effect.gen(function*() {
        const callKey = plan.keys[0]!
        const reply = calls.reply(body)
        budget?.settle(estimate, reply.usage, "batch")
        const prior = journal.state(callKey) === State.attempt ? journal.pendingRepair(callKey) : undefined
        // The same output read again (killed after journaling it, before closing the batch): done already.
        if (prior !== undefined && prior.text === reply.text) return
        const reader = readerOf(plan)
        if (prior !== undefined) reader.decode(prior.text)
        const asks = (prior?.asks ?? 0) + 1
        const attempts = (prior?.attempts ?? 0) + 1
        const usage = addUsage(prior?.usage ?? noUsage, reply.usage)
        const decoded = reader.decode(reply.text)
        if (Either.isRight(decoded)) {
          return yield* journalVerdicts(
            plan,
            reader.verdicts({ answer: Either.right(decoded.right), usage, attempts, raw: truncate(reply.text) })
          )
        }
        if (asks < totalAsks && decoded.left.final !== true) {
          // Asked again with the repair prompt (next batch, or the synchronous pass); journaled first.
          return yield* journal.appendAttempt(callKey, {
            text: reply.text,
            problem: decoded.left.problem,
            usage,
            asks,
            attempts
          })
        }
        yield* journalVerdicts(
          plan,
          reader.verdicts({
            answer: Either.left(unusable(asks, decoded.left.problem)),
            usage,
            attempts,
            raw: truncate(reply.text)
          })
        )
      })

    /** A request the provider refused (a 4xx about it): a failed verdict, as synchronously. */
    const onRejected = (plan: Plan, status: number, message: string) => {
      const prior = journal.pendingRepair(plan.keys[0]!)
      const reader = readerOf(plan)
      return journalVerdicts(
        plan,
        reader.verdicts({
          answer: Either.left({
            reason: `provider error: the request was rejected (rejected (HTTP ${status}): ${message})`,
            failure: "judge"
          }),
          usage: prior?.usage ?? noUsage,
          attempts: (prior?.attempts ?? 0) + 1,
          raw: undefined
        })
      )
    }

    /** `--max-cost`: each submitted request's estimate, settled when its reply lands (a resume's open batches too). */
    const estimates = BatchLedger.reservedEstimates(ledger.uploads)

    /** Read a batch's output or error file; the custom ids it answered for good. */
    const readFile = (fileId: string, answered: Set<string>) =>
      Effect.gen(function*() {
        const text = yield* retrying(`downloading file ${fileId}`, api.content(fileId))
        for (const raw of text.split("\n")) {
          if (raw.trim() === "") continue
          let line: {
            custom_id?: unknown
            response?: { status_code?: unknown; body?: unknown } | null
            error?: { message?: unknown; code?: unknown } | null
          }
          try {
            line = JSON.parse(raw) as typeof line
          } catch {
            continue
          }
          const id = typeof line.custom_id === "string" ? line.custom_id : undefined
          const plan = id === undefined ? undefined : plans.get(id)
          if (id === undefined || plan === undefined || done(plan)) continue
          const status = typeof line.response?.status_code === "number" ? line.response.status_code : undefined
          const body = line.response?.body
          if (
            status === 200 && typeof body === "object" && body !== null &&
            Array.isArray((body as { choices?: unknown }).choices)
          ) {
            yield* onReply(plan, body, estimates.get(id) ?? 0)
            answered.add(id)
          } else if (status !== undefined && status >= 400 && status < 500 && status !== 429 && status !== 408) {
            const message = String(
              (body as { error?: { message?: unknown } } | undefined)?.error?.message ?? line.error?.message ??
                "refused"
            )
            yield* onRejected(plan, status, message)
            answered.add(id)
          }
          // Anything else (a 5xx, a 429, an error without a response): not answered; resubmitted.
        }
      })

    /** A finished batch: its replies journaled, then the batch closed in the ledger. */
    const collect = (upload: BatchLedger.LedgerUpload, status: BatchStatus) =>
      Effect.gen(function*() {
        const answered = new Set<string>()
        if (status.outputFileId !== undefined) yield* readFile(status.outputFileId, answered)
        if (status.errorFileId !== undefined) yield* readFile(status.errorFileId, answered)
        const missed = upload.ids.filter((id) => !answered.has(id) && plans.has(id) && !done(plans.get(id)!))
        if (missed.length > 0) {
          resubmitted += missed.length
          yield* progress.note(
            `batch ${status.id} ${status.status}: ${
              thousands(missed.length)
            } judgment call(s) it did not answer are resubmitted`
          )
        }
        yield* ledger.append({ kind: "closed", id: status.id, status: status.status, answered: answered.size })
      })

    // --- Submitting
    let fileNumber = ledger.uploads.length

    const submitChunk = (ids: ReadonlyArray<string>, lines: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const jsonl = lines.join("\n") + "\n"
        const fileId = yield* retrying(
          "uploading a request file",
          api.upload(`rag-eval-${ctx.runId}-${++fileNumber}.jsonl`, jsonl)
        )
        const estimateUsd = budget === undefined
          ? undefined
          : ids.reduce((sum, id) => sum + (estimates.get(id) ?? 0), 0)
        yield* ledger.append({
          kind: "upload",
          file: fileId,
          ids,
          bytes: Buffer.byteLength(jsonl),
          ...(estimateUsd === undefined ? {} : { estimateUsd })
        })
        yield* createOver(fileId, ids.length)
      })

    const createOver = (fileId: string, requests: number) =>
      Effect.gen(function*() {
        const created = yield* retrying("creating a batch", api.create(fileId))
        yield* ledger.append({ kind: "batch", id: created.id, file: fileId, requests })
        yield* progress.note(`batch ${created.id}: submitted ${thousands(requests)} judgment call(s)`)
      })

    const claimed = () => {
      const ids = new Set<string>()
      for (const u of ledger.uploads) if (u.closed === undefined) { for (const id of u.ids) ids.add(id) }
      return ids
    }
    const submissions = () => {
      const n = new Map<string, number>()
      for (const u of ledger.uploads) for (const id of u.ids) n.set(id, (n.get(id) ?? 0) + 1)
      return n
    }

    /** Everything not done, not in a running batch, not left to the synchronous repair: into new batches. */
    const submit = Effect.gen(function*() {
      const inBatch = claimed()
      const counts = submissions()
      let ids: Array<string> = []
      let lines: Array<string> = []
      let bytes = 0
      for (const [id, plan] of plans) {
        if (stopping()) break
        if (inBatch.has(id) || done(plan)) continue
        const prior = journal.state(id) === State.attempt ? journal.pendingRepair(id) : undefined
        if (prior !== undefined && batch.repair === "sync") continue
        if ((counts.get(id) ?? 0) >= maxSubmissions) {
          // Submitted this many times without an answer: a transport failure (asked again on resume).
          const reader = readerOf(plan)
          yield* journalVerdicts(
            plan,
            reader.verdicts({
              answer: Either.left({
                reason: `provider error after ${counts.get(id)} batch submissions: no answer for this request`,
                failure: "transport"
              }),
              usage: prior?.usage ?? noUsage,
              attempts: prior?.attempts ?? 0,
              raw: undefined
            })
          )
          continue
        }
        const reader = readerOf(plan)
        const request = {
          ...reader.request,
          ...(prior === undefined ? {} : { repair: { previous: prior.text, error: prior.problem } })
        }
        if (budget !== undefined) {
          const estimate = budget.estimate(promptChars(plan), plan.keys.length, "batch")
          if (!budget.admit(estimate)) {
            yield* core.requestStop
            break
          }
          estimates.set(id, estimate)
        }
        const line = api.requestLine(id, calls.body(request))
        const size = Buffer.byteLength(line) + 1
        if (ids.length > 0 && (ids.length >= batch.maxRequests || bytes + size > batch.maxBytes)) {
          yield* submitChunk(ids, lines)
          ids = []
          lines = []
          bytes = 0
        }
        ids.push(id)
        lines.push(line)
        bytes += size
      }
      // A budget stop still submits what it admitted (its estimate is reserved).
      if (ids.length > 0) yield* submitChunk(ids, lines)
    })

    // 2. An upload whose batch was never journaled (killed in between): find that batch, else create it.
    for (const u of ledger.uploads) {
      if (u.batch !== undefined || u.closed !== undefined) continue
      const found = yield* retrying("listing batches", api.findByInputFile(u.file))
      if (found !== undefined) {
        yield* ledger.append({ kind: "batch", id: found.id, file: u.file, requests: u.ids.length })
      } else if (!stopping()) {
        yield* createOver(u.file, u.ids.length)
      }
    }

    const open = () => ledger.uploads.filter((u) => u.batch !== undefined && u.closed === undefined)
    const pendingWork = () => {
      const inBatch = claimed()
      for (const [id, plan] of plans) {
        if (inBatch.has(id) || done(plan)) continue
        if (batch.repair === "sync" && journal.state(id) === State.attempt) continue
        return true
      }
      return false
    }
    let lastLine = ""
    const status = () =>
      Effect.suspend(() => {
        const all = ledger.uploads.filter((u) => u.batch !== undefined)
        const running = all.filter((u) => u.closed === undefined).length
        const line = `batches: ${all.length} submitted, ${running} in progress, ${all.length - running} completed; ${
          thousands(collected.size)
        } judgments collected`
        if (line === lastLine) return Effect.void
        lastLine = line
        return progress.note(line)
      })

    // 3. Poll, collect, submit, until nothing is pending (or --detach, Ctrl+C, --max-cost).
    let delay = batch.pollMs
    let awaited = false
    while (true) {
      for (const u of open()) {
        if (stopping()) break
        const st = yield* retrying(`checking batch ${u.batch}`, api.retrieve(u.batch!))
        if (st.phase === "pending") continue
        yield* collect(u, st)
        delay = batch.pollMs
      }
      if (stopping()) break
      yield* planAgain
      if (pendingWork()) {
        if (!awaited) {
          // The preflight says which answer format the server takes (and stops a misconfigured run).
          awaited = true
          if (!(yield* core.awaitPreflight)) break
        }
        yield* submit
      }
      yield* status()
      if (stopping()) break
      if (open().length === 0 && !pendingWork()) break
      if (batch.detach && open().length > 0) break
      yield* Effect.raceFirst(Effect.sleep(delay), core.stopRequested)
      delay = Math.min(delay * 2, batch.maxPollMs)
    }

    const running = open()
    return {
      outcome: stopping() ? "stopped" : running.length > 0 ? "detached" : "done",
      collected,
      inFlight: running.reduce((n, u) => n + u.ids.length, 0),
      openBatches: running.length,
      batches: ledger.uploads.flatMap((u) =>
        u.batch === undefined
          ? []
          : [{ id: u.batch, file: u.file, requests: u.ids.length, status: u.closed ?? "in progress" }]
      ),
      resubmitted
    } satisfies BatchPhase
  })
