/**
 * A user's own rubrics (`--rubrics DIR`, `rubrics:` in `--config`): every rubric file under DIR, in
 * the built-in format (`src/domain/Rubric.ts`), judged as an extra dimension beside a pipeline's
 * built-in ones, or alone (`--only-rubrics`).
 *
 * A rubric's id is its file's path under DIR without `.json` (`tone.json` → `tone`, `style/tone.json`
 * → `style/tone`), which is where `loadRubric` finds it. The directory is listed when the pipeline is
 * built (a listing, not a read: pipelines build synchronously); the runner reads, decodes and hashes
 * the files before anything is judged, like every rubric, and refuses the run when the directory is
 * wrong, a file is not a rubric (naming the file and field), a template uses a variable the pipeline
 * does not give, or the judge is the heuristic one — it has lexical proxies for the built-in criteria,
 * no model of an arbitrary criterion.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { InputError, UsageError } from "../domain/Errors.js"
import type { Rubric } from "../domain/Rubric.js"
import type { UserRubrics } from "../domain/Rubric.js"

export type { UserRubrics }

/** Variables every rubric gets from the rubric itself. */
const RUBRIC_VARIABLES = ["scale", "criterion"]

/** DIR listed: the rubric ids its `.json` files stand for, or what is wrong with it. */
export const scanUserRubrics = (
  dir: string,
  options: { readonly builtin: ReadonlyArray<string>; readonly variables: ReadonlyArray<string> }
): UserRubrics => {
  const base = { dir, variables: options.variables }
  const stat = fs.statSync(dir, { throwIfNoEntry: false })
  if (stat === undefined) return { ...base, ids: [], problem: `--rubrics ${dir}: no such directory` }
  if (!stat.isDirectory()) {
    return {
      ...base,
      ids: [],
      problem: `--rubrics ${dir}: is a file; give the directory that holds your rubric files (one .json a criterion)`
    }
  }
  let files: Array<string>
  try {
    files = (fs.readdirSync(dir, { recursive: true, encoding: "utf8" }) as Array<string>)
      .filter((f) => f.endsWith(".json") && fs.statSync(Path.join(dir, f)).isFile())
      .map((f) => f.split(Path.sep).join("/"))
      .sort()
  } catch (e) {
    return { ...base, ids: [], problem: `--rubrics ${dir}: cannot list it: ${(e as Error).message}` }
  }
  if (files.length === 0) {
    return {
      ...base,
      ids: [],
      problem: `--rubrics ${dir}: holds no rubric files (*.json); see docs/rubrics.md for the format`
    }
  }
  const ids = files.map((f) => f.slice(0, -".json".length))
  const clash = ids.find((id) => options.builtin.includes(id))
  if (clash !== undefined) {
    return {
      ...base,
      ids: [],
      problem:
        `--rubrics ${dir}: ${clash}.json has the id of a built-in rubric ("${clash}"); rename the file (a rubric's id is its path under --rubrics without .json)`
    }
  }
  return { ...base, ids }
}

/**
 * A pipeline's `--rubrics` / `--only-rubrics` options → the user's rubrics and their dimensions (the
 * weight left to each file). `--only-rubrics` without `--rubrics` is a problem the runner reports.
 */
export const dimensionsOf = (
  options: { readonly rubrics?: string | undefined; readonly onlyRubrics?: boolean | undefined },
  settings: { readonly builtin: ReadonlyArray<string>; readonly variables: ReadonlyArray<string> }
): {
  readonly user: UserRubrics | undefined
  readonly dimensions: ReadonlyArray<{ readonly rubric: string }>
  readonly only: boolean
} => {
  if (options.rubrics === undefined) {
    return options.onlyRubrics === true
      ? {
        user: {
          dir: "",
          ids: [],
          variables: settings.variables,
          problem: "--only-rubrics needs --rubrics DIR (the directory of your rubric files)"
        },
        dimensions: [],
        only: false
      }
      : { user: undefined, dimensions: [], only: false }
  }
  const user = scanUserRubrics(options.rubrics, settings)
  return { user, dimensions: user.ids.map((rubric) => ({ rubric })), only: options.onlyRubrics === true }
}

/** Refused up front: the heuristic judge has no model of a user's criterion. */
export const heuristicRefusal = (user: UserRubrics): UsageError =>
  new UsageError({
    problem:
      `--rubrics ${user.dir}: the heuristic judge cannot judge your own rubrics (${
        user.ids.join(", ")
      }): it has lexical proxies for the built-in criteria only, ` +
      "no model of an arbitrary criterion. Give an LLM provider: --provider openai (with OPENAI_API_KEY), or --provider openai-compatible --base-url URL --model NAME"
  })

const VARIABLE = /\{\{\s*([A-Za-z_][\w-]*)\s*\}\}/g

/** A user's rubric, as loaded, checked against what the pipeline gives it. */
export const checkUserRubric = (rubric: Rubric, user: UserRubrics): Effect.Effect<Rubric, InputError> => {
  const fail = (field: string, problem: string) => Effect.fail(new InputError({ file: rubric.path, field, problem }))
  if (rubric.output !== "score") {
    return fail("output", `a rubric of yours asks for a score on its scale (output "score"), not "${rubric.output}"`)
  }
  if (rubric.item !== undefined) {
    return fail(
      "item",
      "a rubric of yours judges the whole answer: it has no item template (that is for listwise retrieval rubrics)"
    )
  }
  const allowed = [...user.variables, ...RUBRIC_VARIABLES]
  for (const field of ["system", "user"] as const) {
    for (const line of rubric[field]) {
      for (const m of line.matchAll(VARIABLE)) {
        if (!allowed.includes(m[1]!)) {
          return fail(
            field,
            `{{${m[1]}}} is not a variable of this pipeline; its rubrics can use ${
              allowed.map((v) => `{{${v}}}`).join(", ")
            }`
          )
        }
      }
    }
  }
  if (!rubric.user.some((l) => /\{\{\s*answer\s*\}\}/.test(l)) && user.variables.includes("answer")) {
    return fail(
      "user",
      "the user template never shows the answer: place {{answer}} inside a <data name=\"answer\"> block"
    )
  }
  return Effect.succeed(rubric)
}
