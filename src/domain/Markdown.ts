/**
 * Case text (questions, answers, passages, ids, the judge's reasons, file names) in markdown reports:
 * shown as text, never as markup. Every report view (and `compare`) puts case text through one of
 * these, so a case cannot leave its block (a blockquote, a table cell, a code span) or add a
 * heading, a link, an image, a code block or HTML (`<script>`, `<!-- hidden -->`, `</details>`).
 *
 * - Line breaks any renderer or editor may honour — CRLF, lone CR, VT, FF, NEL, U+2028, U+2029 —
 *   become LF (in a quote) or a space (inline): a lone `\r# heading` cannot start a line.
 * - `&`, `<`, `>` become entities, so no HTML element or comment is ever parsed (and text that is
 *   already an entity, `&lt;`, shows as written).
 * - `\`, `` ` ``, `[`, `]`, `|` and `#` are backslash-escaped (CommonMark §2.4): no code span, link,
 *   image, reference definition, table-cell break or heading can start. GFM splits table cells on
 *   any `|` not escaped — `\\|` is an escaped backslash then a cell break — hence `\` first.
 * - Other control characters (NUL, ESC…) become U+FFFD, so printing the report in a terminal
 *   cannot send escape sequences.
 * - Bare URLs, `www.` addresses and e-mail addresses do not become links (GFM autolinks them, and
 *   markdown-it's linkify too): a WORD JOINER (U+2060, invisible) after the scheme's `:`, after `www`
 *   and before an e-mail's `@` breaks the pattern while the text reads the same. A case's text cannot make a
 *   reader click through to where it points.
 * Emphasis (`*`, `_`) is left as it is: it cannot leave the text's block.
 */

/** Line breaks of CommonMark, Unicode (NEL, LS, PS) and text editors (VT, FF). */
const BREAKS = /\r\n|[\n\r\u000b\u000c\u0085\u2028\u2029]/g
/** C0 and C1 controls other than tab and the breaks above. */
const CONTROLS = /[\u0000-\u0008\u000e-\u001f\u007f-\u0084\u0086-\u009f]/g
const MARKUP = /[\\`[\]|#]/g
/** Where an autolink would start: a URL scheme's `:` before `//`, `www.`, an e-mail's `@`. */
const AUTOLINK = /\b[a-z][a-z0-9+.-]*:(?=\/\/)|\bwww(?=\.)/gi
/** An e-mail's `@`: the joiner goes before it (after it, linkify reads it as part of an international domain). */
const EMAIL_AT = /(?<=[a-z0-9._%+-])@(?=[a-z0-9-]+(?:\.[a-z0-9-]+)+)/gi
const WORD_JOINER = "\u2060"

/** Every line break as LF. */
export const normaliseBreaks = (text: string): string => text.replace(BREAKS, "\n")

/** `&`, `<`, `>` as entities. */
export const escapeHtml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** One line of case text as markdown text: controls replaced, HTML and inline markup escaped. */
const escapeLine = (line: string): string =>
  escapeHtml(line.replace(CONTROLS, "\uFFFD")).replace(MARKUP, "\\$&").replace(AUTOLINK, `$&${WORD_JOINER}`)
    .replace(EMAIL_AT, `${WORD_JOINER}@`)

/**
 * Case text on one line, safe in a table cell, a heading, a list item or a paragraph: every run of
 * whitespace (line breaks included) is one space, text beyond `max` characters is cut (`…`), and
 * the rest is escaped as described in the module comment.
 */
export const inline = (text: string, max = 400): string => escapeLine(oneLine(normaliseBreaks(text), max))

/** Text on one line, not escaped (a label, an excerpt): whitespace runs one space, trimmed, cut at `max` characters (`…`). */
export const oneLine = (text: string, max: number): string => {
  const one = text.replace(/\s+/g, " ").trim()
  return one.length > max ? `${one.slice(0, max - 1)}…` : one
}

/** A setext underline (`===`, `---`) or a fence (`~~~`) at the start of a line, which would make a heading or code block. */
const BLOCK_START = /^(?:[=-]+[ \t]*$|~{3,})/

/**
 * Case text as a blockquote, one `> ` line per line of text, that nothing in the text can leave:
 * each line escaped; leading spaces become no-break spaces (so four of them are not an indented code
 * block, and the indentation still shows); a line that would underline a heading or open a fence
 * starts with a backslash. Lists inside the quote stay lists.
 */
export const quoteBlock = (text: string): string =>
  normaliseBreaks(text).split("\n").map((raw) => {
    const indent = /^[ \t]*/.exec(raw)![0]
    const rest = escapeLine(raw.slice(indent.length))
    const line = `${indent.replace(/\t/g, "    ").replace(/ /g, "\u00a0")}${
      BLOCK_START.test(rest) ? `\\${rest}` : rest
    }`
    return line === "" ? ">" : `> ${line}`
  }).join("\n")

/**
 * Case text as a code span (for ids and paths outside tables): on one line, controls replaced, and
 * fenced by one more backtick than its longest run of backticks (CommonMark §6.1), so no backtick
 * inside can close it; nothing inside a code span is markup or HTML. Not for table cells: a `|`
 * inside a code span still splits a GFM table row — use `inline` there.
 */
export const code = (text: string): string => {
  const one = normaliseBreaks(text).replace(/\s+/g, " ").replace(CONTROLS, "\uFFFD")
  if (one === "") return "` `"
  const longest = Math.max(0, ...[...one.matchAll(/`+/g)].map((m) => m[0].length))
  const fence = "`".repeat(longest + 1)
  const pad = one.startsWith("`") || one.endsWith("`") ? " " : ""
  return `${fence}${pad}${one}${pad}${fence}`
}
