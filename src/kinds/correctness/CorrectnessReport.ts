/**
 * Report view of answer-correctness: the metrics with their intervals and definitions, the claim
 * counts, then the cases — failed and lowest first, then every case in input order — each with its
 * claims, each claim with its verdict against the reference (or the answer) and the contexts, and
 * the sentence that decided it. The CSV has one row per case: the input's columns, the metrics, and
 * the claims as text cells, one claim per line.
 */
import type { CaseDetail, DetailCell, DetailTable, Status } from "../../domain/CaseDetail.js"
import type { ClaimVerdict } from "../../domain/Label.js"
import { code, inline, quoteBlock } from "../../domain/Markdown.js"
import { thousands } from "../../domain/Numbers.js"
import type { ReportView, RunSummary } from "../../engine/Pipeline.js"
import { csvMaybeNumber, sourceCells } from "../../report/Csv.js"
import { answerLines, num, questionLines } from "../../report/Sections.js"
import type { CheckedClaim, ClaimCheck, ClaimList, GradedNugget } from "./Claims.js"
import { claimMetricNames, type CorrectnessRecord } from "./CorrectnessScore.js"
import type { CorrectnessSummary } from "./CorrectnessSummary.js"

/** The verdicts of the scale (`domain/Label.ts`'s `ClaimVerdict`), as an LLM judge's are shown. */
const VERDICT_MARK: Readonly<Record<ClaimVerdict, string>> = {
  entailed: "✓ entailed",
  neutral: "? neutral",
  contradicted: "✗ contradicted"
}
const NUGGET_MARK = {
  support: "✓ supported",
  partial_support: "~ partly supported",
  not_support: "✗ not supported"
} as const

/**
 * A check's verdict as a report shows it: the judge's own finding when it names one (the heuristic
 * judge's, which reads words, not meaning: "✗ figure conflict", "✓ words and figures found"), else
 * the verdict of the check rubric's scale.
 */
const verdictText = (c: ClaimCheck) =>
  c.verdict === null
    ? `${c.unread === true ? "not judged" : "failed"} (${c.reason})`
    : c.finding === undefined
    ? VERDICT_MARK[c.verdict]
    : `${VERDICT_MARK[c.verdict].slice(0, 1)} ${c.finding}`

/** Why a side has no claims: its extraction failed, or the judge did not read it. */
const noClaims = (list: Exclude<ClaimList, { status: "ok" }>) =>
  list.status === "unread" ? `not judged: ${list.reason}` : `extraction failed: ${list.reason}`

/** Which contexts entail the claim: "2, 3", or "none". */
const entailingContexts = (claim: CheckedClaim) => {
  if (claim.contexts.length === 0) return undefined
  if (claim.contexts.some((k) => k.verdict === null)) return "a check failed"
  const ks = claim.contexts.flatMap((k, i) => (k.verdict === "entailed" ? [String(i + 1)] : []))
  return ks.length === 0 ? "none" : ks.join(", ")
}

/** The sentence that decided the claim: against the reference/answer, else the first entailing context's. */
const evidenceOf = (claim: CheckedClaim): string | undefined =>
  claim.against?.evidence ?? claim.contexts.find((k) => k.verdict === "entailed")?.evidence ??
    claim.contexts.find((k) => k.evidence !== undefined)?.evidence

export const claimTable = (list: ClaimList, against: string | undefined) => {
  if (list.status === "failed") return `*Claim extraction failed*: ${inline(list.reason)}\n`
  if (list.status === "unread") return `*Not judged*: ${inline(list.reason)}\n`
  if (list.claims.length === 0) return "*No claims.*\n"
  // The HTML page's table, its text columns inline and cut at 300 characters.
  const t = claimDetail("", list, against)
  const cell = (x: DetailCell, i: number) =>
    x === null ? "" : t.textColumns?.includes(i) === true ? inline(String(x), 300) : String(x)
  return [
    `| ${t.columns.join(" | ")} |`,
    `|${t.columns.map(() => "---").join("|")}|`,
    ...t.rows.map((row) => `| ${row.cells.map(cell).join(" | ")} |`),
    ""
  ].join("\n")
}

const nuggetTable = (nuggets: ReadonlyArray<GradedNugget>) =>
  [
    "| # | Nugget | Importance | Grade | Evidence |",
    "|---|---|---|---|---|",
    ...nuggets.map((n) =>
      `| ${n.n} | ${inline(n.text, 300)} | ${n.importance ?? ""} | ${
        n.assignment === null ? `failed (${inline(n.reason, 200)})` : NUGGET_MARK[n.assignment]
      } | ${inline(n.evidence ?? "", 300)} |`
    ),
    ""
  ].join("\n")

const metricLine = (r: CorrectnessRecord) =>
  claimMetricNames.flatMap((name) => {
    const x = r.metrics[name]
    return x === null ? [] : [`${name} ${name === "unsupportedClaims" ? String(x) : num(x, 2)}`]
  }).join(" · ") || "no metric (see the failures)"

const caseBlock = (r: CorrectnessRecord) =>
  [
    ...questionLines(r),
    `**Metrics**: ${metricLine(r)}${r.failed > 0 ? ` — **${r.failed} judgment(s) failed**` : ""}${
      r.verdict === undefined ? "" : ` — **${r.verdict.pass ? "pass" : "fail"}** (${r.verdict.why})`
    }${r.claims.unread === undefined ? "" : ` — **not judged**: ${inline(r.claims.unread)}`}`,
    "",
    ...answerLines(r.answer),
    "**Answer claims**" + (r.reference === undefined ? "" : " (checked against the reference)") + ":",
    "",
    claimTable(r.claims.answer, r.reference === undefined ? undefined : "reference"),
    ...(r.reference === undefined || r.claims.reference === undefined ? [] : [
      "**Reference answer:**",
      "",
      quoteBlock(r.reference),
      "",
      "**Reference claims** (checked against the answer):",
      "",
      claimTable(r.claims.reference, "answer")
    ]),
    ...(r.claims.nuggets === undefined
      ? []
      : ["**Nuggets** (graded against the answer):", "", nuggetTable(r.claims.nuggets)]),
    ...(r.contexts.length === 0 ? [] : [
      `**Contexts** (${r.contexts.length}):`,
      "",
      ...r.contexts.map((t, k) => `${k + 1}. ${inline(t, 300)}`),
      ""
    ]),
    ...(r.failures.length === 0
      ? []
      : [
        "**Failed judgments:**",
        "",
        ...r.failures.map((f) => `- ${code(f.criterion)} ${code(f.target)}: ${inline(f.reason)}`),
        ""
      ])
  ].join("\n")

const definitions = [
  "## How claims are checked",
  "",
  "Claims are checked with RAGChecker's three verdicts (entailed, neutral, contradicted; only entailed counts as support) and the metrics follow its definitions (Ru et al., NeurIPS 2024); nugget recall follows the TREC 2024 RAG Track's AutoNuggetizer. A case that cannot have a metric (no reference, no contexts, no nuggets, no claims) has none: it is left out of the mean, never counted as 0. A case's score is its F1 against the reference, else its faithfulness to the contexts, else its nugget recall: the failed and lowest cases go by it.",
  ""
].join("\n")

/** The heuristic judge's words for the three verdicts: what it measured (see `judges/claims/Check.ts`'s `Finding`). */
const HEURISTIC_COUNTS = {
  entailed: "words and figures found",
  neutral: "not found",
  contradicted: "figure or negation conflict"
}
const LLM_COUNTS = { entailed: "entailed", neutral: "neutral", contradicted: "contradicted" }

const heuristicVerdicts = [
  "The heuristic judge reads words, not meaning, so its verdicts are named for what it measured: **words and figures found** (enough of the claim's weighted words, every figure and name: counted as entailed), **figure conflict** or **negation conflict** (the sentence holding the claim's words states another figure, or the opposite: contradicted), and **figure not found**, **name not found** or **too few words found** (neutral). It reads English only: a case in another language is not judged. The metrics keep RAGChecker's names.",
  ""
].join("\n")

type Summary = RunSummary<CorrectnessRecord, CorrectnessSummary>

/** What the headline table cannot say: the claims counted by verdict, abstentions and cases not read. */
const claimsSection = (summary: Summary, heuristic: boolean) => {
  const say = heuristic ? HEURISTIC_COUNTS : LLM_COUNTS
  const lines: Array<string> = []
  const c = summary.extra.claims
  lines.push(
    `**Claims**: ${thousands(c.answerClaims)} in the answers, ${thousands(c.referenceClaims)} in the references. ` +
      `Answer claims against the reference: ${thousands(c.answerVsReference.entailed)} ${say.entailed}, ${
        thousands(c.answerVsReference.neutral)
      } ${say.neutral}, ${thousands(c.answerVsReference.contradicted)} ${say.contradicted}. ` +
      `Reference claims against the answer: ${thousands(c.referenceVsAnswer.entailed)} ${say.entailed}, ${
        thousands(c.referenceVsAnswer.neutral)
      } ${say.neutral}, ${thousands(c.referenceVsAnswer.contradicted)} ${say.contradicted}.` +
      (c.unsupportedByContexts > 0
        ? ` ${thousands(c.unsupportedByContexts)} answer claim(s) are supported by no context.`
        : ""),
    ""
  )
  if (c.abstained > 0) {
    lines.push(
      `**Abstained**: ${
        thousands(c.abstained)
      } answer(s) say the answer is not known or not in the passages: they state no claim, so they have no precision or hallucination.`,
      ""
    )
  }
  if (c.notJudged > 0) {
    lines.push(
      `**Not judged**: ${thousands(c.notJudged)} case(s): ${
        inline(c.notJudgedReason ?? "")
      }. Their metrics are null, not 0 or 1, and they are left out of every mean.`,
      ""
    )
  }
  return lines.join("\n")
}

const caseHeading = (r: CorrectnessRecord) =>
  `${inline(r.question, 120)} — ${r.failed > 0 ? "failed" : r.score === null ? "no score" : `score ${num(r.score, 2)}`}`

/** A claim as one line of a CSV cell: `1. [verdict; contexts 2, 3] claim — "evidence"`. */
const claimLine = (c: CheckedClaim) => {
  const marks = [
    c.against === undefined ? undefined : c.against.verdict ?? "failed",
    entailingContexts(c) === undefined ? undefined : `contexts: ${entailingContexts(c)}`
  ]
    .filter((x) => x !== undefined)
  const evidence = evidenceOf(c)
  return `${c.n}. [${marks.join("; ")}] ${c.text}${evidence === undefined ? "" : ` — "${evidence}"`}`
}

export const claimCell = (list: ClaimList | undefined) =>
  list === undefined
    ? ""
    : list.status !== "ok"
    ? noClaims(list)
    : list.claims.map(claimLine).join("\n")

const claimParameters = (summary: Summary): ReadonlyArray<readonly [string, string]> => [
  [
    "Claims",
    `${thousands(summary.extra.claims.answerClaims)} in answers · ${
      thousands(summary.extra.claims.referenceClaims)
    } in references`
  ]
]

const STATUS: Readonly<Record<string, Status>> = {
  entailed: "pass",
  neutral: "warn",
  contradicted: "fail",
  support: "pass",
  partial_support: "warn",
  not_support: "fail"
}

/** A claim's colour: by its verdict against the reference (or the answer), else by whether a context entails it. */
const claimStatus = (c: CheckedClaim): Status => {
  if (c.against !== undefined) return c.against.verdict === null ? "fail" : STATUS[c.against.verdict]!
  if (c.contexts.length === 0) return "none"
  if (c.contexts.some((k) => k.verdict === null)) return "fail"
  return c.contexts.some((k) => k.verdict === "entailed") ? "pass" : "warn"
}

const claimDetail = (caption: string, list: ClaimList, against: string | undefined): DetailTable => {
  if (list.status !== "ok") return { caption: `${caption}: ${noClaims(list)}`, columns: [], rows: [] }
  const hasContexts = list.claims[0] !== undefined && list.claims[0].contexts.length > 0
  const columns = [
    "#",
    "Claim",
    ...(against === undefined ? [] : [`vs ${against}`]),
    ...(hasContexts ? ["Entailed by contexts"] : []),
    "Evidence"
  ]
  return {
    caption: `${caption} (${list.claims.length})`,
    columns,
    rows: list.claims.map((c) => ({
      cells: [
        c.n,
        c.text,
        ...(against === undefined ? [] : [c.against === undefined ? null : verdictText(c.against)]),
        ...(hasContexts ? [entailingContexts(c) ?? null] : []),
        evidenceOf(c) ?? null
      ],
      status: claimStatus(c)
    })),
    textColumns: [1, columns.length - 1]
  }
}

/** The case block of the HTML page: each claim with its verdict and evidence, coloured by verdict. */
export const correctnessDetail = (r: CorrectnessRecord): CaseDetail => ({
  fields: [
    ["Question", r.question],
    ["Answer", r.answer === "" ? "(empty)" : r.answer],
    ...(r.reference === undefined ? [] : [["Reference", r.reference] as const])
  ],
  tables: [
    claimDetail("Answer claims", r.claims.answer, r.reference === undefined ? undefined : "reference"),
    ...(r.claims.reference === undefined ? [] : [claimDetail("Reference claims", r.claims.reference, "answer")]),
    ...(r.claims.nuggets === undefined ? [] : [{
      caption: `Nuggets (${r.claims.nuggets.length})`,
      columns: ["#", "Nugget", "Importance", "Grade", "Evidence"],
      rows: r.claims.nuggets.map((n) => ({
        cells: [
          n.n,
          n.text,
          n.importance ?? null,
          n.assignment === null ? `failed (${n.reason})` : NUGGET_MARK[n.assignment],
          n.evidence ?? null
        ],
        status: n.assignment === null ? "fail" as const : STATUS[n.assignment]!
      })),
      textColumns: [1, 4]
    }]),
    ...(r.contexts.length === 0
      ? []
      : [{
        caption: `Contexts (${r.contexts.length})`,
        columns: ["#", "Passage"],
        rows: r.contexts.map((t, k) => ({ cells: [k + 1, t] })),
        textColumns: [1]
      }])
  ],
  ...(r.failures.length === 0
    ? {}
    : {
      problem: `${r.failures.length} judgment(s) failed: ${
        r.failures.map((f) => `${f.target}: ${f.reason}`).join("; ")
      }`
    })
})

export const correctnessReport = (
  options: { readonly title: string }
): ReportView<CorrectnessRecord, CorrectnessSummary> => ({
  title: options.title,
  heuristic:
    "claims are sentences and clauses, checked by a lexical support model (content words weighted within the case; numbers, names and negation must agree)",
  caseDetail: correctnessDetail,
  caseVerdict: (r) => r.verdict,
  parameters: (_info, summary) => claimParameters(summary),
  sections: (info, summary) => {
    const heuristic = !info.judge.traits.languageModel
    return {
      before: [definitions, ...(heuristic ? [heuristicVerdicts] : [])],
      after: [claimsSection(summary, heuristic)]
    }
  },
  caseMarkdown: (_info, r) => ({ title: caseHeading(r), body: caseBlock(r) }),
  csvHeader: (
    info
  ) => [...info.input.columns, ...claimMetricNames, "Answer claims", "Reference claims", "Nuggets", "Failures"],
  csvRow: (info, r) => [
    ...sourceCells(info.input.columns, r.source),
    ...claimMetricNames.map((name) => csvMaybeNumber(r.metrics[name], 4)),
    claimCell(r.claims.answer),
    claimCell(r.claims.reference),
    (r.claims.nuggets ?? []).map((n) =>
      `${n.n}. [${n.assignment ?? "failed"}${n.importance === undefined ? "" : `; ${n.importance}`}] ${n.text}`
    ).join("\n"),
    r.failures.map((f) => `${f.criterion} ${f.target}: ${f.reason}`).join("\n")
  ]
})
