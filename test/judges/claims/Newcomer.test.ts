/**
 * The offline judge never misleads: the cases a new user tried (issue #32) and more in their spirit,
 * run through answer-correctness (and rag-answers) with the heuristic judge as a user runs them.
 * A case a person would call wrong never scores F1 (or a composite) ≥ 0.9; text in another language
 * is not judged (null, with the reason), never 1.00 or 0; an abstention is counted as one, not as a
 * hallucination; citation markers and list numbers are not figures; figures agree however written.
 */
import { it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect } from "vitest"
import answerCorrectness from "../../../src/builtin/answer-correctness.js"
import { type AnyPipeline, instantiate, type Pipeline } from "../../../src/engine/Pipeline.js"
import * as HeuristicJudge from "../../../src/judges/HeuristicJudge.js"
import { type CorrectnessRecord, parsePassIf, passVerdict } from "../../../src/kinds/correctness/CorrectnessScore.js"
import { runWith, tempDir } from "../../support/RunPipeline.js"

const pipeline = instantiate(answerCorrectness, {}) as unknown as Pipeline<unknown, unknown>

interface Row {
  readonly id: string
  readonly question: string
  readonly answer: string
  readonly reference?: string
  readonly contexts?: ReadonlyArray<string>
}

const rows: ReadonlyArray<Row> = [
  // 1. German, wrong figure ("zwölf" against "sechs"): not judged, never F1 1.00.
  {
    id: "de-wrong",
    question: "Wie lange dauert die Probezeit?",
    answer: "Die Probezeit dauert zwölf Monate für alle neuen Mitarbeiter.",
    reference: "Die Probezeit beträgt sechs Monate für alle neuen Mitarbeiter."
  },
  // 2. A correct German answer against English passages: not judged, never F1 0 or hallucination 1.00.
  {
    id: "de-right",
    question: "How long is the probation period?",
    answer: "Die Probezeit beträgt sechs Monate für alle neuen Mitarbeiter.",
    reference: "The probation period is six months for every new employee.",
    contexts: ["New employees serve a probation period of six months."]
  },
  // 3. The opposite policy in shared words: not supported.
  {
    id: "office",
    question: "Can employees work remotely?",
    answer: "All employees must work from the office every day.",
    reference: "Employees may work remotely up to three days per week."
  },
  // 4. "5 terabytes" against "5 TB": the same figure.
  {
    id: "terabytes",
    question: "What is the storage limit?",
    answer: "The storage limit is 5 terabytes.",
    reference: "Each account has a storage limit of 5 TB."
  },
  // 5. "I don't know.": abstained, no hallucination.
  {
    id: "dont-know",
    question: "When does the office open?",
    answer: "I don't know.",
    reference: "The office opens at 8 am on weekdays.",
    contexts: ["The office opens at 8 am on weekdays and is closed on Sundays."]
  },
  // 6. "Based on passage 3": 3 is a citation, not a figure.
  {
    id: "passage-3",
    question: "How long is the refund window?",
    answer: "Based on passage 3, refunds are accepted within 30 days of purchase.",
    reference: "Refunds are accepted within 30 days of purchase."
  },
  // 7. "(Source 2)" and "according to document 4" are citations too.
  {
    id: "source-2",
    question: "How long is the refund window?",
    answer: "According to document 4, refunds are accepted within 30 days of purchase (Source 2).",
    reference: "Refunds are accepted within 30 days of purchase."
  },
  // 8. Number words the other way: "2 years" against "two years".
  {
    id: "two-years",
    question: "How long is the warranty?",
    answer: "The warranty covers the laptop for 2 years.",
    reference: "The warranty covers the laptop for two years."
  },
  // 9. A wrong figure in words: "three years" against "2 years" conflicts.
  {
    id: "three-years",
    question: "How long is the warranty?",
    answer: "The warranty covers the laptop for three years.",
    reference: "The warranty covers the laptop for 2 years."
  },
  // 10. Units: "12 kilometres" against "12 km", both ways.
  {
    id: "kilometres",
    question: "How long is the trail?",
    answer: "The coastal trail is 12 kilometres long.",
    reference: "The coastal trail is 12 km long."
  },
  // 11. "%" against "percent".
  {
    id: "percent",
    question: "What is the interest rate?",
    answer: "The savings account pays 5 percent interest.",
    reference: "The savings account pays 5% interest."
  },
  // 12. Numbered steps: the list numbers are not figures of the claims.
  {
    id: "steps",
    question: "How do I turn on two-factor authentication?",
    answer: "1. Open the security settings page.\n2. Select two-factor authentication and confirm with your phone.",
    reference: "Open the security settings page, then select two-factor authentication and confirm it with your phone."
  },
  // 13. "The passages do not say…": abstained.
  {
    id: "passages-silent",
    question: "Who founded the company?",
    answer: "The passages do not say who founded the company.",
    contexts: ["The company makes bicycles in Utrecht and sells them across Europe."]
  },
  // 14. "Unable to answer based on…": abstained.
  {
    id: "unable",
    question: "What is the CEO's salary?",
    answer: "I am unable to answer based on the provided context.",
    reference: "The CEO's salary is not public.",
    contexts: ["The annual report lists revenue and headcount."]
  },
  // 15. A wrong figure in English: contradicted, F1 0.
  {
    id: "twelve-months",
    question: "How long is the probation period?",
    answer: "The probation period lasts twelve months for new employees.",
    reference: "The probation period lasts six months for new employees."
  },
  // 16. The opposite polarity: a negation conflict.
  {
    id: "pets",
    question: "Are pets allowed in the office?",
    answer: "Pets are not allowed in the office on Fridays.",
    reference: "Pets are allowed in the office on Fridays."
  },
  // 17. One invented step among copied ones: counted.
  {
    id: "invented-step",
    question: "How do I reset the router?",
    answer: [
      "Unplug the router from the wall socket.",
      "Wait thirty seconds before plugging it back in.",
      "Hold the reset button for ten seconds.",
      "Call the manufacturer's premium hotline for a firmware licence."
    ].join(" "),
    contexts: [
      "Unplug the router from the wall socket. Wait thirty seconds before plugging it back in. Hold the reset button for ten seconds."
    ]
  },
  // 18. Evidence is quoted as written ("three days"), whatever the figures were read as.
  {
    id: "verbatim",
    question: "Can employees work remotely?",
    answer: "Employees may work remotely up to 3 days per week.",
    reference: "Employees may work remotely up to three days per week."
  },
  // 19. The sample's q7: every word is in the reference, but no sentence names Sydney with Australia's capital.
  {
    id: "capital-sydney",
    question: "What is the capital of Australia?",
    answer: "The capital of Australia is Sydney, its largest city.",
    reference: "Canberra is the capital of Australia. Sydney is its largest city.",
    contexts: ["Canberra was chosen as the capital of Australia in 1908 as a compromise between Sydney and Melbourne."]
  },
  // 20. Its names in one sentence of the reference: found.
  {
    id: "sydney-largest",
    question: "What is the largest city in Australia?",
    answer: "Sydney is Australia's largest city.",
    reference: "Canberra is the capital of Australia. Sydney is its largest city."
  }
]

/** The cases a person would call wrong: none may score 0.9 or more. */
const WRONG = ["de-wrong", "office", "dont-know", "three-years", "twelve-months", "pets", "unable", "capital-sydney"]

const runCases = Effect.gen(function*() {
  const dir = tempDir()
  const input = Path.join(dir, "cases.jsonl")
  fs.writeFileSync(input, rows.map((r) => JSON.stringify(r)).join("\n") + "\n")
  const result = yield* runWith(pipeline, HeuristicJudge.layer, { input, outRoot: Path.join(dir, "out") })
  expect(result.judgments.failed).toBe(0)
  const records = fs.readFileSync(Path.join(result.info.runDir, "records-iteration-1.jsonl"), "utf8").trim().split(
    "\n"
  ).map((l) => JSON.parse(l) as CorrectnessRecord)
  const report = fs.readFileSync(Path.join(result.info.runDir, "report.md"), "utf8")
  return { byId: new Map(records.map((r) => [r.caseId, r])), report }
})

describe("the offline judge never misleads (the newcomer's cases)", () => {
  it.effect("every case, run as a user runs it", () =>
    Effect.gen(function*() {
      const { byId, report } = yield* runCases
      const get = (id: string) => byId.get(id)!

      // No case a person would call wrong scores 0.9 or more; the German ones are not judged at all.
      for (const id of WRONG) {
        const r = get(id)
        expect(r.metrics.f1 ?? 0, id).toBeLessThan(0.9)
        expect(r.score ?? 0, id).toBeLessThan(0.9)
        if (r.verdict !== undefined) expect(r.verdict.pass, id).toBe(false)
      }

      // 1–2. Not English: null metrics with the reason, counted — never 1.00 or 0, and not a failure.
      for (const id of ["de-wrong", "de-right"]) {
        const r = get(id)
        expect(r.claims.unread, id).toContain("the heuristic judge reads English only")
        expect(r.metrics).toMatchObject({ precision: null, recall: null, f1: null, hallucination: null })
        expect(r.verdict).toBeUndefined()
        expect(r.failed).toBe(0)
      }
      expect(report).toContain("**Not judged**: 2 case(s): the heuristic judge reads English only")

      // 3. The office case: the answer's claim is not supported by the remote-work policy ("every day"
      // is not "three days per week").
      expect(get("office").metrics.precision).toBe(0)
      const office = get("office").claims.answer
      expect(office.status === "ok" && office.claims[0]!.against?.finding).toBe("figure conflict")

      // 4. 5 terabytes = 5 TB, both ways.
      expect(get("terabytes").metrics).toMatchObject({ precision: 1, recall: 1, f1: 1 })

      // 5, 13, 14. Abstentions: abstained, no precision or hallucination; recall 0 where a reference has claims.
      for (const id of ["dont-know", "passages-silent", "unable"]) {
        expect(get(id).metrics.abstained, id).toBe(1)
        expect(get(id).metrics.hallucination, id).toBeNull()
        expect(get(id).metrics.precision, id).toBeNull()
        expect(get(id).metrics.unsupportedClaims, id).toBe(0)
      }
      expect(get("dont-know").metrics.recall).toBe(0)
      expect(report).toContain("**Abstained**: 3 answer(s)")

      // 6–7. Citation markers are neither claims nor figures.
      for (const id of ["passage-3", "source-2"]) {
        const r = get(id)
        expect(r.metrics.precision, id).toBe(1)
        const claims = r.claims.answer.status === "ok" ? r.claims.answer.claims : []
        expect(claims.every((c) => c.against?.finding === "words and figures found"), id).toBe(true)
      }

      // 8–11. Figures agree however written; a different figure in words conflicts.
      expect(get("two-years").metrics).toMatchObject({ precision: 1, recall: 1 })
      expect(get("kilometres").metrics).toMatchObject({ precision: 1, recall: 1 })
      expect(get("percent").metrics).toMatchObject({ precision: 1, recall: 1 })
      const threeYears = get("three-years").claims.answer
      expect(threeYears.status === "ok" && threeYears.claims[0]!.against?.finding).toBe("figure conflict")

      // 12. List numbers are not figures: no claim of the steps is held back by a "figure".
      const steps = get("steps").claims.answer
      expect(steps.status === "ok" && steps.claims.map((c) => c.against?.finding)).not.toContain("figure not found")
      expect(get("steps").metrics.precision).toBe(1)

      // 15–16. A wrong figure and the opposite polarity are named as conflicts, F1 0.
      const months = get("twelve-months").claims.answer
      expect(months.status === "ok" && months.claims[0]!.against).toMatchObject({
        verdict: "contradicted",
        finding: "figure conflict"
      })
      const pets = get("pets").claims.answer
      expect(pets.status === "ok" && pets.claims[0]!.against).toMatchObject({
        verdict: "contradicted",
        finding: "negation conflict"
      })
      expect(get("pets").metrics.f1).toBe(0)

      // 17. One invented step among copied ones: the count shows it beside the ratio.
      expect(get("invented-step").metrics.unsupportedClaims).toBe(1)
      expect(get("invented-step").metrics.faithfulness).toBeCloseTo(3 / 4, 12)
      // Under the default thresholds it passes (faithfulness 0.75 ≥ 0.5); a team that wants every claim
      // supported says so: unsupportedClaims<=0.
      expect(get("invented-step").verdict?.pass).toBe(true)
      const strict = parsePassIf("unsupportedClaims<=0")
      expect("conditions" in strict && passVerdict(get("invented-step").metrics, strict.conditions, false)).toEqual({
        pass: false,
        why: "unsupportedClaims 1 not <= 0"
      })

      // 18. Evidence is the reference's sentence as written.
      const verbatim = get("verbatim").claims.answer
      expect(verbatim.status === "ok" && verbatim.claims[0]!.against?.evidence).toBe(
        "Employees may work remotely up to three days per week."
      )
      expect(get("verbatim").metrics.precision).toBe(1)

      // 19–20. A claim naming two things needs one sentence naming both: "Sydney" and "Australia" are
      // in different sentences of the reference, so q7's claim is not found (and F1 < 0.9 above); the
      // claim whose names one sentence holds is found.
      const capital = get("capital-sydney").claims.answer
      expect(capital.status === "ok" && capital.claims.map((c) => c.against)).toEqual([
        expect.objectContaining({ verdict: "neutral", finding: "name not found" })
      ])
      expect(get("capital-sydney").metrics.precision).toBe(0)
      const largest = get("sydney-largest").claims.answer
      expect(largest.status === "ok" && largest.claims.map((c) => c.against)).toEqual([
        expect.objectContaining({ verdict: "entailed", finding: "words and figures found" })
      ])
      expect(get("sydney-largest").metrics.precision).toBe(1)
    }))

  it.effect("rag-answers: with a reference, a contradicted answer cannot outrank a correct one, and never scores 1.00", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const input = Path.join(dir, "rag.csv")
      const fragment = "1. Employees may work remotely up to three days per week."
      fs.writeFileSync(
        input,
        [
          "Current User Question,Conversation History,Fragment Texts,Assistant Answer,Reference Answer",
          `Can employees work remotely?,,"${fragment}","All employees must work from the office every day.","Employees may work remotely up to three days per week."`,
          `Can employees work remotely?,,"${fragment}","Employees may work remotely up to three days per week.","Employees may work remotely up to three days per week."`
        ].join("\n") + "\n"
      )
      const ragAnswers = instantiate(
        (yield* Effect.promise(() => import("../../../src/builtin/rag-answers.js"))).default as AnyPipeline,
        {}
      ) as Pipeline<unknown, unknown>
      const result = yield* runWith(ragAnswers, HeuristicJudge.layer, {
        input,
        outRoot: Path.join(dir, "out"),
        columns: { reference: "Reference Answer" }
      })
      const [wrong, right] = fs.readFileSync(Path.join(result.info.runDir, "records-iteration-1.jsonl"), "utf8").trim()
        .split("\n").map((l) => JSON.parse(l) as { composite: number | null; claims?: { f1: number | null } })
      expect(wrong!.claims?.f1).toBe(0)
      expect(wrong!.composite!).toBeLessThan(0.9)
      expect(right!.composite!).toBeGreaterThan(wrong!.composite!)
    }))
})
