/**
 * A run directory's judged grades, for `rag-eval calibrate <run-dir>`: read from its journal
 * (`judgments.jsonl`), streamed a line at a time (journals can hold millions of lines).
 *
 * - Only judgment lines count: a line that is not a JSON object with the judgment fields, or that
 *   has a `kind` field (other record kinds, e.g. replies awaiting repair), is skipped.
 * - One iteration (default 1). Several lines for one key: the latest wins.
 * - Retrieval pipelines (targets `hit:<docid>`): criterion "relevance", group = case id (the query),
 *   item = doc id. Rubric pipelines (target `answer`): criterion = rubric id, group = case id, item "".
 * - Claim judgments (extractions, claim checks, nugget grades: `RunClaims.ts`) are not grades of a
 *   case: they are kept apart, per case, for people's claim and nugget labels.
 * - A failed judgment (status "failed") has no grade: it is kept as null and reported as "judge failed".
 * - A torn last line (a crash mid-append) is dropped, as a resumed run drops it; any other line that
 *   is not JSON is an error naming the line.
 * - The order of a query's items is the run's hit order, read from `records-iteration-N.jsonl`
 *   (`hits[].id` by rank); without that file (a run stopped early) the journal's order is used and
 *   `order` says so.
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import { isRecord } from "effect/Predicate"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, UsageError } from "../domain/Errors.js"
import { readManifest as readRunManifest } from "../domain/RunFiles.js"
import { readJsonLines, readLines } from "../io/Files.js"
import { type CriterionGrades, type Graded, type GradeKind, putGrade, relevanceCriterion } from "./Grades.js"
import { addClaimJudgment, parseClaimTarget, type RunClaims } from "./RunClaims.js"

export interface RunSource {
  readonly dir: string
  readonly runId: string
  readonly pipeline: string
  readonly judge: string | undefined
  readonly status: string | undefined
  readonly iteration: number
  readonly iterations: number
}

export interface RunGrades {
  readonly run: RunSource
  readonly kind: GradeKind
  readonly grades: CriterionGrades
  /** Judgment lines of the chosen iteration read (before "latest wins"). */
  readonly judgmentLines: number
  /** Lines skipped as other record kinds or not judgments. */
  readonly otherLines: number
  /** The run's claim judgments (extractions, checks, nugget grades), per case; empty for other pipelines. */
  readonly claims: RunClaims
  /** Claim judgment lines of the chosen iteration (kept in `claims`, not in `grades`). */
  readonly claimLines: number
  readonly tornLastLine: boolean
  /** Rubric ids judged, per calibrate criterion ("relevance" → the retrieval rubric ids). */
  readonly rubrics: ReadonlyMap<string, ReadonlyArray<string>>
  /** Display names of rubrics whose prompt file could be read (rubric id → name). */
  readonly rubricNames: ReadonlyMap<string, string>
  /** How items are ordered within a query. */
  readonly order: "records" | "journal"
}

const readManifest = (dir: string) =>
  readRunManifest(dir, "give a run directory (out/<pipeline>/<run-id>), or a judge's qrels with --judge FILE")

/** The judgment fields calibrate needs, or undefined when the line is not a judgment. */
const judgmentOf = (x: unknown) => {
  if (!isRecord(x) || "kind" in x) return undefined
  const { caseId, iteration, criterion, target, status, score, reason, value } = x
  if (
    typeof caseId !== "string" || typeof iteration !== "number" || typeof criterion !== "string" ||
    typeof target !== "string"
  ) return undefined
  if (status !== "ok" && status !== "failed") return undefined
  if (score !== null && typeof score !== "number") return undefined
  return {
    caseId,
    iteration,
    criterion,
    target,
    status,
    score,
    reason: typeof reason === "string" ? reason : "",
    value
  } as const
}

const hitPrefix = "hit:"

/** Built-in pipelines that judge hits; only consulted when a journal has no judgment to tell. */
const retrievalPipelines: ReadonlySet<string> = new Set(["search-relevance", "course-retrieval"])

/** Reads a rubric's display name from its prompt file, if the file is still there. */
const rubricName = (path: string | undefined, cwd: string | undefined): string | undefined => {
  if (path === undefined) return undefined
  const full = Path.isAbsolute(path) || cwd === undefined ? path : Path.resolve(cwd, path)
  try {
    const parsed = JSON.parse(fs.readFileSync(full, "utf8")) as unknown
    return isRecord(parsed) && typeof parsed["name"] === "string" ? parsed["name"] : undefined
  } catch {
    return undefined
  }
}

export interface RunGradesOptions {
  /** 1-based; default 1. */
  readonly iteration?: number | undefined
  /** The run's journal when it is not `<dir>/judgments.jsonl` (exported from `--store postgres://…`). */
  readonly journal?: string | undefined
}

export const readRunGrades = (
  dir: string,
  options: RunGradesOptions = {}
): Effect.Effect<RunGrades, InputError | UsageError> =>
  Effect.gen(function*() {
    const manifest = yield* readManifest(dir)
    const iterations = Math.max(1, Math.floor(manifest.iterations))
    const iteration = options.iteration ?? 1
    if (!Number.isInteger(iteration) || iteration < 1 || iteration > iterations) {
      return yield* new UsageError({
        problem: `--iteration ${iteration}: run ${manifest.runId} has iteration(s) 1–${iterations}`
      })
    }
    const journal = options.journal ?? Path.join(dir, "judgments.jsonl")
    if (!fs.existsSync(journal)) {
      return yield* new InputError({ file: journal, problem: "the run has no journal (judgments.jsonl)" })
    }

    const grades: CriterionGrades = new Map()
    const claims: RunClaims = new Map()
    let claimLines = 0
    const rubrics = new Map<string, Set<string>>()
    let kind: GradeKind | undefined = undefined
    let line = 0
    let judgmentLines = 0
    let otherLines = 0
    /** A line that did not parse; an error unless it turns out to be the last one (torn). */
    let pendingBad: { readonly line: number; readonly problem: string } | undefined = undefined
    yield* readLines(journal).pipe(
      Stream.mapError((e) => new InputError({ file: journal, problem: e.problem })),
      Stream.runForEachChunk((chunk) => {
        for (const text of Chunk.toReadonlyArray(chunk)) {
          line++
          if (pendingBad !== undefined) {
            return Effect.fail(
              new InputError({
                file: journal,
                line: pendingBad.line,
                problem: `${pendingBad.problem}; the journal is damaged`
              })
            )
          }
          if (text.trim() === "") continue
          let parsed: unknown
          try {
            parsed = JSON.parse(text)
          } catch (e) {
            pendingBad = { line, problem: `not valid JSON (${e instanceof Error ? e.message : String(e)})` }
            continue
          }
          const j = judgmentOf(parsed)
          if (j === undefined) {
            otherLines++
            continue
          }
          if (j.iteration !== iteration) continue
          judgmentLines++
          const claimTarget = parseClaimTarget(j.target)
          if (claimTarget !== undefined) {
            claimLines++
            addClaimJudgment(claims, j, claimTarget, line)
            continue
          }
          const isHit = j.target.startsWith(hitPrefix)
          const lineKind: GradeKind = isHit ? "retrieval" : "rubric"
          if (kind === undefined) kind = lineKind
          else if (kind !== lineKind) {
            return Effect.fail(
              new InputError({
                file: journal,
                line,
                field: "target",
                problem: `mixes per-hit ("hit:…") and per-answer judgments; calibrate expects one kind per run`
              })
            )
          }
          const criterion = isHit ? relevanceCriterion : j.criterion
          let ids = rubrics.get(criterion)
          if (ids === undefined) rubrics.set(criterion, ids = new Set())
          ids.add(j.criterion)
          const grade = j.status === "ok" && typeof j.score === "number" && Number.isFinite(j.score) ? j.score : null
          putGrade(grades, criterion, j.caseId, isHit ? j.target.slice(hitPrefix.length) : "", { grade, line })
        }
        return Effect.void
      })
    )

    // Hit order from the records, when the run wrote them.
    let order: RunGrades["order"] = "journal"
    const recordsFile = Path.join(dir, `records-iteration-${iteration}.jsonl`)
    const byQuery = grades.get(relevanceCriterion)
    if (kind === "retrieval" && byQuery !== undefined && fs.existsSync(recordsFile)) {
      yield* readJsonLines<unknown>(recordsFile).pipe(
        Stream.mapError((e) => new InputError({ file: recordsFile, problem: e.problem })),
        Stream.runForEach((record) =>
          Effect.sync(() => {
            if (!isRecord(record) || typeof record["caseId"] !== "string" || !Array.isArray(record["hits"])) return
            const items = byQuery.get(record["caseId"])
            if (items === undefined) return
            const ranked = (record["hits"] as ReadonlyArray<unknown>)
              .filter(isRecord)
              .map((h, index) => ({ id: String(h["id"]), rank: typeof h["rank"] === "number" ? h["rank"] : index + 1 }))
              .sort((a, b) => a.rank - b.rank)
            const reordered = new Map<string, Graded>()
            for (const { id } of ranked) {
              const graded = items.get(id)
              if (graded !== undefined) reordered.set(id, graded)
            }
            // Judged items the record does not list (should not happen) keep their journal order, last.
            for (const [id, graded] of items) if (!reordered.has(id)) reordered.set(id, graded)
            byQuery.set(record["caseId"], reordered)
          })
        )
      )
      order = "records"
    }

    const rubricNames = new Map<string, string>()
    for (const prompt of manifest.prompts ?? []) {
      const name = rubricName(prompt.path, manifest.cwd)
      if (name !== undefined) rubricNames.set(prompt.id, name)
    }
    return {
      run: {
        dir,
        runId: manifest.runId,
        pipeline: manifest.pipeline.name,
        judge: manifest.judge.label,
        status: manifest.status,
        iteration,
        iterations
      },
      kind: kind ?? (retrievalPipelines.has(manifest.pipeline.name) ? "retrieval" : "rubric"),
      grades,
      judgmentLines,
      otherLines,
      claims,
      claimLines,
      tornLastLine: pendingBad !== undefined,
      rubrics: new Map([...rubrics].map(([k, v]) => [k, [...v]])),
      rubricNames,
      order
    }
  })
