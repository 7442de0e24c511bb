/**
 * The chunks every command loads, merged into one file (run by scripts/bundle.mjs after esbuild).
 *
 * esbuild splits the CLI at each dynamic `import()` and puts the code each set of entry points shares
 * in a chunk of its own: ~270 files, of which every start of the CLI loads the ~76 that bin.js imports
 * statically (2.0 MB), and Node resolves, links and evaluates each module apart (~0.7 ms a module on
 * the development VM). Here those become one, `dist/chunks/core.js` (esbuild again, over the chunks
 * themselves, ~0.3 s), which exports what each of them did — a name two of them export under an alias
 * of its own — and every import of one of them, from bin.js and from the chunks loaded later, is
 * rewritten to import the same bindings from core.js. The chunks' source maps are read through, so
 * stack traces still name src/…. Anything this does not recognise leaves the bundle as esbuild wrote
 * it, and the build says why.
 */
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as Path from "node:path"

const IMPORT = /import\s*\{([^}]*)\}\s*from\s*"(\.\/(?:chunks\/)?)([^"/]+\.js)"/g
const BARE = /import\s*"(\.\/(?:chunks\/)?)([^"/]+\.js)"/g

/** `metafile`: esbuild's, for the CLI's build; paths relative to `root`. Returns the CLI's outputs after. */
export const mergeCore = async (root, metafile) => {
  const outputs = metafile.outputs
  const entry = "dist/bin.js"
  const core = new Set()
  const visit = (file) => {
    for (const i of outputs[file]?.imports ?? []) {
      if (i.kind !== "import-statement" || i.external || core.has(i.path)) continue
      core.add(i.path)
      visit(i.path)
    }
  }
  visit(entry)
  const notMerged = (why) => {
    console.log(`bundle: the chunks every command loads not merged: ${why}`)
    return Object.keys(outputs)
  }
  const coreNames = new Set([...core].map((f) => Path.basename(f)))
  // Each chunk's exports as core.js exports them: its own name, or an alias where two chunks share one.
  const count = new Map()
  for (const file of core) for (const name of outputs[file].exports) count.set(name, (count.get(name) ?? 0) + 1)
  const files = [...core]
  const exported = new Map(files.map((file, k) => [
    Path.basename(file),
    new Map(outputs[file].exports.map((name) => [name, count.get(name) > 1 ? `${name}$core${k}` : name]))
  ]))
  // The files that import a merged chunk, rewritten in memory first: nothing is written unless all are.
  const rewritten = new Map()
  for (const file of Object.keys(outputs)) {
    if (core.has(file) || !file.endsWith(".js")) continue
    const text = fs.readFileSync(Path.join(root, file), "utf8")
    let problem
    const next = text.replace(IMPORT, (whole, clause, prefix, name) => {
      const names = exported.get(name)
      if (names === undefined) return whole
      const specs = clause.split(",").map((s) => s.trim()).filter((s) => s !== "").map((spec) => {
        const [imported, local = imported] = spec.split(/\s+as\s+/)
        const as = names.get(imported)
        if (as === undefined) problem = `${file} imports ${imported}, which ${name} does not export`
        return as === imported ? spec : `${as} as ${local}`
      })
      return `import {\n  ${specs.join(",\n  ")}\n} from "${prefix}core.js"`
    })
    if (problem !== undefined) return notMerged(problem)
    // A chunk imported for its side effects only: core.js has run them.
    const bare = next.replace(BARE, (whole, prefix, name) => (exported.has(name) ? `import "${prefix}core.js"` : whole))
    const left = [...coreNames].find((n) => bare.includes(`/${n}"`))
    if (left !== undefined) return notMerged(`${file} refers to ${left} other than by \`import { … } from\``)
    if (bare !== text) rewritten.set(file, bare)
  }
  const chunks = Path.join(root, "dist", "chunks")
  await esbuild.build({
    absWorkingDir: root,
    stdin: {
      contents: files.map((file) => {
        const specs = [...exported.get(Path.basename(file))].map(([name, as]) =>
          name === as ? name : `${name} as ${as}`
        )
        return `export { ${specs.join(", ")} } from ${JSON.stringify(`./${Path.basename(file)}`)}\n`
      }).join(""),
      resolveDir: chunks,
      sourcefile: "core-entry.js",
      loader: "js"
    },
    outfile: Path.join(chunks, "core.js"),
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: true,
    sourcesContent: false,
    legalComments: "linked",
    logLevel: "warning",
    plugins: [{
      name: "only-the-core",
      setup(build) {
        // Packages, and the chunks loaded later (dynamic imports), stay imports with the same paths.
        build.onResolve({ filter: /.*/ }, (args) => {
          if (args.kind === "entry-point") return undefined
          if (!args.path.startsWith(".")) return { external: true }
          return core.has(Path.relative(root, Path.resolve(args.resolveDir, args.path)))
            ? undefined
            : { path: args.path, external: true }
        })
      }
    }]
  })
  for (const [file, text] of rewritten) fs.writeFileSync(Path.join(root, file), text)
  for (const file of core) {
    fs.rmSync(Path.join(root, file), { force: true })
    fs.rmSync(Path.join(root, `${file}.map`), { force: true })
  }
  return [
    ...Object.keys(outputs).filter((f) => !core.has(f.replace(/\.map$/, ""))),
    "dist/chunks/core.js",
    "dist/chunks/core.js.map"
  ].filter((f) => fs.existsSync(Path.join(root, f)))
}
