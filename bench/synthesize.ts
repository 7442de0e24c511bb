/**
 * Bench [14]: `rag-eval synthesize`.
 *
 * 1. **BM25 sanity figure**: the offline (extractive) generator writes a test set from a public
 *    corpus — this repository's own README.md and docs/*.md (MIT) — and plain BM25 over the chunks
 *    (`src/retrieval/Bm25.ts`, k1 1.2, b 0.75, the question as the query) ranks each item's gold chunk:
 *    the share ranked first (hit@1) and in the top 10. An extractive question shares most of its words
 *    with its sentence, so a low figure means the chunks, the ids or the spans are wrong — it says
 *    nothing about an LLM's questions, which are asked in other words. The same on the sample handbook.
 * 2. **Chunking memory**: `node dist/bin.js synthesize --dry-run` (chunking, then pricing the first
 *    wave) under GNU time on 1,000 and 10,000 generated documents (≈ 3 KB each) and on one 50 MB file:
 *    peak RSS, which must stay flat as the corpus grows (documents are streamed; per chunk only a few
 *    numbers are kept).
 *
 * `npx tsx bench/synthesize.ts` runs it alone.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Judgments from "../src/engine/Judgments.js"
import * as Progress from "../src/engine/Progress.js"
import * as Shutdown from "../src/engine/Shutdown.js"
import * as HeuristicJudge from "../src/judges/HeuristicJudge.js"
import { build, searchIndex } from "../src/retrieval/Bm25.js"
import * as JudgmentCache from "../src/store/JudgmentCache.js"
import * as JudgmentJournal from "../src/store/JudgmentJournal.js"
import type { TestItem } from "../src/synthesize/Candidate.js"
import type { Chunk } from "../src/synthesize/Chunks.js"
import { synthesize } from "../src/synthesize/Synthesize.js"
import { prng } from "./gen.js"
import { consolePrinter, isMain, type Printer, timedCli } from "./timed.js"

const repo = fileURLToPath(new URL("..", import.meta.url))

export const TARGETS = {
  /** Extractive questions: BM25 should rank the gold chunk first for most. */
  hitAt1: 0.6,
  /** Peak RSS may grow at most this much from 1,000 to 10,000 documents. */
  flatShare: 0.15,
  /** Chunking 10,000 documents or a 50 MB file: peak RSS. */
  peakMB: 250
}

const readJsonl = <A>(file: string) =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as A)

const layers = Layer.mergeAll(
  Judgments.layer.pipe(Layer.provide(HeuristicJudge.layer)),
  JudgmentJournal.layerFile,
  Progress.layerSilent,
  NodeContext.layer
).pipe(Layer.provideMerge(Layer.merge(JudgmentCache.layerNone, Shutdown.layerNever)))

/** The offline set from `docs`, and BM25's rank of each item's gold chunk. */
export const bm25Sanity = async (docs: ReadonlyArray<string>, size: number, chunkTokens: number) => {
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-synth-"))
  try {
    const out = Path.join(dir, "testset.jsonl")
    const r = await Effect.runPromise(
      synthesize({ docs, size, out, workRoot: Path.join(dir, "work"), chunkTokens }).pipe(Effect.provide(layers))
    )
    const chunks = readJsonl<Chunk>(Path.join(dir, "corpus.jsonl"))
    const index = build(chunks.map((c) => ({ id: c.id, text: c.text })))
    const items = readJsonl<TestItem>(out).filter((i) => i.goldPassages.length > 0)
    let first = 0
    let top10 = 0
    for (const item of items) {
      const gold = new Set(item.goldPassages.map((p) => p.id))
      const ranked = searchIndex(index, `${item.history ?? ""} ${item.question}`, 10)
      if (ranked[0] !== undefined && gold.has(ranked[0].id)) first++
      if (ranked.some((d) => gold.has(d.id))) top10++
    }
    return {
      items: items.length,
      asked: size,
      candidates: r.candidates,
      chunks: chunks.length,
      documents: r.corpus.documents,
      hitAt1: items.length === 0 ? 0 : first / items.length,
      hitAt10: items.length === 0 ? 0 : top10 / items.length
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const WORDS = (
  "river mountain city engine protein market signal theory planet archive harvest museum " +
  "algorithm vaccine treaty glacier satellite compiler orchestra reactor vineyard cathedral " +
  "battery language currency volcano telescope library railway harbour manuscript climate"
).split(" ")

/** `n` markdown documents of ≈ 3 KB (seeded): headings and paragraphs of sentences with figures. */
const writeDocuments = (dir: string, n: number) => {
  const random = prng(7)
  const word = () => WORDS[Math.floor(random() * WORDS.length)]!
  const sentence = () =>
    `The ${word()} of the ${word()} held ${Math.floor(random() * 5000)} ${word()}s in ${
      1900 + Math.floor(random() * 120)
    }, according to the ${word()} office.`
  fs.mkdirSync(dir, { recursive: true })
  for (let i = 0; i < n; i++) {
    const parts = [`# Report ${i}`]
    for (let s = 0; s < 4; s++) {
      parts.push(`## Section ${s}`, Array.from({ length: 6 }, sentence).join(" "))
    }
    fs.writeFileSync(Path.join(dir, `doc-${String(i).padStart(5, "0")}.md`), parts.join("\n\n") + "\n")
  }
}

const dryRunPeak = (docs: string, work: string) => {
  const r = timedCli([
    "synthesize",
    "--docs",
    docs,
    "--size",
    "100",
    "--out",
    Path.join(work, "testset.jsonl"),
    "--work",
    work,
    "--dry-run"
  ])
  const chunks = /\(([\d,]+) chunks/.exec(r.stdout)
  return {
    status: r.status,
    peakMB: r.peakMB,
    seconds: r.seconds,
    chunks: chunks === null ? 0 : Number(chunks[1]!.replace(/,/g, ""))
  }
}

const int = (n: number) => n.toLocaleString("en-US")
const pct = (x: number) => `${(100 * x).toFixed(1)}%`

export const printSynthesizeFigures = async (printer: Printer) => {
  const docs = [Path.join(repo, "README.md"), Path.join(repo, "docs")]
  const own = await bm25Sanity(docs, 100, 300)
  printer.line(
    `    this repository's README.md and docs/*.md: ${own.documents} documents, ${
      int(own.chunks)
    } chunks; ${own.items} items with gold chunks (of ${own.asked} asked, ${own.candidates} candidates)`
  )
  printer.figure(
    "synthesize (offline, extractive): BM25 ranks the gold chunk first, repository docs",
    `${pct(own.hitAt1)} hit@1, ${pct(own.hitAt10)} in the top 10, ${own.items} items`,
    `≥ ${pct(TARGETS.hitAt1)} hit@1 (sanity)`,
    own.items > 0 && own.hitAt1 >= TARGETS.hitAt1
  )
  const sample = await bm25Sanity([Path.join(repo, "test-sets", "synthesize", "handbook")], 12, 60)
  printer.line(
    `    the sample handbook (test-sets/synthesize/handbook): ${sample.items} items, ${pct(sample.hitAt1)} hit@1, ${
      pct(sample.hitAt10)
    } in the top 10`
  )

  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-chunking-"))
  try {
    const runs = [1_000, 10_000].map((n) => {
      const d = Path.join(dir, `docs-${n}`)
      writeDocuments(d, n)
      const r = dryRunPeak(d, Path.join(dir, `work-${n}`))
      printer.line(
        `    ${int(n)} documents: ${int(r.chunks)} chunks, ${r.seconds.toFixed(1)} s wall, peak RSS ${
          r.peakMB.toFixed(0)
        } MB (exit ${r.status})`
      )
      return r
    })
    const big = Path.join(dir, "big.txt")
    const sentence = "The pump station moved 1,250 litres a minute in 1998 under Ada Byron. "
    const block = sentence.repeat(Math.ceil((1 << 20) / sentence.length))
    const fd = fs.openSync(big, "w")
    for (let i = 0; i < 50; i++) fs.writeSync(fd, block)
    fs.closeSync(fd)
    const file = dryRunPeak(big, Path.join(dir, "work-big"))
    printer.line(
      `    one 50 MB file with no line break: ${int(file.chunks)} chunks, ${file.seconds.toFixed(1)} s wall, peak RSS ${
        file.peakMB.toFixed(0)
      } MB (exit ${file.status})`
    )
    const [small, large] = runs as [ReturnType<typeof dryRunPeak>, ReturnType<typeof dryRunPeak>]
    const growth = (large.peakMB - small.peakMB) / small.peakMB
    printer.figure(
      "synthesize chunking peak RSS, 1,000 → 10,000 documents",
      `${small.peakMB.toFixed(0)} → ${large.peakMB.toFixed(0)} MB (${growth >= 0 ? "+" : ""}${
        (100 * growth).toFixed(0)
      }%)`,
      `≤ +${(100 * TARGETS.flatShare).toFixed(0)}% and < ${TARGETS.peakMB} MB`,
      small.status === 0 && large.status === 0 && growth <= TARGETS.flatShare && large.peakMB < TARGETS.peakMB
    )
    printer.figure(
      "synthesize chunking peak RSS, one 50 MB file",
      `${file.peakMB.toFixed(0)} MB`,
      `< ${TARGETS.peakMB} MB`,
      file.status === 0 && file.peakMB < TARGETS.peakMB
    )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (isMain(import.meta.url)) await printSynthesizeFigures(consolePrinter)

// ---------------------------------------------------------------------------------------------
// 3. Tokens per candidate on the fake server (for docs/synthesize.md's cost table)

const userOf = (r: { body: { messages?: ReadonlyArray<{ role: string; content: unknown }> } }) =>
  String(r.body.messages?.find((m) => m.role === "user")?.content ?? "")

/** A writer's answer for any type, from the prompt's passages: what a compliant LLM returns. */
const writerReply = (type: string, user: string) => {
  const passage = (n: number) =>
    new RegExp(`<data name="passage" passage="${n}">\\n([\\s\\S]*?)\\n</data>`).exec(user)?.[1] ?? ""
  const first = (text: string) => text.split(/(?<=[.!?])\s+|\n+/).find((s) => s.split(" ").length >= 6) ?? text
  const a = first(passage(1))
  const b = first(passage(2))
  const two = type === "multi-hop" || type === "comparison"
  if (type === "unanswerable") {
    return {
      question: `What did the company budget for ${a.split(" ").slice(1, 3).join(" ")} in 2031?`,
      history: [],
      reference: "The documents do not answer this question.",
      nuggets: [],
      spans: []
    }
  }
  return {
    question: `What does the handbook say about ${a.split(" ").slice(1, 4).join(" ")}${
      two ? ` and ${b.split(" ").slice(1, 3).join(" ")}` : ""
    }?`,
    history: type === "conversational"
      ? [{ role: "user", content: "Tell me about the policy." }, { role: "assistant", content: a }]
      : [],
    reference: two ? `${a} ${b}` : a,
    nuggets: [{ text: a, importance: "vital" }, ...(two ? [{ text: b, importance: "vital" as const }] : [])],
    spans: [{ passage: 1, text: a }, ...(two ? [{ passage: 2, text: b }] : [])]
  }
}

/** Prompt tokens and calls per candidate of each type, on the handbook, through the fake OpenAI server. */
export const tokensPerCandidate = async () => {
  const FakeOpenAi = await import("../test/support/FakeOpenAi.js")
  const { judgeLayer } = await import("../src/judges/JudgeSettings.js")
  const types = ["single-hop", "multi-hop", "comparison", "procedure", "unanswerable", "conversational"] as const
  const out: Array<{ type: string; candidates: number; calls: number; promptTokens: number }> = []
  for (const type of types) {
    const server = await FakeOpenAi.start({
      record: false,
      answer: (r) => {
        const name = r.body.response_format?.json_schema?.name ?? ""
        return name.startsWith("synthesize_") && !name.startsWith("synthesize_answerable") &&
            !name.startsWith("synthesize_closed")
          ? JSON.stringify(writerReply(type, userOf(r)))
          : FakeOpenAi.defaultAnswer(r)
      }
    })
    const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-tokens-"))
    try {
      const judge = judgeLayer({
        provider: "openai-compatible",
        model: "fake",
        baseUrl: server.url,
        concurrency: 4,
        timeoutMs: 5000,
        maxRetries: 1,
        preflight: false
      })
      const live = Layer.mergeAll(
        Judgments.layer.pipe(Layer.provide(judge)),
        JudgmentJournal.layerFile,
        Progress.layerSilent,
        NodeContext.layer
      ).pipe(Layer.provideMerge(Layer.merge(JudgmentCache.layerNone, Shutdown.layerNever)))
      const mix = Object.fromEntries(types.map((t) => [t, t === type ? 1 : 0])) as Record<
        (typeof types)[number],
        number
      >
      const r = await Effect.runPromise(
        synthesize({
          docs: [Path.join(repo, "test-sets", "synthesize", "handbook")],
          size: 4,
          maxCandidates: 6,
          out: Path.join(dir, "t.jsonl"),
          workRoot: Path.join(dir, "work"),
          chunkTokens: 300,
          mix
        }).pipe(Effect.provide(live))
      )
      out.push({ type, candidates: r.candidates, calls: server.judgeCalls, promptTokens: server.promptTokens })
    } finally {
      await server.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  return out
}
