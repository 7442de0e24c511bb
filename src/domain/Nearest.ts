/**
 * "Did you mean …?": the nearest names to a mistyped one, by the command-line library's own edit
 * distance and limit, so a misspelt flag, value or metric name is corrected the same way everywhere.
 */
import * as AutoCorrect from "@effect/cli/AutoCorrect"
import * as CliConfig from "@effect/cli/CliConfig"

/** The nearest names within the library's auto-correct distance (2 edits), closest first. */
export const nearest = (word: string, names: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (names.length === 0) return []
  const scored = names.map((n) => ({ n, d: AutoCorrect.levensteinDistance(word, n, CliConfig.defaultConfig) }))
  const limit = Math.max(CliConfig.defaultConfig.autoCorrectLimit, 2)
  const best = Math.min(...scored.map((s) => s.d))
  return best > limit ? [] : scored.filter((s) => s.d === best).map((s) => s.n)
}
