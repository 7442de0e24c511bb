/**
 * The quick start's run id, as README.md shows it (`run: out/rag-answers/<id>`): the tests that run
 * the quick start's command assert they get this id, so the README and the program cannot drift
 * apart — and a change that moves the id (the heuristic's version is part of it) is one README edit.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const readme = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "..", "README.md")

export const quickStartRunId = (): string => {
  const m = /^run: out\/rag-answers\/([0-9a-f]{12})$/m.exec(fs.readFileSync(readme, "utf8"))
  if (m === null) throw new Error(`README.md shows no "run: out/rag-answers/<id>" line`)
  return m[1]!
}
