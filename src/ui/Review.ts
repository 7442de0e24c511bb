/**
 * The browser review's service: everything the API answers, over the runs of one output root.
 *
 * - Runs are found by the catalog (`Runs.ts`); each run's iterations are indexed on first use
 *   (`CaseIndex.ts`) and kept in a small most-recently-used set (`maxIndexes`, default 4: the
 *   server's memory is a few bytes per case of the runs in use, whatever the number of runs);
 *   an index whose files changed (a run that finished, `report` rewriting them) is rebuilt.
 * - After an index is built, a background pass asks the pipeline's view for each case's verdict and
 *   flags (what "failing" means in the HTML report) and computes the headline metrics' 95%
 *   intervals (Poisson bootstrap over the cases, `stats/PoissonBootstrap.ts`).
 * - Labels go to the run's `labels.jsonl` (`LabelLog.ts`), checked against the case's targets
 *   (`CaseTargets.ts`), `judged` taken from the run, `by` the server's user, `at` now.
 * - Agreement is calibrate's (`Agreement.ts`), comparison compare's (`compare/`), the queue
 *   `ReviewQueue.ts`'s.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import { isRecord } from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Path from "node:path"
import type { RunCases } from "../compare/RunCases.js"
import type { CaseDetail } from "../domain/CaseDetail.js"
import type { InputError, OutputError, UsageError } from "../domain/Errors.js"
import { Judgment } from "../domain/Judgment.js"
import { type Label, labelKey, targetKey } from "../domain/Label.js"
import type { MetricSpec } from "../domain/Metric.js"
import { caseMetricsFile, type Manifest } from "../domain/RunFiles.js"
import type { ReportView } from "../engine/Pipeline.js"
import { addUsageTo, noTokens, usdOf } from "../pricing/Prices.js"
import { poissonBootstrap } from "../stats/PoissonBootstrap.js"
import { calibrateSlice, runLabels, type SliceRun, summarise } from "./Agreement.js"
import {
  buildIndex,
  caseIdOf,
  type CaseIndex,
  caseLines,
  closeIndex,
  FLAGGED,
  indexJournal,
  JOURNAL_FILE,
  journalLines,
  lookupCase,
  readCaseIds,
  readCaseMetrics,
  readRecord,
  recordsFile,
  VERDICT_FAIL,
  VERDICT_PASS
} from "./CaseIndex.js"
import { isFailing, metricColumn, selectCases, statusOf, valueOf } from "./CaseQuery.js"
import { answerOf, caseTargets, labelProblem, questionOf } from "./CaseTargets.js"
import { plan, type Progress, runCasesOver, testMetrics } from "./CompareRuns.js"
import type {
  Agreement,
  CasePage,
  CaseQueryParams,
  CaseView,
  Comparison,
  JudgmentView,
  LabelList,
  LabelRequest,
  ReviewQueue,
  RunDetail,
  RunList,
  RunSummary,
  UiError
} from "./Domain.js"
import { uiError } from "./Domain.js"
import { type LabelLog, type LabelState, makeLabelLog } from "./LabelLog.js"
import { currentStamp, sameStamp, scanLines } from "./LineFile.js"
import { reviewQueue } from "./ReviewQueue.js"
import {
  type Catalog,
  GLANCE,
  glanceOrder,
  hasIntervals,
  makeCatalog,
  rankingOf,
  type RunEntry,
  runSummary
} from "./Runs.js"
import type { StoreJournal } from "./StoreJournal.js"

export interface ReviewOptions {
  /** The output root whose runs are served. */
  readonly out: string
  /** Who labels (`--user`, else the OS user). */
  readonly user: string
  /** The pipeline's report view of a run (built-in pipelines), for its case details and verdicts. */
  readonly viewOf?: ((manifest: Manifest) => ReportView<unknown, unknown> | undefined) | undefined
  /** Indexed iterations kept at once (default 4). */
  readonly maxIndexes?: number | undefined
  /** The CLI that runs compare's tests in a child process (default this package's dist/bin.js; absent: in-process). */
  readonly compareBin?: string | undefined
  /** Up to how many case × metric values compare's tests run in-process even so (default `IN_PROCESS_VALUES`). */
  readonly compareInProcessUpTo?: number | undefined
  /** The PostgreSQL store runs made with `--store` keep their journal in (`--store`). */
  readonly store?: StoreJournal | undefined
  /** Clock for labels' `at` (tests fix it). */
  readonly now?: (() => Date) | undefined
}

type Interval = { readonly lower: number; readonly upper: number }

interface Slot {
  readonly key: string
  readonly run: RunEntry
  readonly index: CaseIndex
  /** Index the journal in the background too (a run being browsed, not one opened for compare). */
  prefetchJournal: boolean
  intervals: ReadonlyMap<string, Interval> | undefined
  background: Fiber.RuntimeFiber<void, never> | undefined
}

/**
 * Work done once per index and shared: the first caller runs `build`, later callers (a request, the
 * background pass) wait for its outcome — also when the build is interrupted, so none waits forever.
 */
const oncePerIndex = <E>(build: (run: RunEntry, index: CaseIndex) => Effect.Effect<void, E>) => {
  const builds = new WeakMap<CaseIndex, Deferred.Deferred<void, E>>()
  return (run: RunEntry, index: CaseIndex): Effect.Effect<void, E> =>
    Effect.suspend(() => {
      const pending = builds.get(index)
      if (pending !== undefined) return Deferred.await(pending)
      const deferred = Deferred.unsafeMake<void, E>(FiberId.none)
      builds.set(index, deferred)
      return build(run, index).pipe(Effect.onExit((exit) => Deferred.done(deferred, exit)))
    })
}

/** How long after an index is built its background pass starts. */
const BACKGROUND_DELAY_MS = 1_000

const WINNER_ORDER = { A: 0, none: 1, B: 2, "too-few": 3 } as const

const CUT = 300
const cut = (s: string | undefined): string | null =>
  s === undefined ? null : s.length > CUT ? `${s.slice(0, CUT - 1)}…` : s

const notFound = (what: string) => uiError(404, "not_found", what)
const badRequest = (message: string, path = "") => uiError(400, "invalid_request", message, [{ path, message }])

/** An input error while serving: the run's files are damaged or unreadable (500 would blame the server). */
const unreadable = (e: InputError | UsageError | OutputError): UiError =>
  e._tag === "OutputError"
    ? uiError(500, "cannot_write", e.message)
    : uiError(500, "run_unreadable", e.message)

export const make = (options: ReviewOptions) => {
  const catalog: Catalog = makeCatalog(options.out)
  const maxIndexes = Math.max(1, options.maxIndexes ?? 4)
  const now = options.now ?? (() => new Date())
  /** Most recently used last. */
  const slots = new Map<string, Slot>()
  const building = new Map<string, Deferred.Deferred<Slot, UiError>>()
  const logs = new Map<string, LabelLog>()
  /** Headline intervals of runs opened once (iteration 1), for the list. */
  const intervalsOf = new Map<string, ReadonlyMap<string, Interval>>()

  const logOf = (run: RunEntry): LabelLog => {
    let log = logs.get(run.dir)
    if (log === undefined) logs.set(run.dir, log = makeLabelLog(run.dir))
    return log
  }

  const viewOf = (run: RunEntry): ReportView<unknown, unknown> | undefined => {
    try {
      return options.viewOf?.(run.manifest)
    } catch {
      return undefined
    }
  }

  const getRun = (id: string): Effect.Effect<RunEntry, UiError> =>
    Effect.flatMap(
      catalog.get(id),
      (run) => (run === undefined
        ? Effect.fail(notFound(`no run with id ${JSON.stringify(id)}; GET /api/runs lists them`))
        : Effect.succeed(run))
    )

  const checkIteration = (run: RunEntry, iteration: number | undefined): Effect.Effect<number, UiError> => {
    const it = iteration ?? 1
    const n = Math.max(1, Math.floor(run.manifest.iterations))
    return it >= 1 && it <= n
      ? Effect.succeed(it)
      : Effect.fail(badRequest(`iteration ${it}: run ${run.id} has iteration(s) 1–${n}`, "iteration"))
  }

  /**
   * The glance's headline metrics that are per-case metrics (their intervals come from the cases):
   * at most four, so a 100,000-case run's bootstrap is seconds of background work, not minutes.
   */
  const headlineNames = (run: RunEntry, index: CaseIndex): ReadonlyArray<string> => {
    const perCase = new Set(index.metrics.map((m) => m.name))
    const specs = new Map((run.summary?.metricSpecs ?? []).map((spec) => [spec.name, spec]))
    const named = Object.keys(run.summary?.metrics ?? {}).map((name) => ({ name, spec: specs.get(name) ?? null }))
    return glanceOrder(named, rankingOf(run)).slice(0, GLANCE).map((m) => m.name).filter((name) => perCase.has(name))
  }

  /**
   * Each case's verdict and flags from the pipeline's view (what "failing" means in the HTML report),
   * read once per index: the background pass asks for them, and so does a request filtering failing
   * cases, which waits for them rather than answer with the failed judgments alone.
   */
  const ensureVerdicts = oncePerIndex((run, index) =>
    Effect.gen(function*() {
      const view = viewOf(run)
      if (
        view !== undefined && (view.caseVerdict !== undefined || view.caseFlags !== undefined) &&
        index.recordsFile !== undefined
      ) {
        let n = 0
        yield* scanLines(index.recordsFile, (buffer, start, end, _offset, torn) => {
          if (end === start || torn) return
          const c = index.recordCase[n++] ?? -1
          if (c < 0) return
          try {
            const record = JSON.parse(buffer.toString("utf8", start, end)) as unknown
            const verdict = view.caseVerdict?.(record)
            const flags = view.caseFlags?.(record) ?? []
            let bits = index.status[c]!
            if (verdict !== undefined) bits |= verdict.pass ? VERDICT_PASS : VERDICT_FAIL
            if (flags.length > 0) bits |= FLAGGED
            index.status[c] = bits
          } catch {
            // A record the view cannot read keeps its `failed` flag only.
          }
        }).pipe(Effect.ignore)
      }
      index.verdictsReady = true
    })
  )

  /** The journal's index of an index, built once (a request waiting for it shares the build). */
  const ensureJournal = oncePerIndex((run, index) =>
    indexJournal(index, Path.join(run.dir, JOURNAL_FILE)).pipe(Effect.mapError(unreadable))
  )

  /** The journal's index, the verdicts and flags of every case (the pipeline's view), then the headline intervals. */
  const background = (slot: Slot): Effect.Effect<void> =>
    Effect.gen(function*() {
      // After the page that opened the run has its first answers (the run, its first cases, the agreement).
      yield* Effect.sleep(Duration.millis(BACKGROUND_DELAY_MS))
      const { index, run } = slot
      // The journal's index next, so that opening a case finds it built (runs made with --store have none here).
      if (slot.prefetchJournal && !(options.store !== undefined && run.manifest.store !== undefined)) {
        yield* Effect.ignore(ensureJournal(run, index))
      }
      yield* ensureVerdicts(run, index)
      // Intervals for a one-iteration run whose summary has none (version 3: the engine's fold gives them since version 4).
      if (index.iteration === 1 && run.manifest.iterations === 1 && !hasIntervals(run)) {
        const names = headlineNames(run, index)
        const columns = names.map((name) => metricColumn(index, name))
        const boot = poissonBootstrap(names.length, { seed: 42 })
        const values: Array<number | null> = new Array(names.length)
        for (let i = 0; i < index.cases; i++) {
          for (let k = 0; k < columns.length; k++) values[k] = valueOf(index, columns[k]!, i)
          boot.add(values)
          // A pause every few hundred cases: the requests of someone browsing go first.
          if (i % 250 === 249) yield* Effect.sleep(Duration.millis(1))
        }
        const intervals = boot.intervals()
        const map = new Map<string, Interval>()
        names.forEach((name, k) => {
          const ci = intervals[k]
          if (ci !== null && ci !== undefined) map.set(name, ci)
        })
        slot.intervals = map
        intervalsOf.set(run.dir, map)
      }
    })

  const evict = () => {
    while (slots.size > maxIndexes) {
      const [key, oldest] = slots.entries().next().value!
      slots.delete(key)
      if (oldest.background !== undefined) Effect.runFork(Fiber.interrupt(oldest.background))
      closeIndex(oldest.index)
    }
  }

  const fresh = (slot: Slot): boolean => {
    const dir = slot.run.dir
    const it = slot.index.iteration
    const metrics = currentStamp(Path.join(dir, caseMetricsFile(it)))
    const records = currentStamp(Path.join(dir, recordsFile(it)))
    const same = (open: CaseIndex["metricsFile"], now: ReturnType<typeof currentStamp>) =>
      open === undefined ? now === undefined : sameStamp(open.stamp, now)
    return same(slot.index.metricsFile, metrics) && same(slot.index.recordsFile, records)
  }

  /** The index of a run's iteration: kept, rebuilt when its files changed, built once for concurrent requests. */
  const getIndex = (run: RunEntry, iteration: number): Effect.Effect<Slot, UiError> =>
    Effect.gen(function*() {
      const key = `${run.dir}\u0000${iteration}`
      const kept = slots.get(key)
      if (kept !== undefined && kept.run.manifest === run.manifest && fresh(kept)) {
        slots.delete(key)
        slots.set(key, kept)
        return kept
      }
      const pending = building.get(key)
      if (pending !== undefined) return yield* Deferred.await(pending)
      const deferred = yield* Deferred.make<Slot, UiError>()
      building.set(key, deferred)
      if (kept !== undefined) {
        slots.delete(key)
        if (kept.background !== undefined) yield* Fiber.interrupt(kept.background)
        closeIndex(kept.index)
      }
      const built = yield* buildIndex({
        dir: run.dir,
        iteration,
        metrics: (run.manifest.caseMetricSpecs ?? []) as ReadonlyArray<MetricSpec>
      }).pipe(
        Effect.mapError(unreadable),
        Effect.map((index): Slot => ({
          key,
          run,
          index,
          prefetchJournal: false,
          intervals: undefined,
          background: undefined
        })),
        Effect.exit
      )
      building.delete(key)
      yield* Deferred.done(deferred, built)
      const slot = yield* built
      slots.set(key, slot)
      slot.background = yield* Effect.forkDaemon(background(slot))
      evict()
      return slot
    })

  /** The case numbers of the labelled cases of a run (labels are few: each looked up). */
  const labelledCases = (run: RunEntry, index: CaseIndex, labels: ReadonlyArray<Label>) =>
    Effect.gen(function*() {
      const ids = new Set(labels.map((l) => l.caseId))
      const out = new Set<number>()
      for (const id of ids) {
        const c = yield* lookupCase(index, id)
        if (c >= 0) out.add(c)
      }
      return out
    }).pipe(Effect.mapError(unreadable))

  const readLabels = (run: RunEntry) => Effect.mapError(logOf(run).read, unreadable)

  const summaryOf = (run: RunEntry): Effect.Effect<RunSummary, UiError> =>
    Effect.map(
      readLabels(run),
      (state) => runSummary(run, runLabels(state, run.manifest.runId).length, intervalsOf.get(run.dir))
    )

  // -------------------------------------------------------------------------------------------
  // Runs

  const listRuns = Effect.fn("Review.listRuns")(
    function*(filter: { readonly pipeline?: string | undefined; readonly q?: string | undefined }) {
      const scanned = yield* catalog.scan
      const q = filter.q?.trim().toLowerCase()
      const runs: Array<RunSummary> = []
      for (const run of scanned.runs) {
        if (filter.pipeline !== undefined && filter.pipeline !== "" && run.manifest.pipeline.name !== filter.pipeline) {
          continue
        }
        const summary = yield* summaryOf(run)
        if (q !== undefined && q !== "") {
          const haystack = [
            summary.id,
            summary.pipeline,
            summary.dir,
            summary.judge.label,
            summary.judge.model,
            summary.input.path,
            summary.startedAt
          ]
            .join(" ").toLowerCase()
          if (!haystack.includes(q)) continue
        }
        runs.push(summary)
      }
      return { runs, problems: [...scanned.problems] } satisfies RunList
    }
  )

  const runDetail = Effect.fn("Review.runDetail")(function*(id: string, iteration: number | undefined) {
    const run = yield* getRun(id)
    const it = yield* checkIteration(run, iteration)
    const slot = yield* getIndex(run, it)
    slot.prefetchJournal = true
    let failing = 0
    for (let i = 0; i < slot.index.cases; i++) if (isFailing(slot.index.status[i]!)) failing++
    return {
      run: yield* summaryOf(run),
      caseMetrics: [...slot.index.metrics],
      iteration: it,
      cases: slot.index.cases,
      failing,
      verdictsReady: slot.index.verdictsReady,
      notes: [...slot.index.notes]
    } satisfies RunDetail
  })

  // -------------------------------------------------------------------------------------------
  // Cases

  const listCases = Effect.fn("Review.listCases")(function*(id: string, params: CaseQueryParams) {
    const run = yield* getRun(id)
    const it = yield* checkIteration(run, params.iteration)
    const { index } = yield* getIndex(run, it)
    if (params.failing === "true") yield* ensureVerdicts(run, index)
    if (params.sort !== undefined && params.sort !== "line" && metricColumn(index, params.sort) < 0) {
      return yield* Effect.fail(
        badRequest(
          `sort: no per-case metric ${JSON.stringify(params.sort)}; the run has: line, ${
            index.metrics.map((m) => m.name).join(", ")
          }`,
          "sort"
        )
      )
    }
    if (params.metric !== undefined && metricColumn(index, params.metric) < 0) {
      return yield* Effect.fail(badRequest(`metric: no per-case metric ${JSON.stringify(params.metric)}`, "metric"))
    }
    const state = yield* readLabels(run)
    const labels = runLabels(state, run.manifest.runId)
    const labelled = yield* labelledCases(run, index, labels)
    const selected = yield* selectCases(index, {
      failing: params.failing === "true",
      q: params.q,
      metric: params.metric,
      min: params.min,
      max: params.max,
      labelled: params.labelled === undefined ? undefined : params.labelled === "yes",
      sort: params.sort,
      order: params.order
    }, labelled).pipe(Effect.mapError(unreadable))
    const offset = params.offset ?? 0
    const limit = params.limit ?? 50
    const labelCount = new Map<string, number>()
    for (const l of labels) labelCount.set(l.caseId, (labelCount.get(l.caseId) ?? 0) + 1)
    const rows: Array<CasePage["rows"][number]> = []
    for (let k = offset; k < Math.min(selected.length, offset + limit); k++) {
      const i = selected[k]!
      const [row, record] = yield* Effect.all([readCaseMetrics(index, i), readRecord(index, i)]).pipe(
        Effect.mapError(unreadable)
      )
      const caseId = row?.caseId ?? (isRecord(record) && typeof record["caseId"] === "string" ? record["caseId"] : "")
      const metrics: Record<string, number | null> = {}
      index.metrics.forEach((m, c) => {
        metrics[m.name] = row?.metrics[m.name] ?? valueOf(index, c, i)
      })
      rows.push({
        caseId,
        line: index.line[i]! >= 0 ? index.line[i]! : null,
        status: statusOf(index.status[i]!),
        metrics,
        question: cut(questionOf(record)),
        answer: cut(answerOf(record)),
        labels: labelCount.get(caseId) ?? 0
      })
    }
    return { total: selected.length, cases: index.cases, offset, limit, rows } satisfies CasePage
  })

  /** A case's journal lines (this iteration): from the store for a run made with --store (when the server was given it). */
  const journalOf = (run: RunEntry, index: CaseIndex, i: number, caseId: string) => {
    const store = options.store
    return store !== undefined && run.manifest.store !== undefined
      ? store.caseLines(run.dir, caseId, index.iteration).pipe(Effect.mapError(unreadable))
      : Effect.zipRight(ensureJournal(run, index), journalLines(index, i).pipe(Effect.mapError(unreadable)))
  }

  /** The judgments of a case (this iteration), the latest line of each key, decoded; replies awaiting repair left out. */
  const caseJudgments = (run: RunEntry, index: CaseIndex, i: number, caseId: string) =>
    Effect.gen(function*() {
      const lines = yield* journalOf(run, index, i, caseId)
      const byKey = new Map<string, Judgment>()
      for (const text of lines) {
        let parsed: unknown
        try {
          parsed = JSON.parse(text)
        } catch {
          continue
        }
        if (!isRecord(parsed) || "kind" in parsed) continue
        const decoded = Schema.decodeUnknownEither(Judgment)(parsed)
        if (decoded._tag === "Right") byKey.set(decoded.right.key, decoded.right)
      }
      return [...byKey.values()]
    })

  const statusText = (
    detail: CaseDetail | undefined,
    bits: number,
    verdict: { readonly pass: boolean; readonly why: string } | undefined,
    flags: ReadonlyArray<string>
  ) => {
    const status = statusOf(bits)
    const why = (bits & 1) !== 0
      ? "a judgment or the retrieval failed, or the case has no score"
      : [...(verdict === undefined ? [] : [verdict.why]), ...flags].join("; ")
    return { status, why: why === "" ? undefined : why, problem: detail?.problem }
  }

  const getCase = Effect.fn("Review.getCase")(function*(id: string, caseId: string, iteration: number | undefined) {
    const run = yield* getRun(id)
    const it = yield* checkIteration(run, iteration)
    const { index } = yield* getIndex(run, it)
    const i = yield* lookupCase(index, caseId).pipe(Effect.mapError(unreadable))
    if (i < 0) return yield* Effect.fail(notFound(`run ${id} has no case ${JSON.stringify(caseId)} in iteration ${it}`))
    const [row, record] = yield* Effect.all([readCaseMetrics(index, i), readRecord(index, i)]).pipe(
      Effect.mapError(unreadable)
    )
    const view = viewOf(run)
    const safely = <A>(f: () => A | undefined): A | undefined => {
      try {
        return f()
      } catch {
        return undefined
      }
    }
    const detail = record === undefined ? undefined : safely(() => view?.caseDetail?.(record))
    const verdict = record === undefined ? undefined : safely(() => view?.caseVerdict?.(record))
    const flags = record === undefined ? [] : safely(() => view?.caseFlags?.(record)) ?? []
    let bits = index.status[i]!
    if (verdict !== undefined) bits |= verdict.pass ? VERDICT_PASS : VERDICT_FAIL
    if (flags.length > 0) bits |= FLAGGED
    const metrics = index.metrics.map((spec, c) => ({
      spec,
      value: row === undefined ? valueOf(index, c, i) : row.metrics[spec.name] ?? null
    }))
    const state = yield* readLabels(run)
    const labelOf = new Map<string, Label>()
    for (const l of runLabels(state, run.manifest.runId)) if (l.caseId === caseId) labelOf.set(targetKey(l.target), l)
    const targets = caseTargets(record, metrics).map((t) => {
      const label = labelOf.get(t.key)
      return label === undefined ? t : { ...t, label }
    })
    const judgments = yield* caseJudgments(run, index, i, caseId)
    const tokens = noTokens()
    for (const j of judgments) addUsageTo(tokens, j.usage, j.via)
    const price = run.manifest.price ?? undefined
    const fields: Array<readonly [string, string]> = detail?.fields !== undefined
      ? detail.fields.map(([a, b]) => [a, b] as const)
      : [
        ...(questionOf(record) === undefined ? [] : [["Question", questionOf(record)!] as const]),
        ...(answerOf(record) === undefined ? [] : [["Answer", answerOf(record)!] as const])
      ]
    const generated = isRecord(record) && isRecord(record["generated"]) ? record["generated"] : undefined
    const num = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : null)
    const latencyMetric = metrics.find((m) => m.spec.name === "targetLatencyMs")?.value ?? null
    const { status, why, problem } = statusText(detail, bits, verdict, flags)
    return {
      runId: run.id,
      caseId,
      iteration: it,
      line: index.line[i]! >= 0 ? index.line[i]! : null,
      status,
      ...(why === undefined ? {} : { why }),
      fields,
      tables: (detail?.tables ?? []).map((t) => ({
        caption: t.caption,
        columns: [...t.columns],
        rows: t.rows.map((r) => ({ cells: [...r.cells], ...(r.status === undefined ? {} : { status: r.status }) })),
        ...(t.textColumns === undefined ? {} : { textColumns: [...t.textColumns] })
      })),
      ...(problem === undefined ? {} : { problem }),
      metrics,
      targets,
      judgments: judgments.map((j): JudgmentView => ({
        criterion: j.criterion,
        target: j.target,
        status: j.status,
        score: j.score,
        ...(j.confidence === undefined ? {} : { confidence: j.confidence }),
        reason: j.reason,
        ...(j.evidence === undefined ? {} : { evidence: j.evidence }),
        ...(j.raw === undefined ? {} : { raw: j.raw }),
        attempts: j.attempts,
        latencyMs: j.latencyMs,
        inputTokens: j.usage.inputTokens,
        outputTokens: j.usage.outputTokens,
        model: j.model
      })),
      system: {
        latencyMs: num(generated?.["latencyMs"]) ?? latencyMetric,
        ttfbMs: num(generated?.["ttfbMs"]),
        answerStatus: typeof generated?.["status"] === "string" ? generated["status"] : null,
        judgeInputTokens: judgments.length === 0 ? null : tokens.input,
        judgeOutputTokens: judgments.length === 0 ? null : tokens.output,
        judgeCostUsd: judgments.length === 0 || price === undefined ? null : usdOf(tokens, price)
      },
      record: record ?? null
    } satisfies CaseView
  })

  // -------------------------------------------------------------------------------------------
  // Labels

  /** The labelled cases of a run, cut from its indexes (see `Agreement.ts`): all iterations for a run preferences compare with. */
  const sliceOf = (run: RunEntry, caseIds: ReadonlySet<string>, allIterations: boolean) =>
    Effect.gen(function*() {
      const n = allIterations ? Math.max(1, Math.floor(run.manifest.iterations)) : 1
      const iterations: Array<SliceRun["iterations"][number]> = []
      const journal: Array<string> = []
      for (let it = 1; it <= n; it++) {
        const { index } = yield* getIndex(run, it)
        const records: Array<string> = []
        const caseMetrics: Array<string> = []
        for (const id of caseIds) {
          const i = yield* lookupCase(index, id).pipe(Effect.mapError(unreadable))
          if (i < 0) continue
          const lines = yield* caseLines(index, i).pipe(Effect.mapError(unreadable))
          if (lines.record !== undefined) records.push(lines.record)
          if (lines.metrics !== undefined) caseMetrics.push(lines.metrics)
          if (it === 1 && !allIterations) journal.push(...(yield* journalOf(run, index, i, id)))
        }
        iterations.push({ iteration: it, records, caseMetrics })
      }
      return { dir: run.dir, iterations, journal } satisfies SliceRun
    })

  /** The judge's agreement with the labels so far: calibrate's, over the labelled slice of the run. */
  const runAgreement = (run: RunEntry, state: LabelState): Effect.Effect<Agreement, UiError> =>
    Effect.gen(function*() {
      const labels = runLabels(state, run.manifest.runId)
      if (labels.length === 0) return summarise(undefined, 0, state)
      const slice = yield* sliceOf(run, new Set(labels.map((l) => l.caseId)), false)
      // The runs preference labels compare this run's answers with, and their cases.
      const otherCases = new Map<string, Set<string>>()
      for (const l of labels) {
        if (l.target.kind !== "preference") continue
        const ids = otherCases.get(l.target.other.runId) ?? new Set<string>()
        ids.add(l.target.other.caseId ?? l.caseId)
        otherCases.set(l.target.other.runId, ids)
      }
      const others: Array<SliceRun> = []
      for (const [runId, ids] of otherCases) {
        const other = yield* catalog.get(runId)
        if (other !== undefined) others.push(yield* sliceOf(other, ids, true))
      }
      const calibration = yield* calibrateSlice(slice, others, labels).pipe(
        Effect.mapError((e) => uiError(500, "agreement_failed", `calibrate: ${e.message}`))
      )
      return summarise(calibration, labels.length, state)
    })

  const getAgreement = Effect.fn("Review.agreement")(function*(id: string) {
    const run = yield* getRun(id)
    return (yield* runAgreement(run, yield* readLabels(run))) satisfies Agreement
  })

  const listLabels = Effect.fn("Review.listLabels")(function*(id: string) {
    const run = yield* getRun(id)
    const state = yield* readLabels(run)
    return {
      labels: [...runLabels(state, run.manifest.runId)],
      lines: state.lines,
      skipped: [...state.skipped],
      torn: state.torn
    } satisfies LabelList
  })

  const addLabel = Effect.fn("Review.addLabel")(function*(id: string, request: LabelRequest) {
    const run = yield* getRun(id)
    const it = yield* checkIteration(run, request.iteration)
    let judged: Label["judged"]
    if (request.target.kind === "preference") {
      const wanted = request.target.other
      const other = yield* getRun(wanted.runId).pipe(
        Effect.catchAll(() =>
          Effect.fail(badRequest(`target.other.runId: no run ${JSON.stringify(wanted.runId)}`, "target.other.runId"))
        )
      )
      if (!("preference" in request.label)) {
        return yield* Effect.fail(
          badRequest(
            "a preference label is a preference from -2 (this run's answer much better) to 2 (the other's much better)",
            "label"
          )
        )
      }
      judged = yield* preferenceJudged(run, other, wanted.caseId ?? request.caseId)
    } else {
      const view = yield* getCase(id, request.caseId, it)
      const target = view.targets.find((t) => t.key === targetKey(request.target))
      if (target === undefined) {
        return yield* Effect.fail(
          badRequest(`case ${JSON.stringify(request.caseId)} has no target ${targetKey(request.target)}`, "target")
        )
      }
      const problem = labelProblem(target, request.label, request.target.kind)
      if (problem !== undefined) return yield* Effect.fail(badRequest(problem, "label"))
      if (request.target.kind === "metric" && "value" in request.label) {
        const spec = view.metrics.find((m) => m.spec.name === (request.target as { metric: string }).metric)?.spec
        if (
          spec !== undefined &&
          (request.label.value < spec.min || (spec.max !== null && request.label.value > spec.max))
        ) {
          return yield* Effect.fail(
            badRequest(
              `value ${request.label.value} is outside ${spec.name}'s range ${spec.min}–${spec.max ?? "∞"}`,
              "label.value"
            )
          )
        }
      }
      judged = target.judged
    }
    const label: Label = {
      runId: run.manifest.runId,
      caseId: request.caseId,
      target: request.target,
      label: request.label,
      judged,
      ...(request.note === undefined || request.note.trim() === "" ? {} : { note: request.note }),
      by: options.user,
      at: now().toISOString()
    }
    const state = yield* logOf(run).append(label).pipe(Effect.mapError(unreadable))
    const saved = state.latest.get(labelKey(label)) ?? label
    return { label: saved, agreement: yield* runAgreement(run, state) }
  })

  /** The judges' preference between two runs' answers to a case: B − A of the headline metric, in its better direction. */
  const preferenceJudged = (run: RunEntry, other: RunEntry, caseId: string) =>
    Effect.gen(function*() {
      const metric = rankingOf(run)
      if (metric === undefined) return null
      const a = yield* getIndex(run, 1)
      const b = yield* getIndex(other, 1)
      const ia = yield* lookupCase(a.index, caseId).pipe(Effect.mapError(unreadable))
      const ib = yield* lookupCase(b.index, caseId).pipe(Effect.mapError(unreadable))
      if (ia < 0) return yield* Effect.fail(badRequest(`run ${run.id} has no case ${JSON.stringify(caseId)}`, "caseId"))
      if (ib < 0) {
        return yield* Effect.fail(
          badRequest(`run ${other.id} has no case ${JSON.stringify(caseId)}`, "target.other.caseId")
        )
      }
      const ca = metricColumn(a.index, metric)
      const cb = metricColumn(b.index, metric)
      const va = ca < 0 ? null : valueOf(a.index, ca, ia)
      const vb = cb < 0 ? null : valueOf(b.index, cb, ib)
      if (va === null || vb === null) return null
      const lower = a.index.metrics[ca]?.direction === "lower"
      return lower ? va - vb : vb - va
    })

  // -------------------------------------------------------------------------------------------
  // The queue

  const queue = Effect.fn("Review.queue")(
    function*(
      id: string,
      params: {
        readonly size?: number | undefined
        readonly seed?: number | undefined
        readonly iteration?: number | undefined
      }
    ) {
      const run = yield* getRun(id)
      const it = yield* checkIteration(run, params.iteration)
      const { index } = yield* getIndex(run, it)
      const state = yield* readLabels(run)
      const labelled = yield* labelledCases(run, index, runLabels(state, run.manifest.runId))
      const headline = rankingOf(run)
      const metric = headline !== undefined && metricColumn(index, headline) >= 0
        ? headline
        : index.metrics.find((m) => m.direction !== "none")?.name
      const notes: Array<string> = []
      const iterations: Array<{ index: CaseIndex; name: string }> = []
      const n = Math.max(1, Math.floor(run.manifest.iterations))
      if (metric !== undefined && n > 1) {
        for (let other = 1; other <= Math.min(n, 5); other++) {
          if (other === it) continue
          iterations.push({ index: (yield* getIndex(run, other)).index, name: `in iteration ${other}` })
        }
      }
      // Another judge over the same input: the newest such run.
      const judges: Array<{ index: CaseIndex; name: string }> = []
      if (metric !== undefined) {
        const { runs } = yield* catalog.scan
        const m = run.manifest
        const peer = runs.find((r) =>
          r.dir !== run.dir && r.manifest.pipeline.name === m.pipeline.name &&
          r.manifest.input.sha256 === m.input.sha256 &&
          (r.manifest.judge.provider !== m.judge.provider || r.manifest.judge.model !== m.judge.model)
        )
        if (peer !== undefined) {
          judges.push({
            index: (yield* getIndex(peer, 1)).index,
            name: `by ${peer.manifest.judge.model} (run ${peer.id})`
          })
          notes.push(`judges compared with run ${peer.id} (${peer.manifest.judge.label})`)
        }
      }
      if (n > 1) notes.push(`iterations compared: ${Math.min(n, 5)}`)
      const picks = reviewQueue({
        index,
        metric,
        labelled,
        size: params.size ?? 20,
        seed: params.seed ?? 42,
        iterations,
        judges
      })
      const items: Array<ReviewQueue["items"][number]> = []
      for (const p of picks) {
        const caseId = yield* caseIdOf(index, p.case).pipe(Effect.mapError(unreadable))
        if (caseId !== undefined) items.push({ caseId, reason: p.reason, kind: p.kind, value: p.value })
      }
      return { metric: metric ?? null, items, unlabelled: index.cases - labelled.size, notes } satisfies ReviewQueue
    }
  )

  // -------------------------------------------------------------------------------------------
  // Compare

  interface ComparisonState {
    readonly key: string
    readonly a: RunCases
    readonly b: RunCases
    readonly progress: Progress
    readonly fiber: Fiber.RuntimeFiber<void, never>
  }
  let comparison: ComparisonState | undefined

  /** Every iteration's index of a run, and its case ids (in case order). */
  const casesOf = (run: RunEntry) =>
    Effect.gen(function*() {
      const n = Math.max(1, Math.floor(run.manifest.iterations))
      const indexes: Array<CaseIndex> = []
      for (let it = 1; it <= n; it++) indexes.push((yield* getIndex(run, it)).index)
      const ids = yield* readCaseIds(indexes[0]!).pipe(Effect.mapError(unreadable))
      return runCasesOver(run, indexes, ids)
    })

  const compare = Effect.fn("Review.compare")(
    function*(
      params: {
        readonly a: string
        readonly b: string
        readonly metric?: string | undefined
        readonly offset?: number | undefined
        readonly limit?: number | undefined
      }
    ) {
      const runA = yield* getRun(params.a)
      const runB = yield* getRun(params.b)
      const stamps = [runA, runB].map((r) => JSON.stringify(currentStamp(Path.join(r.dir, caseMetricsFile(1))) ?? null))
        .join("|")
      const key = `${runA.dir}\u0000${runB.dir}\u0000${stamps}`
      if (comparison?.key !== key) {
        if (comparison !== undefined) yield* Fiber.interrupt(comparison.fiber)
        comparison = undefined
        const a = yield* casesOf(runA)
        const b = yield* casesOf(runB)
        const progress = yield* plan(a, b).pipe(Effect.mapError((e) => badRequest(e.message)))
        const first = params.metric ?? rankingOf(runA)
        const order = first !== undefined && progress.selected.includes(first)
          ? [first, ...progress.selected.filter((m) => m !== first)]
          : progress.selected
        // compare's tests in the background, each metric's result kept as it lands.
        const fiber = yield* Effect.forkDaemon(
          testMetrics(options.compareBin, a, b, order, (m, r) => {
            if (typeof r === "string") progress.failed.set(m, r)
            else progress.done.set(m, r)
          }, options.compareInProcessUpTo)
        )
        comparison = { key, a, b, progress, fiber }
      }
      const { a, b, progress } = comparison
      const headline = rankingOf(runA)
      const metric = params.metric ?? (headline !== undefined && progress.selected.includes(headline)
        ? headline
        : progress.selected[0])
      if (metric === undefined || !progress.selected.includes(metric)) {
        return yield* Effect.fail(
          badRequest(
            `metric: ${JSON.stringify(params.metric ?? "")} is not compared; compared: ${progress.selected.join(", ")}`,
            "metric"
          )
        )
      }
      const lower = a.specs.get(metric)?.direction === "lower"
      const rows: Array<{ caseId: string; a: number | null; b: number | null; change: number | null }> = []
      for (const caseId of a.cases.keys()) {
        const va = a.cases.get(caseId)?.[metric] ?? null
        const vb = b.cases.get(caseId)?.[metric] ?? null
        rows.push({ caseId, a: va, b: vb, change: va === null || vb === null ? null : lower ? va - vb : vb - va })
      }
      rows.sort((
        x,
        y
      ) => (x.change === null ? (y.change === null ? 0 : 1) : y.change === null ? -1 : x.change - y.change))
      const offset = params.offset ?? 0
      const limit = params.limit ?? 50
      const slotA = yield* getIndex(runA, 1)
      const page: Array<Comparison["changed"]["rows"][number]> = []
      for (const r of rows.slice(offset, offset + limit)) {
        const i = yield* lookupCase(slotA.index, r.caseId).pipe(Effect.mapError(unreadable))
        const record = i < 0 ? undefined : yield* readRecord(slotA.index, i).pipe(Effect.mapError(unreadable))
        page.push({ ...r, question: cut(questionOf(record)) })
      }
      // B significantly worse first, then no difference, B better, too few cases (each in compare's order).
      const done = progress.selected.flatMap((m) => {
        const r = progress.done.get(m)
        return r === undefined ? [] : [r]
      }).sort((x, y) => WINNER_ORDER[x.winner] - WINNER_ORDER[y.winner])
      return {
        a: yield* summaryOf(runA),
        b: yield* summaryOf(runB),
        cases: progress.cases,
        alpha: progress.settings.alpha,
        seed: progress.settings.seed,
        metrics: done,
        pending: progress.selected.filter((m) => !progress.done.has(m) && !progress.failed.has(m)),
        failed: [...progress.failed].map(([m, problem]) => ({ metric: m, problem })),
        onlyInA: [...progress.onlyInA],
        onlyInB: [...progress.onlyInB],
        metric,
        changed: {
          total: rows.length,
          worse: rows.filter((r) => r.change !== null && r.change < 0).length,
          better: rows.filter((r) => r.change !== null && r.change > 0).length,
          offset,
          rows: page
        }
      } satisfies Comparison
    }
  )

  /** Stops the background work — compare's child process killed before this completes — and closes the files. */
  const close = Effect.gen(function*() {
    const running = comparison
    comparison = undefined
    if (running !== undefined) yield* Fiber.interrupt(running.fiber)
    const open = [...slots.values()]
    slots.clear()
    for (const slot of open) {
      if (slot.background !== undefined) yield* Fiber.interrupt(slot.background)
      closeIndex(slot.index)
    }
  })

  return {
    catalog,
    user: options.user,
    listRuns,
    runDetail,
    listCases,
    getCase,
    getAgreement,
    listLabels,
    addLabel,
    queue,
    compare,
    close,
    /** For tests and the bench: the index of a run's iteration, built if needed. */
    indexOf: (id: string, iteration = 1) =>
      Effect.flatMap(getRun(id), (run) => Effect.map(getIndex(run, iteration), (s) => s.index)),
    /** For tests: wait until the background pass of an index is done. */
    settled: (id: string, iteration = 1) =>
      Effect.flatMap(
        getRun(id),
        (run) =>
          Effect.flatMap(
            getIndex(run, iteration),
            (s) => (s.background === undefined ? Effect.void : Fiber.join(s.background))
          )
      )
  }
}

export type Review = ReturnType<typeof make>
