/**
 * Run before `tsc -b tsconfig.build.json` by `npm run build:tsc` — part of `npm run build` and of
 * `npm run typecheck` (the tests' check reads the sources as the declarations that build writes:
 * tsconfig.json's project reference).
 *
 * That build is incremental (its build info is dist/.tsbuildinfo: deleting dist/ deletes it, and the
 * next build emits everything), and an incremental build trusts its build info for the files it
 * emitted before — a dist/ file deleted by hand would stay missing. So when any source's output is
 * missing, the build info goes first.
 * In build mode (`-b`) tsc first compares the sources' and the tsconfig's times with the build
 * info's and, when none is newer, builds no program at all: ~1 CPU-s, against ~7 for `tsc -p` with
 * the same build info and ~26 from scratch — `npm test` right after `npm install`, or after a
 * change to tests only. A newer source is compiled incrementally, as with `-p`.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const info = Path.join(root, "dist", ".tsbuildinfo")
/** What the build leaves out (tsconfig.build.json's `exclude`: directories, as `src/ui/page`). */
const excluded = new Set(
  JSON.parse(fs.readFileSync(Path.join(root, "tsconfig.build.json"), "utf8")).exclude.map((p) => Path.normalize(p))
)

/** The first source under src/ that the build compiles and whose dist/ output (code or declarations) is missing. */
const missing = (dir) => {
  for (const entry of fs.readdirSync(Path.join(root, "src", dir), { withFileTypes: true })) {
    const rel = Path.join(dir, entry.name)
    if (entry.isDirectory()) {
      if (excluded.has(Path.join("src", rel))) continue
      const found = missing(rel)
      if (found !== undefined) return found
    } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) {
      const out = Path.join(root, "dist", rel.replace(/\.ts$/, ""))
      if (!fs.existsSync(`${out}.js`) || !fs.existsSync(`${out}.d.ts`)) return rel
    }
  }
  return undefined
}

if (fs.existsSync(info)) {
  const lost = missing("")
  if (lost !== undefined) {
    fs.rmSync(info)
    console.log(`dist/ lacks the output of src/${lost}: a full build`)
  }
}
