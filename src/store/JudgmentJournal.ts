/**
 * The checkpoint store: every finished judgment (success or recorded failure) is appended to the
 * run's `judgments.jsonl` as soon as it finishes — one `write` per append, O(1), never a rewrite.
 * Opening an existing journal returns what it holds, so a re-run skips completed keys. A torn last
 * line (the process died mid-write) is dropped; any other undecodable line is an error.
 *
 * The store is a Tag with a file Layer, so a SQL-backed store can replace it without touching stages.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, OutputError } from "../domain/Errors.js"
import { Judgment } from "../domain/Judgment.js"

export interface OpenedJournal {
  /** Judgments already recorded, by key (the latest line wins). */
  readonly done: ReadonlyMap<string, Judgment>
  /** Lines dropped as torn (0 or 1). */
  readonly tornLines: number
  readonly append: (judgments: ReadonlyArray<Judgment>) => Effect.Effect<void, OutputError>
  readonly path: string
}

export class JudgmentJournal extends Context.Tag("rag-eval/JudgmentJournal")<JudgmentJournal, {
  /** Open (creating if needed) the journal of a run directory. `fresh` discards what it held. */
  readonly open: (runDir: string, options: { readonly fresh: boolean }) => Effect.Effect<OpenedJournal, OutputError | InputError>
}>() {}

const decodeJudgment = Schema.decodeUnknownEither(Schema.parseJson(Judgment))

export const readJournal = (path: string): Effect.Effect<{ done: Map<string, Judgment>; tornLines: number; validBytes: number }, InputError> =>
  Effect.try({
    try: () => fs.existsSync(path) ? fs.readFileSync(path, "utf8") : "",
    catch: (e) => new InputError({ file: path, problem: `cannot read journal: ${(e as Error).message}` })
  }).pipe(Effect.flatMap((text) => {
    const done = new Map<string, Judgment>()
    let tornLines = 0
    let start = 0
    let line = 0
    while (start < text.length) {
      const end = text.indexOf("\n", start)
      const last = end === -1
      const raw = text.slice(start, last ? text.length : end)
      line++
      start = last ? text.length : end + 1
      if (raw.trim() === "") continue
      const decoded = decodeJudgment(raw)
      if (decoded._tag === "Right") {
        done.set(decoded.right.key, decoded.right)
      } else if (last) {
        // Written up to a crash: the judgment it held is simply made again.
        tornLines++
      } else {
        return Effect.fail(new InputError({ file: path, line, problem: "journal line is not a judgment; the journal is damaged (use --fresh to start over)" }))
      }
    }
    // Bytes up to the end of the last complete line: where a torn tail is cut.
    const validBytes = tornLines === 0 ? Buffer.byteLength(text) : Buffer.byteLength(text.slice(0, text.lastIndexOf("\n") + 1))
    return Effect.succeed({ done, tornLines, validBytes })
  }))

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * One process per run directory: `.lock` holds the owner's pid, taken over when that process is
 * gone (a crash leaves it behind) and removed when the run's scope closes.
 */
const lockRun = (runDir: string) => {
  const path = Path.join(runDir, ".lock")
  return Effect.acquireRelease(
    Effect.suspend(() => {
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          const fd = fs.openSync(path, "wx")
          fs.writeSync(fd, String(process.pid))
          fs.closeSync(fd)
          return Effect.void
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EEXIST") {
            return Effect.fail(new OutputError({ path, problem: `cannot lock the run: ${(e as Error).message}` }))
          }
          const owner = Number.parseInt(fs.readFileSync(path, "utf8"), 10)
          if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
            return Effect.fail(new OutputError({ path: runDir, problem: `this run is in use by process ${owner}; wait for it or stop it first` }))
          }
          fs.rmSync(path, { force: true })
        }
      }
      return Effect.fail(new OutputError({ path, problem: "cannot lock the run" }))
    }),
    () => Effect.sync(() => fs.rmSync(path, { force: true }))
  )
}

const openFile = (runDir: string, options: { readonly fresh: boolean }) =>
  Effect.gen(function*() {
    const path = Path.join(runDir, "judgments.jsonl")
    yield* lockRun(runDir)
    const previous = options.fresh ? { done: new Map<string, Judgment>(), tornLines: 0, validBytes: 0 } : yield* readJournal(path)
    const fd = yield* Effect.try({
      try: () => {
        // Cut the torn tail (constant time) so the next append starts on a fresh line.
        if (previous.tornLines > 0) fs.truncateSync(path, previous.validBytes)
        return fs.openSync(path, options.fresh ? "w" : "a")
      },
      catch: (e) => new OutputError({ path, problem: `cannot write the journal: ${(e as Error).message}` })
    })
    const append = (judgments: ReadonlyArray<Judgment>) =>
      judgments.length === 0 ? Effect.void : Effect.try({
        try: () => {
          let text = ""
          for (const j of judgments) text += JSON.stringify(j) + "\n"
          fs.writeSync(fd, text)
        },
        catch: (e) => new OutputError({ path, problem: `cannot append to the journal: ${(e as Error).message}` })
      })
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.closeSync(fd)))
    return { done: previous.done, tornLines: previous.tornLines, append, path } satisfies OpenedJournal
  })

/** The default store: `judgments.jsonl` in the run directory. Files close when the layer's scope closes. */
export const layerFile = Layer.scoped(
  JudgmentJournal,
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    return {
      open: (runDir: string, options: { readonly fresh: boolean }) => Scope.extend(openFile(runDir, options), scope)
    }
  })
)
