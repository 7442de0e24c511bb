/**
 * The answer-synthesis stages on hand-made data: loading and validating test sets, context
 * rendering, the pass rule and overall score, null handling, the summary's metrics and the
 * low-score grouping.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import type { EvalCase } from "../../src/domain/Case.js"
import type { InputError } from "../../src/domain/Errors.js"
import { llmTraits } from "../../src/domain/JudgeTraits.js"
import type { Judgment } from "../../src/domain/Judgment.js"
import type { Rubric } from "../../src/domain/Rubric.js"
import { summarize } from "../../src/engine/CaseFold.js"
import { headlineValues } from "../../src/engine/Headline.js"
import type { RunInfo } from "../../src/engine/Pipeline.js"
import { defaultPromptsDir, parseRubric } from "../../src/judges/Prompt.js"
import {
  contextLabel,
  judgeSynthesis,
  loadTestSet,
  renderContextItem
} from "../../src/kinds/synthesis/AnswerSynthesis.js"
import { lowScoreAnalysis } from "../../src/kinds/synthesis/LowScores.js"
import {
  defaultConfig,
  overallScore,
  passOf,
  type SynthesisRecord,
  synthesisScore
} from "../../src/kinds/synthesis/SynthesisScore.js"
import { synthesisSummary } from "../../src/kinds/synthesis/SynthesisSummary.js"

const loadPrompt = (name: string): Rubric =>
  Effect.runSync(
    parseRubric(
      fs.readFileSync(Path.join(defaultPromptsDir, "answer-synthesis", `${name}.json`), "utf8"),
      `answer-synthesis/${name}.json`
    )
  )
const F = loadPrompt("faithfulness")
const C = loadPrompt("completeness")
const rubrics = new Map([[F.id, F], [C.id, C]])

const tmp = fs.mkdtempSync(Path.join(os.tmpdir(), "synthesis-"))
let fileNo = 0
const write = (ext: string, text: string) => {
  const path = Path.join(tmp, `input-${fileNo++}.${ext}`)
  fs.writeFileSync(path, text)
  return path
}

const course = {
  name: "Database Systems",
  code: "CS230",
  matchedLearningOutcomes: ["Design relational database schemas", "Write SQL queries"]
}

const cases = (file: string, columns?: Record<string, string>) =>
  Stream.runCollect(loadTestSet().cases({ file, columns })).pipe(Effect.map(Chunk.toReadonlyArray))

describe("context items as text", () => {
  it("renders a course as name (code), its matched outcomes one per line, then other fields", () => {
    expect(renderContextItem({ ...course, credits: 6, level: "undergraduate" })).toBe(
      "Database Systems (CS230)\nMatched learning outcomes:\n- Design relational database schemas\n- Write SQL queries\ncredits: 6\nlevel: undergraduate"
    )
  })

  it("reads other course exports (subjectName / subjectCode / cleanedLearningOutcomes, outcomes as objects)", () => {
    expect(
      renderContextItem({
        subjectCode: "ENV101",
        subjectName: "Sustainability",
        cleanedLearningOutcomes: [{ text: "Explain climate change" }, "Evaluate strategies"]
      })
    )
      .toBe("Sustainability (ENV101)\nMatched learning outcomes:\n- Explain climate change\n- Evaluate strategies")
  })

  it("keeps strings as they are and shows anything else as JSON", () => {
    expect(renderContextItem("  PM101: plan projects  ")).toBe("PM101: plan projects")
    expect(renderContextItem({ score: 0.9, tags: ["a"] })).toBe("{\"score\":0.9,\"tags\":[\"a\"]}")
    expect(renderContextItem(3)).toBe("3")
  })

  it("labels an item by name and code, else by the start of its text", () => {
    expect(contextLabel(course)).toBe("Database Systems (CS230)")
    expect(contextLabel({ code: "X1" })).toBe("X1")
    expect(contextLabel("x".repeat(100))).toHaveLength(80)
  })
})

describe("loadTestSet", () => {
  const item = (id: unknown, extra: Record<string, unknown> = {}) => ({
    queryLogId: id,
    question: "Which database course?",
    answer: "CS230.",
    context: [course],
    ...extra
  })

  it.effect("loads a JSON array: id = queryLogId, each context item a passage", () =>
    Effect.gen(function*() {
      const file = write(
        "json",
        JSON.stringify([item("ql-1"), item(42, { context: ["plain text item", course] })], null, 2)
      )
      const [a, b] = yield* cases(file)
      expect(a!.id).toBe("ql-1")
      expect(a!.line).toBe(2)
      expect(a!.passages).toHaveLength(1)
      expect(a!.passages[0]).toMatchObject({ id: "1", rank: 1, text: renderContextItem(course), fields: course })
      expect(b!.id).toBe("42")
      expect(b!.passages.map((p) => p.text)).toEqual(["plain text item", renderContextItem(course)])
      expect(b!.passages[0]!.fields).toBeUndefined()
    }))

  it.effect("loads a { version, name, cases } test set and JSONL alike; without queryLogId cases are numbered", () =>
    Effect.gen(function*() {
      const json = write("json", JSON.stringify({ version: "1", name: "t", cases: [item("a"), item("b")] }))
      expect((yield* cases(json)).map((c) => c.id)).toEqual(["a", "b"])
      const jsonl = write("jsonl", [item(undefined), item("x")].map((x) => JSON.stringify(x)).join("\n") + "\n")
      const loaded = yield* cases(jsonl)
      expect(loaded.map((c) => [c.id, c.line])).toEqual([["1", 1], ["x", 2]])
    }))

  it.effect("honours field renames from --columns (fragments = the context list, id = the log id)", () =>
    Effect.gen(function*() {
      const file = write(
        "jsonl",
        JSON.stringify({ logId: "r1", question: "q?", answer: "a", courses: [course] }) + "\n"
      )
      const [c] = yield* cases(file, { fragments: "courses", id: "logId" })
      expect(c!.id).toBe("r1")
      expect(c!.passages).toHaveLength(1)
    }))

  const failure = (values: Record<string, unknown>) =>
    Effect.gen(function*() {
      const file = write("jsonl", JSON.stringify(item("ok")) + "\n" + JSON.stringify(values) + "\n")
      const error: InputError = yield* Effect.flip(cases(file))
      expect(error._tag).toBe("InputError")
      expect(error.file).toBe(file)
      expect(error.line).toBe(2)
      return error
    })

  it.effect("rejects a missing or empty question, naming file, line and field", () =>
    Effect.gen(function*() {
      const missing = yield* failure({ queryLogId: "q", answer: "a", context: [] })
      expect(missing).toMatchObject({ field: "question", problem: "the question is missing" })
      const empty = yield* failure({ queryLogId: "q", question: "  ", answer: "a", context: [] })
      expect(empty).toMatchObject({ field: "question", problem: "the question is empty" })
      expect(empty.message).toContain(":2 (field \"question\")")
    }))

  it.effect("rejects a missing answer (an empty answer is accepted: it is the system's failure to score)", () =>
    Effect.gen(function*() {
      const missing = yield* failure({ queryLogId: "q", question: "q?", context: [] })
      expect(missing).toMatchObject({ field: "answer", problem: "the answer is missing" })
      const file = write("jsonl", JSON.stringify(item("e", { answer: "" })) + "\n")
      expect((yield* cases(file))[0]!.answer).toBe("")
    }))

  it.effect("rejects a context that is not a list, and null items", () =>
    Effect.gen(function*() {
      const text = yield* failure({ queryLogId: "q", question: "q?", answer: "a", context: "CS230" })
      expect(text).toMatchObject({ field: "context", problem: "expected a list of context items, found a string" })
      const missing = yield* failure({ queryLogId: "q", question: "q?", answer: "a" })
      expect(missing.problem).toBe("expected a list of context items, found nothing")
      const nul = yield* failure({ queryLogId: "q", question: "q?", answer: "a", context: [course, null] })
      expect(nul).toMatchObject({ field: "context[1]", problem: "the context item is null" })
      const id = yield* failure({ queryLogId: { a: 1 }, question: "q?", answer: "a", context: [] })
      expect(id).toMatchObject({ field: "queryLogId", problem: "expected text or a number, found an object" })
    }))

  it.effect("checkColumns names fields that no case has (queryLogId is optional)", () =>
    Effect.gen(function*() {
      const stage = loadTestSet()
      yield* stage.checkColumns({ file: "f.json" }, ["question", "answer", "context"])
      const error = yield* Effect.flip(stage.checkColumns({ file: "f.json" }, ["queryLogId", "question", "answer"]))
      expect(error.problem).toContain("missing column \"context\"")
    }))

  it("judges each answer once per rubric with question, answer and the numbered context", () => {
    const c: EvalCase = {
      id: "x",
      ordinal: 0,
      line: 1,
      question: "q?",
      answer: "a",
      passages: [{ id: "1", rank: 1, text: "A (1)" }, { id: "2", rank: 2, text: "B" }],
      source: {}
    }
    const tasks = judgeSynthesis([F.id, C.id]).tasks(c)
    expect(tasks.map((t) => t.rubric)).toEqual([F.id, C.id])
    expect(tasks[0]!.vars).toEqual({ question: "q?", answer: "a", context: "[1] A (1)\n\n[2] B" })
    expect(judgeSynthesis([F.id]).tasks({ ...c, passages: [] })[0]!.vars.context).toBe(
      "(no context items were retrieved)"
    )
  })
})

describe("pass rule and overall score (SPEC §2.2)", () => {
  it("passes only when both scores are ≥ 4", () => {
    expect(passOf(4, 4, 4)).toBe(true)
    expect(passOf(5, 4, 4)).toBe(true)
    expect(passOf(3, 5, 4)).toBe(false)
    expect(passOf(5, 3, 4)).toBe(false)
    expect(passOf(1, 1, 4)).toBe(false)
  })

  it("a failed judgment is neither pass nor fail — unless the other score already fails the case", () => {
    expect(passOf(null, 5, 4)).toBeNull()
    expect(passOf(4, null, 4)).toBeNull()
    expect(passOf(null, null, 4)).toBeNull()
    expect(passOf(2, null, 4)).toBe(false)
    expect(passOf(null, 3, 4)).toBe(false)
  })

  it("overall = (f + c) / 2, null when either is unknown", () => {
    expect(overallScore(5, 4)).toBe(4.5)
    expect(overallScore(1, 2)).toBe(1.5)
    expect(overallScore(null, 4)).toBeNull()
    expect(overallScore(4, null)).toBeNull()
  })
})

// ---------------------------------------------------------------------------------------------
// Hand-made records through the real score stage
// ---------------------------------------------------------------------------------------------

const judgment = (caseId: string, criterion: string, score: number | null, reason: string): Judgment => ({
  key: `${caseId}/${criterion}`,
  caseId,
  ordinal: 0,
  iteration: 1,
  criterion,
  target: "answer",
  status: score === null ? "failed" : "ok",
  score,
  reason,
  ...(score === null ? { raw: "not json" } : {}),
  usage: { inputTokens: 10, outputTokens: 2 },
  attempts: 1,
  latencyMs: 0,
  provider: "test",
  model: "m"
})

const score = synthesisScore()
let ordinal = 0
const record = (id: string, f: number | null, c: number | null): SynthesisRecord => {
  const evalCase: EvalCase = {
    id,
    ordinal: ordinal++,
    line: ordinal,
    question: `Question ${id}?`,
    answer: `Answer ${id}. ${"long ".repeat(100)}`,
    passages: [{ id: "1", rank: 1, text: renderContextItem(course), fields: course }],
    source: {}
  }
  return score.score(
    evalCase,
    [judgment(id, F.id, f, `F reason ${id}`), judgment(id, C.id, c, `C reason ${id}`)],
    1,
    rubrics
  )
}

const info: RunInfo = {
  pipeline: "answer-synthesis",
  description: "test",
  runId: "r",
  runDir: tmp,
  judge: { provider: "test", model: "m", label: "test judge", params: {}, traits: llmTraits },
  rubrics: [F, C],
  input: { path: "x.json", sha256: "0".repeat(64), rows: 12, cases: 12, columns: [] },
  iterations: 1,
  concurrency: 1,
  retriever: { name: "precomputed", params: {} }
}

describe("synthesisScore", () => {
  it("builds the record: scores, overall, pass, reasons, context labels; composite = overall / 5", () => {
    const r = record("a", 5, 4)
    expect(r).toMatchObject({
      caseId: "a",
      faithfulness: 5,
      completeness: 4,
      overall: 4.5,
      pass: true,
      reasons: { faithfulness: "F reason a", completeness: "C reason a" },
      context: ["Database Systems (CS230)"],
      failed: 0
    })
    expect(r.composite).toBeCloseTo(4.5 / 5, 12)
    expect(r.tokens).toEqual({ input: 20, output: 4 })
    expect(score.grades?.(r)).toEqual({ caseId: "a", grades: { [F.id]: 5, [C.id]: 4, pass: 1 } })
  })

  it("a failed judgment leaves its score null (never 0), overall null, pass unknown", () => {
    const r = record("b", null, 5)
    expect(r).toMatchObject({
      faithfulness: null,
      completeness: 5,
      overall: null,
      pass: null,
      composite: null,
      failed: 1
    })
    expect(r.reasons.faithfulness).toBe("F reason b")
    // A missing judgment (none recorded) is a failure too.
    const missing = score.score(
      { id: "m", ordinal: 0, line: 1, question: "q", answer: "a", passages: [], source: {} },
      [judgment("m", C.id, 2, "why")],
      1,
      rubrics
    )
    expect(missing).toMatchObject({
      faithfulness: null,
      completeness: 2,
      pass: false,
      reasons: { faithfulness: "no judgment recorded" }
    })
  })
})

/** f, c per record; see the expectations below. */
const table: ReadonlyArray<[string, number | null, number | null]> = [
  ["r1", 5, 5], // pass
  ["r2", 1, 5], // faithfulness 1, persuasive but wrong
  ["r3", 2, 2], // faithfulness 2 + completeness, both low
  ["r4", 3, 4], // faithfulness 3, persuasive but wrong
  ["r5", 5, 1], // completeness 1, accurate but unhelpful
  ["r6", 4, 3], // completeness 3, accurate but unhelpful
  ["r7", null, 5], // unknown: in no group
  ["r8", null, 2], // fails on completeness alone
  ["r9", 1, 5],
  ["r10", 1, 5],
  ["r11", 1, 5],
  ["r12", 1, 5]
]
const records = table.map(([id, f, c]) => record(id, f, c))

describe("lowScoreAnalysis", () => {
  const a = lowScoreAnalysis(records)

  it("counts failed and undecided cases", () => {
    expect(a).toMatchObject({ passAt: 4, cases: 12, failed: 10, unknown: 1 })
  })

  it("groups failures by type: faithfulness 1, 2, 3 and completeness 1–3", () => {
    expect(a.groups.map((g) => [g.id, g.count])).toEqual([
      ["faithfulness-1", 5],
      ["faithfulness-2", 1],
      ["faithfulness-3", 1],
      ["completeness-low", 4]
    ])
    expect(a.groups.map((g) => g.label)).toEqual([
      "Completely false",
      "Mostly false",
      "Mixed",
      "Missing bridging (completeness 1–3)"
    ])
    expect(a.groups[3]!.byScore).toEqual({ 1: 1, 2: 2, 3: 1 })
  })

  it("keeps the first three examples per group with the judge's reason for that dimension", () => {
    const f1 = a.groups[0]!
    expect(f1.examples.map((e) => e.caseId)).toEqual(["r2", "r9", "r10"])
    expect(f1.examples[0]).toMatchObject({
      question: "Question r2?",
      score: 1,
      faithfulness: 1,
      completeness: 5,
      reason: "F reason r2"
    })
    expect(f1.examples[0]!.answer.length).toBeLessThanOrEqual(300)
    expect(f1.examples[0]!.answer.endsWith("…")).toBe(true)
    const low = a.groups[3]!
    expect(low.examples.map((e) => [e.caseId, e.score, e.reason])).toEqual([["r3", 2, "C reason r3"], [
      "r5",
      1,
      "C reason r5"
    ], ["r6", 3, "C reason r6"]])
  })

  it("gives recommendations per group, for completeness by the scores present", () => {
    expect(a.groups[0]!.recommendations.join(" ")).toMatch(/only from the retrieved courses/)
    expect(a.groups[1]!.recommendations.join(" ")).toMatch(/refusal when nothing matches/)
    const low = a.groups[3]!.recommendations.join(" ")
    expect(low).toMatch(/explain why each course fits the user's goal/)
    expect(low).toMatch(/no relevant courses found/)
    const onlyDescriptive = lowScoreAnalysis([record("d", 5, 3)]).groups[3]!.recommendations.join(" ")
    expect(onlyDescriptive).not.toMatch(/no relevant courses found/)
    expect(lowScoreAnalysis([record("p", 5, 5)]).groups.every((g) => g.count === 0 && g.recommendations.length === 0))
      .toBe(true)
  })

  it("tells persuasive-but-wrong from accurate-but-unhelpful (cases with both scores known)", () => {
    expect(a.patterns).toEqual({ persuasiveButWrong: 6, accurateButUnhelpful: 2, both: 1 })
  })

  it("follows the pass threshold and is empty for no records", () => {
    const at3 = lowScoreAnalysis(records, { passAt: 3, examples: 1 })
    expect(at3.groups.map((g) => [g.id, g.count])).toEqual([["faithfulness-1", 5], ["faithfulness-2", 1], [
      "completeness-low",
      3
    ]])
    expect(at3.groups[0]!.examples).toHaveLength(1)
    const none = lowScoreAnalysis([])
    expect(none).toMatchObject({ cases: 0, failed: 0, unknown: 0 })
    expect(none.groups.map((g) => g.count)).toEqual([0, 0, 0, 0])
  })
})

describe("synthesisSummary (with the engine's fold)", () => {
  const pipeline = { score, aggregate: synthesisSummary(defaultConfig) }
  const summary = summarize(pipeline, info, records)
  const m = summary.metrics
  const x = summary.extra

  it("means and pass rates per dimension exclude failed judgments", () => {
    // Faithfulness known for 10 cases: 5+1+2+3+5+4+1+1+1+1 = 24; ≥ 4: r1, r5, r6.
    expect(m.faithfulness).toMatchObject({ n: 10 })
    expect(x.faithfulnessPassed).toBe(3)
    expect(m.faithfulness!.mean).toBeCloseTo(2.4, 12)
    expect(m.faithfulnessPassRate!.mean).toBeCloseTo(0.3, 12)
    // Completeness known for all 12: sum 47; ≥ 4: r1, r2, r4, r7, r9–r12.
    expect(m.completeness).toMatchObject({ n: 12 })
    expect(x.completenessPassed).toBe(8)
    expect(m.completeness!.mean).toBeCloseTo(47 / 12, 12)
    expect(m.completenessPassRate!.mean).toBeCloseTo(8 / 12, 12)
  })

  it("overall pass rate counts undecided cases apart", () => {
    expect(x).toMatchObject({ passed: 1, failed: 10, undecided: 1 })
    expect(m.overall!.n).toBe(10)
    expect(m.overallPassRate!.mean).toBeCloseTo(1 / 11, 12)
    // (5+5)/2 + (1+5)/2 + (2+2)/2 + (3+4)/2 + (5+1)/2 + (4+3)/2 + 4 × (1+5)/2 = 32
    expect(m.overall!.mean).toBeCloseTo(3.2, 12)
  })

  it("carries distributions, the failed cases and the same low-score analysis as the pure function", () => {
    expect(x.rubrics.distributions[F.id]).toEqual({ 1: 5, 2: 1, 3: 1, 4: 1, 5: 2 })
    expect(summary.failed.map((r) => r.caseId)).toEqual(["r7", "r8"])
    expect(x.lowScores).toEqual(lowScoreAnalysis(records))
  })

  it("exposes headline metrics and the low-score analysis for per-iteration files", () => {
    const headline = headlineValues(pipeline, info, summary)
    expect(headline).toMatchObject({
      faithfulness: m.faithfulness!.mean,
      overallPassRate: m.overallPassRate!.mean,
      undecided: 1,
      failedJudgments: 0
    })
    expect(pipeline.aggregate.lowScores?.(x)).toEqual({ analysis: x.lowScores })
  })

  it("has a value for no records", () => {
    const empty = summarize(pipeline, info, [])
    expect(empty.metrics.faithfulness).toMatchObject({ n: 0, mean: null, ci: null })
    expect(empty.metrics.overallPassRate).toMatchObject({ n: 0, mean: null })
    expect(empty.extra).toMatchObject({ passed: 0, failed: 0, undecided: 0 })
  })
})
