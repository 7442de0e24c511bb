/**
 * Judgment keys decide what a resumed run or the cache reuses, so they must never drift: the fast
 * key builder must produce exactly the canonical JSON (sorted keys, undefined dropped) it replaced,
 * and a fixed task keeps a pinned key.
 */
import { describe, expect, it } from "vitest"
import type { JudgeTask } from "../../src/domain/Judgment.js"
import { jsonString, listJson, listKeys } from "../../src/engine/JudgmentKey.js"
import {
  canonicalJson,
  canonicalJsonByReplacer,
  judgmentKey,
  keyJson,
  stringRecordJson,
  taskKey
} from "../../src/engine/Runner.js"
import { sha256 } from "../../src/judges/Prompt.js"

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
    for (const parts of variants) expect(keyJson(parts)).toBe(canonicalJsonByReplacer(parts))
  })

  it("canonicalJson is exactly canonicalJsonByReplacer (the rule), on plain data and on what it hands back to it", () => {
    class Point {
      constructor(readonly y: number, readonly x: number) {}
    }
    const fixed: ReadonlyArray<unknown> = [
      null,
      true,
      0,
      -0,
      1e21,
      3.25,
      Number.NaN,
      Infinity,
      "",
      "quote \" backslash \\ newline \n é✓ 🚀 \u2028",
      [],
      {},
      [1, "a", null, [2, [3]]],
      { b: 1, a: { d: [{ z: 1, y: 2 }], c: undefined }, "": "empty key", "a b": "x" },
      { vars: { question: "q", text: "t" }, items: [{ target: "answer/claims:1", vars: { claim: "c" } }] },
      // Handed back: index-like keys (ordered first by JSON), undefined in arrays, toJSON, other prototypes, functions.
      { 10: "ten", 2: "two", b: "b", "1a": "x" },
      [undefined, 1],
      { d: new Date(0) },
      { p: new Point(2, 1) },
      { f: () => 1, a: 1 },
      [() => 1],
      { toJSON: () => "mine" },
      Object.create(null)
    ]
    fixed.forEach((v, i) => expect(canonicalJson(v), `value ${i}`).toBe(canonicalJsonByReplacer(v)))
    // Random nested values.
    let seed = 3
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296
    const keys = ["a", "b", "Z", "é", "a b", "", "10", "k", "vars", "items"]
    const value = (depth: number): unknown => {
      const r = random()
      if (depth > 3 || r < 0.3) return [null, true, false, 0, 1.5, -2, "s", "q\"", undefined][Math.floor(random() * 9)]
      if (r < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1))
      const o: Record<string, unknown> = {}
      for (let i = Math.floor(random() * 5); i > 0; i--) o[keys[Math.floor(random() * keys.length)]!] = value(depth + 1)
      return o
    }
    for (let i = 0; i < 3_000; i++) {
      const v = value(0)
      expect(canonicalJson(v)).toBe(canonicalJsonByReplacer(v))
    }
  })

  it("jsonString is JSON.stringify of any string (escapes, controls, lone and paired surrogates, U+2028)", () => {
    const fixed = [
      "",
      "plain words",
      "q\"",
      "back\\slash",
      "\u0000\u001f\u007f",
      "tab\tnew\nline",
      "é✓",
      "🚀",
      "\ud800",
      "x\udfffy",
      "\u2028\u2029"
    ]
    for (const s of fixed) expect(jsonString(s)).toBe(JSON.stringify(s))
    // Random strings of code units from every range that matters.
    let seed = 5
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296
    const units = [
      0,
      9,
      10,
      31,
      32,
      34,
      47,
      92,
      127,
      233,
      0x2028,
      0xd7ff,
      0xd800,
      0xdbff,
      0xdc00,
      0xdfff,
      0xe000,
      0xffff
    ]
    for (let i = 0; i < 5_000; i++) {
      const s = String.fromCharCode(
        ...Array.from(
          { length: Math.floor(random() * 6) },
          () => random() < 0.7 ? 97 + Math.floor(random() * 26) : units[Math.floor(random() * units.length)]!
        )
      )
      expect(jsonString(s)).toBe(JSON.stringify(s))
    }
  })

  it("a fixed task keeps its key (journals and caches of earlier versions stay valid)", () => {
    expect(judgmentKey(base)).toBe(sha256(canonicalJsonByReplacer(base)).slice(0, 32))
    expect(judgmentKey(base)).toBe("95acba5697f3e030aade5426bb190b02")
  })

  it("stringRecordJson is exactly canonicalJson of a record of strings, and declines anything else", () => {
    const records: ReadonlyArray<Record<string, unknown>> = [
      {},
      { question: "q", answer: "a", passages: "[1] one\n\n[2] two", history: "(no previous conversation)" },
      { "b": "quote \" backslash \\ newline \n", "a": "é✓ 🚀", "Z": "", "a b": "\u2028" },
      { x: "1", skipped: undefined },
      // Keys in UTF-16 code-unit order, whatever the locale: astral (surrogates), fullwidth, accented.
      { "z": "1", "é": "2", "🚀": "3", "ｚ": "4", "A": "5", "\uffff": "6", "aa": "7", "a": "8" }
    ]
    for (const r of records) expect(stringRecordJson(r)).toBe(canonicalJsonByReplacer(r))
    expect(stringRecordJson({ n: 1 })).toBeUndefined()
    expect(stringRecordJson({ nested: { a: "b" } })).toBeUndefined()
  })

  it("a fixed task's content hash is pinned too", () => {
    const rubric = { id: "rag-answers/clarity", hash: "fedcba9876543210" } as Parameters<typeof taskKey>[1]["rubric"]
    const task = {
      pipeline: "rag-answers",
      caseId: "7",
      iteration: 2,
      rubric,
      target: "answer",
      vars: { question: "Why?", answer: "Because.", passages: "[1] p" }
    }
    const judge = { provider: "openai", model: "gpt-4o-mini", params: { seed: 7 } }
    const content = sha256(canonicalJson(task.vars)).slice(0, 16)
    expect(taskKey(judge, task)).toBe(
      judgmentKey({
        ...judge,
        pipeline: "rag-answers",
        caseId: "7",
        content,
        iteration: 2,
        criterion: rubric.id,
        target: "answer",
        promptHash: rubric.hash
      })
    )
    expect(taskKey(judge, task)).toBe("39a2ef038e6082c3d1a07868f9212cac")
  })

  it("a task's pool (the heuristic judge's statistics) is not part of its key", () => {
    const rubric = { id: "search-relevance/checklist", hash: "fedcba9876543210" } as Parameters<
      typeof taskKey
    >[1]["rubric"]
    const judge = { provider: "openai", model: "gpt-4o-mini", params: {} }
    const task = {
      pipeline: "search-relevance",
      caseId: "q1",
      iteration: 1,
      rubric,
      target: "hit:a",
      vars: { query: "capital of france", passage: "Paris" }
    }
    const pooled: JudgeTask = { ...task, ordinal: 0, vars: { ...task.vars }, pool: ["Paris", "Lyon", "Bananas"] }
    expect(taskKey(judge, pooled)).toBe(taskKey(judge, task))
    const other: JudgeTask = { ...pooled, pool: ["Paris"] }
    expect(taskKey(judge, other)).toBe(taskKey(judge, task))
  })

  it("a list's keys are each item's judgmentKey, with the list's content hash (all items and vars)", () => {
    const rubric = { id: "answer-correctness/check", hash: "0011223344556677" } as Parameters<typeof listKeys>[2]
    const spec = {
      rubric: rubric.id,
      vars: { question: "Why?", text: "Because \"so\"." },
      items: [{ target: "reference/answer:1", vars: { claim: "é ✓" } }, {
        target: "context:2/answer:1",
        vars: { claim: "b" }
      }]
    }
    for (
      const judge of [{ provider: "heuristic", model: "lexical-v3", params: {} }, {
        provider: "openai",
        model: "m",
        params: { t: 0 },
        endpoint: "http://127.0.0.1:1/v1"
      }]
    ) {
      const content = sha256(canonicalJsonByReplacer({ vars: spec.vars, items: spec.items })).slice(0, 16)
      const expected = spec.items.map((item) =>
        sha256(
          canonicalJsonByReplacer({
            ...judge,
            pipeline: "answer-correctness",
            caseId: "c1",
            content,
            iteration: 1,
            criterion: rubric.id,
            target: item.target,
            promptHash: rubric.hash
          })
        ).slice(0, 32)
      )
      expect(listKeys("answer-correctness", judge, rubric, { id: "c1" }, 1, spec)).toEqual(expected)
      // What a claim check is, typed on its items (`ClaimRef`), restates the target: the keys are the same.
      const typed = {
        ...spec,
        items: [
          { ...spec.items[0]!, claim: { side: "answer" as const, index: 1, against: "reference" as const } },
          { ...spec.items[1]!, claim: { side: "answer" as const, index: 1, against: { context: 2 } } }
        ]
      }
      expect(listKeys("answer-correctness", judge, rubric, { id: "c1" }, 1, typed)).toEqual(expected)
    }
  })

  it("listJson is exactly canonicalJson({ vars, items }) of a list, and declines what it does not write", () => {
    let seed = 11
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296
    const texts = ["", "a", "q\"", "é ✓ 🚀", "line\nbreak", "\u2028", "back\\slash", "\u0001", "lone \ud83d"]
    const keys = ["claim", "question", "text", "source", "a b", "Z", "é"]
    const record = () => {
      const r: Record<string, string> = {}
      for (let i = Math.floor(random() * 4); i > 0; i--) {
        r[keys[Math.floor(random() * keys.length)]!] = texts[Math.floor(random() * texts.length)]!
      }
      return r
    }
    for (let i = 0; i < 2_000; i++) {
      const spec = {
        rubric: "r",
        vars: record(),
        items: Array.from({ length: Math.floor(random() * 5) }, (_, k) => ({ target: `t:${k}`, vars: record() }))
      }
      expect(listJson(spec)).toBe(canonicalJsonByReplacer({ vars: spec.vars, items: spec.items }))
    }
    // Index-like keys (JSON orders them first), a number, an extra field: left to canonicalJson.
    expect(listJson({ rubric: "r", vars: { "1": "x" }, items: [] })).toBeUndefined()
    expect(listJson({ rubric: "r", vars: { n: 1 } as unknown as Record<string, string>, items: [] })).toBeUndefined()
    const extra = { target: "t", vars: {}, weight: "2" }
    expect(listJson({ rubric: "r", vars: {}, items: [extra] })).toBeUndefined()
  })
})
