/**
 * The choice of chunks (spread over documents, seeded, near duplicates skipped, pairs related and not
 * adjacent), the mix (parsing, counts that add up), the offline generator's questions, and the rules
 * decided without a judge (a question copying its passage).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { clozeQuestion, factOf, writeQuestion } from "../../src/judges/synthesize/Extractive.js"
import { buildCorpus } from "../../src/synthesize/Corpus.js"
import { countsFor, DEFAULT_MIX, loadPersonas, parseMix, QUESTION_TYPES } from "../../src/synthesize/Mix.js"
import { Chooser, chunkOrder } from "../../src/synthesize/Selection.js"
import { copies } from "../../src/synthesize/SynthesisPipeline.js"
import { tempDir } from "../support/RunPipeline.js"

const none = Object.fromEntries(QUESTION_TYPES.map((t) => [t, 0])) as Record<(typeof QUESTION_TYPES)[number], number>

/** `documents` markdown files of `sections` sections, each a distinct paragraph naming its document and section. */
const corpus = (documents: number, sections: number, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const dir = tempDir()
    const docs = Path.join(dir, "docs")
    fs.mkdirSync(docs)
    const topics = ["glacier", "harbour", "reactor", "vineyard", "railway", "archive", "telescope", "orchestra"]
    for (let d = 0; d < documents; d++) {
      const body = Array.from({ length: sections }, (_, s) =>
        `## Part ${s}\n\nThe ${topics[(d + s) % topics.length]} report ${d}-${s} counted ${
          100 + d * 10 + s
        } visitors in ${1990 + s} and named Kestrel${d}x${s} as its keeper, with notes on ${
          topics[s % topics.length]
        } upkeep.`).join("\n\n")
      fs.writeFileSync(Path.join(docs, `doc${d}.md`), `# Doc ${d}\n\n${body}\n`)
    }
    for (const [name, text] of Object.entries(extra)) {
      fs.writeFileSync(Path.join(docs, name), text)
    }
    return yield* buildCorpus([docs], Path.join(dir, "corpus.jsonl"), 60)
  })

describe("the choice of chunks", () => {
  it.effect("spread over the documents: the first round takes one chunk of every document; the same seed, the same order", () =>
    Effect.gen(function*() {
      const index = yield* corpus(6, 4)
      const order = chunkOrder(index, 1)
      const firstRound = [...order.slice(0, 6)].map((c) => index.documentOf[c])
      expect(new Set(firstRound).size).toBe(6)
      expect([...chunkOrder(index, 1)]).toEqual([...order])
      expect([...chunkOrder(index, 2)]).not.toEqual([...order])
    }))

  it.effect("a wave: the counts asked for, each chunk used once, pairs from different places, unanswerable with neighbours", () =>
    Effect.gen(function*() {
      const index = yield* corpus(6, 4)
      const chooser = new Chooser(index, chunkOrder(index, 1), ["analyst", "new hire"], 1)
      const wave = yield* chooser.next({ ...none, "single-hop": 4, "multi-hop": 2, unanswerable: 1 })
      expect(wave.filter((c) => c.type === "single-hop")).toHaveLength(4)
      expect(wave.filter((c) => c.type === "multi-hop")).toHaveLength(2)
      const used = wave.flatMap((c) => c.passages.map((p) => p.id))
      expect(new Set(used).size).toBe(used.length)
      for (const c of wave.filter((c) => c.type === "multi-hop")) {
        const [a, b] = c.passages
        const position = (id: string) => Number(/#(\d+)-/.exec(id)![1])
        expect(a!.document !== b!.document || Math.abs(position(a!.id) - position(b!.id)) > 1).toBe(true)
      }
      const unanswerable = wave.find((c) => c.type === "unanswerable")!
      expect(unanswerable.neighbours!.length).toBeGreaterThan(0)
      expect(new Set(wave.map((c) => c.persona))).toEqual(new Set(["analyst", "new hire"]))
      // The next wave uses none of these chunks again.
      const next = yield* chooser.next({ ...none, "single-hop": 3 })
      for (const c of next) for (const p of c.passages) expect(used).not.toContain(p.id)
    }))

  it.effect("boilerplate and a duplicated page footer are never chosen", () =>
    Effect.gen(function*() {
      const footer = "Copyright 2024 Kestrel Trust. All rights reserved. Licensed under the terms of our site policy."
      const index = yield* corpus(4, 2, {
        "a.md": `# A\n\n${footer}\n`,
        "b.md": `# B\n\nThe archive wing opened in 1911 and holds 4,000 maps drawn by Ada Byron and her staff.\n`
      })
      const chooser = new Chooser(index, chunkOrder(index, 3), ["x"], 3)
      const wave = yield* chooser.next({ ...none, "single-hop": 50 })
      expect(wave.some((c) => c.passages[0]!.text.includes("All rights reserved"))).toBe(false)
      expect(wave.length).toBe(
        index.chunks - Object.values(index.excluded).reduce((a, b) => a + b, 0) - chooser.nearDuplicates
      )
    }))
})

describe("the mix", () => {
  it("weights are normalised; counts add up to the size; unknown types and comparison offline are refused", () => {
    const mix = Effect.runSync(parseMix("single-hop=50, multi-hop=30,unanswerable=20", false))
    expect(mix["single-hop"]).toBeCloseTo(0.5)
    expect(mix.comparison).toBe(0)
    for (const size of [1, 7, 10, 99]) {
      const counts = countsFor(DEFAULT_MIX, size)
      expect(QUESTION_TYPES.reduce((s, t) => s + counts[t], 0)).toBe(size)
    }
    expect(countsFor(mix, 10)).toEqual({ ...none, "single-hop": 5, "multi-hop": 3, unanswerable: 2 })
    expect(Effect.runSync(Effect.flip(parseMix("trivia", false))).message).toMatch(/unknown question type "trivia"/)
    expect(Effect.runSync(Effect.flip(parseMix("comparison=1", true))).message).toMatch(/cannot write comparison/)
    expect(Effect.runSync(Effect.flip(parseMix("single-hop=0", false))).message).toMatch(/at least one type/)
  })
})

describe("the offline generator", () => {
  it("a sentence's fact becomes a question phrase: a year, a figure with its unit, a percentage, a name", () => {
    const ask = (s: string) => clozeQuestion(s, factOf(s)!)
    expect(ask("The bridge opened in 1937 after four years of work.")).toBe(
      "The bridge opened in which year after four years of work?"
    )
    expect(ask("Employees accrue 25 days of paid leave every year.")).toBe(
      "Employees accrue how many days of paid leave every year?"
    )
    expect(ask("Remote staff were 40% of the team last spring.")).toBe(
      "Remote staff were what percentage of the team last spring?"
    )
    expect(ask("The archive is kept by Ada Byron and her staff.")).toBe("The archive is kept by what and her staff?")
  })

  it("each type from passages, or why not; the reference and spans are the passage's own sentences", () => {
    const p1 = "The harbour opened in 1911 under Mayor Clara Voss. It handled 4,000 ships a year by 1930."
    const p2 = "The railway reached the harbour in 1921 and carried 300 tonnes a day."
    const single = writeQuestion("single-hop", [p1], [])
    expect("item" in single && single.item.spans[0]!.text).toBe("The harbour opened in 1911 under Mayor Clara Voss.")
    const multi = writeQuestion("multi-hop", [p1, p2], [])
    expect("item" in multi && multi.item.spans.map((s) => s.passage)).toEqual([1, 2])
    const conversation = writeQuestion("conversational", [p1], [])
    expect("item" in conversation && conversation.item.history.map((t) => t.role)).toEqual(["user", "assistant"])
    const unanswerable = writeQuestion("unanswerable", [p1], [p2])
    expect("item" in unanswerable && unanswerable.item.reference).toBe("The documents do not answer this question.")
    expect("item" in unanswerable && /1911|1921|1930/.test(unanswerable.item.question)).toBe(false)
    expect(writeQuestion("comparison", [p1, p2], [])).toEqual({
      problem: "the offline generator cannot write comparison questions"
    })
    expect(writeQuestion("single-hop", ["no facts here at all, only words and more words."], [])).toEqual({
      problem: "no sentence carrying a figure, a date or a name to ask about"
    })
    const steps = writeQuestion("procedure", [
      "Filing a claim:\n1. Photograph the receipt.\n2. Open the app.\n3. Submit it."
    ], [])
    expect("item" in steps && steps.item.nuggets.map((n) => n.text)).toEqual([
      "Photograph the receipt.",
      "Open the app.",
      "Submit it."
    ])
  })
})

describe("rules without a judge", () => {
  it("a question that is its passage's sentence, or holds its own answer, copies", () => {
    const item = (question: string, reference: string) => ({ question, reference, history: [], nuggets: [], spans: [] })
    const passage = "Employees accrue 25 days of leave. Leave expires in March."
    expect(copies(item("Employees accrue 25 days of leave.", "25 days"), [passage])).toMatch(/word for word/)
    expect(
      copies(item("Is it true that employees accrue 25 days of leave?", "employees accrue 25 days of leave"), [passage])
    )
      .toMatch(/contains its own reference/)
    expect(copies(item("How many days of leave do employees accrue?", "25 days of leave."), [passage])).toBe(undefined)
  })
})

describe("personas", () => {
  it.effect("a JSON list of texts or { name, description }, or a text file a persona a line; a bad entry is named", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const json = Path.join(dir, "p.json")
      fs.writeFileSync(json, JSON.stringify(["an auditor", { name: "New hire", description: "first week, no jargon" }]))
      expect(yield* loadPersonas(json)).toEqual(["an auditor", "New hire: first week, no jargon"])
      const text = Path.join(dir, "p.txt")
      fs.writeFileSync(text, "# who asks\na manager\n\nan engineer\n")
      expect(yield* loadPersonas(text)).toEqual(["a manager", "an engineer"])
      fs.writeFileSync(json, JSON.stringify(["ok", 3]))
      expect((yield* Effect.flip(loadPersonas(json))).message).toBe(
        `${json} (field "[1]"): expected a persona: text, or { "name", "description" }`
      )
    }))
})
