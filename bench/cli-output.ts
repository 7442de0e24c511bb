/**
 * The CLI's closing line, as the bench reads it: `1,002 judgments: 1,002 ok, 0 failed; …` (counts
 * with thousands separators, src/cli/RunAction.ts). Undefined when the line is not there.
 */
export const judgmentCounts = (
  stderr: string
): { readonly total: number; readonly ok: number; readonly failed: number } | undefined => {
  const m = /^([\d,]+) judgments: ([\d,]+) ok, ([\d,]+) failed/m.exec(stderr)
  if (m === null) return undefined
  const n = (s: string) => Number(s.replace(/,/g, ""))
  return { total: n(m[1]!), ok: n(m[2]!), failed: n(m[3]!) }
}
