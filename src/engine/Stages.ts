/**
 * Library stages that pipeline files compose. Each returns a plain stage value; the runner wires
 * them to services (Judge, Retriever, JudgmentJournal, Reporters) chosen by the CLI.
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { EvalCase, Passage } from "../domain/Case.js"
import { InputError } from "../domain/Errors.js"
import { caseOf, checkColumns, type ColumnMapping } from "../load/CaseMapping.js"
import { readRows } from "../load/Rows.js"
import type { Generates } from "./Pipeline.js"
import type { JudgeStage, LoadContext, LoadStage, TaskSpec } from "./Pipeline.js"

const mapping = (base: ColumnMapping, ctx: LoadContext): ColumnMapping => ({ ...base, ...ctx.columns }) as ColumnMapping

/**
 * The columns the input must have: with answers from a target, only the question (a list of
 * questions is enough); a history, an answer or passages the input has are read as usual.
 */
const required = (m: ColumnMapping, ctx: LoadContext): ColumnMapping =>
  ctx.generated === true ? { ...m, answer: undefined, fragments: undefined, history: undefined } : m

/** A target fills the answer and the retrieved passages (`--target`, `--target-contexts`). */
export const generatesAnswer: Generates = { answer: true, contexts: true }

/**
 * Load rows (CSV, JSON or JSONL by extension) and map columns to a case. Numbered fragments in the
 * fragments column become the case's passages (the precomputed retrieval).
 */
export const loadRows = (options: { readonly columns: ColumnMapping }): LoadStage => ({
  describe: `rows (CSV/JSON/JSONL) with columns ${
    Object.entries(options.columns).map(([k, v]) => `${k}="${v}"`).join(", ")
  }`,
  checkColumns: (ctx, columns) => checkColumns(ctx.file, columns, required(mapping(options.columns, ctx), ctx)),
  skips: true,
  cases: (ctx) =>
    Stream.suspend(() => {
      const m = mapping(options.columns, ctx)
      let ordinal = ctx.skip ?? 0
      // Rows are mapped a chunk at a time (an Effect per row costs more than the mapping). A bad
      // row ends the stream only where a row-at-a-time mapping would: after the cases before it,
      // and only if they are pulled (`--limit` may stop before it).
      let failed: InputError | undefined
      return readRows(ctx.file, { skip: ctx.skip }).pipe(
        Stream.mapChunksEffect((rows) => {
          if (failed !== undefined) return Effect.fail(failed)
          const cases: Array<EvalCase> = []
          for (const row of rows) {
            const c = caseOf(row, ordinal++, m, ctx.file)
            if (c instanceof InputError) {
              failed = c
              break
            }
            cases.push(c)
          }
          return failed !== undefined && cases.length === 0
            ? Effect.fail(failed)
            : Effect.succeed(Chunk.unsafeFromArray(cases))
        }),
        Stream.concat(Stream.suspend(() => failed === undefined ? Stream.empty : Stream.fail(failed)))
      )
    })
})

/** Passages as the judge sees them: `[1] text`, one per paragraph. */
export const numberedPassages = (passages: ReadonlyArray<Passage>): string =>
  passages.length === 0 ? "(no passages were retrieved)" : passages.map((p, i) => `[${i + 1}] ${p.text}`).join("\n\n")

/** The variables every answer rubric can use. */
export const answerVars = (c: EvalCase): Readonly<Record<string, string>> => ({
  question: c.question,
  history: c.history === undefined || c.history.trim() === "" ? "(no previous conversation)" : c.history,
  passages: numberedPassages(c.passages),
  answer: c.answer ?? ""
})

/** Judge the case's answer once per rubric (one prompt per dimension). */
export const judgeAnswer = (rubrics: ReadonlyArray<string>): JudgeStage => ({
  rubrics,
  tasks: (c) => {
    const vars = answerVars(c)
    return rubrics.map((rubric): TaskSpec => ({ rubric, target: "answer", vars }))
  }
})

export const noLlm: JudgeStage = { rubrics: [], tasks: () => [] }
