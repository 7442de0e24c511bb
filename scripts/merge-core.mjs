/**
 * The chunks every command loads, merged into a few files (run by scripts/bundle.mjs after esbuild).
 *
 * esbuild splits the CLI at each dynamic `import()` and puts the code each set of entry points shares
 * in a chunk of its own: ~270 files, of which every start of the CLI loads the ~76 that bin.js imports
 * statically (2.0 MB), and Node resolves, links and evaluates each module apart (~0.7 ms a module on
 * the development VM). Here those become a few, `dist/chunks/core-N.js` (esbuild again, over the
 * chunks themselves, ~0.7 s), which export what each of them did — a name two of them export under an
 * alias of its own — and every import of one of them, from bin.js, from the other core files and from
 * the chunks loaded later, is rewritten to import the same bindings from its core file. The chunks'
 * source maps are read through, so stack traces still name src/…. Anything this does not recognise
 * leaves the bundle as esbuild wrote it, and the build says why. */
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as Path from "node:path"

/**
 * The most bytes of chunks one merged file holds (a chunk larger alone — effect's, ~625 KB — is a file
 * of its own). One file of all ~2 MB: `--version` 0.606 → 0.550 CPU-s but +20 MB of peak RSS (V8
 * parses a module's top level whole: a 21 MB parse zone). Files of ≤ 300 KB (8): 0.604 → 0.546 and the
 * quick start 0.910 → 0.844, peak RSS +2 MB; ≤ 150 KB (13): 0.575 and 0.835, +1.6 MB (2026-11-30,
 * alternated means of eight).
 */
const GROUP_BYTES = 300_000

/**
 * The esbuild options whose output `mergeCore` reads: ESM chunks split out under `dist/chunks/`
 * (the paths its import rewriting expects) and a metafile. scripts/bundle.mjs builds the CLI with
 * them, the test its small build.
 */
export const splitBuild = Object.freeze({
  outdir: "dist",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  metafile: true
})

const IMPORT = /import\s*\{([^}]*)\}\s*from\s*"(\.\/(?:chunks\/)?)([^"/]+\.js)"/g
const BARE = /import\s*"(\.\/(?:chunks\/)?)([^"/]+\.js)"/g

/**
 * `metafile`: esbuild's, for the CLI's build; paths relative to `root`. Returns the CLI's outputs
 * after. `groupBytes`: the most bytes of chunks in one merged file.
 */
export const mergeCore = async (root, metafile, groupBytes = GROUP_BYTES) => {
  const outputs = metafile.outputs
  const entry = "dist/bin.js"
  // The chunks bin.js imports statically, in the order Node evaluates them (each after what it
  // imports), to be cut into files of at most `groupBytes`: a file imports only from the files
  // before it, and they run in the same order.
  const order = []
  const core = new Set()
  const post = (file) => {
    for (const i of outputs[file]?.imports ?? []) {
      if (i.kind !== "import-statement" || i.external || core.has(i.path)) continue
      core.add(i.path)
      post(i.path)
      order.push(i.path)
    }
  }
  post(entry)
  const groupOf = new Map()
  const groups = []
  for (const file of order) {
    const last = groups.at(-1)
    if (last === undefined || last.bytes + outputs[file].bytes > groupBytes) {
      groups.push({ name: `core-${groups.length}.js`, files: [file], bytes: outputs[file].bytes })
    } else {
      last.files.push(file)
      last.bytes += outputs[file].bytes
    }
    groupOf.set(Path.basename(file), groups.at(-1).name)
  }
  const notMerged = (why) => {
    console.log(`bundle: the chunks every command loads not merged: ${why}`)
    return Object.keys(outputs)
  }
  const chunks = Path.join(root, "dist", "chunks")
  // Each chunk's exports as its core file exports them: its own name, or an alias where two chunks share one.
  const count = new Map()
  for (const file of core) for (const name of outputs[file].exports) count.set(name, (count.get(name) ?? 0) + 1)
  /** A merged chunk's name → its exports → the name its core file exports each under. */
  const exported = new Map(order.map((file, k) => [
    Path.basename(file),
    new Map(outputs[file].exports.map((name) => [name, count.get(name) > 1 ? `${name}$core${k}` : name]))
  ]))
  /** `text` with its imports of merged chunks pointed at their merged files; a problem says why not. */
  const rewrite = (file, text) => {
    let problem
    const named = text.replace(IMPORT, (whole, clause, prefix, name) => {
      const names = exported.get(name)
      if (names === undefined) return whole
      const specs = clause.split(",").map((s) => s.trim()).filter((s) => s !== "").map((spec) => {
        const [imported, local = imported] = spec.split(/\s+as\s+/)
        const as = names.get(imported)
        if (as === undefined) problem = `${file} imports ${imported}, which ${name} does not export`
        return as === imported ? spec : `${as} as ${local}`
      })
      return `import {\n  ${specs.join(",\n  ")}\n} from "${prefix}${groupOf.get(name)}"`
    })
    // A chunk imported for its side effects only: its merged file runs them.
    const bare = named.replace(
      BARE,
      (whole, prefix, name) => (exported.has(name) ? `import "${prefix}${groupOf.get(name)}"` : whole)
    )
    const left = [...exported.keys()].find((n) => bare.includes(`/${n}"`))
    if (problem === undefined && left !== undefined) problem = `${file} refers to ${left} other than by \`import\``
    return { text: bare, problem }
  }
  // The files that import a merged chunk, rewritten in memory first: nothing is written unless all are.
  const rewritten = new Map()
  for (const file of Object.keys(outputs)) {
    if (core.has(file) || !file.endsWith(".js")) continue
    const text = fs.readFileSync(Path.join(root, file), "utf8")
    const r = rewrite(file, text)
    if (r.problem !== undefined) return notMerged(r.problem)
    if (r.text !== text) rewritten.set(file, r.text)
  }
  const made = []
  for (const group of groups) {
    const mine = new Set(group.files)
    const outfile = Path.join(chunks, group.name)
    await esbuild.build({
      absWorkingDir: root,
      stdin: {
        contents: group.files.map((file) => {
          const specs = [...exported.get(Path.basename(file))].map(([name, as]) =>
            name === as ? name : `${name} as ${as}`
          )
          return `export { ${specs.join(", ")} } from ${JSON.stringify(`./${Path.basename(file)}`)}\n`
        }).join(""),
        resolveDir: chunks,
        sourcefile: `${group.name}-entry.js`,
        loader: "js"
      },
      outfile,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      sourcemap: true,
      sourcesContent: false,
      legalComments: "linked",
      logLevel: "warning",
      plugins: [{
        name: "this-group-only",
        setup(build) {
          // Packages, the chunks of other files and those loaded later stay imports with the same paths.
          build.onResolve({ filter: /.*/ }, (args) => {
            if (args.kind === "entry-point") return undefined
            if (!args.path.startsWith(".")) return { external: true }
            return mine.has(Path.relative(root, Path.resolve(args.resolveDir, args.path)))
              ? undefined
              : { path: args.path, external: true }
          })
        }
      }]
    })
    made.push(outfile)
    // Its imports of the other files' chunks, pointed at those files.
    const file = Path.relative(root, outfile)
    const r = rewrite(file, fs.readFileSync(outfile, "utf8"))
    if (r.problem !== undefined) {
      for (const f of made) for (const x of [f, `${f}.map`, `${f}.LEGAL.txt`]) fs.rmSync(x, { force: true })
      return notMerged(r.problem)
    }
    fs.writeFileSync(outfile, r.text)
  }
  for (const [file, text] of rewritten) fs.writeFileSync(Path.join(root, file), text)
  for (const file of core) {
    fs.rmSync(Path.join(root, file), { force: true })
    fs.rmSync(Path.join(root, `${file}.map`), { force: true })
  }
  return [
    ...Object.keys(outputs).filter((f) => !core.has(f.replace(/\.map$/, ""))),
    ...groups.flatMap((g) => [`dist/chunks/${g.name}`, `dist/chunks/${g.name}.map`])
  ].filter((f) => fs.existsSync(Path.join(root, f)))
}
