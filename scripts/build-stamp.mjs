/**
 * Whether a build's outputs are what building again would make: a stamp file records what the build
 * read — each input by its content's SHA-256, and a recipe (the tool's version, the build script's
 * own text) — and what it wrote, each output by its size and modification time. Used by
 * scripts/bundle.mjs, so `npm test` right after `npm install` (whose `prepare` bundled) does not
 * bundle the same sources again.
 *
 * Content, not times, for the inputs: npm gives every file it installs the same time, so an
 * upgraded package can keep a file's time and size. Times for the outputs: whatever rewrites one
 * (tsc writes its own dist/bin.js; a hand edit) changes its time.
 */
import * as Crypto from "node:crypto"
import * as fs from "node:fs"
import * as Path from "node:path"

export const sha256 = (file) => Crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex")

const written = (file) => {
  const s = fs.statSync(file)
  return `${s.size}:${s.mtimeMs}`
}

/** True when the stamp exists, its recipe is `recipe`, every output is as written and every input as read. */
export const upToDate = (stampFile, root, recipe) => {
  try {
    const stamp = JSON.parse(fs.readFileSync(stampFile, "utf8"))
    if (JSON.stringify(stamp.recipe) !== JSON.stringify(recipe)) return false
    for (const [file, was] of Object.entries(stamp.outputs)) if (written(Path.join(root, file)) !== was) return false
    for (const [file, hash] of Object.entries(stamp.inputs)) if (sha256(Path.join(root, file)) !== hash) return false
    return true
  } catch {
    // No stamp, a file gone, or a stamp of another shape: build.
    return false
  }
}

/** Records a finished build; `inputs` and `outputs` are paths relative to `root`. Write it last. */
export const writeStamp = (stampFile, root, recipe, inputs, outputs) => {
  const entries = (files, f) => Object.fromEntries(files.map((file) => [file, f(Path.join(root, file))]))
  fs.writeFileSync(
    stampFile,
    JSON.stringify({ recipe, inputs: entries(inputs, sha256), outputs: entries(outputs, written) })
  )
}
