/**
 * What a person can label in a case, read from the case's record and per-case metrics: each rubric
 * grade (`dimensions`), each hit's relevance grade (`hits`), each claim's verdict against the
 * reference, the answer or a context (`claims`), each nugget's support (`claims.nuggets`) and each
 * per-case metric — with what the judge said (`judged`), its reason and evidence, and the choices a
 * person has (the rubric's grades, the three verdicts…). The targets are the `LabelTarget`s of
 * `domain/Label.ts`; a label is checked against them before it is written (a claim the case does not
 * have is refused), and its `judged` is taken from here, never from the request.
 *
 * Records are each pipeline's own shape; the fields read here are those the built-in kinds write
 * (rubric, synthesis, graded hits, correctness). A record without them has only its metrics to label.
 */
import { isRecord } from "effect/Predicate"
import { SUPPORTS, VERDICTS } from "../calibrate/RunClaims.js"
import {
  type ClaimAgainst,
  type ClaimVerdict,
  type Judged,
  type LabelTarget,
  type LabelValue,
  type NuggetSupport,
  targetKey
} from "../domain/Label.js"
import type { MetricSpec } from "../domain/Metric.js"
import type { CaseTarget } from "./Domain.js"

type Choice = CaseTarget["choices"][number]
type Target = Omit<CaseTarget, "label">

const str = (x: unknown): string | undefined => (typeof x === "string" ? x : undefined)
const num = (x: unknown): number | undefined => (typeof x === "number" && Number.isFinite(x) ? x : undefined)
const arr = (x: unknown): ReadonlyArray<unknown> => (Array.isArray(x) ? x : [])

const isVerdict = (x: unknown): x is ClaimVerdict =>
  typeof x === "string" && (VERDICTS as ReadonlyArray<string>).includes(x)
const isSupport = (x: unknown): x is NuggetSupport =>
  typeof x === "string" && (SUPPORTS as ReadonlyArray<string>).includes(x)

const gradeChoices = (min: number, max: number, names: ReadonlyArray<string> = []): Array<Choice> => {
  const out: Array<Choice> = []
  // Number keys give grades; a scale beyond 0–9 is labelled by agreement only.
  if (Number.isInteger(min) && Number.isInteger(max) && min >= 0 && max <= 9 && max - min <= 9) {
    for (let g = min; g <= max; g++) out.push({ value: { grade: g }, text: names[g] ?? `grade ${g}`, key: String(g) })
  }
  return out
}

/** The relevance scale's grades (the search-relevance checklist's words). */
const RELEVANCE = ["not relevant", "partially", "moderately", "highly relevant"]

const VERDICT_TEXT: Readonly<Record<ClaimVerdict, string>> = {
  contradicted: "contradicted",
  neutral: "neutral (not supported)",
  entailed: "entailed (supported)"
}
const verdictChoices: ReadonlyArray<Choice> = VERDICTS.map((v, i) => ({
  value: { verdict: v },
  text: VERDICT_TEXT[v],
  key: String(i)
}))
const SUPPORT_TEXT: Readonly<Record<NuggetSupport, string>> = {
  not_support: "not supported",
  partial_support: "partially supported",
  support: "supported"
}
const supportChoices: ReadonlyArray<Choice> = SUPPORTS.map((s, i) => ({
  value: { support: s },
  text: SUPPORT_TEXT[s],
  key: String(i)
}))

const agreeChoices: ReadonlyArray<Choice> = [
  { value: { agree: true }, text: "the judge is right", key: "y" },
  { value: { agree: false }, text: "the judge is wrong", key: "x" }
]

const judgedText = (judged: Judged): string =>
  judged === null
    ? "no verdict (the judgment failed)"
    : typeof judged === "number"
    ? (Number.isInteger(judged) ? String(judged) : judged.toFixed(3))
    : judged

const againstText = (a: ClaimAgainst): string => (typeof a === "string" ? a : `context ${a.context}`)

/** The question (or query) of a record, for lists. */
export const questionOf = (record: unknown): string | undefined => {
  if (!isRecord(record)) return undefined
  return str(record["question"]) ?? str(record["query"])
}

export const answerOf = (record: unknown): string | undefined => isRecord(record) ? str(record["answer"]) : undefined

/** The labellable targets of a case: its record's judgments, then its per-case metrics. */
export const caseTargets = (
  record: unknown,
  metrics: ReadonlyArray<{ readonly spec: MetricSpec; readonly value: number | null }>
): Array<Target> => {
  const out: Array<Target> = []
  const add = (
    target: LabelTarget,
    group: string,
    title: string,
    judged: Judged,
    choices: ReadonlyArray<Choice>,
    extra: {
      readonly text?: string | undefined
      readonly reason?: string | undefined
      readonly evidence?: string | undefined
    }
  ) =>
    out.push({
      target,
      key: targetKey(target),
      group,
      title,
      judged,
      judgedText: judgedText(judged),
      choices: [...choices, ...agreeChoices],
      ...(extra.text === undefined ? {} : { text: extra.text }),
      ...(extra.reason === undefined ? {} : { reason: extra.reason }),
      ...(extra.evidence === undefined ? {} : { evidence: extra.evidence })
    })

  if (isRecord(record)) {
    // Rubric grades of the whole case (rag-answers, answer-synthesis).
    for (const d of arr(record["dimensions"])) {
      if (!isRecord(d)) continue
      const criterion = str(d["criterion"])
      if (criterion === undefined) continue
      const min = num(d["min"]) ?? 0
      const max = num(d["max"]) ?? 3
      add(
        { kind: "grade", criterion },
        "Rubric grades",
        `${str(d["name"]) ?? criterion} (${min}–${max})`,
        d["status"] === "ok" ? num(d["score"]) ?? null : null,
        gradeChoices(min, max),
        { reason: str(d["reason"]) }
      )
    }
    // A hit's relevance grade (course-retrieval, search-relevance), 0–3.
    for (const h of arr(record["hits"])) {
      if (!isRecord(h)) continue
      const hitId = str(h["id"]) ?? (num(h["id"]) === undefined ? undefined : String(h["id"]))
      if (hitId === undefined) continue
      const rank = num(h["rank"])
      add(
        { kind: "hit", hitId },
        "Hit relevance (0–3)",
        `${rank === undefined ? "" : `#${rank} · `}${hitId}${
          str(h["label"]) !== undefined && str(h["label"]) !== str(h["text"]) ? ` · ${str(h["label"])}` : ""
        }`,
        h["status"] === "ok" || h["status"] === undefined ? num(h["grade"]) ?? null : null,
        gradeChoices(0, 3, RELEVANCE),
        { text: str(h["text"]), reason: str(h["reason"]) }
      )
    }
    // Claims (answer-correctness): each side's claims against the other side, then against each context.
    const claims = record["claims"]
    if (isRecord(claims)) {
      for (const side of ["answer", "reference"] as const) {
        const block = claims[side]
        if (!isRecord(block)) continue
        const other: ClaimAgainst = side === "answer" ? "reference" : "answer"
        const sideText = side === "answer" ? "Answer claims" : "Reference claims"
        const list = arr(block["claims"]).filter(isRecord)
        const check = (c: Readonly<Record<string, unknown>>, against: ClaimAgainst, result: unknown) => {
          const n = num(c["n"])
          const text = str(c["text"])
          if (n === undefined || !Number.isInteger(n) || n < 1 || !isRecord(result)) return
          const verdict = result["verdict"]
          add(
            { kind: "claim", side, index: n, against, ...(text === undefined ? {} : { text }) },
            `${sideText} vs ${againstText(against)}`,
            `${n}. ${text ?? ""}`,
            isVerdict(verdict) ? verdict : null,
            verdictChoices,
            { reason: str(result["reason"]), evidence: str(result["evidence"]) }
          )
        }
        // Every claim against the other side first (the checks precision and recall count), then against each context.
        for (const c of list) check(c, other, c["against"])
        const contexts = Math.max(0, ...list.map((c) => arr(c["contexts"]).length))
        for (let k = 0; k < contexts; k++) for (const c of list) check(c, { context: k + 1 }, arr(c["contexts"])[k])
      }
      for (const g of arr(claims["nuggets"])) {
        if (!isRecord(g)) continue
        const n = num(g["n"])
        if (n === undefined || !Number.isInteger(n) || n < 1) continue
        const text = str(g["text"])
        const importance = str(g["importance"])
        const assignment = g["assignment"]
        add(
          { kind: "nugget", index: n, ...(text === undefined ? {} : { text }) },
          "Nuggets",
          `${n}. ${text ?? ""}${importance === undefined ? "" : ` (${importance})`}`,
          isSupport(assignment) ? assignment : null,
          supportChoices,
          { reason: str(g["reason"]), evidence: str(g["evidence"]) }
        )
      }
    }
  }
  for (const { spec, value } of metrics) {
    add({ kind: "metric", metric: spec.name }, "Per-case metrics", spec.name, value, [], {
      reason: spec.description
    })
  }
  return out
}

/**
 * Why a label's value does not fit its target (a grade outside the rubric's scale, a verdict for a
 * hit…), or undefined when it fits.
 */
export const labelProblem = (
  target: Target | undefined,
  value: LabelValue,
  kind: LabelTarget["kind"]
): string | undefined => {
  if ("agree" in value) {
    if (kind === "preference") return "a preference is a value from -2 to 2, not agreement"
    return undefined
  }
  switch (kind) {
    case "grade":
    case "hit": {
      if (!("grade" in value)) return `a ${kind} label is a grade (or agree)`
      const grades = target?.choices.flatMap((c) => ("grade" in c.value ? [c.value.grade] : [])) ?? []
      if (grades.length > 0 && !grades.includes(value.grade)) {
        return `grade ${value.grade} is not on the scale (${grades.join(", ")})`
      }
      return undefined
    }
    case "claim":
      return "verdict" in value ? undefined : "a claim label is a verdict: contradicted, neutral or entailed (or agree)"
    case "nugget":
      return "support" in value
        ? undefined
        : "a nugget label is a support: not_support, partial_support or support (or agree)"
    case "metric":
      return "value" in value ? undefined : "a metric label is a value (or agree)"
    case "preference":
      return "preference" in value ? undefined : "a preference label is a preference from -2 to 2"
  }
}
