/**
 * Documents read and chunked on the real file system: each format, stable ids, chunk sizes, headings,
 * boilerplate; hostile files — binary, invalid UTF-8, a bad JSONL line, a 50 MB file with no blank
 * line — listed and skipped, refused with file and line, or chunked in pieces.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import {
  boilerplateOf,
  type Chunk,
  chunkDocument,
  MIN_WORDS,
  normalised,
  splitLong
} from "../../src/synthesize/Chunks.js"
import { buildCorpus } from "../../src/synthesize/Corpus.js"
import {
  type Block,
  documentsOf,
  htmlDocument,
  isSkipped,
  type SourceDocument
} from "../../src/synthesize/Documents.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

const handbook = Path.join(repoRoot, "test-sets", "synthesize", "handbook")

const write = (dir: string, name: string, content: string | Uint8Array) => {
  const file = Path.join(dir, name)
  fs.mkdirSync(Path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
  return file
}

const readCorpus = (file: string) => fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Chunk)

const collect = async <A>(it: AsyncIterable<A>) => {
  const out: Array<A> = []
  for await (const x of it) out.push(x)
  return out
}

const blocksOf = async (dir: string, name: string, content: string) => {
  const file = write(dir, name, content)
  const docs = await collect(documentsOf({ path: file, name }))
  const doc = docs[0] as SourceDocument
  return { doc, blocks: await collect(doc.blocks) }
}

describe("documents", () => {
  it("markdown: headings, paragraphs, a fenced block kept whole, front matter left out", async () => {
    const dir = tempDir()
    const { blocks } = await blocksOf(
      dir,
      "a.md",
      "---\ntitle: x\n---\n# Title\n\nFirst para\nsecond line.\n\n```\ncode\n\nmore code\n```\n\n## Sub\nText."
    )
    expect(blocks).toEqual<Array<Block>>([
      { kind: "heading", level: 1, text: "Title" },
      { kind: "para", text: "First para\nsecond line." },
      { kind: "para", text: "```\ncode\n\nmore code\n```" },
      { kind: "heading", level: 2, text: "Sub" },
      { kind: "para", text: "Text." }
    ])
  })

  it("HTML: text by htmlparser2, entities decoded, scripts, styles, navigation and footers left out, the title kept", async () => {
    const dir = tempDir()
    const file = write(
      dir,
      "p.html",
      "<html><head><title>My &amp; page</title><style>p{}</style></head><body><nav>Home | About</nav><h1>Head</h1><p>One &lt;b&gt; two</p><script>alert(1)</script><div>Three<br>four</div><footer>(c) me</footer></body></html>"
    )
    const html = htmlDocument(file)
    const blocks = await collect(html.blocks)
    expect(html.title()).toBe("My & page")
    expect(blocks).toEqual<Array<Block>>([
      { kind: "heading", level: 1, text: "Head" },
      { kind: "para", text: "One <b> two" },
      { kind: "para", text: "Three" },
      { kind: "para", text: "four" }
    ])
  })

  it("binary and invalid UTF-8 files are listed and skipped with the reason, never read", async () => {
    const dir = tempDir()
    const binary = write(dir, "bin.txt", new Uint8Array([72, 105, 0, 1, 2, 3]))
    const bad = write(
      dir,
      "bad.md",
      Buffer.concat([Buffer.from("# Fine\n\nText "), Buffer.from([0xc3, 0x28]), Buffer.from(" more")])
    )
    const [b] = await collect(documentsOf({ path: binary, name: "bin.txt" }))
    const [u] = await collect(documentsOf({ path: bad, name: "bad.md" }))
    expect(isSkipped(b!)).toBe(true)
    expect((b as { reason: string }).reason).toMatch(/binary file \(a NUL byte at offset 2\)/)
    expect((u as { reason: string }).reason).toMatch(/not valid UTF-8/)
  })

  it("a PDF's text through unpdf; a file that is not a PDF is skipped", async () => {
    const dir = tempDir()
    const text = "The bridge opened in 1932 after six years of work."
    const objects = [
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
      `<< /Length ${
        `BT /F1 12 Tf 72 720 Td (${text}) Tj ET`.length
      } >>\nstream\nBT /F1 12 Tf 72 720 Td (${text}) Tj ET\nendstream`,
      "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    ]
    let pdf = "%PDF-1.4\n"
    const offsets: Array<number> = []
    objects.forEach((o, i) => {
      offsets.push(pdf.length)
      pdf += `${i + 1} 0 obj\n${o}\nendobj\n`
    })
    const xref = pdf.length
    pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${
      offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")
    }trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
    const file = write(dir, "doc.pdf", pdf)
    const [doc] = await collect(documentsOf({ path: file, name: "doc.pdf" }))
    expect(await collect((doc as SourceDocument).blocks)).toEqual([{ kind: "para", text }])
    const fake = write(dir, "fake.pdf", "not a pdf at all")
    const [skipped] = await collect(documentsOf({ path: fake, name: "fake.pdf" }))
    expect((skipped as { reason: string }).reason).toMatch(/^not a readable PDF/)
  })
})

describe("chunks", () => {
  const doc = (blocks: ReadonlyArray<Block>, title?: string): SourceDocument => ({
    path: "guide.md",
    title,
    blocks: (async function*() {
      yield* blocks
    })()
  })

  it("a heading starts a chunk, paragraphs fill it up to --chunk-tokens, ids are path#position-hash and stable", async () => {
    const para = (n: number) => ({ kind: "para" as const, text: `Paragraph ${n} ${"word ".repeat(40).trim()}.` })
    const blocks: Array<Block> = [{ kind: "heading", level: 1, text: "Guide" }, para(1), para(2), para(3), {
      kind: "heading",
      level: 2,
      text: "Install"
    }, para(4)]
    const chunks = await collect(chunkDocument(doc(blocks), 120))
    const again = await collect(chunkDocument(doc(blocks), 120))
    expect(chunks.map((c) => c.id)).toEqual(again.map((c) => c.id))
    for (const c of chunks) {
      expect(c.id).toMatch(new RegExp(`^guide\\.md#${c.position}-[0-9a-f]{8}$`))
      expect(c.text.length).toBeLessThanOrEqual(120 * 4)
    }
    expect(chunks[0]!.text.startsWith("Guide\n\nParagraph 1")).toBe(true)
    expect(chunks.at(-1)!.text.startsWith("Install\n\nParagraph 4")).toBe(true)
    expect(chunks.at(-1)!.title).toBe("Guide › Install")
  })

  it("a paragraph longer than a chunk is cut at sentence ends, a sentence longer than that at spaces", () => {
    const text = `${"Short sentence here. ".repeat(30)}${"x".repeat(10)} ${"word ".repeat(200)}`
    const pieces = splitLong(text.trim(), 200)
    for (const p of pieces) expect(p.length).toBeLessThanOrEqual(200)
    expect(pieces.join(" ").replace(/\s+/g, " ")).toBe(text.trim().replace(/\s+/g, " "))
    expect(pieces[0]!.endsWith(".")).toBe(true)
  })

  it("boilerplate: licences, contents, navigation and scraps are not asked about; prose is", () => {
    expect(boilerplateOf("Copyright 2024 Example Corp. All rights reserved. Licensed under the Apache License."))
      .toMatch(
        /licence/
      )
    expect(boilerplateOf(
      "Table of contents\n- [Installing the tool](#install)\n- [Using the tool daily](#use)\n- [Frequently asked questions](#faq)\n- [More reading for later](#more)"
    )).toMatch(
      /contents/
    )
    expect(boilerplateOf("Home")).toBe("too short")
    expect(
      boilerplateOf("Full-time employees accrue 25 days of paid annual leave per calendar year, with 5 carried over.")
    ).toBe(
      undefined
    )
  })
})

/** The plain versions `boilerplateOf` and `normalised` take shortcuts from: the same answers on any text. */
const LICENCE =
  /\b(all rights reserved|licensed under|permission is hereby granted|without warranties or conditions|copyright (?:©|\(c\)|\d{4})|this program is free software|creative commons)\b/i
const CONTENTS = /^(table of contents|contents|on this page|navigation|menu|skip to (?:main )?content)\b/i
const LINK_LINE = /^\s*(?:[-*+]|\d+\.)?\s*\[[^\]]*\]\([^)]*\)\s*$/
const plainBoilerplate = (text: string): string | undefined => {
  const words = text.split(/\s+/).filter((w) => w !== "").length
  if (words < MIN_WORDS) return "too short"
  if (LICENCE.test(text)) return "licence or copyright text"
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l !== "")
  if (CONTENTS.test(lines[0] ?? "")) return "table of contents or navigation"
  const links = lines.filter((l) => LINK_LINE.test(l)).length
  if (lines.length >= 4 && links / lines.length >= 0.6) return "table of contents or navigation"
  const short = lines.filter((l) => l.split(/\s+/).length <= 4).length
  const sentences = (text.match(/[.!?](\s|$)/g) ?? []).length
  if (lines.length >= 6 && short / lines.length >= 0.8 && sentences <= 1) return "table of contents or navigation"
  return undefined
}
const plainNormalised = (text: string) => text.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim()

describe("the shortcuts of boilerplate and near-duplicate detection", () => {
  it("give the plain versions' answers on 5,000 generated texts (ASCII and not, one line and many)", () => {
    let seed = 7
    const next = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return (seed >>> 8) % n
    }
    const pieces = [
      "word",
      "Word",
      "THE",
      "pump",
      "1,250",
      "1998.",
      "end.",
      "Ünïcode",
      "ﬁnance",
      "Ⅻ",
      "東京",
      "–",
      "[Link](#a)",
      "- [Install](#install)",
      "Contents",
      "Copyright 2024",
      "all rights reserved",
      "?",
      "!",
      "…",
      "\u00a0",
      "\t",
      " ",
      "  ",
      "\n",
      "\n\n",
      "\r\n"
    ]
    const kinds = { boilerplate: new Set<string | undefined>(), ascii: 0 }
    for (let i = 0; i < 5_000; i++) {
      const length = next(4) === 0 ? next(8) : 5 + next(60)
      const parts: Array<string> = []
      for (let k = 0; k < length; k++) parts.push(pieces[next(pieces.length)]!, next(3) === 0 ? "\n" : " ")
      const text = parts.join("")
      expect(boilerplateOf(text), JSON.stringify(text)).toBe(plainBoilerplate(text))
      expect(normalised(text), JSON.stringify(text)).toBe(plainNormalised(text))
      const ascii = text.replace(/[^\x00-\x7f]/g, "")
      expect(normalised(ascii)).toBe(plainNormalised(ascii))
      kinds.boilerplate.add(boilerplateOf(text))
      if (ascii === text) kinds.ascii++
    }
    // Every answer was met, and texts of both kinds.
    expect([...kinds.boilerplate].sort()).toEqual(
      ["licence or copyright text", "table of contents or navigation", "too short", undefined].sort()
    )
    expect(kinds.ascii).toBeGreaterThan(100)
  })
})

describe("the corpus", () => {
  it.effect("the sample handbook: every format read, chunk ids stable across runs, boilerplate flagged, skipped files listed", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      write(dir, "docs/notes.bin", new Uint8Array([0, 1, 2]))
      for (const f of fs.readdirSync(handbook)) fs.copyFileSync(Path.join(handbook, f), Path.join(dir, "docs", f))
      write(dir, "docs/broken.txt", Buffer.from([0xff, 0xfe, 0x41]))
      const a = yield* buildCorpus([Path.join(dir, "docs")], Path.join(dir, "a.jsonl"), 60)
      const b = yield* buildCorpus([Path.join(dir, "docs")], Path.join(dir, "b.jsonl"), 60)
      expect(readCorpus(a.file).map((c) => c.id)).toEqual(readCorpus(b.file).map((c) => c.id))
      expect(a.sha256).toBe(b.sha256)
      // Named from the folder on, wherever it lies: docs/leave.md#0-…; a JSONL document as file:id.
      const ids = readCorpus(a.file).map((c) => c.id)
      expect(ids.some((id) => /^docs\/leave\.md#\d+-[0-9a-f]{8}$/.test(id))).toBe(true)
      expect(ids.some((id) => /^docs\/faq\.jsonl:remote-work#0-[0-9a-f]{8}$/.test(id))).toBe(true)
      expect(a.documents).toHaveLength(6)
      expect(a.skipped.map((s) => Path.basename(s.file)).sort()).toEqual(["broken.txt", "notes.bin"])
      // The HTML page's script and navigation are not in any chunk.
      const text = readCorpus(a.file).map((c) => c.text).join("\n")
      expect(text).not.toContain("ignore me")
      expect(text).not.toContain("Home | Leave")
    }))

  it.effect("a bad JSONL line stops it with the file, line and field; nothing is written", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const file = write(dir, "docs.jsonl", "{\"id\": 1, \"text\": \"Fine text.\"}\n{\"id\": 2}\n")
      const out = Path.join(dir, "corpus.jsonl")
      const result = yield* Effect.either(buildCorpus([file], out, 300))
      expect(Either.isLeft(result) && result.left._tag === "InputError" ? result.left.message : "").toBe(
        `${file}:2 (field "text"): expected the document's text`
      )
      expect(fs.readdirSync(dir)).toEqual(["docs.jsonl"])
    }))

  it.effect("a path that does not exist, and a folder with no document, are refused", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const missing = yield* Effect.either(buildCorpus([Path.join(dir, "nope")], Path.join(dir, "c.jsonl"), 300))
      expect(Either.isLeft(missing) ? missing.left.message : "").toMatch(/nope: file or folder not found/)
      write(dir, "empty/readme.bin", "x")
      const none = yield* Effect.either(buildCorpus([Path.join(dir, "empty")], Path.join(dir, "c.jsonl"), 300))
      expect(Either.isLeft(none) ? none.left.message : "").toMatch(/no documents found/)
    }))

  it.effect(
    "a 50 MB file with no blank line and no line break is chunked in pieces, every chunk within --chunk-tokens",
    () =>
      Effect.gen(function*() {
        const dir = tempDir()
        const file = Path.join(dir, "huge.txt")
        const sentence = "The pump station moved 1,250 litres a minute in 1998 under Ada Byron. "
        const block = sentence.repeat(Math.ceil((1 << 20) / sentence.length))
        const fd = fs.openSync(file, "w")
        for (let i = 0; i < 50; i++) fs.writeSync(fd, block)
        fs.closeSync(fd)
        const index = yield* buildCorpus([file], Path.join(dir, "corpus.jsonl"), 500)
        const size = fs.statSync(file).size
        expect(size).toBeGreaterThanOrEqual(50 * (1 << 20))
        // ≈ size / 2,000 characters a chunk; identical texts after the first are duplicates, not asked about.
        expect(index.chunks).toBeGreaterThan(size / 2000)
        let longest = 0
        for (const line of fs.readFileSync(Path.join(dir, "corpus.jsonl"), "utf8").split("\n")) {
          if (line !== "") longest = Math.max(longest, (JSON.parse(line) as Chunk).text.length)
        }
        expect(longest).toBeLessThanOrEqual(2000)
        expect(index.excluded["duplicate of an earlier chunk"]).toBeGreaterThan(0)
      }),
    { timeout: 60_000 }
  )
})
