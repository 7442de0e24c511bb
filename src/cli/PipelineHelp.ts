/**
 * `rag-eval pipelines` and `rag-eval run [<pipeline>] --help`: each pipeline's description, the
 * input it reads (its fields, required or optional, and two example lines) and its own options,
 * laid out at the terminal's width like the rest of the help (`Help.ts`).
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { builtinInputs, builtins } from "../builtin/index.js"
import { type OptionName, optionSpecs } from "../engine/OptionSpecs.js"
import { type AnyPipeline, declaredOptions, instantiate } from "../engine/Pipeline.js"
import type { InputDoc } from "../load/InputFields.js"
import {
  blocks,
  commandHelp,
  type CommandNode,
  entry,
  HelpWidth,
  type Lines,
  paragraph,
  render,
  verbatim
} from "./Help.js"
import { loadPipeline } from "./LoadPipeline.js"
import { pipelineOptionFlags } from "./RunFlags.js"

/** `--top-k N`, `--retriever precomputed|http|bm25`, `--listwise`. */
const optionTerm = (name: OptionName) => {
  const spec = optionSpecs[name]
  const value = spec.kind === "boolean"
    ? ""
    : spec.kind === "choice"
    ? ` ${(spec.choices ?? []).join("|")}`
    : spec.kind === "integer" || spec.kind === "number"
    ? " N"
    : " TEXT"
  return `--${spec.flag}${value}`
}

const optionText = (name: OptionName) => {
  const spec = optionSpecs[name]
  return `${spec.description}${spec.defaultText === undefined ? "" : ` (default ${spec.defaultText})`}; environment: ${
    spec.env.join(", ")
  }`
}

/** The input a pipeline reads: format, each field (required or optional, what it holds), an example. */
export const inputSection = (input: InputDoc, width: number): Lines => [
  ...paragraph(`Input: ${input.format}`, 2, width),
  ...input.fields.flatMap((f) =>
    entry({ term: `${f.name} (${f.required ? "required" : "optional"})`, text: f.holds }, width, 4)
  ),
  ...paragraph(`Example (${input.exampleExtension}):`, 2, width),
  ...input.example.flatMap((line) => verbatim(line, 2, width))
]

/** A pipeline file's own load stage says what it reads (its `describe`), when it builds without options. */
const describedInput = (p: AnyPipeline): string | undefined => {
  try {
    return instantiate(p, {}).load.describe
  } catch {
    return undefined
  }
}

/**
 * A pipeline: name, description, input, options — each option explained (`run <name> --help`), or
 * only named (`rag-eval pipelines`, where every pipeline is listed).
 */
const pipelineBlock = (
  title: string,
  p: AnyPipeline,
  input: InputDoc | undefined,
  width: number,
  details: boolean
): Lines => {
  const options = declaredOptions(p)
  return [
    title,
    ...paragraph(p.description, 2, width),
    ...(input !== undefined
      ? inputSection(input, width)
      : paragraph(`Input: ${describedInput(p) ?? "see the pipeline file"}`, 2, width)),
    ...(options.length === 0
      ? paragraph("Options: none", 2, width)
      : details
      ? [
        ...paragraph("Options:", 2, width),
        ...options.flatMap((n) => entry({ term: optionTerm(n), text: optionText(n) }, width, 4))
      ]
      : paragraph(`Options: ${options.map((n) => `--${optionSpecs[n].flag}`).join(", ")}`, 2, width))
  ]
}

export const listPipelines = Effect.gen(function*() {
  const width = yield* HelpWidth
  const parts = [
    paragraph("Built-in pipelines (rag-eval run <name> --input FILE …; a path runs your own pipeline file):", 0, width),
    ...[...builtins].map(([name, p]) => pipelineBlock(name, p, builtinInputs.get(name), width, false)),
    paragraph(
      "rag-eval run <name> --help explains a pipeline's options; every pipeline also takes the common flags of rag-eval run (judge, provider, output…): rag-eval run --help",
      0,
      width
    )
  ]
  yield* Console.log(render(blocks(parts)))
})

/** The flags of pipeline options (`--top-k`…): `run`'s own help leaves them to each pipeline's. */
const pipelineFlags: ReadonlySet<string> = new Set(
  (Object.keys(pipelineOptionFlags) as Array<OptionName>).map((n) => `--${optionSpecs[n].flag}`)
)

/**
 * `rag-eval run --help`: the common flags, the pipeline options named; `rag-eval run <pipeline>
 * --help`: that pipeline's input and options first, then the common flags.
 */
export const runHelp = (node: CommandNode, pipeline: string | undefined, width: number) =>
  Effect.gen(function*() {
    if (pipeline === undefined) {
      const note = paragraph(
        `Pipeline options (which a pipeline takes depends on it; rag-eval run <pipeline> --help explains its own): ${
          [...pipelineFlags].join(", ")
        }`,
        0,
        width
      )
      return yield* Console.log(commandHelp(node, width, { omit: pipelineFlags, after: [note] }))
    }
    const p = yield* loadPipeline(pipeline)
    const own = render(
      pipelineBlock(
        `Pipeline ${p.name}`,
        p,
        builtins.has(pipeline) ? builtinInputs.get(pipeline) : undefined,
        width,
        true
      )
    )
    yield* Console.log(
      [own, "", "Common flags of rag-eval run:", "", commandHelp(node, width, { omit: pipelineFlags })].join("\n")
    )
  })
