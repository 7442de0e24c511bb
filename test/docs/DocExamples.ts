/**
 * The shell examples of README.md and docs/*.md, as the docs test runs them.
 *
 * Conventions (docs/development.md, "Examples are tested"):
 * - A ```sh block is a runnable example: its lines are run by bash (`-e -o pipefail`) in a temp
 *   directory per page, the page's blocks in order, so a later block may read what an earlier one
 *   wrote. `rag-eval`, `npx rag-eval` and `npm run eval --` all run the built CLI (dist/bin.js); the
 *   repository's `test-sets/`, `pipelines/`, `prompts/` and `examples/` are copied into the directory.
 * - An ```output block right after it (blank lines between are allowed) is what the block prints:
 *   stderr first, then stdout. Without one, the block need only succeed.
 * - The info string may add `exit=N` (the expected exit code, default 0), `serve` (a `rag-eval
 *   serve --port 0` is started for the block, and `http://127.0.0.1:8080` in it means that server),
 *   `ui` (a `rag-eval ui --listen 127.0.0.1:0` over the directory's `out/`, and
 *   `http://127.0.0.1:7433` in it means that server) or `no-run <reason>` (needs a network, an LLM, a database or data outside the repository: the
 *   test lists it as skipped, with the reason).
 * - A code block of any language whose info string has `file=NAME` (```ts file=my-pipeline.ts) is
 *   written to NAME in the directory before the next runnable example.
 * - In an output block a line that is only `…` stands for any number of lines; rates (`1,636.4/s`),
 *   durations, run ids and the temp directory's path are normalised on both sides, and consecutive
 *   progress lines of one label count as the last (a slow machine prints more of them); nothing else.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

export interface Example {
  readonly file: string
  /** 1-based line of the opening fence. */
  readonly line: number
  readonly script: string
  readonly expected: string | undefined
  readonly exit: number
  readonly serve: boolean
  /** A `rag-eval ui` runs during the block (`http://127.0.0.1:7433` in it is that server). */
  readonly ui?: boolean | undefined
  /** Why it is not run, for a `no-run` block. */
  readonly skip: string | undefined
  /** Code blocks marked `file=NAME` since the previous example: written into the directory first. */
  readonly files: ReadonlyArray<{ readonly name: string; readonly content: string }>
}

const fence = /^(`{3,})(.*)$/

/** Every ```sh block of a markdown text, with the ```output block that follows it. */
export const examples = (file: string, text: string): ReadonlyArray<Example> => {
  const lines = text.split("\n")
  const blocks: Array<{ info: string; line: number; body: string; end: number }> = []
  for (let i = 0; i < lines.length; i++) {
    const open = fence.exec(lines[i]!)
    if (open === null) continue
    const ticks = open[1]!
    const body: Array<string> = []
    let j = i + 1
    while (j < lines.length && lines[j]!.trimEnd() !== ticks) body.push(lines[j++]!)
    if (j >= lines.length) throw new Error(`${file}:${i + 1}: a code block that never closes`)
    blocks.push({ info: open[2]!.trim(), line: i + 1, body: body.join("\n"), end: j })
    i = j
  }
  const out: Array<Example> = []
  let files: Array<{ name: string; content: string }> = []
  blocks.forEach((block, k) => {
    const [lang, ...rest] = block.info.split(/\s+/)
    const named = /(?:^|\s)file=(\S+)/.exec(block.info)
    if (named !== null) files.push({ name: named[1]!, content: `${block.body}\n` })
    if (lang !== "sh") return
    const next = blocks[k + 1]
    const between = next === undefined ? [] : lines.slice(block.end + 1, next.line - 1)
    const expected = next !== undefined && next.info === "output" && between.every((l) => l.trim() === "")
      ? next.body
      : undefined
    const attrs = rest.join(" ")
    const noRun = /^no-run\b\s*(.*)$/.exec(attrs)
    const exit = /\bexit=(\d+)\b/.exec(attrs)
    out.push({
      file,
      line: block.line,
      script: block.body,
      expected,
      exit: exit === null ? 0 : Number(exit[1]),
      serve: /\bserve\b/.test(attrs) && noRun === null,
      ...(/\bui\b/.test(attrs) && noRun === null ? { ui: true } : {}),
      skip: noRun === null ? undefined : (noRun[1]!.replace(/^\((.*)\)$/, "$1") || "marked no-run"),
      files
    })
    files = []
  })
  return out
}

/** The pages whose examples are tested: README.md and every docs/*.md. */
export const pages = (root: string): ReadonlyArray<string> => [
  "README.md",
  ...Fs.readdirSync(Path.join(root, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)
]

/** The invocations a page may use for the CLI, all run as the built `rag-eval`. */
export const asCli = (script: string): string =>
  script.replace(/\bnpm run eval --(?= )/g, "rag-eval").replace(/\bnpx rag-eval\b/g, "rag-eval")

/** A progress line off a terminal (`rag-answers: 36/72 50% · …`): its label. */
const progressLabel = (line: string): string | undefined => /^([^\s:][^:]*): [\d,]+\/[\d,]+ \d+% · /.exec(line)?.[1]

/**
 * What may differ between the shown and the actual output: rates, durations, run ids (they hash
 * the prompts, so a prompt edit changes them), where the temp directory is, and how many progress
 * lines a run printed before its last (one every 5 s: a slow machine prints more) — consecutive
 * progress lines of one label count as the last of them.
 */
export const normalise = (text: string, dir?: string): string => {
  let t = text.replace(/\r\n/g, "\n")
  if (dir !== undefined) t = t.split(dir).join("…")
  const lines = t
    .replace(/\b\d[\d,]*(?:\.\d+)?\/s\b/g, "<rate>/s")
    .replace(/\bETA \d+:\d{2}(?::\d{2})?/g, "ETA <eta>")
    .replace(/\b\d+(?:\.\d+)? ?(?:ms|s)\b/g, "<time>")
    .replace(/(?<![0-9a-f])[0-9a-f]{12}(?![0-9a-f])/g, "<run-id>")
    .split("\n")
    .map((l) => l.trimEnd())
  return lines
    .filter((l, i) => {
      const label = progressLabel(l)
      return label === undefined || progressLabel(lines[i + 1] ?? "") !== label
    })
    .join("\n")
    .replace(/\n+$/, "")
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Whether the actual output matches the shown one (both normalised; a line `…` matches any lines). */
export const matches = (expected: string, actual: string): boolean => {
  const pattern = expected
    .split("\n")
    .map((line) => (line.trim() === "…" ? "(?:[^\\n]*\\n)*?" : `${escape(line)}\\n`))
    .join("")
  return new RegExp(`^${pattern}$`).test(`${actual}\n`)
}
