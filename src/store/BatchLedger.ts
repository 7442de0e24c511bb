/**
 * The batches of a `--batch` run, journaled in `batches.jsonl` beside the judgment journal, the
 * moment each thing exists (whole lines, fsynced, as the journal writes them):
 *
 * - `{"kind":"upload","file":…,"ids":[…]}` — a request file uploaded (its custom ids: the calls'
 *   first judgment keys), before the batch over it is created;
 * - `{"kind":"batch","id":…,"file":…,"requests":n}` — the batch created over it;
 * - `{"kind":"closed","id":…,"status":…,"answered":n}` — its output collected and journaled.
 *
 * A run killed between any two of these resumes from what the ledger says: an upload without a
 * batch is looked for among the provider's batches (created, then killed before the id was written)
 * and created only when there is none; an open batch is polled again; a closed one is done. So no
 * judgment is submitted twice. A torn last line (a crash mid-write) is dropped.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { OutputError } from "../domain/Errors.js"

export type LedgerLine =
  | {
    readonly kind: "upload"
    readonly file: string
    readonly ids: ReadonlyArray<string>
    readonly bytes: number
    /** `--max-cost`: the estimated cost of its requests, reserved until their replies are journaled. */
    readonly estimateUsd?: number | undefined
  }
  | { readonly kind: "batch"; readonly id: string; readonly file: string; readonly requests: number }
  | { readonly kind: "closed"; readonly id: string; readonly status: string; readonly answered: number }

export interface LedgerUpload {
  readonly file: string
  readonly ids: ReadonlyArray<string>
  /** See the upload line's `estimateUsd`. */
  readonly estimateUsd?: number | undefined
  /** The batch created over it, once journaled. */
  batch?: string | undefined
  /** Its status once collected. */
  closed?: string | undefined
}

export interface BatchLedger {
  readonly path: string
  /** Every upload, in order (with its batch and whether it was collected). */
  readonly uploads: ReadonlyArray<LedgerUpload>
  readonly append: (line: LedgerLine) => Effect.Effect<void, OutputError>
  readonly close: () => void
}

export const LEDGER_FILE = "batches.jsonl"

const apply = (
  uploads: Array<LedgerUpload>,
  byFile: Map<string, LedgerUpload>,
  byBatch: Map<string, LedgerUpload>,
  line: LedgerLine
) => {
  switch (line.kind) {
    case "upload": {
      const u: LedgerUpload = {
        file: line.file,
        ids: line.ids,
        ...(line.estimateUsd === undefined ? {} : { estimateUsd: line.estimateUsd })
      }
      uploads.push(u)
      byFile.set(line.file, u)
      return
    }
    case "batch": {
      const u = byFile.get(line.file)
      if (u !== undefined) {
        u.batch = line.id
        byBatch.set(line.id, u)
      }
      return
    }
    case "closed": {
      const u = byBatch.get(line.id)
      if (u !== undefined) u.closed = line.status
      return
    }
  }
}

/** Each line of a ledger's text that parses, whole lines only (a torn last line is left out). */
const readLines = (text: string): Array<LedgerLine> => {
  const lines: Array<LedgerLine> = []
  for (const raw of text.slice(0, text.lastIndexOf("\n") + 1).split("\n")) {
    if (raw === "") continue
    try {
      lines.push(JSON.parse(raw) as LedgerLine)
    } catch {
      // a damaged line in the middle (cannot happen with whole-line writes): skipped
    }
  }
  return lines
}

/**
 * The uploads of a run's ledger as it stands, read without opening it for writing; none when the
 * run has no ledger.
 */
export const readUploads = (runDir: string): ReadonlyArray<LedgerUpload> => {
  let text = ""
  try {
    text = fs.readFileSync(Path.join(runDir, LEDGER_FILE), "utf8")
  } catch {
    return []
  }
  const uploads: Array<LedgerUpload> = []
  const lines = readLines(text)
  const byFile = new Map<string, LedgerUpload>()
  const byBatch = new Map<string, LedgerUpload>()
  for (const line of lines) apply(uploads, byFile, byBatch, line)
  return uploads
}

/**
 * `--max-cost`: the estimate of each request (by custom id) in a batch not yet collected — reserved
 * against the budget until its reply is journaled.
 */
export const reservedEstimates = (uploads: ReadonlyArray<LedgerUpload>): Map<string, number> => {
  const reserved = new Map<string, number>()
  for (const upload of uploads) {
    if (upload.closed !== undefined || upload.estimateUsd === undefined || upload.ids.length === 0) continue
    const share = upload.estimateUsd / upload.ids.length
    for (const id of upload.ids) reserved.set(id, share)
  }
  return reserved
}

/** Open (or create) a run's ledger; `fresh` starts it over. */
export const open = (runDir: string, options: { readonly fresh: boolean }): Effect.Effect<BatchLedger, OutputError> =>
  Effect.try({
    try: (): BatchLedger => {
      const path = Path.join(runDir, LEDGER_FILE)
      if (options.fresh) fs.rmSync(path, { force: true })
      const uploads: Array<LedgerUpload> = []
      const byFile = new Map<string, LedgerUpload>()
      const byBatch = new Map<string, LedgerUpload>()
      let text = ""
      try {
        text = fs.readFileSync(path, "utf8")
      } catch {
        // no ledger yet
      }
      const end = text.lastIndexOf("\n") + 1
      if (end < text.length) {
        // A torn last line: cut it off so the next line starts clean.
        fs.truncateSync(path, Buffer.byteLength(text.slice(0, end)))
      }
      for (const line of readLines(text)) apply(uploads, byFile, byBatch, line)
      const fd = fs.openSync(path, "a")
      const append = (line: LedgerLine) =>
        Effect.try({
          try: () => {
            const buf = Buffer.from(`${JSON.stringify(line)}\n`)
            const before = fs.fstatSync(fd).size
            try {
              for (let at = 0; at < buf.length;) at += fs.writeSync(fd, buf, at, buf.length - at)
              fs.fsyncSync(fd)
            } catch (e) {
              // Whole lines or none: cut a partial write back.
              try {
                fs.ftruncateSync(fd, before)
              } catch {
                // the error below says what happened
              }
              throw e
            }
            apply(uploads, byFile, byBatch, line)
          },
          catch: (e) =>
            new OutputError({
              path,
              problem: `cannot write the batch ledger: ${(e as Error).message}`,
              diskFull: (e as { code?: string }).code === "ENOSPC"
            })
        })
      return { path, uploads, append, close: () => fs.closeSync(fd) }
    },
    catch: (e) =>
      e instanceof OutputError
        ? e
        : new OutputError({
          path: Path.join(runDir, LEDGER_FILE),
          problem: `cannot open the batch ledger: ${(e as Error).message}`
        })
  })
