/**
 * Loads a pipeline file (`pipelines/*.ts`) at run time. TypeScript is compiled on the fly by tsx,
 * registered once; the file's default export must be a `Pipeline.make(…)` value.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { UsageError } from "../domain/Errors.js"
import type { AnyPipeline } from "../engine/Pipeline.js"
import { defaultPromptsDir } from "../judges/Prompt.js"

/**
 * Compile TypeScript on the fly for the duration of one import, then unregister: tsx's module hooks
 * run on a loader thread and would otherwise tax every later module load of the run. The fallback
 * when `compileBeside` cannot write its temporary file.
 */
const withTsx = <A>(load: () => Promise<A>): Promise<A> =>
  import("tsx/esm/api").then(async ({ register }) => {
    const unregister = register()
    try {
      return await load()
    } finally {
      await unregister()
    }
  })

/** Where a compiled pipeline finds the running library (see `libraryModule`). */
const LIBRARY_KEY = "rag-eval/library"

/**
 * `import … from "rag-eval"` in a compiled pipeline becomes this module: the exports of the library
 * instance that is loading the pipeline, whichever it is — the tsc build under `dist/`, or the CLI's
 * bundle, whose library is not the `dist/index.js` that a package import would load (a second copy
 * of the library and of effect, ~25 MB, with Tags and classes of its own).
 */
const libraryModule = (names: ReadonlyArray<string>) =>
  `const library = globalThis[Symbol.for(${JSON.stringify(LIBRARY_KEY)})];\n` +
  names.filter((name) => /^[A-Za-z_$][\w$]*$/.test(name)).map((name) => `export const ${name} = library.${name};`).join(
    "\n"
  )

/** The temporary module `compileBeside` writes beside `abs` (a dot file, named after it, this process and now). */
export const compiledModulePath = (abs: string) =>
  Path.join(Path.dirname(abs), `.${Path.basename(abs)}.${process.pid}-${Date.now()}.mjs`)

/**
 * Whether `file` is such a module: it exists only while a CLI process imports its pipeline file, so
 * whatever copies or walks a directory of pipeline files while one may be loading leaves it out.
 */
export const isCompiledModule = (file: string): boolean => /^\..+\.\d+-\d+\.mjs$/.test(Path.basename(file))

/**
 * A TypeScript pipeline compiled by esbuild — its relative imports bundled in, `rag-eval` bound to
 * the running library, other packages left as imports — into a temporary `.mjs` beside it (so
 * every package resolves exactly as from the original), imported, then removed. Unlike tsx's hooks
 * this starts no loader thread (~35 MB of memory for the whole run). Undefined when the directory
 * is not writable.
 */
const compileBeside = async (abs: string): Promise<Record<string, unknown> | undefined> => {
  const esbuild = await import("esbuild")
  const library: Record<string, unknown> = await import("../index.js")
  ;(globalThis as Record<symbol, unknown>)[Symbol.for(LIBRARY_KEY)] = library
  const result = await esbuild.build({
    entryPoints: [abs],
    bundle: true,
    packages: "external",
    // Also when a tsconfig maps "rag-eval" to its sources (this repository's does, for tests).
    external: ["rag-eval/*"],
    plugins: [{
      name: "rag-eval-library",
      setup: (build) => {
        build.onResolve({ filter: /^rag-eval$/ }, () => ({ path: "rag-eval", namespace: "rag-eval-library" }))
        build.onLoad(
          { filter: /.*/, namespace: "rag-eval-library" },
          () => ({ contents: libraryModule(Object.keys(library)), loader: "js" })
        )
      }
    }],
    format: "esm",
    platform: "node",
    target: "node20",
    write: false,
    sourcemap: "inline",
    logLevel: "silent"
  }).finally(() => esbuild.stop())
  const code = result.outputFiles[0]?.text ?? ""
  const tmp = compiledModulePath(abs)
  try {
    fs.writeFileSync(tmp, code, { flag: "wx" })
  } catch {
    return undefined
  }
  try {
    return await import(pathToFileURL(tmp).href) as Record<string, unknown>
  } finally {
    fs.rmSync(tmp, { force: true })
  }
}

const importPipeline = async (abs: string): Promise<Record<string, unknown>> => {
  const url = pathToFileURL(abs).href
  // Inside a vitest worker, TypeScript imports are already handled; JavaScript needs nothing.
  if ("__vitest_worker__" in globalThis || !/\.[cm]?tsx?$/.test(abs)) return import(url)
  return (await compileBeside(abs)) ?? withTsx(() => import(url))
}

/** An esbuild failure as one line per message, with file and line. */
const describeLoadError = (e: unknown): string => {
  const errors = (e as {
    errors?: ReadonlyArray<{ text: string; location?: { file: string; line: number; column: number } | null }>
  }).errors
  if (Array.isArray(errors) && errors.length > 0) {
    return errors.map((
      m
    ) => (m.location ? `${m.location.file}:${m.location.line}:${m.location.column}: ${m.text}` : m.text)).join("; ")
  }
  return e instanceof Error ? e.message : String(e)
}

const isPipeline = (value: unknown): value is AnyPipeline => {
  if (value === null || typeof value !== "object") return false
  const p = value as Record<string, unknown>
  if (typeof p.name !== "string") return false
  if (typeof p.build === "function") return Array.isArray(p.options)
  return typeof p.load === "object" && typeof p.judge === "object" && typeof p.score === "object"
}

/** A built-in pipeline's name (no path separator, no extension) rather than a file path. */
export const isPipelineName = (arg: string) => /^[a-z][a-z0-9-]*$/.test(arg)

/**
 * Where a pipeline's rubric ids resolve: a pipeline file's own `prompts/` folder beside it first
 * (`my-project/prompts/my/tone.json` for a `my/tone` rubric of `my-project/pipeline.ts`), then the
 * package's `prompts/`.
 */
export const promptDirsFor = (file: string): ReadonlyArray<string> =>
  isPipelineName(file)
    ? [defaultPromptsDir]
    : [Path.join(Path.dirname(Path.resolve(file)), "prompts"), defaultPromptsDir]

/**
 * A pipeline by built-in name (`rag-answers`, see `src/builtin/`) or by file path (a user's own
 * pipeline, which may import "rag-eval").
 */
export const loadPipeline = (file: string): Effect.Effect<AnyPipeline, UsageError> =>
  Effect.gen(function*() {
    if (isPipelineName(file)) {
      const { builtins } = yield* Effect.promise(() => import("../builtin/index.js"))
      const builtin = builtins.get(file)
      if (builtin !== undefined) return builtin
      return yield* new UsageError({
        problem: `unknown pipeline "${file}": built-in pipelines are ${
          [...builtins.keys()].join(", ")
        }; or give a pipeline file's path (e.g. ./my-pipeline.ts)`
      })
    }
    const abs = Path.resolve(file)
    const stat = fs.statSync(abs, { throwIfNoEntry: false })
    if (stat === undefined) {
      const { builtins } = yield* Effect.promise(() => import("../builtin/index.js"))
      return yield* new UsageError({
        problem: `pipeline file not found: ${file} (built-in pipelines, by name: ${[...builtins.keys()].join(", ")})`
      })
    }
    if (!stat.isFile()) {
      return yield* new UsageError({ problem: `pipeline must be a .ts or .js file, not a directory: ${file}` })
    }
    const module = yield* Effect.tryPromise({
      try: () => importPipeline(abs),
      catch: (e) => new UsageError({ problem: `cannot load pipeline ${file}: ${describeLoadError(e)}` })
    })
    const pipeline = module.default
    if (!isPipeline(pipeline)) {
      return yield* new UsageError({
        problem:
          `${file} must \`export default Pipeline.make({ … })\` (name, load, judge, score, and optionally aggregate and report; or name, options, build)`
      })
    }
    return pipeline
  })
