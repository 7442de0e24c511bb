/**
 * Convert a "rubric format" judgment file of the public repository `naghmefarzi/llmjudge`
 * (`rubric_format_inputs/*.jsonl.gz`: one line per query, `[queryId, [{ paragraph_id, text,
 * paragraph_data: { judgments: [{ relevance, titleQuery }] }, exam_grades: [...] }, …]]`) into the
 * directory layout `bench/judge-agreement.ts` reads — the layout of `../shared/data/llmjudge-test`:
 *
 * - `search.jsonl`: one query a line, `{ id, query: { inputs: { text } }, hits: [{ id, text }] }`,
 *   hits in the order of the source file (a judging pool, not a ranking);
 * - `qrels.txt`: the NIST grades, `qid 0 passage_id grade`;
 * - `llama3-8b-grades.qrels`: the grades Llama-3-8B-Instruct gave in that file (its
 *   "aggregate of four criteria" prompt), when the file carries them.
 *
 * Usage: `npx tsx bench/llmjudge-convert.ts <file.jsonl.gz> <out-dir>`. The passages are MS MARCO
 * text (non-commercial research use): write them outside the repository, e.g. ../shared/data/<name>.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import * as zlib from "node:zlib"

interface Paragraph {
  readonly paragraph_id: string
  readonly text: string
  readonly paragraph_data?: {
    readonly judgments?: ReadonlyArray<{ readonly relevance: number; readonly titleQuery?: string }>
  }
  readonly exam_grades?: ReadonlyArray<
    {
      readonly prompt_info?: { readonly prompt_class?: string }
      readonly relevance_label?: number
      readonly llm?: string
    }
  >
}

const isParagraph = (u: unknown): u is Paragraph =>
  typeof u === "object" && u !== null && typeof (u as Paragraph).paragraph_id === "string" &&
  typeof (u as Paragraph).text === "string"

export interface Converted {
  readonly queries: number
  readonly pairs: number
  readonly llmGrades: number
}

export const convert = (input: string, outDir: string): Converted => {
  const raw = fs.readFileSync(input)
  const text = (input.endsWith(".gz") ? zlib.gunzipSync(raw) : raw).toString("utf8")
  // Some files hold one line per query, others one line per judged pair: group by query id, in
  // order of first appearance.
  const byQuery = new Map<string, { text: string | undefined; hits: Array<{ id: string; text: string }> }>()
  const qrels: Array<string> = []
  const llm: Array<string> = []
  let pairs = 0
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return
    const parsed: unknown = JSON.parse(line)
    if (!Array.isArray(parsed) || parsed.length !== 2 || !Array.isArray(parsed[1])) {
      throw new Error(`${input}:${i + 1}: expected [queryId, [paragraphs]]`)
    }
    const qid = String(parsed[0])
    let query = byQuery.get(qid)
    if (query === undefined) byQuery.set(qid, query = { text: undefined, hits: [] })
    for (const p of (parsed[1] as ReadonlyArray<unknown>).filter(isParagraph)) {
      const judgment = p.paragraph_data?.judgments?.[0]
      if (judgment === undefined) throw new Error(`${input}:${i + 1}: paragraph ${p.paragraph_id} has no judgment`)
      query.text ??= judgment.titleQuery
      query.hits.push({ id: p.paragraph_id, text: p.text })
      qrels.push(`${qid} 0 ${p.paragraph_id} ${judgment.relevance}`)
      const aggregate = p.exam_grades?.find((g) => g.prompt_info?.prompt_class === "FourAggregationPrompt")
      if (aggregate?.relevance_label !== undefined) llm.push(`${qid} 0 ${p.paragraph_id} ${aggregate.relevance_label}`)
      pairs++
    }
  })
  const search: Array<string> = []
  for (const [qid, query] of byQuery) {
    if (query.text === undefined) throw new Error(`${input}: query ${qid} has no text`)
    search.push(JSON.stringify({ id: qid, query: { inputs: { text: query.text } }, hits: query.hits }))
  }
  fs.mkdirSync(outDir, { recursive: true })
  fs.writeFileSync(Path.join(outDir, "search.jsonl"), search.join("\n") + "\n")
  fs.writeFileSync(Path.join(outDir, "qrels.txt"), qrels.join("\n") + "\n")
  if (llm.length === pairs) fs.writeFileSync(Path.join(outDir, "llama3-8b-grades.qrels"), llm.join("\n") + "\n")
  return { queries: search.length, pairs, llmGrades: llm.length }
}

if (
  process.argv[1] !== undefined && Path.resolve(process.argv[1]).endsWith(Path.join("bench", "llmjudge-convert.ts"))
) {
  const [input, outDir] = process.argv.slice(2)
  if (input === undefined || outDir === undefined) {
    console.error("usage: npx tsx bench/llmjudge-convert.ts <file.jsonl.gz> <out-dir>")
    process.exitCode = 2
  } else {
    const r = convert(input, outDir)
    console.log(`${outDir}: ${r.queries} queries, ${r.pairs} judged pairs, ${r.llmGrades} Llama-3-8B grades`)
  }
}
