/**
 * Loads a pipeline file (`pipelines/*.ts`) at run time. TypeScript is compiled on the fly by tsx,
 * registered once; the file's default export must be a `Pipeline.make(…)` value.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { UsageError } from "../domain/Errors.js"
import type { Pipeline } from "./Pipeline.js"

/**
 * Compile TypeScript on the fly for the duration of one import, then unregister: tsx's module hooks
 * run on a loader thread and would otherwise tax every later module load of the run.
 */
const withTypeScript = <A>(load: () => Promise<A>): Promise<A> => {
  // Inside a vitest worker, TypeScript imports are already handled.
  if ("__vitest_worker__" in globalThis) return load()
  return import("tsx/esm/api").then(async ({ register }) => {
    const unregister = register()
    try {
      return await load()
    } finally {
      await unregister()
    }
  })
}

const isPipeline = (value: unknown): value is Pipeline<unknown, unknown> => {
  if (value === null || typeof value !== "object") return false
  const p = value as Record<string, unknown>
  return typeof p.name === "string" && typeof p.load === "object" && typeof p.judge === "object" &&
    typeof p.score === "object" && typeof p.aggregate === "object" && typeof p.report === "object"
}

export const loadPipeline = (file: string): Effect.Effect<Pipeline<unknown, unknown>, UsageError> =>
  Effect.gen(function*() {
    const abs = Path.resolve(file)
    const stat = fs.statSync(abs, { throwIfNoEntry: false })
    if (stat === undefined) {
      const known = fs.existsSync("pipelines") ? fs.readdirSync("pipelines").filter((f) => f.endsWith(".ts")).map((f) => `pipelines/${f}`) : []
      return yield* new UsageError({ problem: `pipeline file not found: ${file}${known.length > 0 ? ` (available: ${known.join(", ")})` : ""}` })
    }
    if (!stat.isFile()) return yield* new UsageError({ problem: `pipeline must be a .ts or .js file, not a directory: ${file}` })
    const module = yield* Effect.tryPromise({
      try: () => withTypeScript(() => import(pathToFileURL(abs).href) as Promise<Record<string, unknown>>),
      catch: (e) => new UsageError({ problem: `cannot load pipeline ${file}: ${(e as Error).message}` })
    })
    const pipeline = module.default
    if (!isPipeline(pipeline)) {
      return yield* new UsageError({ problem: `${file} must \`export default Pipeline.make({ … })\` (name, load, judge, score, aggregate, report)` })
    }
    return pipeline
  })
