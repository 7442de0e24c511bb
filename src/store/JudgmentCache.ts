/**
 * The judgment cache across runs: a judgment with the same key (same case content, rubric hash,
 * provider, model, parameters and iteration) is never paid for twice. Only successful judgments are
 * cached — a failure is asked again next time. The file layer shards by key prefix into
 * `<dir>/<xx>.jsonl` (256 shards), loads a shard on first use and appends new entries in batches; an
 * unreadable line is skipped (the cache is an optimisation, never a reason to fail a run).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as Path from "node:path"
import { Judgment } from "../domain/Judgment.js"
import { writeFully } from "../io/Files.js"

export class JudgmentCache extends Context.Tag("rag-eval/JudgmentCache")<JudgmentCache, {
  readonly get: (key: string) => Effect.Effect<Option.Option<Judgment>>
  readonly put: (judgment: Judgment) => Effect.Effect<void>
}>() {}

const decode = Schema.decodeUnknownOption(Schema.parseJson(Judgment))

/** Buffered cache lines are written once this many characters are waiting, or a second after the last write. */
const FLUSH_CHARS = 256 * 1024
const FLUSH_MS = 1000

export interface FileCacheOptions {
  /**
   * Write new entries in batches (default): a run's own reads are served from memory, and a crash
   * may cost the last second of entries. Off for a long-lived server, whose entries other processes
   * should see at once.
   */
  readonly batchWrites?: boolean | undefined
}

export const makeFile = (
  dir: string,
  options?: FileCacheOptions
): JudgmentCache["Type"] & { readonly close: () => void } => {
  const batched = options?.batchWrites ?? true
  const shards = new Map<string, Map<string, Judgment>>()
  /** Append descriptors, one per shard written (opened once: a run may add thousands of entries). */
  const fds = new Map<string, number>()
  /**
   * New lines by shard, written in batches: the cache is an optimisation (the run's journal is the
   * record), so a crash may cost the last second of entries, but a run does not pay a second write
   * per judgment.
   */
  let pending = new Map<string, string>()
  let pendingChars = 0
  let lastFlush = Date.now()
  let dirMade = false
  /** Shards whose file ends in a torn line (a crash mid-append): the next append starts a new line. */
  const torn = new Set<string>()
  let writable = true
  const shardOf = (key: string) => {
    const id = key.slice(0, 2)
    let shard = shards.get(id)
    if (shard === undefined) {
      shard = new Map()
      const path = Path.join(dir, `${id}.jsonl`)
      if (fs.existsSync(path)) {
        const text = fs.readFileSync(path, "utf8")
        if (text !== "" && !text.endsWith("\n")) torn.add(id)
        for (const line of text.split("\n")) {
          if (line === "") continue
          const j = decode(line)
          if (Option.isSome(j)) shard.set(j.value.key, j.value)
        }
      }
      shards.set(id, shard)
    }
    return { id, shard }
  }
  const flush = () => {
    lastFlush = Date.now()
    if (pending.size === 0) return
    try {
      if (!dirMade) {
        fs.mkdirSync(dir, { recursive: true })
        dirMade = true
      }
      for (const [id, text] of pending) {
        let fd = fds.get(id)
        if (fd === undefined) fds.set(id, fd = fs.openSync(Path.join(dir, `${id}.jsonl`), "a"))
        const before = fs.fstatSync(fd).size
        try {
          writeFully(fd, (torn.has(id) ? "\n" : "") + text)
        } catch (e) {
          // Whole lines or none (a full disk): the shard is cut back to where it was.
          fs.ftruncateSync(fd, before)
          throw e
        }
        torn.delete(id)
      }
    } catch {
      // A read-only or full cache still serves reads; the run's journal is the record that matters.
      writable = false
    }
    // A new map, not clear(): V8 links a cleared map's old table to the new one (see Heuristic.ts).
    pending = new Map()
    pendingChars = 0
  }
  return {
    get: (key) => Effect.sync(() => Option.fromNullable(shardOf(key).shard.get(key))),
    put: (judgment) =>
      judgment.status !== "ok" ? Effect.void : Effect.sync(() => {
        const { id, shard } = shardOf(judgment.key)
        if (shard.has(judgment.key)) return
        shard.set(judgment.key, judgment)
        if (!writable) return
        const line = JSON.stringify(judgment) + "\n"
        pending.set(id, (pending.get(id) ?? "") + line)
        pendingChars += line.length
        if (!batched || pendingChars >= FLUSH_CHARS || Date.now() - lastFlush >= FLUSH_MS) flush()
      }),
    close: () => {
      if (writable) flush()
      for (const fd of fds.values()) fs.closeSync(fd)
      fds.clear()
    }
  }
}

/** `<outRoot>/.cache/judgments/` — shared by every run (and `rag-eval serve`) under that root. */
export const cacheDir = (outRoot: string) => Path.join(outRoot, ".cache", "judgments")

export const layerFile = (dir: string, options?: FileCacheOptions) =>
  Layer.scoped(
    JudgmentCache,
    Effect.acquireRelease(Effect.sync(() => makeFile(dir, options)), (cache) => Effect.sync(cache.close))
  )

/** `--no-cache`: every judgment not in the run's own journal is asked again. */
export const layerNone = Layer.succeed(JudgmentCache, {
  get: () => Effect.succeed(Option.none()),
  put: () => Effect.void
})
