/**
 * Numbers as reports and progress lines print them.
 *
 * `thousands` is `toLocaleString("en-US")` for the counts we print (judgments, tokens, lines):
 * written out here because the first locale-aware call loads ICU's locale data, ~7 MB of resident
 * memory for the rest of the run, only to place commas.
 */

/** `1234567` → `"1,234,567"`; fractions keep up to 3 digits, as en-US formatting does. */
export const thousands = (n: number): string => {
  if (!Number.isFinite(n)) return String(n)
  const rounded = Math.round(Math.abs(n) * 1000) / 1000
  const [whole = "0", fraction] = rounded.toString().split(".")
  const sign = n < 0 || Object.is(n, -0) ? "-" : ""
  return `${sign}${whole.replace(/\B(?=(\d{3})+$)/g, ",")}${fraction === undefined ? "" : `.${fraction}`}`
}
