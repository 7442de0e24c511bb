/**
 * The CLI as one bundle (run after tsc by `npm run build` / `prepare`): `dist/bin.js` and the chunks
 * it loads on use (`dist/chunks/`; what every command loads merged into a few `core-N.js` by merge-core.mjs),
 * with effect, @effect/* and the openai SDK bundled and
 * tree-shaken. Started from the ~270 modules tsc emits, the CLI loaded in ~0.7 s and held ~25 MB
 * more memory for the whole run; the library (`dist/index.js`, what `import "rag-eval"` gives) stays
 * as tsc writes it. Pipelines loaded by the CLI use the bundle's library (src/engine/LoadPipeline.ts).
 */
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { sha256, upToDate, writeStamp } from "./build-stamp.mjs"
import { mergeCore, splitBuild } from "./merge-core.mjs"

const root = fileURLToPath(new URL("..", import.meta.url))

// The last bundle's stamp (scripts/build-stamp.mjs): when every input and output is as it
// recorded, a new bundle would be the same, and none is made — hashing ~14 MB of inputs takes ~0.15 s
// where bundling takes ~6.6 CPU-s. `--force` bundles regardless.
const stampFile = `${root}dist/.bundle-stamp.json`
const recipe = {
  esbuild: esbuild.version,
  script: sha256(fileURLToPath(import.meta.url)),
  stamp: sha256(fileURLToPath(new URL("build-stamp.mjs", import.meta.url))),
  merge: sha256(fileURLToPath(new URL("merge-core.mjs", import.meta.url)))
}
if (!process.argv.includes("--force") && upToDate(stampFile, root, recipe)) {
  console.log("bundle: up to date (dist/.bundle-stamp.json; --force makes it again)")
  process.exit(0)
}
fs.rmSync(stampFile, { force: true })

fs.rmSync(`${root}dist/chunks`, { recursive: true, force: true })
const cli = await esbuild.build({
  absWorkingDir: root,
  entryPoints: ["src/bin.ts"],
  ...splitBuild,
  target: "node20",
  // esbuild and tsx load native binaries or register loaders: used from node_modules as they are.
  external: ["esbuild", "tsx", "tsx/*"],
  // Some CommonJS dependencies call require(); give the ESM bundle one.
  banner: {
    js:
      "import { createRequire as __ragEvalCreateRequire } from \"node:module\"; const require = __ragEvalCreateRequire(import.meta.url);"
  },
  // Maps for stack traces (`node --enable-source-maps`: src/…/File.ts:line), without the sources'
  // text: with it, the bundled dependencies' sources made the maps ~17 MB of dist/chunks' 33 and the
  // package 9.5 MB packed (5.7 MB without; `npm pack` 5.5 → 4.7 CPU-s). The package ships src/ itself.
  sourcemap: true,
  sourcesContent: false,
  legalComments: "linked",
  logLevel: "warning"
})
// What every command loads, in a few files instead of ~76 (scripts/merge-core.mjs).
const cliOutputs = await mergeCore(root, cli.metafile)

// The review page of `rag-eval ui` (src/ui/page): one script and one style sheet for the browser,
// built here so nothing is built on the user's machine; served from dist/ui-page by src/ui/PageAssets.ts.
fs.rmSync(`${root}dist/ui-page`, { recursive: true, force: true })
const page = await esbuild.build({
  absWorkingDir: root,
  entryPoints: { app: "src/ui/page/main.ts" },
  outdir: "dist/ui-page",
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2020",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
  metafile: true
})
fs.copyFileSync(`${root}src/ui/page/style.css`, `${root}dist/ui-page/app.css`)

// Paths in the metafiles are relative to absWorkingDir (the repository). Written last: a bundle
// stopped part-way leaves no stamp, and the next one is made whole.
writeStamp(
  stampFile,
  root,
  recipe,
  [...Object.keys(cli.metafile.inputs), ...Object.keys(page.metafile.inputs), "src/ui/page/style.css"],
  [...cliOutputs, ...Object.keys(page.metafile.outputs), "dist/ui-page/app.css"]
)
