/**
 * What decoding test sets costs: each kind's load stage (file read, JSON parse, the row schema, the
 * case) over a generated 10,000-row JSONL file, CPU time per run and per row, median of 5 warm
 * runs; beside it the bare row reader, the part no schema touches.
 *
 *   npx tsx bench/loading.ts
 *
 * Measured on the shared 2-core machine these were written on (effect 3.22, node 20, the built
 * loaders of both versions alternating in one process, median of 8): the Schema decoders cost 5–27 µs
 * more per row (about 2.5 µs per hit) than the hand-written checks they replaced — loading took
 * +18 % (answer-synthesis) to +59 % (search-relevance) CPU. A whole evidence-retrieval run over
 * these 10,000 queries (no judge; the input is read twice, to validate and to run) stayed at
 * 7.2–8.8 s CPU either way, and next to a judge call it is nothing. `src/load/RowSchema.ts` says
 * which schema forms are cheap.
 */
import { Effect, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import type { LoadStage } from "../src/engine/Pipeline.js"
import * as CourseRetrieval from "../src/kinds/course/CourseRetrieval.js"
import * as EvidenceRetrieval from "../src/kinds/evidence/EvidenceRetrieval.js"
import * as SearchRelevance from "../src/kinds/search/SearchRelevance.js"
import * as AnswerSynthesis from "../src/kinds/synthesis/AnswerSynthesis.js"
import { readRows } from "../src/load/Rows.js"
import { prng } from "./gen.js"

const ROWS = 10_000
const HITS = 10
const RUNS = 5

const random = prng(42)
const WORDS =
  "annual leave days employee policy sick note doctor carry over year paid manager approve request portal salary bonus office holiday remote work"
    .split(" ")
const text = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(" ")

const rowsOf: Record<string, (i: number) => unknown> = {
  "evidence-retrieval": (i) => ({
    id: `q${i}`,
    query: text(8),
    gold: [text(6), text(5)],
    chunks: Array.from(
      { length: HITS },
      (_, k) => ({ id: `c${i}-${k}`, text: text(30), score: Math.round(random() * 1000) / 1000 })
    ),
    latencyMs: { total: 900, retrieve: 80, rerank: 120 },
    usage: { prompt_tokens: 1000, completion_tokens: 50 }
  }),
  "search-relevance": (i) => ({
    id: `s${i}`,
    query: i % 2 === 1 ? text(6) : { inputs: { text: text(6) } },
    eval: { fields: ["title", "text"] },
    hits: Array.from({ length: HITS }, (_, k) => ({ id: `h${k}`, title: text(4), text: text(30), score: random() }))
  }),
  "course-retrieval": (i) => ({
    id: `c${i}`,
    question: text(10),
    skill: text(2),
    retrievedCourses: Array.from({ length: HITS }, (_, k) => ({
      subjectCode: `CS${k}${i % 100}`,
      subjectName: text(3),
      cleanedLearningOutcomes: [text(8), text(8), text(8)],
      score: random()
    }))
  }),
  "answer-synthesis": (i) => ({
    queryLogId: `ql${i}`,
    question: text(10),
    answer: text(60),
    context: Array.from(
      { length: 5 },
      () => ({ name: text(3), code: "CS1", matchedLearningOutcomes: [text(8), text(8)] })
    )
  })
}

const stages: Record<string, LoadStage> = {
  "evidence-retrieval": EvidenceRetrieval.loadQueries(),
  "search-relevance": SearchRelevance.loadRequests(),
  "course-retrieval": CourseRetrieval.loadTestSet(),
  "answer-synthesis": AnswerSynthesis.loadTestSet()
}

const cpuMs = async (run: () => Promise<void>): Promise<number> => {
  await run()
  const times: Array<number> = []
  for (let r = 0; r < RUNS; r++) {
    const start = process.cpuUsage()
    await run()
    const spent = process.cpuUsage(start)
    times.push((spent.user + spent.system) / 1000)
  }
  return times.sort((a, b) => a - b)[Math.floor(RUNS / 2)]!
}

const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-loading-"))
try {
  console.log(
    `Loading ${
      ROWS.toLocaleString("en-US")
    } JSONL rows (${HITS} hits a row where the kind has hits), CPU ms, median of ${RUNS} warm runs`
  )
  for (const [kind, row] of Object.entries(rowsOf)) {
    const file = Path.join(dir, `${kind}.jsonl`)
    fs.writeFileSync(file, Array.from({ length: ROWS }, (_, i) => JSON.stringify(row(i))).join("\n") + "\n")
    const bare = await cpuMs(() => Effect.runPromise(Stream.runDrain(readRows(file))))
    const stage = stages[kind]!
    const load = await cpuMs(() => Effect.runPromise(Stream.runDrain(stage.cases({ file }))))
    const mb = fs.statSync(file).size / 2 ** 20
    console.log(
      `  ${kind.padEnd(20)} ${mb.toFixed(0).padStart(3)} MB · rows read ${bare.toFixed(0).padStart(5)} ms · cases ${
        load.toFixed(0).padStart(5)
      } ms ` +
        `(${((load * 1000) / ROWS).toFixed(1)} µs/row; decoding and building ${
          (((load - bare) * 1000) / ROWS).toFixed(1)
        } µs/row)`
    )
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
