/**
 * `rag-eval pipelines`, `rag-eval run <pipeline> --help` (the pipeline's own options) and
 * `rag-eval resume <run-dir>` (the run's command line again, from its manifest).
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, UsageError } from "../domain/Errors.js"
import { MASK } from "../domain/Secrets.js"
import { builtins } from "../builtin/index.js"
import { loadPipeline } from "./LoadPipeline.js"
import { type OptionName, optionSpecs } from "../engine/OptionSpecs.js"
import { type AnyPipeline, declaredOptions } from "../engine/Pipeline.js"

const optionLines = (names: ReadonlyArray<OptionName>): Array<string> =>
  names.length === 0
    ? ["    (none)"]
    : names.map((n) => {
      const spec = optionSpecs[n]
      const value = spec.kind === "boolean" ? "" : spec.kind === "choice" ? ` ${(spec.choices ?? []).join("|")}` : spec.kind === "integer" || spec.kind === "number" ? " N" : " TEXT"
      const def = spec.defaultText === undefined ? "" : ` (default ${spec.defaultText})`
      return `    --${spec.flag}${value}\n        ${spec.description}${def}; environment: ${spec.env.join(", ")}`
    })

const describe = (name: string, p: AnyPipeline) => [`${name}`, `  ${p.description}`, "  options:", ...optionLines(declaredOptions(p))].join("\n")

export const listPipelines = Effect.gen(function*() {
  const blocks = [...builtins].map(([name, p]) => describe(name, p))
  yield* Console.log([
    "Built-in pipelines (rag-eval run <name> --input FILE …; a path runs your own pipeline file):",
    "",
    blocks.join("\n\n"),
    "",
    "Every pipeline also takes the common flags of rag-eval run (judge, provider, output…): rag-eval run --help"
  ].join("\n"))
})

/** Printed before `run --help`'s own text when a pipeline is named. */
export const pipelineHelp = (pipeline: string) =>
  Effect.gen(function*() {
    const p = yield* loadPipeline(pipeline)
    yield* Console.log([`Pipeline ${describe(p.name, p)}`, "", "Common flags of rag-eval run:", ""].join("\n"))
  })

/**
 * The arguments a run was made with (its manifest's `argv`), secrets dropped (they come from the
 * environment again), run from the directory it was made in; `extra` flags are added.
 */
export const resumeArgv = (runDir: string, extra: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const path = Path.join(runDir, "manifest.json")
    if (!fs.existsSync(path)) return yield* new UsageError({ problem: `${runDir} is not a run directory (no manifest.json); give out/<pipeline>/<run-id>` })
    const m = yield* Effect.try({
      try: () => JSON.parse(fs.readFileSync(path, "utf8")) as { argv?: unknown; cwd?: unknown; command?: unknown },
      catch: (e) => new InputError({ file: path, problem: `not valid JSON: ${(e as Error).message}` })
    })
    if (!Array.isArray(m.argv) || !m.argv.every((a) => typeof a === "string") || m.argv[0] !== "run") {
      return yield* new UsageError({ problem: `${path} does not record its arguments (made by an older rag-eval): run its command again${typeof m.command === "string" ? `: ${m.command}` : ""}` })
    }
    const argv: Array<string> = []
    const recorded = m.argv as Array<string>
    for (let i = 0; i < recorded.length; i++) {
      const a = recorded[i]!
      // A secret was recorded masked: drop it (and its value), so the environment supplies it.
      if (a.startsWith("--") && a.endsWith(`=${MASK}`)) continue
      if (a.startsWith("--") && recorded[i + 1] === MASK) {
        i++
        continue
      }
      argv.push(a)
    }
    if (typeof m.cwd === "string" && m.cwd !== process.cwd()) {
      if (!fs.existsSync(m.cwd)) return yield* new UsageError({ problem: `the run was made in ${m.cwd}, which no longer exists` })
      process.chdir(m.cwd)
    }
    return [...argv, ...extra]
  })
