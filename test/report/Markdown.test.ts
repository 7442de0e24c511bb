import MarkdownIt from "markdown-it"
import { describe, expect, it } from "vitest"
import { code, escapeHtml, inline, normaliseBreaks, quoteBlock } from "../../src/domain/Markdown.js"

const md = new MarkdownIt({ html: true })
const tokenTypes = (text: string) =>
  md.parse(text, {}).flatMap((t) => [t.type, ...(t.children ?? []).map((c) => c.type)])

describe("markdown escaping of case text", () => {
  it("normalises every line break a renderer or editor may honour", () => {
    expect(normaliseBreaks("a\r\nb\rc\u2028d\u2029e\u0085f\u000bg\u000ch\ni")).toBe("a\nb\nc\nd\ne\nf\ng\nh\ni")
  })

  it("escapes HTML, so no element, comment or entity is parsed", () => {
    expect(escapeHtml("<script>a && b</script> &lt;")).toBe("&lt;script&gt;a &amp;&amp; b&lt;/script&gt; &amp;lt;")
  })

  it("inline: one line, whitespace collapsed, cut, markup escaped (\\ first)", () => {
    expect(inline("a | b \\| c", 100)).toBe("a \\| b \\\\\\| c")
    expect(inline("x\r# h\u2028[l](u) `c` <b>", 100)).toBe("x \\# h \\[l\\](u) \\`c\\` &lt;b&gt;")
    expect(inline("abcdef", 4)).toBe("abc…")
    // Cut before escaping: an escape is never split.
    expect(inline("ab<cd", 4)).toBe("ab&lt;…")
    expect(inline("nul\u0000 esc\u001b[31m")).toBe("nul\ufffd esc\ufffd\\[31m")
    // Ordinary text stays readable.
    expect(inline("What is 2 * 3 = 6? It's fine, isn't it.")).toBe("What is 2 * 3 = 6? It's fine, isn't it.")
  })

  it("inline text stays in its table cell: the row keeps its cells", () => {
    const table = `| a | b |\n|---|---|\n| ${inline("x | y \\| z `|` <td>")} | 2 |\n`
    const html = md.render(table)
    expect(html).toContain("<td>x | y \\| z `|` &lt;td&gt;</td>")
    expect(html).toContain("<td>2</td>")
  })

  it("quoteBlock: every line quoted; no heading, setext underline, fence, code block or HTML comes out", () => {
    expect(quoteBlock("one\r# two\n===\n    four\n~~~\n- list\n")).toBe(
      "> one\n> \\# two\n> \\===\n> \u00a0\u00a0\u00a0\u00a0four\n> \\~~~\n> - list\n>"
    )
    const hostile =
      "q\r# H1\u2028## H2\nsetext\n---\n```js\nx\n```\n    code\n<!-- c --></details><script>x</script>\n[r]: http://e\n[l](http://e)"
    const types = tokenTypes(`intro\n\n${quoteBlock(hostile)}\n\nafter\n`)
    for (const bad of ["heading_open", "fence", "code_block", "html_block", "html_inline", "link_open", "hr"]) {
      expect(types).not.toContain(bad)
    }
    // The quote holds all of it: one blockquote, then the paragraph after it.
    expect(types.filter((t) => t === "blockquote_open")).toHaveLength(1)
    expect(md.render(`${quoteBlock(hostile)}\n\nafter\n`)).toMatch(/<\/blockquote>\n<p>after<\/p>/)
  })

  it("code: a fence longer than any backtick run inside; nothing inside is markup", () => {
    expect(code("id-1")).toBe("`id-1`")
    expect(code("a`b")).toBe("``a`b``")
    expect(code("``x")).toBe("``` ``x ```")
    expect(code("<b>|\nx")).toBe("`<b>| x`")
    expect(md.renderInline(code("a ``b`` <i>"))).toBe("<code>a ``b`` &lt;i&gt;</code>")
  })
})
