/**
 * The team's documents, read as blocks of text (headings and paragraphs) for chunking: `.md`,
 * `.markdown`, `.txt`, `.html`/`.htm` (text extracted by htmlparser2, a streaming parser: script,
 * style and the page's navigation, header, footer and aside are left out), `.jsonl` (one document
 * `{ id, text, title?, url? }` a line) and `.pdf` (text extracted by unpdf, a serverless build of
 * Mozilla's PDF.js with no native parts or downloads).
 *
 * Memory stays flat in a file's size: text files are read 64 KiB at a time and their blocks handed
 * on as they end (a paragraph longer than `MAX_BLOCK_CHARS` is handed on in pieces); only a PDF is
 * read whole (PDF.js needs the whole file).
 *
 * A file that is not text is listed and skipped, never silently and never half-read: a first pass
 * decodes the whole file (fatal UTF-8 decoding) and looks for NUL bytes, so an invalid byte on the
 * last line skips the file before any of its chunks is written. A JSONL line that is not a document
 * is a bad input (exit 2, naming its line and field), as in every other input of rag-eval.
 *
 * Plain async generators over `node:fs`: htmlparser2 and the line splitter are callback and
 * iterator code; the Effect boundary is `Corpus.ts`.
 */
import { Parser } from "htmlparser2"
import * as fs from "node:fs"
import * as Path from "node:path"
import { TextDecoder } from "node:util"
import { glob } from "tinyglobby"

/** Extensions read, by format. */
export const FORMATS = {
  ".md": "markdown",
  ".markdown": "markdown",
  ".txt": "text",
  ".text": "text",
  ".html": "html",
  ".htm": "html",
  ".jsonl": "jsonl",
  ".pdf": "pdf"
} as const

export type DocumentFormat = (typeof FORMATS)[keyof typeof FORMATS]

export const formatOfPath = (path: string): DocumentFormat | undefined =>
  (FORMATS as Record<string, DocumentFormat | undefined>)[Path.extname(path).toLowerCase()]

/** A heading or a paragraph of a document. */
export type Block =
  | { readonly kind: "heading"; readonly level: number; readonly text: string }
  | { readonly kind: "para"; readonly text: string }

/** One document: where it comes from and its blocks, in order. */
export interface SourceDocument {
  /** The file, relative to the working directory (`docs/guide.md`), or `file.jsonl:<id>` for a JSONL document. */
  readonly path: string
  readonly title?: string | undefined
  readonly url?: string | undefined
  readonly blocks: AsyncIterable<Block>
}

/** A file left out, and why (listed in the output and the report). */
export interface Skipped {
  readonly file: string
  readonly reason: string
}

/** A problem that stops the run (a JSONL line that is not a document): file, line, field. */
export class DocumentProblem {
  readonly _tag = "DocumentProblem"
  constructor(
    readonly file: string,
    readonly problem: string,
    readonly line?: number | undefined,
    readonly field?: string | undefined
  ) {}
}

const READ_SIZE = 64 * 1024
/** A paragraph is handed on in pieces past this many characters (a 50 MB file with no blank line). */
export const MAX_BLOCK_CHARS = 16 * 1024

// ---------------------------------------------------------------------------------------------
// Finding the files

/**
 * The files named by `--docs`: files, folders (every readable file under them, in path order) and
 * globs (tinyglobby). Files of other extensions found in a folder are listed as skipped; a named path
 * that does not exist is a problem (exit 2).
 */
export const findFiles = async (
  specs: ReadonlyArray<string>
): Promise<{ files: Array<DocumentFile>; skipped: Array<Skipped> } | DocumentProblem> => {
  const files = new Map<string, DocumentFile>()
  const skipped: Array<Skipped> = []
  // A relative path is named as given; an absolute one from the named folder (or file) on, so the
  // chunk ids do not depend on where the corpus lies.
  let base: string | undefined
  const take = (file: string, named: boolean) => {
    const path = Path.normalize(file)
    const name = Path.isAbsolute(path) && base !== undefined ? Path.relative(base, path) : path
    if (formatOfPath(file) !== undefined) files.set(path, { path, name: name.split(Path.sep).join("/") })
    else if (named) {
      skipped.push({ file, reason: `not a document format read here (${Object.keys(FORMATS).join(", ")})` })
    } else skipped.push({ file, reason: "not a document format read here" })
  }
  for (const spec of specs) {
    base = Path.dirname(Path.resolve(spec.replace(/[*?[\]{}].*$/, "x")))
    if (/[*?[\]{}]/.test(spec)) {
      const found = await glob(spec, { onlyFiles: true, dot: false, expandDirectories: false })
      if (found.length === 0) return new DocumentProblem(spec, "the pattern matches no file")
      for (const f of found.sort()) take(f, false)
      continue
    }
    let stat: fs.Stats
    try {
      stat = fs.statSync(spec)
    } catch {
      return new DocumentProblem(spec, "file or folder not found")
    }
    if (stat.isDirectory()) {
      const found = await glob("**/*", { cwd: spec, onlyFiles: true, dot: false })
      for (const f of found.sort()) take(Path.join(spec, f), false)
    } else take(spec, true)
  }
  return { files: [...files.values()], skipped }
}

/** A file to read, and its name in chunk ids. */
export interface DocumentFile {
  readonly path: string
  readonly name: string
}

// ---------------------------------------------------------------------------------------------
// Is it text?

/**
 * The first pass over a text file: undefined when it is UTF-8 text, else why not (binary, invalid
 * UTF-8, unreadable). Reads the whole file, 64 KiB at a time, keeping nothing.
 */
export const textProblem = async (file: string): Promise<string | undefined> => {
  let handle: fs.promises.FileHandle | undefined
  try {
    handle = await fs.promises.open(file, "r")
    const decoder = new TextDecoder("utf-8", { fatal: true })
    const buffer = Buffer.allocUnsafe(READ_SIZE)
    let offset = 0
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, READ_SIZE, null)
      if (bytesRead === 0) break
      const view = buffer.subarray(0, bytesRead)
      const nul = view.indexOf(0)
      if (nul !== -1) return `binary file (a NUL byte at offset ${offset + nul})`
      try {
        decoder.decode(view, { stream: true })
      } catch {
        return `not valid UTF-8 (an invalid byte sequence within bytes ${offset}–${offset + bytesRead})`
      }
      offset += bytesRead
    }
    try {
      decoder.decode()
    } catch {
      return "not valid UTF-8 (the file ends inside a character)"
    }
    return undefined
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    return code === "EACCES" || code === "EPERM"
      ? "permission denied: the file cannot be read"
      : code === "EISDIR"
      ? "a directory"
      : `cannot read the file: ${(e as Error).message}`
  } finally {
    await handle?.close()
  }
}

/** The text of a file, 64 KiB at a time (validated by `textProblem` first). */
async function* textPieces(file: string): AsyncGenerator<string> {
  const handle = await fs.promises.open(file, "r")
  try {
    const decoder = new TextDecoder("utf-8")
    const buffer = Buffer.allocUnsafe(READ_SIZE)
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, READ_SIZE, null)
      if (bytesRead === 0) break
      yield decoder.decode(buffer.subarray(0, bytesRead), { stream: true })
    }
    const rest = decoder.decode()
    if (rest !== "") yield rest
  } finally {
    await handle.close()
  }
}

/** The lines of a file (without their line ends). */
async function* lines(file: string): AsyncGenerator<string> {
  let held = ""
  for await (const piece of textPieces(file)) {
    const text = held + piece
    const parts = text.split(/\r\n|\n|\r/)
    held = parts.pop()!
    // A line longer than a block (no line break in megabytes): handed on in pieces, at a space when there is one.
    while (held.length > MAX_BLOCK_CHARS) {
      const cut = held.lastIndexOf(" ", MAX_BLOCK_CHARS)
      const at = cut > MAX_BLOCK_CHARS / 2 ? cut : MAX_BLOCK_CHARS
      parts.push(held.slice(0, at))
      held = held.slice(at)
    }
    yield* parts
  }
  if (held !== "") yield held
}

// ---------------------------------------------------------------------------------------------
// Markdown and plain text

const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/
const FENCE = /^\s*(```|~~~)/
const FRONT_MATTER = /^---\s*$/

/**
 * Markdown (and plain text, which has no headings): ATX headings start a heading block; blank lines
 * end a paragraph; a fenced code block stays one paragraph; YAML front matter is left out.
 */
export async function* markdownBlocks(file: string, markdown: boolean): AsyncGenerator<Block> {
  let para: Array<string> = []
  let size = 0
  let fenced = false
  let first = true
  let frontMatter = false
  const flush = (): Block | undefined => {
    const text = para.join("\n").trim()
    para = []
    size = 0
    return text === "" ? undefined : { kind: "para", text }
  }
  for await (const raw of lines(file)) {
    const line = raw.replace(/\s+$/, "")
    if (markdown && first && FRONT_MATTER.test(line)) {
      first = false
      frontMatter = true
      continue
    }
    first = false
    if (frontMatter) {
      if (FRONT_MATTER.test(line)) frontMatter = false
      continue
    }
    if (markdown && FENCE.test(line)) fenced = !fenced
    const heading = markdown && !fenced ? HEADING.exec(line) : null
    if (heading !== null) {
      const b = flush()
      if (b !== undefined) yield b
      const text = heading[2]!.trim()
      if (text !== "") yield { kind: "heading", level: heading[1]!.length, text }
      continue
    }
    if (line.trim() === "" && !fenced) {
      const b = flush()
      if (b !== undefined) yield b
      continue
    }
    para.push(line)
    size += line.length
    if (size > MAX_BLOCK_CHARS) {
      const b = flush()
      if (b !== undefined) yield b
    }
  }
  const b = flush()
  if (b !== undefined) yield b
}

// ---------------------------------------------------------------------------------------------
// HTML

/** Elements whose text is not the page's content (scripts, styles) or is its chrome (navigation, header, footer). */
const SKIPPED_ELEMENTS = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "svg",
  "head",
  "nav",
  "header",
  "footer",
  "aside",
  "form",
  "button",
  "select"
])
/** Elements that end a paragraph. */
const BLOCK_ELEMENTS = new Set([
  "p",
  "div",
  "section",
  "article",
  "main",
  "li",
  "ul",
  "ol",
  "dl",
  "dt",
  "dd",
  "tr",
  "table",
  "blockquote",
  "pre",
  "br",
  "hr",
  "figure",
  "figcaption"
])
const HEADINGS: Readonly<Record<string, number>> = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 }

/** The title and blocks of an HTML file, parsed as it streams in. */
export const htmlDocument = (file: string): { title: () => string | undefined; blocks: AsyncIterable<Block> } => {
  let title: string | undefined
  async function* blocks(): AsyncGenerator<Block> {
    const out: Array<Block> = []
    let text = ""
    let skipping = 0
    let inTitle = false
    let titleText = ""
    let heading: number | undefined
    const flush = () => {
      const t = text.replace(/\s+/g, " ").trim()
      text = ""
      if (t === "") return
      out.push(heading === undefined ? { kind: "para", text: t } : { kind: "heading", level: heading, text: t })
    }
    const parser = new Parser({
      onopentag(name) {
        if (name === "title") inTitle = true
        if (SKIPPED_ELEMENTS.has(name)) skipping++
        if (skipping > 0) return
        if (HEADINGS[name] !== undefined) {
          flush()
          heading = HEADINGS[name]
        } else if (BLOCK_ELEMENTS.has(name)) flush()
      },
      ontext(data) {
        if (inTitle) titleText += data
        if (skipping > 0) return
        text += data
        if (text.length > MAX_BLOCK_CHARS) flush()
      },
      onclosetag(name) {
        if (name === "title") {
          inTitle = false
          const t = titleText.replace(/\s+/g, " ").trim()
          if (t !== "") title ??= t
        }
        if (SKIPPED_ELEMENTS.has(name)) {
          skipping = Math.max(0, skipping - 1)
          return
        }
        if (skipping > 0) return
        if (HEADINGS[name] !== undefined) {
          flush()
          heading = undefined
        } else if (BLOCK_ELEMENTS.has(name)) flush()
      }
    }, { decodeEntities: true })
    for await (const piece of textPieces(file)) {
      parser.write(piece)
      yield* out.splice(0)
    }
    parser.end()
    flush()
    yield* out.splice(0)
  }
  return { title: () => title, blocks: blocks() }
}

// ---------------------------------------------------------------------------------------------
// Plain text (a JSONL document's or a PDF page's)

/** Paragraphs of a text: blank lines separate them. */
export function* textBlocks(text: string): Generator<Block> {
  for (const p of text.split(/\r?\n\s*\r?\n/)) {
    const t = p.trim()
    if (t !== "") yield { kind: "para", text: t }
  }
}

async function* fromSync(blocks: Iterable<Block>): AsyncGenerator<Block> {
  yield* blocks
}

// ---------------------------------------------------------------------------------------------
// PDF

/** The text of a PDF's pages (unpdf, loaded on use), or why it cannot be read. */
const pdfPages = async (file: string): Promise<Array<string> | string> => {
  try {
    const { extractText, getDocumentProxy } = await import("unpdf")
    const pdf = await getDocumentProxy(new Uint8Array(fs.readFileSync(file)))
    const { text } = await extractText(pdf, { mergePages: false })
    return text
  } catch (e) {
    return `not a readable PDF: ${(e as Error).message.split("\n")[0]}`
  }
}

// ---------------------------------------------------------------------------------------------
// A file's documents

/** One JSONL line's document, or what is wrong with it. */
const jsonlDocument = (
  file: string,
  line: number,
  text: string
): { id: string; doc: SourceDocument } | DocumentProblem => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    return new DocumentProblem(file, `not valid JSON: ${(e as Error).message}`, line)
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return new DocumentProblem(file, "expected a document { \"id\", \"text\", \"title\"?, \"url\"? }", line)
  }
  const o = value as Record<string, unknown>
  if (typeof o.id !== "string" && typeof o.id !== "number") {
    return new DocumentProblem(file, "expected the document's id: text or a number", line, "id")
  }
  if (typeof o.text !== "string") return new DocumentProblem(file, "expected the document's text", line, "text")
  if (o.title !== undefined && o.title !== null && typeof o.title !== "string") {
    return new DocumentProblem(file, "expected text", line, "title")
  }
  if (o.url !== undefined && o.url !== null && typeof o.url !== "string") {
    return new DocumentProblem(file, "expected text", line, "url")
  }
  const id = String(o.id)
  return {
    id,
    doc: {
      path: `${file}:${id}`,
      title: typeof o.title === "string" && o.title.trim() !== "" ? o.title.trim() : undefined,
      url: typeof o.url === "string" && o.url.trim() !== "" ? o.url.trim() : undefined,
      blocks: fromSync(textBlocks(o.text))
    }
  }
}

/**
 * The documents of one file (one, or one per JSONL line), or a skipped file's reason (a string), or
 * a problem that stops the run. `file` is as named (relative paths stay relative: they are the ids).
 */
export async function* documentsOf(
  named: DocumentFile
): AsyncGenerator<SourceDocument | Skipped | DocumentProblem> {
  const file = named.path
  const format = formatOfPath(file)
  if (format === undefined) {
    yield { file, reason: "not a document format read here" }
    return
  }
  const path = named.name
  if (format === "pdf") {
    const pages = await pdfPages(file)
    if (typeof pages === "string") {
      yield { file, reason: pages }
      return
    }
    if (pages.every((p) => p.trim() === "")) {
      yield { file, reason: "the PDF has no text layer (scanned pages need OCR first)" }
      return
    }
    yield {
      path,
      blocks: fromSync((function*() {
        for (const page of pages) yield* textBlocks(page)
      })())
    }
    return
  }
  const problem = await textProblem(file)
  if (problem !== undefined) {
    yield { file, reason: problem }
    return
  }
  if (format === "jsonl") {
    const seen = new Map<string, number>()
    let n = 0
    for await (const text of lines(file)) {
      n++
      if (text.trim() === "") continue
      const d = jsonlDocument(path, n, text)
      if (d instanceof DocumentProblem) {
        yield new DocumentProblem(file, d.problem, d.line, d.field)
        return
      }
      const first = seen.get(d.id)
      if (first !== undefined) {
        yield new DocumentProblem(file, `duplicate document id "${d.id}" (first on line ${first})`, n, "id")
        return
      }
      seen.set(d.id, n)
      yield d.doc
    }
    return
  }
  if (format === "html") {
    const html = htmlDocument(file)
    // The title is known once the <head> is parsed: the first blocks are read before it is asked for.
    const iterator = html.blocks[Symbol.asyncIterator]()
    const first = await iterator.next()
    async function* rest(): AsyncGenerator<Block> {
      if (first.done !== true) yield first.value
      for (let r = await iterator.next(); r.done !== true; r = await iterator.next()) yield r.value
    }
    yield { path, title: html.title(), blocks: rest() }
    return
  }
  yield { path, blocks: markdownBlocks(file, format === "markdown") }
}

export const isSkipped = (x: SourceDocument | Skipped | DocumentProblem): x is Skipped => "reason" in x
