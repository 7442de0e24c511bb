/**
 * The runs the review serves: every run directory under `--out` (`<out>/<pipeline>/<run-id>/` with a
 * `manifest.json`), its manifest and summary decoded through `domain/RunFiles.ts`, re-read only when
 * a file changes. A run's id in the API is its run id (two directories with the same run id —
 * copies — are told apart as `<pipeline>.<run-id>`). Ids are looked up in this catalog, never turned
 * into paths: no request names a file.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { InputError, UsageError } from "../domain/Errors.js"
import { traitsOfProvider } from "../domain/JudgeTraits.js"
import type { MetricSpec } from "../domain/Metric.js"
import {
  type Manifest,
  readJsonFile,
  readManifest,
  type Summary,
  Summary as SummarySchema
} from "../domain/RunFiles.js"
import { maskUrl } from "../domain/Secrets.js"
import type { HeadlineMetric, RunSummary } from "./Domain.js"
import { currentStamp, type FileStamp, sameStamp } from "./LineFile.js"

export interface RunEntry {
  readonly id: string
  /** Absolute path of the run directory. */
  readonly dir: string
  /** Relative to the output root. */
  readonly rel: string
  readonly manifest: Manifest
  readonly summary: Summary | undefined
  /** Why summary.json could not be read, when it is there. */
  readonly summaryProblem: string | undefined
}

interface Cached<A> {
  readonly stamp: FileStamp
  readonly value: Either.Either<A, string>
}

export interface Catalog {
  readonly root: string
  /** Rescans the output root (cheap: directory listings and file stamps; changed files are re-read). */
  readonly scan: Effect.Effect<{
    readonly runs: ReadonlyArray<RunEntry>
    readonly problems: ReadonlyArray<{ readonly dir: string; readonly problem: string }>
  }>
  /** The run with this id (after a scan when it is not known yet). */
  readonly get: (id: string) => Effect.Effect<RunEntry | undefined>
}

const errorText = (e: InputError | UsageError) => e.message

/** Directories of `dir`, sorted, hidden ones (`.cache`) left out. */
const subdirs = (dir: string): Array<string> => {
  try {
    return fs.readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith("."))
      .map((d) => d.name)
      .sort()
  } catch {
    return []
  }
}

export const makeCatalog = (root: string): Catalog => {
  const absRoot = Path.resolve(root)
  const manifests = new Map<string, Cached<Manifest>>()
  const summaries = new Map<string, Cached<Summary>>()
  let known = new Map<string, RunEntry>()

  const cachedRead = <A>(
    cache: Map<string, Cached<A>>,
    path: string,
    read: Effect.Effect<A, InputError | UsageError>
  ): Effect.Effect<Either.Either<A, string> | undefined> =>
    Effect.gen(function*() {
      const stamp = currentStamp(path)
      if (stamp === undefined) {
        cache.delete(path)
        return undefined
      }
      const hit = cache.get(path)
      if (hit !== undefined && sameStamp(hit.stamp, stamp)) return hit.value
      const value = yield* Effect.either(Effect.mapError(read, errorText))
      cache.set(path, { stamp, value })
      return value
    })

  const scan = Effect.gen(function*() {
    const found: Array<Omit<RunEntry, "id">> = []
    const problems: Array<{ dir: string; problem: string }> = []
    for (const pipeline of subdirs(absRoot)) {
      for (const name of subdirs(Path.join(absRoot, pipeline))) {
        const dir = Path.join(absRoot, pipeline, name)
        const rel = Path.join(pipeline, name)
        const manifest = yield* cachedRead(manifests, Path.join(dir, "manifest.json"), readManifest(dir))
        if (manifest === undefined) continue
        if (Either.isLeft(manifest)) {
          problems.push({ dir: rel, problem: manifest.left })
          continue
        }
        const summary = yield* cachedRead(
          summaries,
          Path.join(dir, "summary.json"),
          readJsonFile(SummarySchema, Path.join(dir, "summary.json"), "a rag-eval summary")
        )
        found.push({
          dir,
          rel,
          manifest: manifest.right,
          summary: summary !== undefined && Either.isRight(summary) ? summary.right : undefined,
          summaryProblem: summary !== undefined && Either.isLeft(summary) ? summary.left : undefined
        })
      }
    }
    // Newest first.
    found.sort((a, b) => b.manifest.startedAt.localeCompare(a.manifest.startedAt) || a.rel.localeCompare(b.rel))
    const count = new Map<string, number>()
    for (const f of found) count.set(f.manifest.runId, (count.get(f.manifest.runId) ?? 0) + 1)
    const runs = found.map((f): RunEntry => ({
      ...f,
      id: count.get(f.manifest.runId) === 1 ? f.manifest.runId : `${f.manifest.pipeline.name}.${f.manifest.runId}`
    }))
    known = new Map(runs.map((r) => [r.id, r]))
    return { runs, problems }
  })

  return {
    root: absRoot,
    scan,
    get: (id) =>
      Effect.suspend(() => {
        const hit = known.get(id)
        if (hit !== undefined && fs.existsSync(Path.join(hit.dir, "manifest.json"))) return Effect.succeed(hit)
        return Effect.map(scan, () => known.get(id))
      })
  }
}

// ---------------------------------------------------------------------------------------------
// The list's view of a run

const statusOf = (run: RunEntry): RunSummary["status"] => {
  const m = run.manifest
  switch (m.status) {
    case "running":
    case "submitted":
      return "running"
    case "stopped":
      return "stopped"
    case "failed":
      return "failed"
    case "complete": {
      if (run.summary?.partial === true) return "partial"
      const failed = run.summary?.judgments.failed ?? m.counts?.failed ?? 0
      return failed > 0 ? "failed-judgments" : "complete"
    }
  }
}

/**
 * Headline metrics in the order the page shows them: the ranking metric first, then the quality
 * metrics (a direction, not a latency), then the rest; the first `GLANCE` are the run's glance (and
 * have intervals computed).
 */
export const glanceOrder = <M extends { readonly name: string; readonly spec: MetricSpec | null }>(
  metrics: ReadonlyArray<M>,
  headline: string | undefined
): Array<M> => {
  const rank = (m: M) =>
    m.name === headline ? 0 : m.spec !== null && m.spec.direction !== "none" && m.spec.unit !== "ms" ? 1 : 2
  return metrics.map((m, i) => ({ m, i })).sort((x, y) => rank(x.m) - rank(y.m) || x.i - y.i).map((x) => x.m)
}

export const GLANCE = 4

/** The per-case metric that ranks a run's cases (lowest first): summary v4's first `rankBy`, v3's `headline`. */
export const rankingOf = (run: RunEntry): string | undefined => run.summary?.rankBy?.[0] ?? run.summary?.headline

/** Whether the summary gives its headline metrics' intervals (version 4, the engine's fold). */
export const hasIntervals = (run: RunEntry): boolean =>
  Object.values(run.summary?.metrics ?? {}).some((v) => v !== null && typeof v !== "number" && v.ci !== null)

/** A run as the list shows it; `intervals` are the headline CIs computed when the run was opened. */
export const runSummary = (
  run: RunEntry,
  labels: number,
  intervals: ReadonlyMap<string, { readonly lower: number; readonly upper: number }> | undefined
): RunSummary => {
  const m = run.manifest
  const s = run.summary
  const specs = new Map((s?.metricSpecs ?? m.metricSpecs ?? []).map((spec) => [spec.name, spec]))
  const metrics: Array<HeadlineMetric> = glanceOrder(
    Object.entries(s?.metrics ?? {}).map(([name, value]) => ({
      name,
      value: value === null || typeof value === "number" ? value : value.mean,
      ci: value !== null && typeof value !== "number" && value.ci !== null ? value.ci : intervals?.get(name) ?? null,
      spec: specs.get(name) ?? null
    })),
    rankingOf(run)
  )
  const judgments = s?.judgments ??
    (m.counts === undefined
      ? { total: 0, ok: 0, failed: 0 }
      : { total: m.counts.judgments, ok: m.counts.ok, failed: m.counts.failed })
  return {
    id: run.id,
    runId: m.runId,
    pipeline: m.pipeline.name,
    dir: run.rel,
    startedAt: m.startedAt,
    endedAt: m.endedAt ?? m.stoppedAt ?? null,
    status: statusOf(run),
    judge: {
      provider: m.judge.provider,
      model: m.judge.model,
      label: m.judge.label,
      heuristic: !traitsOfProvider(m.judge.provider).languageModel
    },
    input: { path: m.input.path, sha256: m.input.sha256 },
    cases: m.counts?.cases ?? m.input.cases,
    iterations: m.iterations,
    judgments,
    costUsd: s?.cost.usd ?? m.cost?.usd ?? null,
    target: m.target === undefined ? null : maskUrl(m.target.config.url),
    headline: rankingOf(run) ?? null,
    metrics,
    labels,
    source: "out",
    ...(run.summaryProblem === undefined ? {} : { note: run.summaryProblem })
  }
}
