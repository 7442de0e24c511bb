/**
 * `rag-eval pipelines` and `rag-eval run <pipeline> --help` (the pipeline's own options).
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { builtins } from "../builtin/index.js"
import { loadPipeline } from "../engine/LoadPipeline.js"
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
