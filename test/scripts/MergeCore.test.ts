/**
 * scripts/merge-core.mjs, which merges the chunks every command of the CLI loads into a few files: on a
 * small split build of its own (two chunks exporting the same name, a chunk imported for its side
 * effects, chunks loaded later importing from the merged ones; in one merged file and in one per
 * chunk) the program prints what it printed before; and the CLI as built loads a few modules of its
 * own at `--version`, not ~76.
 */
import * as esbuild from "esbuild"
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { mergeCore, splitBuild } from "../../scripts/merge-core.mjs"
import { bin } from "../support/ChildCli.js"
import { tempDir } from "../support/RunPipeline.js"

const files: Record<string, string> = {
  // Two modules whose chunks both export `blocks`: each is shared by the entry and one lazy module.
  "m1.js": `export const blocks = "m1"; export const one = () => "one"`,
  "m2.js": `export const blocks = "m2"; globalThis.sideEffects = (globalThis.sideEffects ?? 0) + 1`,
  "d1.js": `import { blocks, one } from "./m1.js"; export const lazy = () => blocks + one()`,
  "d2.js": `import { blocks } from "./m2.js"; import "./m3.js"; export const lazy = () => blocks + globalThis.m3`,
  "m3.js": `globalThis.m3 = "!"`,
  "bin.js": [
    `import { blocks as a } from "./m1.js"`,
    `import { blocks as b } from "./m2.js"`,
    `import "./m3.js"`,
    `const d1 = await import("./d1.js")`,
    `const d2 = await import("./d2.js")`,
    `console.log([a, b, d1.lazy(), d2.lazy(), globalThis.sideEffects].join(" "))`
  ].join("\n")
}

const build = async (root: string) => {
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(Path.join(root, "src", name), text)
  return (await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["src/bin.js"],
    // The layout the CLI's bundle has (scripts/bundle.mjs builds with the same options).
    ...splitBuild,
    sourcemap: true,
    logLevel: "silent"
  })).metafile
}

describe("merging the chunks every command loads", () => {
  for (const [label, groupBytes] of [["one merged file", undefined], ["a merged file per chunk", 1]] as const) {
    it(`${label}: the program prints what it did; the entry and the lazy chunks import the merged files`, async () => {
      const root = tempDir("rag-eval-merge-")
      fs.mkdirSync(Path.join(root, "src"))
      const metafile = await build(root)
      const run = () => execFileSync(process.execPath, [Path.join(root, "dist", "bin.js")], { encoding: "utf8" })
      const before = run()
      expect(before).toBe("m1 m2 m1one m2! 1\n")
      const shared = Object.values(metafile.outputs).filter((o) => o.exports.includes("blocks"))
      expect(shared.length).toBe(2)

      const outputs = await mergeCore(root, metafile, groupBytes)
      expect(run()).toBe(before)
      const merged = outputs.filter((f) => /^dist\/chunks\/core-\d+\.js$/.test(f))
      if (groupBytes === undefined) expect(merged.length).toBe(1)
      else expect(merged.length).toBeGreaterThan(1)
      for (const file of outputs) expect(fs.existsSync(Path.join(root, file)), file).toBe(true)
      for (const file of outputs.filter((f) => f.endsWith(".js"))) {
        // No file left importing a chunk that was merged (esbuild's comments still name them).
        const text = fs.readFileSync(Path.join(root, file), "utf8")
        for (const [chunk] of Object.entries(metafile.outputs).filter(([, o]) => o.exports.includes("blocks"))) {
          expect(text, file).not.toContain(`/${Path.basename(chunk)}"`)
        }
      }
      // Their source maps still lead to the sources.
      const sources = merged.flatMap((f) =>
        (JSON.parse(fs.readFileSync(Path.join(root, `${f}.map`), "utf8")) as { sources: Array<string> }).sources
      )
      expect(sources.map((s) => Path.basename(s))).toEqual(expect.arrayContaining(["m1.js", "m2.js"]))
    })
  }

  it("the built CLI loads a few modules of its own at --version: bin.js and the merged files", () => {
    const dir = tempDir("rag-eval-loads-")
    const hooks = Path.join(dir, "hooks.mjs")
    fs.writeFileSync(
      hooks,
      `export async function resolve(s, c, next) { const r = await next(s, c); if (r.url.includes("/dist/")) process._rawDebug("LOAD " + r.url); return r }\n`
    )
    const register = Path.join(dir, "register.mjs")
    fs.writeFileSync(
      register,
      `import { register } from "node:module"; register(${JSON.stringify(`file://${hooks}`)})\n`
    )
    const r = spawnSync(process.execPath, ["--import", register, bin, "--version"], { encoding: "utf8" })
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
    // Each module once (an import of one resolves it again).
    const loaded = [
      ...new Set(r.stderr.split("\n").filter((l) => l.startsWith("LOAD ")).map((l) => l.replace(/^.*\/dist\//, "")))
    ]
    expect(loaded[0]).toBe("bin.js")
    // ~76 chunks before (2026-11-30).
    expect(loaded.length).toBeLessThanOrEqual(12)
    for (const file of loaded.slice(1)) expect(file).toMatch(/^chunks\/core-\d+\.js$/)
  })
})
