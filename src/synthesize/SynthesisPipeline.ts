/**
 * Synthesis as a pipeline of the engine, so every guarantee of a run holds for it (journaled,
 * cached, resumable after kill -9 without paying twice, rate-limited, `--dry-run`, `--batch`,
 * `--cluster`, `--max-cost`): its cases are the candidates of one wave (a line each of the wave's
 * file: the passages a question is written from), and its judge stage is chained:
 *
 * 1. **write** the item (`synthesize/<type>`: question, history, reference, nuggets, spans);
 * 2. **check** it: answerable from its passages (`synthesize/answerable`), needs the documents
 *    (`synthesize/closed-book`), and the reference's claims extracted (`answer-correctness/extract`);
 * 3. each claim of the reference checked against the passages (`answer-correctness/check`).
 *
 * An unanswerable item is checked only in step 2, against its seed and nearby passages, which must not
 * answer it. The score stage turns a candidate's judgments into a record: kept, or rejected with its
 * reasons. What is decided without a judge — a question copying a passage, a span not in its passage,
 * a near duplicate of another question (across the set: `Synthesize.ts`) — is decided here too.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { EvalCase } from "../domain/Case.js"
import { InputError } from "../domain/Errors.js"
import type { Judgment } from "../domain/Judgment.js"
import * as Metric from "../domain/Metric.js"
import type { AggregateStage, JudgeSpec, LoadStage, Pipeline, TaskSpec } from "../engine/Pipeline.js"
import { extractClaims } from "../judges/claims/Extract.js"
import { claimRef, claimTarget, extractionTarget } from "../judges/claims/Targets.js"
import { writeQuestion } from "../judges/synthesize/Extractive.js"
import { readRows } from "../load/Rows.js"
import { issueDecoder, problemOf, rowError } from "../load/RowSchema.js"
import { ABSTENTION, Candidate, type CandidatePassage, GeneratedItem, historyText, type TestItem } from "./Candidate.js"
import { normalised } from "./Chunks.js"
import { QUESTION_TYPES, type QuestionType } from "./Mix.js"

export const PIPELINE_NAME = "synthesize"

export const ANSWERABLE = "synthesize/answerable"
export const CLOSED_BOOK = "synthesize/closed-book"
export const EXTRACT = "answer-correctness/extract"
export const CHECK = "answer-correctness/check"
export const writerRubric = (type: QuestionType) => `synthesize/${type}`

/** Why a candidate is not kept; the words say it in the report. */
export const REJECTIONS = {
  generation: "generation failed",
  malformed: "unusable item (empty question or reference, or a conversation without history)",
  copy: "copies its passage or gives its answer away",
  notAnswerable: "not answerable from its passages",
  partly: "only partly answerable from its passages",
  answered: "unanswerable item that the documents answer",
  general: "answerable from general knowledge",
  unsupported: "reference not supported by its passages, claim by claim",
  noClaims: "reference states no checkable fact",
  checkFailed: "a check could not be made (judge failure)",
  duplicate: "near duplicate of a question kept earlier"
} as const
export type Rejection = keyof typeof REJECTIONS

/** What one candidate came to. */
export interface CandidateRecord {
  readonly caseId: string
  readonly line: number
  readonly type: QuestionType
  readonly persona: string
  readonly documents: ReadonlyArray<string>
  readonly status: "kept" | "rejected"
  readonly reasons: ReadonlyArray<Rejection>
  /** The judge's or the rule's words, one per reason (a check's reasoning, the failed judgment's reason). */
  readonly why: ReadonlyArray<string>
  /** The item written (kept or not: a rejected one is shown in the report as an example). */
  readonly item?: TestItem | undefined
  /** Spans the writer quoted that are not in its passages (left out of the item). */
  readonly spansDropped: number
  readonly checks: {
    readonly answerable?: { readonly score: number | null; readonly reason: string } | undefined
    readonly closedBook?: { readonly score: number | null; readonly reason: string } | undefined
    readonly claims?: ReadonlyArray<{ readonly text: string; readonly verdict: string }> | undefined
  }
}

export interface SynthesisSummary {
  readonly candidates: number
  readonly kept: number
  readonly rejected: Readonly<Record<string, number>>
}

const decodeCandidate = issueDecoder(Candidate)
const decodeItem = Schema.decodeUnknownEither(GeneratedItem)

/** The candidate a case was loaded from (the loader checked it). */
const candidates = new WeakMap<EvalCase, Candidate>()
const candidateOf = (c: EvalCase): Candidate => candidates.get(c)!

/** The wave's candidates file, one candidate a line (written by `Synthesize.ts`, checked all the same). */
const load: LoadStage = {
  describe: "the candidates of a synthesis wave (JSONL: id, type, persona, passages)",
  checkColumns: () => Effect.void,
  cases: (ctx) =>
    readRows(ctx.file).pipe(
      Stream.zipWithIndex,
      Stream.mapEffect(([row, ordinal]) => {
        const decoded = decodeCandidate(row.values)
        if (Either.isLeft(decoded)) return Effect.fail(rowError(ctx.file, row, problemOf(decoded.left)))
        const candidate = decoded.right
        if (candidate.passages.length === 0) {
          return Effect.fail(new InputError({ file: ctx.file, line: row.line, field: "passages", problem: "empty" }))
        }
        const c: EvalCase = {
          id: candidate.id,
          ordinal,
          line: row.line,
          question: "",
          passages: candidate.passages.map((p, i) => ({ id: p.id, rank: i + 1, text: p.text })),
          source: row.values
        }
        candidates.set(c, candidate)
        return Effect.succeed(c)
      })
    )
}

/** Passages as the checks read them: numbered, one after another. */
export const passagesText = (passages: ReadonlyArray<CandidatePassage>) =>
  passages.map((p, i) => `[${i + 1}] ${p.text}`).join("\n\n")

/** What a check reads: the gold passages, or (unanswerable) the seed and its nearby passages. */
const checkedPassages = (candidate: Candidate) =>
  candidate.type === "unanswerable" ? [...candidate.passages, ...(candidate.neighbours ?? [])] : candidate.passages

const writeSpec = (candidate: Candidate): TaskSpec => {
  const vars: Record<string, string> = { type: candidate.type, persona: candidate.persona }
  candidate.passages.forEach((p, i) => {
    vars[`passage_${i + 1}`] = p.text
    vars[`title_${i + 1}`] = p.title ?? p.document
  })
  if (candidate.type === "unanswerable") vars.nearby = (candidate.neighbours ?? []).map((p) => p.text).join("\n\n")
  return { rubric: writerRubric(candidate.type), target: "item", vars }
}

/** A written item, trimmed; undefined when it does not decode. */
const itemOf = (j: Judgment | undefined): GeneratedItem | undefined => {
  if (j === undefined || j.status !== "ok") return undefined
  const decoded = decodeItem(j.value)
  return Either.isRight(decoded) ? decoded.right : undefined
}

const checkRound = (candidate: Candidate, item: GeneratedItem): Array<JudgeSpec> => {
  const history = historyText(item.history)
  const passages = passagesText(checkedPassages(candidate))
  const shared = { question: item.question, history, reference: item.reference }
  const pool = [item.reference, ...checkedPassages(candidate).map((p) => p.text)]
  const specs: Array<JudgeSpec> = [{ rubric: ANSWERABLE, target: "answerable", vars: { ...shared, passages } }]
  if (candidate.type !== "unanswerable") {
    specs.push({ rubric: CLOSED_BOOK, target: "closed-book", vars: shared })
    specs.push({
      rubric: EXTRACT,
      target: extractionTarget("reference"),
      vars: { question: item.question, source: "reference answer", text: item.reference },
      pool
    })
  }
  return specs
}

const claimCheck = (candidate: Candidate, item: GeneratedItem, claims: ReadonlyArray<string>): JudgeSpec => ({
  rubric: CHECK,
  vars: { question: item.question, source: "gold passages", text: passagesText(candidate.passages) },
  items: claims.map((claim, i) => {
    const ref = claimRef("reference", i, "contexts")
    return { target: claimTarget(ref), vars: { claim }, claim: ref }
  }),
  pool: [item.reference, ...candidate.passages.map((p) => p.text)]
})

const claimsOf = (j: Judgment | undefined): ReadonlyArray<string> | undefined =>
  j === undefined || j.status !== "ok" || !Array.isArray(j.value)
    ? undefined
    : j.value.filter((x): x is string => typeof x === "string" && x.trim() !== "")

/** A stand-in item for pricing the checks before anything is written: the offline generator's, else typical lengths. */
const standIn = (candidate: Candidate): GeneratedItem => {
  const written = writeQuestion(
    candidate.type,
    candidate.passages.map((p) => p.text),
    (candidate.neighbours ?? []).map((p) => p.text)
  )
  if ("item" in written) return written.item as GeneratedItem
  const text = candidate.passages[0]!.text
  return {
    question: text.slice(0, 100),
    history: candidate.type === "conversational" ? [{ role: "user", content: text.slice(0, 100) }] : [],
    reference: candidate.type === "unanswerable" ? ABSTENTION : text.slice(0, 400),
    nuggets: [],
    spans: []
  }
}

/** The judge stage: write, then check, then check the reference's claims (see the module comment). */
export const judgeStage = (types: ReadonlyArray<QuestionType>) => ({
  rubrics: [
    ...types.map(writerRubric),
    ANSWERABLE,
    ...(types.some((t) => t !== "unanswerable") ? [CLOSED_BOOK, EXTRACT, CHECK] : [])
  ],
  tasks: (c: EvalCase): ReadonlyArray<JudgeSpec> => [writeSpec(candidateOf(c))],
  next: (c: EvalCase, earlier: ReadonlyArray<Judgment>): ReadonlyArray<JudgeSpec> => {
    const candidate = candidateOf(c)
    if (earlier.some((j) => j.criterion === CHECK)) return []
    const item = itemOf(earlier.find((j) => j.criterion === writerRubric(candidate.type)))
    if (item === undefined || unusable(candidate, item) !== undefined) return []
    const extraction = earlier.find((j) => j.criterion === EXTRACT)
    if (extraction === undefined) {
      return earlier.some((j) => j.criterion === ANSWERABLE) ? [] : checkRound(candidate, item)
    }
    const claims = claimsOf(extraction) ?? []
    return claims.length === 0 ? [] : [claimCheck(candidate, item, claims)]
  },
  planned: (c: EvalCase): ReadonlyArray<JudgeSpec> => {
    const candidate = candidateOf(c)
    const item = standIn(candidate)
    const claims = candidate.type === "unanswerable" ? [] : extractClaims(item.reference)
    return [
      writeSpec(candidate),
      ...checkRound(candidate, item),
      ...(claims.length === 0 ? [] : [claimCheck(candidate, item, claims)])
    ]
  }
})

// ---------------------------------------------------------------------------------------------
// Rules decided without a judge

/** Why an item cannot be used at all, or undefined. */
const unusable = (candidate: Candidate, item: GeneratedItem): string | undefined => {
  if (item.question.trim() === "") return "the question is empty"
  if (item.reference.trim() === "") return "the reference is empty"
  if (candidate.type === "conversational" && item.history.length === 0) return "a conversational item without history"
  return undefined
}

const WHITESPACE = /\s+/g
const squeeze = (s: string) => s.replace(WHITESPACE, " ").trim()

/** A question that is a passage's sentence, or holds its own reference (≥ 3 words), copies or gives away. */
export const copies = (item: GeneratedItem, passages: ReadonlyArray<string>): string | undefined => {
  const q = normalised(item.question)
  const reference = normalised(item.reference)
  if (reference.split(" ").length >= 3 && q.includes(reference) && item.reference.trim() !== ABSTENTION) {
    return "the question contains its own reference answer"
  }
  for (const p of passages) {
    for (const sentence of p.split(/(?<=[.!?])\s+|\n+/)) {
      const s = normalised(sentence)
      if (s !== "" && s === q) return "the question is a sentence of its passage, word for word"
    }
  }
  return undefined
}

/** The item's spans that are in their passage (whitespace aside), per passage; and how many were not. */
const spansOf = (item: GeneratedItem, passages: ReadonlyArray<CandidatePassage>) => {
  const per: Array<Array<string>> = passages.map(() => [])
  let dropped = 0
  for (const span of item.spans) {
    const p = passages[span.passage - 1]
    const text = squeeze(span.text)
    if (p !== undefined && text !== "" && squeeze(p.text).includes(text)) {
      if (!per[span.passage - 1]!.includes(text)) per[span.passage - 1]!.push(text)
    } else dropped++
  }
  return { per, dropped }
}

const VERDICTS = ["contradicted", "neutral", "entailed"]

/** The record of a candidate from its judgments (see `REJECTIONS` for the reasons). */
export const scoreCandidate = (c: EvalCase, judgments: ReadonlyArray<Judgment>, generator: string): CandidateRecord => {
  const candidate = candidateOf(c)
  const find = (criterion: string) => judgments.find((j) => j.criterion === criterion)
  const base = {
    caseId: c.id,
    line: c.line,
    type: candidate.type,
    persona: candidate.persona,
    documents: [...new Set(candidate.passages.map((p) => p.document))]
  }
  const written = find(writerRubric(candidate.type))
  const item = itemOf(written)
  if (item === undefined) {
    return {
      ...base,
      status: "rejected",
      reasons: ["generation"],
      why: [
        written === undefined
          ? "no judgment recorded"
          : written.status === "ok"
          ? "the item does not decode"
          : written.reason
      ],
      spansDropped: 0,
      checks: {}
    }
  }
  const spans = spansOf(item, candidate.passages)
  const unanswerable = candidate.type === "unanswerable"
  const testItem: TestItem = {
    id: c.id,
    question: item.question.trim(),
    ...(item.history.length === 0 ? {} : { history: historyText(item.history) }),
    reference: item.reference.trim(),
    nuggets: item.nuggets.filter((n) => n.text.trim() !== "").map((n) => ({
      text: n.text.trim(),
      importance: n.importance
    })),
    type: candidate.type,
    goldPassages: unanswerable ? [] : candidate.passages.map((p, i) => ({
      id: p.id,
      document: p.document,
      ...(p.title === undefined ? {} : { title: p.title }),
      text: p.text,
      spans: spans.per[i]!
    })),
    gold: unanswerable ? [] : spans.per.flat(),
    sourceDocuments: base.documents,
    ...(candidate.persona === "" ? {} : { persona: candidate.persona }),
    generator
  }
  const reasons: Array<Rejection> = []
  const why: Array<string> = []
  const reject = (r: Rejection, words: string) => {
    reasons.push(r)
    why.push(words)
  }
  const problem = unusable(candidate, item)
  if (problem !== undefined) reject("malformed", problem)
  const copy = copies(item, candidate.passages.map((p) => p.text))
  if (copy !== undefined) reject("copy", copy)
  const answerable = find(ANSWERABLE)
  const closedBook = find(CLOSED_BOOK)
  const extraction = find(EXTRACT)
  const checks = judgments.filter((j) => j.criterion === CHECK)
  const check = (j: Judgment | undefined) => j === undefined ? undefined : { score: j.score, reason: j.reason }
  if (problem === undefined) {
    if (answerable === undefined || answerable.status !== "ok") {
      reject("checkFailed", `answerable: ${answerable?.reason ?? "no judgment recorded"}`)
    } else if (unanswerable) {
      if (item.reference.trim() !== ABSTENTION) {
        reject("malformed", "an unanswerable item's reference is not the abstention")
      }
      if (answerable.score !== 0) reject("answered", answerable.reason)
    } else if (answerable.score === 0) reject("notAnswerable", answerable.reason)
    else if (answerable.score === 1) reject("partly", answerable.reason)
    if (!unanswerable) {
      if (closedBook === undefined || closedBook.status !== "ok") {
        reject("checkFailed", `closed-book: ${closedBook?.reason ?? "no judgment recorded"}`)
      } else if (closedBook.score === 0) reject("general", closedBook.reason)
      const claims = claimsOf(extraction)
      if (claims === undefined) reject("checkFailed", `claims: ${extraction?.reason ?? "no judgment recorded"}`)
      else if (claims.length === 0) reject("noClaims", "the reference was decomposed into no claim")
      else if (checks.some((j) => j.status !== "ok")) {
        reject("checkFailed", `claim check: ${checks.find((j) => j.status !== "ok")!.reason}`)
      } else {
        const bad = checks.filter((j) => j.score !== 2)
        if (bad.length > 0 || checks.length < claims.length) {
          reject(
            "unsupported",
            bad.length > 0
              ? `${bad.length} of ${claims.length} claim(s) not entailed: ${bad[0]!.reason}`
              : "a claim was not checked"
          )
        }
      }
    }
  }
  const claimList = claimsOf(extraction)
  return {
    ...base,
    status: reasons.length === 0 ? "kept" : "rejected",
    reasons,
    why,
    item: testItem,
    spansDropped: spans.dropped,
    checks: {
      answerable: check(answerable),
      closedBook: check(closedBook),
      ...(claimList === undefined ? {} : {
        claims: claimList.map((text, i) => {
          const j = checks.find((x) => x.target === claimTarget(claimRef("reference", i, "contexts")))
          return { text, verdict: j === undefined || j.score === null ? "unchecked" : VERDICTS[j.score] ?? "unchecked" }
        })
      })
    }
  }
}

/** The internal pipeline of one synthesis (its rubrics are those of the mix's types). */
export const synthesisPipeline = (
  types: ReadonlyArray<QuestionType>,
  generator: string
): Pipeline<CandidateRecord, SynthesisSummary> => ({
  name: PIPELINE_NAME,
  description: "test-set synthesis: candidate questions written from chunks, then checked",
  load,
  judge: judgeStage(QUESTION_TYPES.filter((t) => types.includes(t))),
  score: {
    score: (c, judgments) => scoreCandidate(c, judgments, generator),
    // A candidate's one metric: kept (1) or rejected (0); its mean is the share kept. A candidate whose
    // check could not be made (a failed judgment) is a failed case.
    perCase: {
      declared: () => [Metric.fraction("kept", "1 when the candidate passed every check, 0 when rejected")],
      of: (r) => ({
        caseId: r.caseId,
        line: r.line,
        metrics: { kept: r.status === "kept" ? 1 : 0 },
        failed: r.reasons.includes("checkFailed")
      })
    }
  },
  aggregate: tally,
  report: {
    title: "Test-set synthesis (internal wave)",
    caseMarkdown: (_info, r) => ({
      title: `${r.caseId} — ${r.type}: ${r.status}`,
      body: r.reasons.length === 0 ? "" : `Rejected: ${r.reasons.join(", ")}.\n`
    }),
    csvHeader: () => ["id", "type", "status", "reasons"],
    csvRow: (_info, r) => [r.caseId, r.type, r.status, r.reasons.join(" ")]
  }
})

/** Candidates kept and rejected, by reason. */
const tally: AggregateStage<CandidateRecord, SynthesisSummary> = {
  start: () => {
    let candidates = 0
    let kept = 0
    const rejected: Record<string, number> = {}
    return {
      add: (r) => {
        candidates++
        if (r.status === "kept") kept++
        for (const reason of r.reasons) rejected[reason] = (rejected[reason] ?? 0) + 1
      },
      finish: () => ({ candidates, kept, rejected })
    }
  }
}
