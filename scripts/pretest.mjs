/**
 * `npm test`'s pretest: the build (`npm run build`'s two steps: `build:tsc`, tsc → dist/, then the
 * bundle), the type check of the tests, pipelines and benchmarks (and the review page's own
 * tsconfig) and ESLint — the same checks `npm run build && npm run typecheck && npm run lint` make.
 * The build's tsc type-checks the sources; the tests' check and the review page's read them as the
 * declarations it wrote to dist/ (their tsconfigs refer to tsconfig.build.json, a TypeScript project
 * reference), so they start once tsc has ended — beside the bundle, which they do not read (the
 * bundle still comes after tsc: both write dist/bin.js, and the bundle's is the CLI) — and the
 * sources are checked once instead of two or three times (a fresh clone's pretest: 47.5 s, the
 * tests' check from scratch its longest part). ESLint runs beside them all: it reads no build.
 * Each one's output is printed when it ends, under its name; the script fails if any of them fails.
 *
 * The type checks and ESLint keep caches under node_modules/.cache (tsc's `--incremental` build
 * info, ESLint's `--cache`), so a second `npm test` re-checks only what changed; both caches are
 * keyed on the files' contents and the configuration. The build's tsc is incremental too, its build
 * info in dist/ itself (deleting dist/ deletes it; `scripts/tsc-outputs.mjs` drops it when an
 * output is missing); the bundle is made again only when a file it was made from, or one it wrote,
 * changed (`scripts/build-stamp.mjs`) — not in the `npm test` right after `npm install` bundled.
 */
import { spawn } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

// The repository's tools (tsc, eslint) first on the PATH, as `npm run` puts them, also when run directly.
const bin = fileURLToPath(new URL("../node_modules/.bin", import.meta.url))
const env = { ...process.env, PATH: `${bin}${Path.delimiter}${process.env.PATH ?? ""}` }

const cache = "node_modules/.cache"
const buildTsc = ["build: tsc", "npm", ["run", "build:tsc"]]
const bundle = ["build: bundle", "node", ["scripts/bundle.mjs"]]
const typecheck = [
  "typecheck",
  "tsc",
  ["--noEmit", "-p", "tsconfig.json", "--incremental", "--tsBuildInfoFile", `${cache}/tsc/tests.tsbuildinfo`]
]
/**
 * The review page's own check (browser code, its own tsconfig and libraries): like the tests', it reads
 * the sources it imports (the API's schemas) as the build's declarations — 12.6 → 8.6 CPU-s from a
 * cold cache, and the server code those sources import (node:fs) is not checked against the browser's
 * libraries.
 */
const typecheckPage = [
  "typecheck the review page",
  "tsc",
  ["--noEmit", "-p", "src/ui/page/tsconfig.json", "--incremental", "--tsBuildInfoFile", `${cache}/tsc/page.tsbuildinfo`]
]
const lint = ["lint", "eslint", [".", "--cache", "--cache-location", `${cache}/eslint/`]]

const run = ([name, command, args]) =>
  new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env })
    let output = ""
    child.stdout.on("data", (d) => (output += d))
    child.stderr.on("data", (d) => (output += d))
    child.on("error", (e) => (output += `${e.message}\n`))
    child.on("close", (code) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1)
      process.stdout.write(`> ${name}: ${code === 0 ? "ok" : `failed (exit ${code})`} in ${seconds} s\n${output}`)
      resolve(code === 0)
    })
  })

const results = await Promise.all([
  // The two checks read the declarations tsc writes: after it, and not at all when it failed.
  run(buildTsc).then((built) =>
    built ? Promise.all([run(bundle), run(typecheck), run(typecheckPage)]).then((oks) => oks.every(Boolean)) : false
  ),
  run(lint)
])
if (results.some((ok) => !ok)) process.exitCode = 1
