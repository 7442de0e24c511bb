/**
 * What a synthesis writes beside its test set, each file atomically (complete or absent):
 *
 * - `<out>`: the test set, one item a line — answer-correctness's input (`rag-eval run
 *   answer-correctness --input <out> --target URL` asks the live system each question);
 * - `corpus.jsonl`: the chunks, the passage collection the gold chunk ids point into;
 * - `--as evidence-retrieval`: `<stem>.evidence-retrieval.jsonl`, `{ id, query, gold }` (run it with
 *   `--retriever bm25 --corpus corpus.jsonl` or your own search: `--retriever http`);
 * - `--as search-relevance`: `<stem>.search-relevance.jsonl` (`{ id, query }`) and `<stem>.qrels`
 *   (`qid 0 chunk-id grade`: 3 for the one gold chunk, 2 for each of two), for trec and calibrate;
 * - `--as rag-answers`: `<stem>.rag-answers.csv` — `Current User Question`, `Conversation History`
 *   (`\n` between turns, as rag-answers reads it), `Fragment Texts` and `Assistant Answer` empty (the
 *   live system fills them: `--target`, `--target-contexts`) and `Reference Answer`;
 * - `<stem>.report.md` and `<stem>.report.html`: how many candidates were written, kept and rejected
 *   by reason, per type and per document, with examples; every text from the documents escaped.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { OutputError } from "../domain/Errors.js"
import { code, inline, quoteBlock } from "../domain/Markdown.js"
import { readLines, writeAtomic, writeFileAtomic, writeProblem } from "../io/Files.js"
import { csvField } from "../report/Csv.js"
import { esc } from "../report/HtmlParts.js"
import { TestItem } from "./Candidate.js"
import { type Mix, mixText, QUESTION_TYPES, type QuestionType, TYPE_WORDS } from "./Mix.js"
import { type CandidateRecord, REJECTIONS } from "./SynthesisPipeline.js"

export const CONVERTERS = ["evidence-retrieval", "search-relevance", "rag-answers"] as const
export type Converter = (typeof CONVERTERS)[number]

export interface ReportFacts {
  readonly id: string
  readonly generator: string
  readonly size: number
  readonly targets: Readonly<Record<QuestionType, number>>
  readonly mix: Mix
  readonly candidates: number
  readonly waves: number
  readonly short?: string | undefined
  readonly corpus: {
    readonly documents: number
    readonly chunks: number
    readonly skipped: ReadonlyArray<{ readonly file: string; readonly reason: string }>
    readonly excluded: Readonly<Record<string, number>>
  }
  readonly nearDuplicateChunks: number
  readonly cost: {
    readonly usd: number
    readonly inputTokens: number
    readonly outputTokens: number
    readonly priced: boolean
  }
}

const encodeItem = Schema.encodeSync(TestItem)

/** The test set's text, one item a line: what `<out>` holds. */
export const testSetText = (items: ReadonlyArray<TestItem>): string =>
  items.map((i) => JSON.stringify(encodeItem(i)) + "\n").join("")

/** `<dir>/<stem>` of the test set (`sets/testset.jsonl` → `sets/testset`). */
const stemOf = (out: string) => out.replace(/\.jsonl$/, "")

const lines = <A>(values: ReadonlyArray<A>, line: (a: A) => string) =>
  Stream.fromIterable(values).pipe(Stream.map(line))

/** Every output (see the module comment); returns the paths written. */
export const writeOutputs = (input: {
  readonly out: string
  readonly items: ReadonlyArray<TestItem>
  readonly corpusFile: string
  readonly as: ReadonlyArray<Converter>
  readonly records: ReadonlyArray<CandidateRecord>
  readonly surplus: ReadonlyArray<string>
  readonly info: ReportFacts
}): Effect.Effect<Array<string>, OutputError> =>
  Effect.gen(function*() {
    const { out, items } = input
    const stem = stemOf(out)
    const files: Array<string> = []
    yield* Effect.try({
      try: () => fs.mkdirSync(Path.dirname(Path.resolve(out)), { recursive: true }),
      catch: (e) => writeProblem(out, e)
    })
    const corpus = Path.join(Path.dirname(out), "corpus.jsonl")
    if (Path.resolve(corpus) !== Path.resolve(input.corpusFile)) {
      yield* writeAtomic(corpus, readLines(input.corpusFile).pipe(Stream.map((l) => `${l}\n`)))
    }
    files.push(corpus)
    for (const as of input.as) {
      if (as === "evidence-retrieval") {
        const file = `${stem}.evidence-retrieval.jsonl`
        const answerable = items.filter((i) => i.gold.length > 0)
        yield* writeAtomic(
          file,
          lines(answerable, (i) => JSON.stringify({ id: i.id, query: queryOf(i), gold: i.gold }) + "\n")
        )
        files.push(file)
      } else if (as === "search-relevance") {
        const queries = `${stem}.search-relevance.jsonl`
        const qrels = `${stem}.qrels`
        const answerable = items.filter((i) => i.goldPassages.length > 0)
        yield* writeAtomic(queries, lines(answerable, (i) => JSON.stringify({ id: i.id, query: queryOf(i) }) + "\n"))
        yield* writeAtomic(
          qrels,
          lines(answerable, (i) =>
            i.goldPassages.map((p) => `${i.id} 0 ${p.id} ${i.goldPassages.length === 1 ? 3 : 2}\n`).join(""))
        )
        files.push(queries, qrels)
      } else {
        const file = `${stem}.rag-answers.csv`
        const header = [
          "Current User Question",
          "Conversation History",
          "Fragment Texts",
          "Assistant Answer",
          "Reference Answer"
        ]
        const row = (cells: ReadonlyArray<string>) =>
          cells.map(csvField).join(",") + "\r\n"
        yield* writeAtomic(
          file,
          Stream.concat(
            Stream.make(row(header)),
            lines(items, (i) => row([i.question, (i.history ?? "").replace(/\n/g, "\\n"), "", "", i.reference]))
          )
        )
        files.push(file)
      }
    }
    const md = `${stem}.report.md`
    const html = `${stem}.report.html`
    const view = reportView(input.records, input.surplus, input.info)
    yield* writeFileAtomic(md, markdownReport(view, input.info))
    yield* writeFileAtomic(html, htmlReport(view, input.info))
    files.push(md, html)
    // The test set last: its presence says the synthesis finished.
    yield* writeFileAtomic(out, testSetText(items))
    files.unshift(out)
    return files
  })

/** A retrieval query: the question, after the history when it has one (a follow-up needs it). */
const queryOf = (i: TestItem) => i.history === undefined ? i.question : `${i.history.replace(/\n/g, " ")} ${i.question}`

// ---------------------------------------------------------------------------------------------
// The report

interface Row {
  readonly name: string
  candidates: number
  inSet: number
  notNeeded: number
  rejected: number
}

interface ReportView {
  readonly byType: Array<Row>
  readonly byDocument: Array<Row>
  readonly reasons: Array<
    { readonly reason: string; readonly count: number; readonly examples: Array<CandidateRecord> }
  >
  readonly inSet: number
  readonly notNeeded: number
}

/** Per type, per document and per reason, with at most 3 examples a reason. */
const reportView = (
  records: ReadonlyArray<CandidateRecord>,
  surplus: ReadonlyArray<string>,
  info: ReportFacts
): ReportView => {
  const notNeeded = new Set(surplus)
  const byType = new Map<string, Row>()
  const byDocument = new Map<string, Row>()
  const reasons = new Map<string, { reason: string; count: number; examples: Array<CandidateRecord> }>()
  const row = (map: Map<string, Row>, name: string) => {
    let r = map.get(name)
    if (r === undefined) map.set(name, r = { name, candidates: 0, inSet: 0, notNeeded: 0, rejected: 0 })
    return r
  }
  let inSet = 0
  for (const r of records) {
    const rows = [row(byType, r.type), ...r.documents.map((d) => row(byDocument, d))]
    for (const x of rows) x.candidates++
    if (r.status === "kept" && notNeeded.has(r.caseId)) { for (const x of rows) x.notNeeded++ }
    else if (r.status === "kept") {
      inSet++
      for (const x of rows) x.inSet++
    } else {
      for (const x of rows) x.rejected++
      for (const reason of r.reasons) {
        let e = reasons.get(reason)
        if (e === undefined) reasons.set(reason, e = { reason, count: 0, examples: [] })
        e.count++
        if (e.examples.length < 3) e.examples.push(r)
      }
    }
  }
  const types = QUESTION_TYPES.filter((t) => info.targets[t] > 0 || byType.has(t)).map((t) => row(byType, t))
  return {
    byType: types,
    byDocument: [...byDocument.values()].sort((a, b) => b.rejected - a.rejected || a.name.localeCompare(b.name)),
    reasons: [...reasons.values()].sort((a, b) => b.count - a.count),
    inSet,
    notNeeded: notNeeded.size
  }
}

const reasonWords = (reason: string) => REJECTIONS[reason as keyof typeof REJECTIONS] ?? reason
const pct = (n: number, of: number) => (of === 0 ? "—" : `${((100 * n) / of).toFixed(0)}%`)
const usd = (x: number) => `$${x.toFixed(4)}`

const MAX_DOCUMENT_ROWS = 30

const markdownReport = (view: ReportView, info: ReportFacts): string => {
  const out: Array<string> = []
  out.push(`# Test-set synthesis ${info.id}`, "")
  out.push(`Generator and checks: **${inline(info.generator)}**.`, "")
  out.push(
    `${view.inSet} of ${info.size} items asked for (${
      mixText(info.mix)
    }), from ${info.candidates} candidates in ${info.waves} wave(s); ` +
      `${info.corpus.chunks} chunks of ${info.corpus.documents} documents.`,
    ""
  )
  if (info.short !== undefined) out.push(`**The set is short**: ${inline(info.short)}.`, "")
  out.push(
    `Cost: ${
      info.cost.priced ? usd(info.cost.usd) : "unknown (no price for the model)"
    }; tokens ${info.cost.inputTokens} in / ${info.cost.outputTokens} out in this invocation.`,
    ""
  )
  out.push("A synthetic set is a draft: review a sample before trusting it (see docs/synthesize.md).", "")
  out.push(
    "## Per type",
    "",
    "| Type | Asked | Candidates | In the set | Passed, not needed | Rejected | Rejected % |",
    "|---|---|---|---|---|---|---|"
  )
  for (const r of view.byType) {
    const t = r.name as QuestionType
    out.push(
      `| ${t} | ${info.targets[t] ?? 0} | ${r.candidates} | ${r.inSet} | ${r.notNeeded} | ${r.rejected} | ${
        pct(r.rejected, r.candidates)
      } |`
    )
  }
  out.push("", "## Rejected, by reason", "")
  if (view.reasons.length === 0) out.push("No candidate was rejected.", "")
  else {
    out.push("| Reason | Candidates |", "|---|---|")
    for (const r of view.reasons) out.push(`| ${inline(reasonWords(r.reason))} | ${r.count} |`)
    out.push("")
    for (const r of view.reasons) {
      out.push(`### ${inline(reasonWords(r.reason))}`, "")
      for (const e of r.examples) {
        out.push(
          `- ${code(e.caseId)} (${e.type}, ${e.documents.map((d) => code(d)).join(", ")}): ${
            inline(e.why[Math.max(0, e.reasons.indexOf(r.reason as never))] ?? "", 300)
          }`
        )
        if (e.item !== undefined) {
          out.push(
            "",
            quoteBlock(`Q: ${e.item.question}\nA: ${e.item.reference}`).split("\n").map((l) => `  ${l}`).join("\n"),
            ""
          )
        }
      }
      out.push("")
    }
  }
  out.push("## Per document", "", "| Document | Candidates | In the set | Rejected |", "|---|---|---|---|")
  for (const r of view.byDocument.slice(0, MAX_DOCUMENT_ROWS)) {
    out.push(`| ${inline(r.name, 120)} | ${r.candidates} | ${r.inSet} | ${r.rejected} |`)
  }
  if (view.byDocument.length > MAX_DOCUMENT_ROWS) {
    out.push("", `(${view.byDocument.length - MAX_DOCUMENT_ROWS} more documents; most rejections first)`)
  }
  out.push("", "## The corpus", "")
  const excluded = Object.entries(info.corpus.excluded)
  out.push(
    `Chunks not asked about: ${
      excluded.length === 0 ? "none" : excluded.map(([w, n]) => `${n} ${inline(w)}`).join("; ")
    }; ` +
      `${info.nearDuplicateChunks} passed over as near duplicates of chosen ones.`,
    ""
  )
  if (info.corpus.skipped.length > 0) {
    out.push(`Files skipped (${info.corpus.skipped.length}):`, "")
    for (const s of info.corpus.skipped.slice(0, 50)) out.push(`- ${code(s.file)}: ${inline(s.reason)}`)
    if (info.corpus.skipped.length > 50) out.push(`- … ${info.corpus.skipped.length - 50} more`)
    out.push("")
  }
  out.push("## Question types", "")
  for (const t of QUESTION_TYPES) out.push(`- **${t}**: ${TYPE_WORDS[t]}`)
  return out.join("\n") + "\n"
}

const htmlTable = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string | number>>) =>
  `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>${
    rows.map((r) => `<tr>${r.map((c) => `<td>${esc(String(c))}</td>`).join("")}</tr>`).join("\n")
  }</tbody></table>`

const htmlReport = (view: ReportView, info: ReportFacts): string => {
  const parts: Array<string> = []
  parts.push(`<h1>Test-set synthesis ${esc(info.id)}</h1>`)
  parts.push(`<p>Generator and checks: <strong>${esc(info.generator)}</strong>.</p>`)
  parts.push(
    `<p>${view.inSet} of ${info.size} items asked for (${
      esc(mixText(info.mix))
    }), from ${info.candidates} candidates in ${info.waves} wave(s); ${info.corpus.chunks} chunks of ${info.corpus.documents} documents.</p>`
  )
  if (info.short !== undefined) {
    parts.push(`<p class="short"><strong>The set is short</strong>: ${esc(info.short)}.</p>`)
  }
  parts.push(`<p>A synthetic set is a draft: review a sample before trusting it.</p>`)
  parts.push("<h2>Per type</h2>")
  parts.push(htmlTable(
    ["Type", "Asked", "Candidates", "In the set", "Passed, not needed", "Rejected"],
    view.byType.map((
      r
    ) => [r.name, info.targets[r.name as QuestionType] ?? 0, r.candidates, r.inSet, r.notNeeded, r.rejected])
  ))
  parts.push("<h2>Rejected, by reason</h2>")
  parts.push(
    view.reasons.length === 0
      ? "<p>No candidate was rejected.</p>"
      : htmlTable(["Reason", "Candidates"], view.reasons.map((r) => [reasonWords(r.reason), r.count]))
  )
  for (const r of view.reasons) {
    parts.push(`<h3>${esc(reasonWords(r.reason))}</h3><ul>`)
    for (const e of r.examples) {
      const why = e.why[Math.max(0, e.reasons.indexOf(r.reason as never))] ?? ""
      parts.push(
        `<li><code>${esc(e.caseId)}</code> (${esc(e.type)}, ${
          e.documents.map((d) => `<code>${esc(d)}</code>`).join(", ")
        }): ${esc(why)}${
          e.item === undefined
            ? ""
            : `<blockquote><p>Q: ${esc(e.item.question)}</p><p>A: ${esc(e.item.reference)}</p></blockquote>`
        }</li>`
      )
    }
    parts.push("</ul>")
  }
  parts.push("<h2>Per document</h2>")
  parts.push(
    htmlTable(
      ["Document", "Candidates", "In the set", "Rejected"],
      view.byDocument.slice(0, MAX_DOCUMENT_ROWS).map((r) => [r.name, r.candidates, r.inSet, r.rejected])
    )
  )
  if (info.corpus.skipped.length > 0) {
    parts.push(`<h2>Files skipped (${info.corpus.skipped.length})</h2><ul>`)
    for (const s of info.corpus.skipped.slice(0, 50)) {
      parts.push(`<li><code>${esc(s.file)}</code>: ${esc(s.reason)}</li>`)
    }
    parts.push("</ul>")
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Test-set synthesis ${esc(info.id)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.4}table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}blockquote{margin:.25rem 0 .5rem 1rem;color:#444}.short{color:#8a5a00}</style>
</head><body>
${parts.join("\n")}
</body></html>
`
}
