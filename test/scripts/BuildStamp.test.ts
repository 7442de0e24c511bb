/**
 * scripts/build-stamp.mjs, which lets `npm test`'s pretest skip a bundle that is already what the
 * sources make: up to date only while every input has the content, and every output the size and
 * time, the stamp recorded, under the same recipe.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { beforeEach, describe, expect, it } from "vitest"
import { upToDate, writeStamp } from "../../scripts/build-stamp.mjs"
import { tempDir } from "../support/RunPipeline.js"

let root = ""
let stamp = ""
const recipe = { tool: "1.0.0", script: "abc" }
const write = (file: string, text: string) => {
  fs.mkdirSync(Path.dirname(Path.join(root, file)), { recursive: true })
  fs.writeFileSync(Path.join(root, file), text)
}
/** Sets a file's modification time to a fixed point, so that a rewrite is seen by its time alone. */
const age = (file: string) => fs.utimesSync(Path.join(root, file), new Date(2020, 0, 1), new Date(2020, 0, 1))

beforeEach(() => {
  root = tempDir("rag-eval-stamp-")
  stamp = Path.join(root, "dist", ".stamp.json")
  write("src/a.ts", "export const a = 1\n")
  write("node_modules/p/index.js", "module.exports = 1\n")
  write("dist/bin.js", "bundle\n")
  age("dist/bin.js")
  writeStamp(stamp, root, recipe, ["src/a.ts", "node_modules/p/index.js"], ["dist/bin.js"])
})

describe("the build stamp", () => {
  it("is up to date as written, and after an input is touched without a change", () => {
    expect(upToDate(stamp, root, recipe)).toBe(true)
    fs.utimesSync(Path.join(root, "src/a.ts"), new Date(), new Date())
    expect(upToDate(stamp, root, recipe)).toBe(true)
  })

  it("is not once an input's content changes — also a package file with the same size and time — and is again when it is restored", () => {
    const file = Path.join(root, "node_modules/p/index.js")
    const { mtime } = fs.statSync(file)
    fs.writeFileSync(file, "module.exports = 2\n")
    fs.utimesSync(file, mtime, mtime)
    expect(upToDate(stamp, root, recipe)).toBe(false)
    fs.writeFileSync(file, "module.exports = 1\n")
    expect(upToDate(stamp, root, recipe)).toBe(true)
  })

  it("is not once an output is rewritten (tsc's own dist/bin.js), even with the same text, or deleted", () => {
    write("dist/bin.js", "bundle\n")
    expect(upToDate(stamp, root, recipe)).toBe(false)
    age("dist/bin.js")
    expect(upToDate(stamp, root, recipe)).toBe(true)
    fs.rmSync(Path.join(root, "dist/bin.js"))
    expect(upToDate(stamp, root, recipe)).toBe(false)
  })

  it("is not under another recipe, when an input is gone, or without a readable stamp", () => {
    expect(upToDate(stamp, root, { ...recipe, tool: "1.0.1" })).toBe(false)
    fs.rmSync(Path.join(root, "src/a.ts"))
    expect(upToDate(stamp, root, recipe)).toBe(false)
    write("src/a.ts", "export const a = 1\n")
    expect(upToDate(stamp, root, recipe)).toBe(true)
    fs.writeFileSync(stamp, "{\"recipe\":")
    expect(upToDate(stamp, root, recipe)).toBe(false)
    fs.rmSync(stamp)
    expect(upToDate(stamp, root, recipe)).toBe(false)
  })
})
