/** Real files in a temp dir for the loader tests. */
import { Chunk, Effect, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { InputError } from "../../src/domain/Errors.js"
import { readRows } from "../../src/load/Rows.js"
import type { ReadOptions, Row } from "../../src/load/Rows.js"

export const makeTempDir = (): string => fs.mkdtempSync(path.join(os.tmpdir(), "rag-eval-load-"))

export const removeDir = (dir: string): void => fs.rmSync(dir, { recursive: true, force: true })

export const writeInput = (dir: string, name: string, content: string | Uint8Array): string => {
  const file = path.join(dir, name)
  fs.writeFileSync(file, content)
  return file
}

export const allRows = (file: string, options?: ReadOptions): Effect.Effect<ReadonlyArray<Row>, InputError> =>
  Effect.map(Stream.runCollect(readRows(file, options)), Chunk.toReadonlyArray)

/** The error reading the file fails with (the test fails if reading succeeds). */
export const readError = (file: string, options?: ReadOptions): Effect.Effect<InputError> =>
  Stream.runDrain(readRows(file, options)).pipe(
    Effect.flatMap(() => Effect.dieMessage(`reading ${file} succeeded, expected an InputError`)),
    Effect.flip
  )
