/**
 * A run's labels file, `<run-dir>/labels.jsonl` (the one labels format, `domain/Label.ts`): appended
 * one whole line per label and read back incrementally.
 *
 * The journal's append discipline (`store/JudgmentJournal.ts`): a label is one `write` of a whole
 * line (repeated only when the system writes less: `writeFully`), fsynced — and the directory too
 * when the file is new — before the request is answered, so an acknowledged label survives a crash
 * of the server or the machine. Appends are serialised per file, so two browser tabs labelling at
 * once each get their line, whole. A line torn by a crash mid-write was never acknowledged: the next
 * append cuts it off first, and reading skips it (`torn`). An append that fails (a full disk) cuts
 * the file back to its last whole line and fails with the reason. A damaged line in the middle (a
 * hand edit) is skipped, with its line number, not fatal. Later lines about the same run, case and
 * target replace earlier ones (`labelKey`).
 *
 * One `rag-eval ui` process appends to a run's labels at a time; two processes serving the same
 * output directory would still write whole lines (O_APPEND), but without a shared lock.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, type OutputError } from "../domain/Errors.js"
import { Label, labelKey, LABELS_FILE } from "../domain/Label.js"
import { describeIssues } from "../domain/RunFiles.js"
import { fileReadProblem, writeFully, writeProblem } from "../io/Files.js"

export interface LabelState {
  /** The latest label per run, case and target (`labelKey`), in the order first labelled. */
  readonly latest: ReadonlyMap<string, Label>
  /** Whole lines read. */
  readonly lines: number
  /** Lines that are not labels (skipped), each with why. */
  readonly skipped: ReadonlyArray<{ readonly line: number; readonly problem: string }>
  /** The file ends in a line without its newline (a crash mid-write): not read. */
  readonly torn: boolean
}

export interface LabelLog {
  readonly path: string
  /** The labels now (reads only what was appended since the last read; all again if the file was replaced). */
  readonly read: Effect.Effect<LabelState, InputError>
  /** Appends one label (whole line, fsynced) and returns the labels with it. */
  readonly append: (label: Label) => Effect.Effect<LabelState, OutputError | InputError>
}

const decodeLabel = Schema.decodeUnknownEither(Label)
const encodeLabel = Schema.encodeSync(Label)

const NEWLINE = 0x0a

/** The size of the file up to and including its last newline (0 when it has none). */
const wholeLinesSize = (fd: number, size: number): number => {
  const block = Buffer.allocUnsafe(64 * 1024)
  let end = size
  while (end > 0) {
    const start = Math.max(0, end - block.length)
    const n = fs.readSync(fd, block, 0, end - start, start)
    const nl = block.subarray(0, n).lastIndexOf(NEWLINE)
    if (nl !== -1) return start + nl + 1
    end = start
  }
  return 0
}

export const makeLabelLog = (runDir: string): LabelLog => {
  const path = Path.join(runDir, LABELS_FILE)
  let latest = new Map<string, Label>()
  let lines = 0
  let skipped: Array<{ line: number; problem: string }> = []
  /** Bytes read: every whole line before it. */
  let consumed = 0
  let ino: number | undefined
  let torn = false
  const lock = Effect.unsafeMakeSemaphore(1)

  const state = (): LabelState => ({ latest, lines, skipped, torn })

  const reset = () => {
    latest = new Map()
    lines = 0
    skipped = []
    consumed = 0
    torn = false
  }

  const readNew = Effect.try({
    try: (): LabelState => {
      let stat: fs.Stats
      try {
        stat = fs.statSync(path)
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") {
          reset()
          ino = undefined
          return state()
        }
        throw e
      }
      if (ino !== stat.ino || stat.size < consumed) {
        reset()
        ino = stat.ino
      }
      if (stat.size === consumed) {
        torn = false
        return state()
      }
      const fd = fs.openSync(path, "r")
      try {
        const length = stat.size - consumed
        const buffer = Buffer.allocUnsafe(length)
        let read = 0
        while (read < length) {
          const n = fs.readSync(fd, buffer, read, length - read, consumed + read)
          if (n === 0) break
          read += n
        }
        let start = 0
        for (let nl = buffer.indexOf(NEWLINE); nl !== -1 && nl < read; nl = buffer.indexOf(NEWLINE, start)) {
          lines++
          const text = buffer.toString("utf8", start, nl).replace(/\r$/, "")
          start = nl + 1
          if (text.trim() === "") continue
          let parsed: unknown
          try {
            parsed = JSON.parse(text)
          } catch (e) {
            skipped.push({ line: lines, problem: `not valid JSON (${e instanceof Error ? e.message : String(e)})` })
            continue
          }
          const decoded = decodeLabel(parsed)
          if (decoded._tag === "Left") {
            skipped.push({ line: lines, problem: `not a label: ${describeIssues(decoded.left)}` })
            continue
          }
          const key = labelKey(decoded.right)
          // The latest wins, in the position of the first.
          latest.set(key, decoded.right)
        }
        consumed += start
        torn = start < read
        return state()
      } finally {
        fs.closeSync(fd)
      }
    },
    catch: (e) => new InputError({ file: path, problem: fileReadProblem(e) })
  })

  const write = (label: Label) =>
    Effect.try({
      try: () => {
        const line = JSON.stringify(encodeLabel(label)) + "\n"
        const existed = fs.existsSync(path)
        // Read and append: the last byte tells whether a torn line must be cut first.
        const fd = fs.openSync(path, "a+")
        try {
          let size = fs.fstatSync(fd).size
          // A torn last line (a crash mid-write, never acknowledged): cut off before appending.
          if (size > 0) {
            const last = Buffer.allocUnsafe(1)
            fs.readSync(fd, last, 0, 1, size - 1)
            if (last[0] !== NEWLINE) {
              size = wholeLinesSize(fd, size)
              fs.ftruncateSync(fd, size)
            }
          }
          try {
            writeFully(fd, line)
            fs.fsyncSync(fd)
          } catch (e) {
            // Back to the last whole line: a half-written label must not join the next one.
            try {
              fs.ftruncateSync(fd, size)
            } catch {
              // The error below says what went wrong first.
            }
            throw e
          }
        } finally {
          fs.closeSync(fd)
        }
        if (!existed) {
          // The new file's directory entry, durable too.
          const dirFd = fs.openSync(Path.dirname(path), "r")
          try {
            fs.fsyncSync(dirFd)
          } finally {
            fs.closeSync(dirFd)
          }
        }
      },
      catch: (e) => writeProblem(path, e)
    })

  return {
    path,
    read: lock.withPermits(1)(readNew),
    append: (label) => lock.withPermits(1)(Effect.zipRight(write(label), readNew))
  }
}
