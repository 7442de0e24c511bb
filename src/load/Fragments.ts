/**
 * Retrieved-fragment texts as exported by RAG logs (SPEC §2.1): numbered fragments "1. …", "2. …"
 * separated by real line breaks or by the two characters backslash-n. Only line breaks separate
 * fragments, and only a list marker at the start of a line is stripped, so "3.5 million" or
 * "6CO₂ + 6H₂O" inside a fragment stay intact.
 */

/** Escaped line breaks as found in exported CSVs: the literal pairs `\r\n` and `\n`. */
const escapedBreak = /\\r\\n|\\n/g

/** Turns the two characters backslash-n (and backslash-r-backslash-n) into real newlines. */
export const unescapeNewlines = (text: string): string => text.replace(escapedBreak, "\n")

/**
 * A list marker: 1–3 digits then "." or ")", not followed by another digit ("3.5" is a number).
 * Longer numbers ("2025.") are not markers, so a year opening a line is kept.
 */
const listMarker = /^\s*\d{1,3}[.)](?!\d)\s*/

/**
 * Splits a fragments cell into passage texts: numbering stripped, trimmed, empties dropped.
 * With numbering, a line without a marker continues the previous fragment; without any numbering,
 * each non-empty line is a fragment (a single line is a single fragment).
 */
export const splitFragments = (text: string): Array<string> => {
  const lines = unescapeNewlines(text).split(/\r\n|\r|\n/)
  const numbered = lines.some((line) => listMarker.test(line))
  if (!numbered) return lines.map((line) => line.trim()).filter((line) => line !== "")
  const fragments: Array<string> = []
  let current: Array<string> | undefined = undefined
  for (const line of lines) {
    const marker = listMarker.exec(line)
    if (marker !== null) {
      if (current !== undefined) fragments.push(current.join("\n"))
      current = [line.slice(marker[0].length)]
    } else if (current === undefined) {
      // Text before the first numbered line is a fragment of its own.
      if (line.trim() !== "") fragments.push(line)
    } else {
      current.push(line)
    }
  }
  if (current !== undefined) fragments.push(current.join("\n"))
  return fragments.map((fragment) => fragment.trim()).filter((fragment) => fragment !== "")
}
