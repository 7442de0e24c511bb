/**
 * The report kit every pipeline's markdown view shares: the run-parameter table (the one table the
 * HTML page draws too), a rubric's criterion section, the failed-judgments table and number format.
 */
import { code, inline, quoteBlock } from "../domain/Markdown.js"
import { thousands } from "../domain/Numbers.js"
import type { Rubric } from "../domain/Rubric.js"
import type { RunInfo } from "../engine/Pipeline.js"
import type { Judged } from "../engine/ReportInput.js"
import { type Cost, cost, formatUsd, savingNote } from "../pricing/Prices.js"

export const num = (
  x: number | null | undefined,
  digits = 2
) => (x === null || x === undefined ? "—" : x.toFixed(digits))

const listed = (params: Readonly<Record<string, unknown>>) =>
  Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${String(v)}`).join(", ")

/** The cost cell, with the cached share and the saving of the Batch API and the prompt cache when there is one. */
const costCell = (c: Cost) => {
  const note = savingNote(c)
  return `${formatUsd(c.usd)}${note === "" ? "" : ` (${note})`}`
}

/**
 * The run-parameter table's rows, as plain text: the run's own (pipeline, input, judge, retriever,
 * iterations, prompts), what its judging came to when it judged, then the pipeline's own rows — a
 * pipeline's row named as one of the run's replaces it in place (a `--target` run's retriever). A
 * pipeline without rubrics judges nothing, and says so instead of naming a judge.
 */
export const parameterRows = (
  info: RunInfo,
  judged: Judged | undefined,
  own: ReadonlyArray<readonly [string, string]> = []
): ReadonlyArray<readonly [string, string]> => {
  const sampling = listed(info.judge.params)
  const retriever = listed(info.retriever.params)
  const judges = info.rubrics.length > 0
  const replacing = new Map(own.map(([k, v]) => [k, v]))
  const base: ReadonlyArray<readonly [string, string]> = [
    ["Pipeline", info.pipeline],
    ["Run id", info.runId],
    ["Input", `${info.input.path} (${info.input.rows} rows, sha256 ${info.input.sha256.slice(0, 12)}…)`],
    ["Cases evaluated", `${info.input.cases}${info.limit === undefined ? "" : ` (--limit ${info.limit})`}`],
    ...(judges
      ? [["Judge", info.judge.label], ["Provider / model", `${info.judge.provider} / ${info.judge.model}`], [
        "Sampling",
        sampling === "" ? "—" : sampling
      ]] as const
      : [["Judge", "none (nothing is judged)"]] as const),
    ["Retriever", `${info.retriever.name}${retriever === "" ? "" : ` (${retriever})`}`],
    ["Iterations", String(info.iterations)],
    ...(judges && judged !== undefined
      ? [
        ["Judgments", `${thousands(judged.judgments.ok)} ok, ${thousands(judged.judgments.failed)} failed`],
        ["Tokens", `${thousands(judged.tokens.input)} in, ${thousands(judged.tokens.output)} out`],
        ["Cost", costCell(cost(judged.tokens, info.price ?? undefined))]
      ] as const
      : []),
    ...(judges
      ? [["Prompts", info.rubrics.map((r) => `${r.id} v${r.version} (${r.hash.slice(0, 12)})`).join(" · ")]] as const
      : [])
  ]
  return [
    ...base.map(([k, v]) => [k, replacing.get(k) ?? v] as const),
    ...own.filter(([k]) => !base.some(([b]) => b === k))
  ]
}

/** The run-parameter table in markdown (every cell escaped). */
export const parametersMarkdown = (rows: ReadonlyArray<readonly [string, string]>) =>
  [
    "## Run parameters",
    "",
    "| Parameter | Value |",
    "|---|---|",
    ...rows.map(([k, v]) => `| ${inline(k)} | ${inline(v, 1000)} |`),
    ""
  ].join("\n")

/**
 * Who judged the run, for every report's banner: the heuristic judge says what it measures in this
 * pipeline (the view's `heuristic`) and that it is not an LLM; an LLM judge is named by its label.
 * Undefined when nothing is judged (a pipeline without rubrics). `lead` and `rest` are joined by a space.
 */
export const judgeSentence = (
  info: RunInfo,
  heuristic: string | undefined
): { readonly heuristic: boolean; readonly lead: string; readonly rest: string } | undefined =>
  info.rubrics.length === 0
    ? undefined
    : !info.judge.traits.languageModel
    ? {
      heuristic: true,
      lead: "Judged by the heuristic judge",
      rest: `— ${
        heuristic ?? "deterministic lexical proxies"
      }, not an LLM. How far it agrees with people is measured in docs/judge-quality.md; use an LLM provider for real judgments.`
    }
    : { heuristic: false, lead: `Judged by ${info.judge.label}.`, rest: "" }

/** One rubric: heading with its range (and `note`), description, every score's meaning, prompt hash. */
export const criterionSection = (r: Rubric, note?: string) =>
  [
    `### ${r.name} (${r.min}–${r.max}${note === undefined ? "" : `, ${note}`})`,
    "",
    r.description,
    "",
    "| Score | Label | Meaning |",
    "|---|---|---|",
    ...[...r.scale].sort((a, b) => b.score - a.score).map((v) =>
      `| ${v.score} | ${v.label} | ${inline(v.description, 1000)} |`
    ),
    "",
    `<sub>prompt \`${r.id}\` v${r.version}, sha256 ${r.hash}</sub>`,
    ""
  ].join("\n")

/** How report.md's case blocks open: the question quoted, under where it is (its line and `idName`). */
export const questionLines = (
  r: { readonly line: number; readonly caseId: string; readonly question: string },
  idName = "id"
) => [`**Question** (line ${r.line}, ${idName} ${code(r.caseId)}):`, "", quoteBlock(r.question), ""]

/** A case's answer quoted, `(empty)` when there is none. */
export const answerLines = (answer: string | undefined) => [
  "**Answer:**",
  "",
  quoteBlock(answer === undefined || answer === "" ? "(empty)" : answer),
  ""
]
