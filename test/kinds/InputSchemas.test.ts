/**
 * Each kind's input rows decoded with its schema, through its load stage on a real file: a good row
 * becomes its case, and each kind of bad row — a missing field, a wrong type, blank text where text
 * is needed, arrays nested where objects or texts belong — is an InputError naming the file, the
 * line and the path of the bad value under the row's own field names (`--columns` renames and
 * aliases included).
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import type { EvalCase } from "../../src/domain/Case.js"
import type { InputError } from "../../src/domain/Errors.js"
import type { LoadStage } from "../../src/engine/Pipeline.js"
import * as CourseRetrieval from "../../src/kinds/course/CourseRetrieval.js"
import * as EvidenceRetrieval from "../../src/kinds/evidence/EvidenceRetrieval.js"
import * as SearchRelevance from "../../src/kinds/search/SearchRelevance.js"
import * as AnswerSynthesis from "../../src/kinds/synthesis/AnswerSynthesis.js"
import { writeInput } from "../support/Retrieval.js"

const cases = (stage: LoadStage, file: string, columns?: Readonly<Record<string, string>>) =>
  Stream.runCollect(stage.cases({ file, columns })).pipe(Effect.map(Chunk.toReadonlyArray))

/** The error for `bad`, written as line 2 of a JSONL file after the good row `good`. */
const errorOf = (stage: LoadStage, good: unknown, bad: unknown, columns?: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const file = writeInput("jsonl", `${JSON.stringify(good)}\n${JSON.stringify(bad)}\n`)
    const error: InputError = yield* Effect.flip(cases(stage, file, columns))
    expect(error).toMatchObject({ _tag: "InputError", file, line: 2 })
    return { field: error.field, problem: error.problem }
  })

type BadRows = ReadonlyArray<readonly [what: string, row: Record<string, unknown>, field: string, problem: string]>

const rejectsEach = (
  stage: LoadStage,
  good: Record<string, unknown>,
  bad: BadRows,
  columns?: Readonly<Record<string, string>>
) =>
  Effect.gen(function*() {
    for (const [what, row, field, problem] of bad) {
      expect(yield* errorOf(stage, good, { ...good, ...row }, columns), what).toEqual({ field, problem })
    }
  })

/** A row without `key`. */
const without = (row: Record<string, unknown>, key: string) =>
  Object.fromEntries(Object.entries(row).filter(([k]) => k !== key))

describe("course-retrieval rows (CourseRow)", () => {
  const stage = CourseRetrieval.loadTestSet()
  const course = {
    subjectCode: "CS101",
    subjectName: "Programming",
    cleanedLearningOutcomes: ["Write loops"],
    score: 0.9
  }
  const good = {
    id: "c1",
    question: "How do I start coding?",
    skill: "programming",
    retrievedCourses: [course],
    latencyMs: 40
  }

  it.effect("a good row is its case", () =>
    Effect.gen(function*() {
      const [c] = yield* cases(stage, writeInput("jsonl", JSON.stringify(good) + "\n"))
      expect(c).toMatchObject({
        id: "c1",
        line: 1,
        question: "How do I start coding?",
        retrieval: { retriever: "precomputed", status: "ok", latencyMs: 40 }
      })
      expect(c!.passages).toEqual([{
        id: "CS101",
        rank: 1,
        text: "Programming (CS101)\nLearning outcomes:\n- Write loops",
        score: 0.9,
        fields: course
      }])
    }))

  it.effect("each bad row names its line and the bad value's path", () =>
    rejectsEach(stage, good, [
      ["missing question", { question: undefined }, "question", "expected text, found nothing"],
      ["question of the wrong type", { question: ["a"] }, "question", "expected text, found an array"],
      ["blank skill", { skill: " \t" }, "skill", "the skill is empty"],
      ["id neither text nor a number", { id: false }, "id", "expected text or a number, found a boolean"],
      [
        "missing course list",
        { retrievedCourses: undefined },
        "retrievedCourses",
        "expected a list of retrieved courses, found nothing"
      ],
      [
        "course list of the wrong type",
        { retrievedCourses: { CS101: course } },
        "retrievedCourses",
        "expected a list of retrieved courses, found an object"
      ],
      [
        "courses nested in an array",
        { retrievedCourses: [course, [course]] },
        "retrievedCourses[1]",
        "expected a course (an object), found an array"
      ],
      [
        "course without code or name",
        { retrievedCourses: [{ subjectCode: " ", cleanedLearningOutcomes: [] }] },
        "retrievedCourses[0]",
        "the course has neither a subjectName nor a subjectCode"
      ],
      [
        "code of the wrong type",
        { retrievedCourses: [{ ...course, subjectCode: { id: 1 } }] },
        "retrievedCourses[0].subjectCode",
        "expected text or a number, found an object"
      ],
      [
        "outcomes not a list",
        { retrievedCourses: [{ ...course, cleanedLearningOutcomes: "Write loops" }] },
        "retrievedCourses[0].cleanedLearningOutcomes",
        "expected a list of texts, found a string"
      ],
      [
        "outcomes nested",
        { retrievedCourses: [course, { ...course, cleanedLearningOutcomes: ["a", ["b"]] }] },
        "retrievedCourses[1].cleanedLearningOutcomes[1]",
        "expected text, found an array"
      ],
      [
        "score of the wrong type",
        { retrievedCourses: [{ ...course, score: "0.9" }] },
        "retrievedCourses[0].score",
        "expected a number, found a string"
      ],
      [
        "negative latency span",
        { latencyMs: { total: 40, rerank: -1 } },
        "latencyMs.rerank",
        "expected milliseconds ≥ 0, found -1"
      ],
      ["usage of the wrong type", { usage: [10, 2] }, "usage", "expected { inputTokens, outputTokens }, found an array"]
    ]))

  it.effect("--columns renames are the names in the path; with a live retriever the list may be absent", () =>
    Effect.gen(function*() {
      const columns = { id: "key", question: "Q", fragments: "found" }
      const renamed = { key: "k1", Q: "q?", skill: "s", found: [course] }
      expect(
        yield* errorOf(
          stage,
          renamed,
          { ...renamed, found: [{ subjectName: 5, cleanedLearningOutcomes: [1] }] },
          columns
        )
      )
        .toEqual({ field: "found[0].cleanedLearningOutcomes[0]", problem: "expected text, found a number" })
      expect(yield* errorOf(stage, renamed, { ...renamed, Q: "" }, columns)).toEqual({
        field: "Q",
        problem: "the question is empty"
      })
      const [live] = yield* cases(
        CourseRetrieval.loadTestSet({ coursesRequired: false }),
        writeInput("jsonl", JSON.stringify(without(good, "retrievedCourses")) + "\n")
      )
      expect(live!.passages).toEqual([])
      expect(
        yield* errorOf(CourseRetrieval.loadTestSet({ coursesRequired: false }), good, {
          ...good,
          retrievedCourses: "none"
        })
      )
        .toEqual({ field: "retrievedCourses", problem: "expected a list of retrieved courses, found a string" })
    }))

  it.effect("in a JSON test set the line is where the bad case starts", () =>
    Effect.gen(function*() {
      const text = JSON.stringify(
        {
          version: 1,
          name: "t",
          cases: [good, {
            ...good,
            id: "c2",
            retrievedCourses: [course, { ...course, score: null }, { subjectName: [] }]
          }]
        },
        null,
        2
      )
      const file = writeInput("json", text)
      const error: InputError = yield* Effect.flip(cases(stage, file))
      const line = text.split("\n").findIndex((l) => l.includes("\"c2\"")) // the case's `id` line, one after its `{`
      expect(error).toMatchObject({
        file,
        line,
        field: "retrievedCourses[2].subjectName",
        problem: "expected text or a number, found an array"
      })
    }))
})

describe("search-relevance rows (SearchRow)", () => {
  const stage = SearchRelevance.loadRequests()
  const hit = { id: "a", text: "Paris is the capital of France.", score: 0.9, title: "Paris" }
  const good = {
    id: "s1",
    query: { inputs: { text: "capital of france" } },
    hits: [hit],
    eval: { fields: ["title", "text"] }
  }

  it.effect("a good row is its case: the hit's chosen fields are its text and the hit is kept as given", () =>
    Effect.gen(function*() {
      const [c] = yield* cases(stage, writeInput("jsonl", JSON.stringify(good) + "\n"))
      expect(c).toMatchObject({ id: "s1", question: "capital of france" })
      expect(c!.passages).toEqual([{
        id: "a",
        rank: 1,
        text: "title: Paris\ntext: Paris is the capital of France.",
        score: 0.9,
        fields: hit
      }])
    }))

  it.effect("each bad row names its line and the bad value's path", () =>
    rejectsEach(stage, good, [
      [
        "missing query",
        { query: undefined },
        "query",
        "expected the query as text or { \"inputs\": { \"text\": … } }, found nothing"
      ],
      [
        "query of the wrong type",
        { query: 42 },
        "query",
        "expected the query as text or { \"inputs\": { \"text\": … } }, found a number"
      ],
      [
        "query text of the wrong type",
        { query: { inputs: { text: ["x"] } } },
        "query.inputs.text",
        "expected text, found an array"
      ],
      ["blank query", { query: { inputs: { text: "   " } } }, "query", "the query is empty"],
      ["missing hits", { hits: undefined }, "hits", "expected a list of hits, found nothing"],
      ["hits nested in an array", { hits: [[hit]] }, "hits[0]", "expected a hit (an object), found an array"],
      [
        "hit id of the wrong type",
        { hits: [hit, { ...hit, id: [1] }] },
        "hits[1].id",
        "expected text or a number, found an array"
      ],
      [
        "hit score of the wrong type",
        { hits: [{ ...hit, score: {} }] },
        "hits[0].score",
        "expected a number, found an object"
      ],
      [
        "hit without the chosen fields",
        { hits: [hit, { id: "b", body: "x" }] },
        "hits[1]",
        "the hit has none of the fields \"title\", \"text\""
      ],
      ["eval of the wrong type", { eval: "title" }, "eval", "expected { \"fields\": [...] }, found a string"],
      ["eval.fields nested", { eval: { fields: [["title"]] } }, "eval.fields[0]", "expected text, found an array"],
      ["blank field name", { eval: { fields: ["title", ""] } }, "eval.fields[1]", "a field name is empty"]
    ]))

  it.effect("a hit without text when no field is chosen", () =>
    Effect.gen(function*() {
      const plain = without(good, "eval")
      expect(yield* errorOf(stage, plain, { ...plain, hits: [{ id: "x", score: 1 }] })).toEqual({
        field: "hits[0]",
        problem: "the hit has no text"
      })
    }))
})

describe("evidence-retrieval rows (EvidenceRow)", () => {
  const stage = EvidenceRetrieval.loadQueries()
  const good = {
    id: "e1",
    query: "How many days of leave?",
    gold: ["25 days"],
    chunks: [{ id: "c1", text: "You get 25 days.", score: 0.5 }, "Leave is paid."]
  }

  it.effect("a good row is its case, gold and chunks under any alias", () =>
    Effect.gen(function*() {
      const [a, b] = yield* cases(
        stage,
        writeInput(
          "jsonl",
          [good, { query: "q", evidence: [], contexts: [{ content: "from content" }] }].map((r) => JSON.stringify(r))
            .join("\n")
        )
      )
      expect(a).toMatchObject({ id: "e1", gold: ["25 days"] })
      expect(a!.passages).toEqual([
        { id: "c1", rank: 1, text: "You get 25 days.", score: 0.5, fields: good.chunks[0] },
        { id: "2", rank: 2, text: "Leave is paid." }
      ])
      expect(b!.passages).toEqual([{ id: "1", rank: 1, text: "from content", fields: { content: "from content" } }])
    }))

  it.effect("each bad row names its line and the bad value's path, under the alias the row uses", () =>
    rejectsEach(stage, good, [
      [
        "missing query",
        { query: undefined },
        "query",
        "expected the query as text or { \"inputs\": { \"text\": … } }, found nothing"
      ],
      ["blank query", { query: "" }, "query", "the query is empty"],
      ["missing gold", { gold: undefined }, "gold", "expected a list of gold evidence spans (texts), found nothing"],
      ["gold nested", { gold: ["a", ["b"]] }, "gold[1]", "expected text, found an array"],
      [
        "gold under an alias, of the wrong type",
        { gold: undefined, goldEvidence: "25 days" },
        "goldEvidence",
        "expected a list of gold evidence spans (texts), found a string"
      ],
      [
        "chunks under an alias, nested",
        { chunks: undefined, retrieved: [["x"]] },
        "retrieved[0]",
        "expected a text or an object, found an array"
      ],
      ["chunk of the wrong type", { chunks: [1] }, "chunks[0]", "expected a text or an object, found a number"],
      ["chunk without text", { chunks: [{ id: "c1", score: 1 }] }, "chunks[0].text", "expected text, found nothing"],
      [
        "chunk content of the wrong type",
        { chunks: [{ id: "c1", content: { text: "x" } }] },
        "chunks[0].content",
        "expected text, found an object"
      ],
      [
        "chunk id of the wrong type",
        { chunks: [{ id: null, text: "ok" }, { id: {}, text: "t" }] },
        "chunks[1].id",
        "expected text or a number, found an object"
      ],
      [
        "token count below zero",
        { usage: { prompt_tokens: 10, completion_tokens: -1 } },
        "usage.completion_tokens",
        "expected a token count ≥ 0, found -1"
      ]
    ]))
})

describe("answer-synthesis rows (SynthesisInput)", () => {
  const stage = AnswerSynthesis.loadTestSet()
  const good = {
    queryLogId: "ql-1",
    question: "Which course teaches SQL?",
    answer: "Databases (CS230).",
    context: [{ name: "Databases", code: "CS230" }, "plain", ["nested", "is rendered"]]
  }

  it.effect("a good row is its case: any non-null context item is a passage", () =>
    Effect.gen(function*() {
      const [c]: ReadonlyArray<EvalCase> = yield* cases(stage, writeInput("jsonl", JSON.stringify(good) + "\n"))
      expect(c).toMatchObject({ id: "ql-1", question: "Which course teaches SQL?", answer: "Databases (CS230)." })
      expect(c!.passages.map((p) => p.text)).toEqual(["Databases (CS230)", "plain", "[\"nested\",\"is rendered\"]"])
    }))

  it.effect("each bad row names its line and the bad value's path", () =>
    rejectsEach(stage, good, [
      ["missing question", { question: undefined }, "question", "the question is missing"],
      ["question of the wrong type", { question: { text: "q" } }, "question", "expected text, found an object"],
      ["blank question", { question: "\n" }, "question", "the question is empty"],
      ["missing answer", { answer: null }, "answer", "the answer is missing"],
      ["answer of the wrong type", { answer: ["a"] }, "answer", "expected text, found an array"],
      ["missing context", { context: undefined }, "context", "expected a list of context items, found nothing"],
      ["null context item", { context: ["a", null] }, "context[1]", "the context item is null"],
      ["id of the wrong type", { queryLogId: ["ql"] }, "queryLogId", "expected text or a number, found an array"]
    ]))

  it.effect("--columns renames are the names in the path", () =>
    Effect.gen(function*() {
      const columns = { id: "qid", question: "prompt", answer: "reply", fragments: "ctx" }
      const renamed = { qid: 1, prompt: "p", reply: "r", ctx: [] }
      expect(yield* errorOf(stage, renamed, { ...renamed, ctx: [null] }, columns)).toEqual({
        field: "ctx[0]",
        problem: "the context item is null"
      })
      expect(yield* errorOf(stage, renamed, { ...renamed, reply: 3 }, columns)).toEqual({
        field: "reply",
        problem: "expected text, found a number"
      })
    }))
})
