/**
 * `rag-eval judge-bench` as a user runs it (the CLI in-process, `runCli`):
 * - the heuristic judge end to end on a small sample of the shipped sets, the relevance set skipped
 *   visibly without its data, the heuristic's dev-set caveat printed;
 * - an LLM judge (the fake OpenAI server) with scripted verdicts on sets written here (`--bench-dir`),
 *   whose agreement is computed by hand;
 * - stopped mid-way (the server starts refusing the key) and run again: no call is paid twice;
 * - bad flags exit 2.
 */
import { Either, Schema } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { JudgeBenchResult } from "../../src/judgebench/Result.js"
import { pearson } from "../../src/stats/RankCorrelation.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { tempDir } from "../support/RunPipeline.js"

const decode = (stdout: string) => {
  const r = Schema.decodeUnknownEither(JudgeBenchResult)(JSON.parse(stdout))
  if (Either.isLeft(r)) throw new Error(String(r.left))
  return r.right
}

describe("judge-bench with the heuristic judge", () => {
  it("a stratified sample of the shipped sets: figures with CIs beside published ones; relevance skipped without its data; the dev-set caveat", async () => {
    const out = tempDir("judge-bench-")
    const noData = tempDir("judge-bench-nodata-")
    const args = ["judge-bench", "--sample", "12", "--resamples", "200", "--data", noData, "--out", out]
    const r = await runCli([...args, "--format", "json"])
    expect(r.code).toBe(0)
    const result = decode(r.stdout)
    expect(result.judge.provider).toBe("heuristic")
    expect(result.caveat).toMatch(/chosen on these very sets/)
    const [rag, eqa, rel] = result.sets
    expect(rag).toMatchObject({ name: "ragchecker", status: "measured", items: 12, of: 140 })
    expect(rag!.figures.map((f) => f.name)).toEqual([
      "claim precision ~ correctness",
      "claim recall ~ completeness",
      "F1 ~ overall"
    ])
    for (const f of rag!.figures) {
      expect(f.value).toBeGreaterThanOrEqual(-1)
      expect(f.value).toBeLessThanOrEqual(1)
      expect(f.ci!.lower).toBeLessThanOrEqual(f.value!)
      expect(f.units).toBe(12)
      expect(f.published.some((p) => p.same)).toBe(true)
    }
    expect(eqa).toMatchObject({ name: "expertqa", status: "measured", items: 12, of: 677 })
    expect(eqa!.figures[0]).toMatchObject({ name: "balanced accuracy", units: 12 })
    expect(eqa!.figures[0]!.published.map((p) => p.judge)).toContain("GPT-4o")
    expect(rel).toMatchObject({ name: "relevance", status: "skipped" })
    expect(rel!.reason).toMatch(/non-commercial research only/)
    // The same command again: the same sample, the same runs, found and reused.
    const again = await runCli([...args])
    expect(again.code).toBe(0)
    expect(again.stdout).toContain("> **Not a result**")
    expect(again.stdout).toContain(`${rag!.run!.dir}`)
    expect(again.stdout).toMatch(/\| claim precision ~ correctness \| -?\d\.\d{3} \| \[/)
    expect(again.stdout).toContain("**Skipped**: its passages are MS MARCO text")
  })
})

// ---------------------------------------------------------------------------------------------
// An LLM judge with scripted verdicts, on sets written here

/**
 * The fake judge: one claim per text (the text itself); a claim is entailed when it says RIGHT or
 * the text it is checked against says EVERYTHING, else neutral.
 */
const block = (content: string, name: string) =>
  new RegExp(`<data name="${name}">\\n([\\s\\S]*?)\\n</data>`).exec(content)?.[1] ?? ""

const scripted = (request: FakeOpenAi.RecordedRequest): string => {
  const user = String(request.body.messages?.find((m) => m.role === "user")?.content ?? "")
  const answer = JSON.parse(FakeOpenAi.defaultAnswer(request)) as {
    claims?: Array<string>
    grades?: Array<Record<string, unknown>>
  }
  if (answer.claims !== undefined) return JSON.stringify({ claims: [block(user, "text").trim()] })
  if (answer.grades !== undefined) {
    const text = block(user, "text")
    const claims = [...user.matchAll(/<data name="claim" claim="(\d+)">\n([\s\S]*?)\n<\/data>/g)]
    return JSON.stringify({
      grades: answer.grades.map((g) => {
        const claim = claims.find((c) => Number(c[1]) === g["claim"])?.[2] ?? ""
        return { ...g, score: claim.includes("RIGHT") || text.includes("EVERYTHING") ? 2 : 1 }
      })
    })
  }
  return FakeOpenAi.defaultAnswer(request)
}

/**
 * RAGChecker-like pairs (reference "The reference says one thing."): precision = RIGHT in the answer,
 * recall = EVERYTHING in the answer, F1 from both.
 *   p1: "RIGHT EVERYTHING." (1, 1, 1) vs "wrong." (0, 0, 0)              deltas −1, −1, −1
 *   p2: "wrong." (0, 0, 0) vs "RIGHT." (1, 0, 0)                         deltas +1,  0,  0
 *   p3: "EVERYTHING." (0, 1, 0) vs "RIGHT EVERYTHING." (1, 1, 1)         deltas +1,  0, +1
 *   p4: "RIGHT." (1, 0, 0) vs "EVERYTHING." (0, 1, 0)                    deltas −1, +1,  0
 */
const PAIRS = [["RIGHT EVERYTHING.", "wrong."], ["wrong.", "RIGHT."], ["EVERYTHING.", "RIGHT EVERYTHING."], [
  "RIGHT.",
  "EVERYTHING."
]] as const
const PREFS = {
  correctness: [[-2, -1], [1, 2], [1, 1], [-1, 0]],
  completeness: [[-2, -2], [0, 1], [0, 0], [1, 2]],
  overall: [[-2, -2], [0, 0], [2, 1], [0, 1]]
} as const
const DELTAS = { precision: [-1, 1, 1, -1], recall: [-1, 0, 0, 1], f1: [-1, 0, 1, 0] } as const

/** ExpertQA-like claims: labels 1 1 1 0 0 0; the judge supports those saying RIGHT: 1 1 0 0 0 1. */
const CLAIMS = [
  "Alpha is RIGHT.",
  "Beta is RIGHT.",
  "Gamma is plain.",
  "Delta is plain.",
  "Epsilon is plain.",
  "Zeta is RIGHT."
]
const COMPLETE = [1, 1, 1, 0, 0, 0]

const writeSets = () => {
  const dir = tempDir("judge-bench-sets-")
  const jsonl = (rows: ReadonlyArray<unknown>) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n"
  fs.mkdirSync(Path.join(dir, "ragchecker"))
  fs.mkdirSync(Path.join(dir, "expertqa"))
  fs.writeFileSync(
    Path.join(dir, "ragchecker", "cases.jsonl"),
    jsonl(PAIRS.flatMap(([a, b], i) =>
      [a, b].map((answer, k) => ({
        id: `p${i + 1}-${k + 1}`,
        question: `Question ${i + 1}?`,
        answer,
        reference: "The reference says one thing.",
        domain: i < 2 ? "d1" : "d2"
      }))
    ))
  )
  fs.writeFileSync(
    Path.join(dir, "ragchecker", "preferences.jsonl"),
    jsonl(
      PAIRS.flatMap((_, i) =>
        (["correctness", "completeness", "overall"] as const).flatMap((aspect) =>
          PREFS[aspect][i]!.map((preference, a) => ({
            id_a: `p${i + 1}-1`,
            id_b: `p${i + 1}-2`,
            aspect,
            preference,
            annotator: `annotator-${a + 1}`
          }))
        )
      )
    )
  )
  fs.writeFileSync(
    Path.join(dir, "expertqa", "cases.jsonl"),
    jsonl(CLAIMS.map((answer, i) => ({
      id: `c${i + 1}`,
      question: `Claim question ${i + 1}?`,
      answer,
      contexts: [`[1] https://example.org/${i}\n\nA passage about the claim.`]
    })))
  )
  fs.writeFileSync(
    Path.join(dir, "expertqa", "labels.jsonl"),
    jsonl(COMPLETE.map((value, i) => ({ id: `c${i + 1}`, metric: "faithfulness", value, annotator: "expert" })))
  )
  return dir
}

/** Judge calls the sets need: 8 answers × (2 extractions + 2 checks) and 6 claims × (1 extraction + 1 check). */
const CALLS = 8 * 4 + 6 * 2

describe("judge-bench with an LLM judge (the fake OpenAI server, scripted verdicts)", () => {
  let server: FakeOpenAi.FakeOpenAi
  beforeAll(async () => {
    server = await FakeOpenAi.start({ answer: scripted })
  })
  afterAll(() => server.close())

  const judge = () => [
    "--provider",
    "openai-compatible",
    "--base-url",
    server.url,
    "--model",
    "fake-judge",
    "--api-key",
    "sk-test",
    "--sets",
    "ragchecker,expertqa",
    "--resamples",
    "300",
    "--quiet"
  ]

  it("its agreement is the one computed by hand; stopped mid-way and run again, no call is paid twice", async () => {
    const sets = writeSets()
    const out = tempDir("judge-bench-llm-")
    const args = ["judge-bench", "--bench-dir", sets, "--out", out, ...judge(), "--format", "json"]

    // The server refuses the key after 10 judge calls: the run stops (exit 2), what was judged is journaled.
    let answered = 0
    server.setBehaviour({
      replyFor: (r) => (FakeOpenAi.isPreflight(r.body) ? undefined : ++answered > 10 ? "unauthorized" : undefined)
    })
    const stopped = await runCli(args)
    expect(stopped.code).toBe(2)
    expect(stopped.stderr).toMatch(/error: .*(401|key|unauthori[sz]ed)/i)
    const paidFirst = server.paidJudgeCalls
    expect(paidFirst).toBe(10)

    server.setBehaviour({ replyFor: undefined })
    server.reset()
    const r = await runCli(args)
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    // Every judgment paid exactly once over both invocations.
    expect(paidFirst + server.paidJudgeCalls).toBe(CALLS)

    const result = decode(r.stdout)
    expect(result.caveat).toBeNull()
    expect(result.judge).toMatchObject({ provider: "openai-compatible", model: "fake-judge" })
    const [rag, eqa] = result.sets
    const repeated = (deltas: ReadonlyArray<number>) => deltas.flatMap((d) => [d, d])
    const human = (aspect: keyof typeof PREFS) => PREFS[aspect].flat()
    expect(rag!.run).toMatchObject({ cases: 8, failed: 0 })
    expect(rag!.figures.map((f) => f.value)).toEqual([
      pearson(repeated(DELTAS.precision), human("correctness")).value,
      pearson(repeated(DELTAS.recall), human("completeness")).value,
      pearson(repeated(DELTAS.f1), human("overall")).value
    ].map((v) => expect.closeTo(v!, 12)))
    // precision deltas −1 1 1 −1 repeated, against −2 −1 1 2 1 1 −1 0: r = 9/√(8 · 12.875)
    expect(rag!.figures[0]!.value).toBeCloseTo(9 / Math.sqrt(8 * 12.875), 12)

    // ExpertQA: TPR 2/3, TNR 2/3 → balanced accuracy 2/3; p_o 4/6, p_e 1/2 → κ 1/3.
    expect(eqa!.run).toMatchObject({ cases: 6, failed: 0 })
    expect(eqa!.figures[0]).toMatchObject({ name: "balanced accuracy", units: 6 })
    expect(eqa!.figures[0]!.value).toBeCloseTo(2 / 3, 12)
    expect(eqa!.figures[1]!.value).toBeCloseTo(1 / 3, 12)
    expect(eqa!.figures[2]!.value).toBeCloseTo(pearson([1, 1, 0, 0, 0, 1], COMPLETE).value!, 12)

    // Once more: everything is in the journals, nothing is asked.
    server.reset()
    const third = await runCli(args)
    expect(third.code).toBe(0)
    expect(server.paidJudgeCalls).toBe(0)
    expect(decode(third.stdout).sets[0]!.figures[0]!.value).toBeCloseTo(9 / Math.sqrt(8 * 12.875), 12)
  })

  it("a judgment that fails leaves its claim out, counted, and the bench goes on", async () => {
    // Every reply about "Gamma" is unusable: its extraction fails after the repairs, so it has no faithfulness.
    server.setBehaviour({
      replyFor: (r) => (JSON.stringify(r.body.messages ?? []).includes("Gamma is plain.") ? "malformed" : undefined)
    })
    const flags = judge()
    flags.splice(flags.indexOf("--sets"), 2, "--sets", "expertqa")
    const r = await runCli([
      "judge-bench",
      "--bench-dir",
      writeSets(),
      "--out",
      tempDir(),
      ...flags,
      "--format",
      "json"
    ])
    server.setBehaviour({ replyFor: undefined })
    expect(r.code).toBe(0)
    const eqa = decode(r.stdout).sets[0]!
    expect(eqa.run!.failed).toBeGreaterThan(0)
    expect(eqa.notes.join("\n")).toMatch(/judgment\(s\) failed[\s\S]*1 claim\(s\) left out/)
    // Without Gamma: labels 1 1 0 0 0, the judge 1 1 0 0 1 → TPR 1, TNR 2/3.
    expect(eqa.figures[0]!.units).toBe(5)
    expect(eqa.figures[0]!.value).toBeCloseTo((1 + 2 / 3) / 2, 12)
  })

  it("--dry-run prints each set's calls and cost and calls nothing", async () => {
    server.reset()
    const r = await runCli(["judge-bench", "--bench-dir", writeSets(), "--out", tempDir(), ...judge(), "--dry-run"])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("Dry run: what each set's run would call and cost; nothing was called.")
    expect(r.stdout).toMatch(/## ragchecker[\s\S]*judge calls: +\d+[\s\S]*## expertqa[\s\S]*judge calls: +\d+/)
    expect(server.calls).toBe(0)
  })
})

describe("judge-bench: bad flags exit 2 with the problem", () => {
  it("unknown set, a sample below 1, an unknown format", async () => {
    const sets = await runCli(["judge-bench", "--sets", "ragchecker,nope"])
    expect(sets.code).toBe(2)
    expect(sets.stderr).toContain(
      "--sets ragchecker,nope: unknown set nope; the sets are ragchecker, expertqa, relevance"
    )
    const sample = await runCli(["judge-bench", "--sample", "0"])
    expect(sample.code).toBe(2)
    expect(sample.stderr).toContain("--sample must be at least 1 (got 0)")
    const format = await runCli(["judge-bench", "--format", "html"])
    expect(format.code).toBe(2)
  })
})
