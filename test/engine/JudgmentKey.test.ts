/**
 * Judgment keys decide what a resumed run or the cache reuses, so they must never drift: the fast
 * key builder must produce exactly the canonical JSON (sorted keys, undefined dropped) it replaced,
 * and a fixed task keeps a pinned key.
 */
import { describe, expect, it } from "vitest"
import type { JudgeTask } from "../../src/domain/Judgment.js"
import { sha256 } from "../../src/judges/Prompt.js"
import { canonicalJson, judgmentKey, keyJson, stringRecordJson, taskKey } from "../../src/engine/Runner.js"

const base = {
  pipeline: "rag-answers",
  caseId: "42",
  content: "0123456789abcdef",
  iteration: 1,
  criterion: "rag-answers/groundedness",
  target: "answer",
  promptHash: "fedcba9876543210",
  provider: "openai",
  model: "gpt-4o-mini",
  params: { temperature: 0, seed: 7 }
}

describe("judgment keys", () => {
  it("keyJson is exactly canonicalJson of the key's parts", () => {
    const variants = [
      base,
      { ...base, caseId: "quote \" backslash \\ newline \n tab \t", target: "hit:é✓ 🚀" },
      { ...base, iteration: 12, params: {} },
      { ...base, params: { z: 1, a: { y: [1, { b: 2, a: 1 }], x: null }, m: undefined, maxTokens: 512 } },
      { ...base, model: "", provider: "heuristic", params: { temperature: 0.25 } }
    ]
    for (const parts of variants) expect(keyJson(parts)).toBe(canonicalJson(parts))
  })

  it("a fixed task keeps its key (journals and caches of earlier versions stay valid)", () => {
    expect(judgmentKey(base)).toBe(sha256(canonicalJson(base)).slice(0, 32))
    expect(judgmentKey(base)).toBe("95acba5697f3e030aade5426bb190b02")
  })

  it("stringRecordJson is exactly canonicalJson of a record of strings, and declines anything else", () => {
    const records: ReadonlyArray<Record<string, unknown>> = [
      {},
      { question: "q", answer: "a", passages: "[1] one\n\n[2] two", history: "(no previous conversation)" },
      { "b": "quote \" backslash \\ newline \n", "a": "é✓ 🚀", "Z": "", "a b": "\u2028" },
      { x: "1", skipped: undefined }
    ]
    for (const r of records) expect(stringRecordJson(r)).toBe(canonicalJson(r))
    expect(stringRecordJson({ n: 1 })).toBeUndefined()
    expect(stringRecordJson({ nested: { a: "b" } })).toBeUndefined()
  })

  it("a fixed task's content hash is pinned too", () => {
    const rubric = { id: "rag-answers/clarity", hash: "fedcba9876543210" } as Parameters<typeof taskKey>[1]["rubric"]
    const task = { pipeline: "rag-answers", caseId: "7", iteration: 2, rubric, target: "answer", vars: { question: "Why?", answer: "Because.", passages: "[1] p" } }
    const judge = { provider: "openai", model: "gpt-4o-mini", params: { seed: 7 } }
    const content = sha256(canonicalJson(task.vars)).slice(0, 16)
    expect(taskKey(judge, task)).toBe(judgmentKey({ ...judge, pipeline: "rag-answers", caseId: "7", content, iteration: 2, criterion: rubric.id, target: "answer", promptHash: rubric.hash }))
    expect(taskKey(judge, task)).toBe("39a2ef038e6082c3d1a07868f9212cac")
  })

  it("a task's pool (the heuristic judge's statistics) is not part of its key", () => {
    const rubric = { id: "search-relevance/checklist", hash: "fedcba9876543210" } as Parameters<typeof taskKey>[1]["rubric"]
    const judge = { provider: "openai", model: "gpt-4o-mini", params: {} }
    const task = { pipeline: "search-relevance", caseId: "q1", iteration: 1, rubric, target: "hit:a", vars: { query: "capital of france", passage: "Paris" } }
    const pooled: JudgeTask = { ...task, ordinal: 0, vars: { ...task.vars }, pool: ["Paris", "Lyon", "Bananas"] }
    expect(taskKey(judge, pooled)).toBe(taskKey(judge, task))
    const other: JudgeTask = { ...pooled, pool: ["Paris"] }
    expect(taskKey(judge, other)).toBe(taskKey(judge, task))
  })
})
