/**
 * The heuristic claim model (`src/judges/claims/`) against human judgments, and its speed.
 *
 *   npx tsx bench/claims.ts [data-dir]      (default ../shared/data; section [11] of `npm run bench`)
 *
 * 1. **RAGChecker's meta-evaluation** (`ragchecker-dev/`: 140 pairs of answers to one question, each
 *    pair compared by two annotators on correctness, completeness and overall quality, −2…+2). The
 *    paper's protocol (its `meta_eval.py`): per pair, delta = metric(second) − metric(first), a
 *    missing delta (a metric that is null for either answer) replaced by the median delta, each delta
 *    repeated for both annotators, Pearson's r against the 280 labels — precision against
 *    correctness, recall against completeness, F1 against overall. Each case's claims come from
 *    `extractClaims`, their verdicts from `checkClaims` (answer claims against the reference,
 *    reference claims against the answer; the case's question, answer and reference weigh the
 *    terms), its metrics from `src/metrics/claims.ts`. Printed overall and per domain, then a
 *    leave-one-domain-out check of the model's three tuned constants (the entailment threshold, the
 *    best sentence's share of the support, the question terms' weight): each is refitted on four
 *    domains (the grid value maximising the mean of the three r), the fifth scored with them.
 * 2. **ExpertQA** (`expertqa-dev/`: 926 claims with the evidence their answer cited, and an expert's
 *    "Complete" support label): balanced accuracy of faithfulness ≥ 0.5 (the claim's clauses entailed
 *    by some cited passage) against the label, with the true-positive and true-negative rates, apart
 *    for the claims whose evidence is a URL only (no passage text to check against). Then the checker
 *    against the word-share baseline on equal terms: AUC of each (threshold-free), and word share's
 *    balanced accuracy at its in-sample best threshold (the data README's 0.552 is that kind of
 *    figure) beside the same with its threshold cross-validated over the questions (5 folds, every
 *    claim of a question in one fold) — the checker's own threshold was never tuned on ExpertQA. And
 *    the spread over the six answering systems (the split carries no field label).
 * 3. **Ablation**: every figure again with one feature of the model removed at a time.
 * 4. **Throughput**: cases per CPU-second of one process (the target's measure: the machine is
 *    shared, so the wall clock also counts other processes' turns; it is printed beside), a case
 *    being the full RAGChecker set of checks — extract the answer's and the reference's claims, check the answer's against the reference and
 *    each context, the reference's against the answer and each context — on generated cases, and
 *    when the data is here on the RAGChecker cases and ExpertQA claims as they are and on the
 *    RAGChecker cases with five ExpertQA passages each as contexts (the heaviest shape).
 *
 * Without the data directory the quality figures are skipped, saying so; throughput always runs.
 * `BENCH_CLAIMS_QUALITY=0` skips the quality figures (1–3) and runs the throughput alone, on the
 * data's cases too when it is there (for iterating on speed).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { type CaseTexts, checkClaims, type ClaimModel, DEFAULT_MODEL } from "../src/judges/claims/Check.js"
import { extractClaims, type ExtractOptions } from "../src/judges/claims/Extract.js"
import { TermBag, terms } from "../src/judges/Terms.js"
import { type CaseVerdicts, claimF1, claimPrecision, claimRecall, faithfulness } from "../src/metrics/claims.js"
import { rowGenerator } from "./gen.js"
import type { Printer } from "./timed.js"

const here = Path.dirname(fileURLToPath(import.meta.url))
export const defaultDataDir = Path.resolve(here, "..", "..", "shared", "data")

/** An answer's claims against its retrieved (ExpertQA: cited) passages are grounding checks, as the pipeline makes them. */
const GROUNDING = { grounding: true } as const
const GOLD = { gold: true } as const
/** A reference's claims are gold claims, as the pipeline checks them. */

export const TARGETS = {
  /** Pearson r of per-pair deltas: precision ~ correctness, recall ~ completeness, F1 ~ overall. */
  pearson: 0.55,
  expertQaBalancedAccuracy: 0.58,
  casesPerSecond: 2_000
} as const

/** Published figures on the same 140 pairs (the data's README) and on a comparable ExpertQA set. */
export const REFERENCES = {
  ragChecker70b: { precision: 0.389, recall: 0.649, f1: 0.638 },
  tokenOverlap: { precision: 0.352, recall: 0.64, f1: 0.607 },
  humans: { precision: 0.682, recall: 0.721, f1: 0.746 },
  expertQa: { gpt4o: 0.596, wordShare: 0.552 }
} as const

// ---------------------------------------------------------------------------------------------
// Data

const readJsonl = (file: string): Array<any> =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l))

export interface RagCheckerCase {
  readonly id: string
  readonly question: string
  readonly reference: string
  readonly answer: string
  readonly domain: string
}
export interface RagCheckerPair {
  readonly domain: string
  readonly cases: readonly [string, string]
  readonly annotators: ReadonlyArray<
    { readonly correctness: number; readonly completeness: number; readonly overall: number }
  >
}
export interface RagCheckerData {
  readonly cases: ReadonlyArray<RagCheckerCase>
  readonly pairs: ReadonlyArray<RagCheckerPair>
}

export const ragCheckerPresent = (dataDir = defaultDataDir): boolean =>
  fs.existsSync(Path.join(dataDir, "ragchecker-dev", "cases.jsonl")) &&
  fs.existsSync(Path.join(dataDir, "ragchecker-dev", "human-labels.jsonl"))

export const readRagChecker = (dataDir = defaultDataDir): RagCheckerData => {
  const dir = Path.join(dataDir, "ragchecker-dev")
  const cases = readJsonl(Path.join(dir, "cases.jsonl")).map((c) => ({
    id: c.id,
    question: c.question,
    reference: c.reference,
    answer: c.answer,
    domain: c.domain
  }))
  const pairs = readJsonl(Path.join(dir, "human-labels.jsonl")).map((p) => ({
    domain: p.dataset,
    cases: [p.cases[0], p.cases[1]] as const,
    annotators: p.annotators.map((a: any) => ({
      correctness: a.correctness_label,
      completeness: a.completeness_label,
      overall: a.overall_label
    }))
  }))
  return { cases, pairs }
}

export interface ExpertQaClaim {
  readonly id: string
  readonly question: string
  readonly answer: string
  readonly contexts: ReadonlyArray<string>
  readonly complete: boolean
}

export const expertQaPresent = (dataDir = defaultDataDir): boolean =>
  fs.existsSync(Path.join(dataDir, "expertqa-dev", "claims.jsonl")) &&
  fs.existsSync(Path.join(dataDir, "expertqa-dev", "labels.json"))

export const readExpertQa = (dataDir = defaultDataDir): ReadonlyArray<ExpertQaClaim> => {
  const dir = Path.join(dataDir, "expertqa-dev")
  const labels: Record<string, number> = JSON.parse(fs.readFileSync(Path.join(dir, "labels.json"), "utf8"))
  return readJsonl(Path.join(dir, "claims.jsonl")).map((c) => ({
    id: c.id,
    question: c.question,
    answer: c.answer,
    contexts: c.contexts,
    complete: labels[c.id] === 1
  }))
}

// ---------------------------------------------------------------------------------------------
// Statistics

export const pearson = (x: ReadonlyArray<number>, y: ReadonlyArray<number>): number => {
  const n = x.length
  let mx = 0
  let my = 0
  for (let i = 0; i < n; i++) {
    mx += x[i]!
    my += y[i]!
  }
  mx /= n
  my /= n
  let sxy = 0
  let sxx = 0
  let syy = 0
  for (let i = 0; i < n; i++) {
    sxy += (x[i]! - mx) * (y[i]! - my)
    sxx += (x[i]! - mx) ** 2
    syy += (y[i]! - my) ** 2
  }
  return sxx === 0 || syy === 0 ? Number.NaN : sxy / Math.sqrt(sxx * syy)
}

const median = (xs: ReadonlyArray<number>): number => {
  if (xs.length === 0) return 0
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

// ---------------------------------------------------------------------------------------------
// RAGChecker's meta-evaluation

export type Metric = "precision" | "recall" | "f1"
export const METRICS: ReadonlyArray<Metric> = ["precision", "recall", "f1"]
const LABEL_OF = { precision: "correctness", recall: "completeness", f1: "overall" } as const

export type CaseMetrics = ReadonlyMap<string, Readonly<Record<Metric, number | null>>>

export interface ModelSetup {
  readonly model?: ClaimModel | undefined
  readonly extract?: ExtractOptions | undefined
  /** F1 as null (not 0) when precision is null, whatever recall is: the ablation of `claimF1`'s zero rule. */
  readonly f1NullWhenPrecisionNull?: boolean | undefined
}

/** Each case's precision, recall and F1 under a model. */
export const ragCheckerMetrics = (data: RagCheckerData, setup: ModelSetup = {}): CaseMetrics => {
  const out = new Map<string, Record<Metric, number | null>>()
  for (const c of data.cases) {
    const texts: CaseTexts = { question: c.question, answer: c.answer, reference: c.reference }
    const answerClaims = extractClaims(c.answer, setup.extract)
    const referenceClaims = extractClaims(c.reference, setup.extract)
    const v: CaseVerdicts = {
      answerVsReference: checkClaims(answerClaims, c.reference, texts, setup.model).map((x) => x.verdict),
      referenceVsAnswer: checkClaims(referenceClaims, c.answer, texts, setup.model, GOLD).map((x) => x.verdict)
    }
    const precision = claimPrecision(v)
    out.set(c.id, {
      precision,
      recall: claimRecall(v),
      f1: setup.f1NullWhenPrecisionNull === true && precision === null ? null : claimF1(v)
    })
  }
  return out
}

/** The paper's protocol on the pairs of `domains` (all when undefined): r of the metric's deltas against its human label. */
export const pearsonOfDeltas = (
  data: RagCheckerData,
  metrics: CaseMetrics,
  metric: Metric,
  domains?: ReadonlySet<string>
): number => {
  const pairs = data.pairs.filter((p) => domains === undefined || domains.has(p.domain))
  const deltas = pairs.map((p) => {
    const a = metrics.get(p.cases[0])?.[metric] ?? null
    const b = metrics.get(p.cases[1])?.[metric] ?? null
    return a === null || b === null ? Number.NaN : b - a
  })
  const fill = median(deltas.filter((d) => !Number.isNaN(d)))
  const x: Array<number> = []
  const y: Array<number> = []
  pairs.forEach((p, i) => {
    for (const a of p.annotators) {
      x.push(Number.isNaN(deltas[i]!) ? fill : deltas[i]!)
      y.push(a[LABEL_OF[metric]])
    }
  })
  return pearson(x, y)
}

export type Correlations = Readonly<Record<Metric, number>>

export const correlations = (
  data: RagCheckerData,
  metrics: CaseMetrics,
  domains?: ReadonlySet<string>
): Correlations => ({
  precision: pearsonOfDeltas(data, metrics, "precision", domains),
  recall: pearsonOfDeltas(data, metrics, "recall", domains),
  f1: pearsonOfDeltas(data, metrics, "f1", domains)
})

export const domainsOf = (data: RagCheckerData): ReadonlyArray<string> => [...new Set(data.pairs.map((p) => p.domain))]

/** The grid of the leave-one-domain-out check: the model's three tuned constants. */
export const GRID = {
  entailAt: [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6],
  sentenceShare: [0, 0.3, 0.5, 0.7, 1],
  questionWeight: [0.25, 0.5, 1]
} as const

export interface HeldOut {
  readonly domain: string
  readonly chosen: Pick<ClaimModel, "entailAt" | "sentenceShare" | "questionWeight">
  readonly heldOut: Correlations
  /** The shipped model on the same domain. */
  readonly shipped: Correlations
}

const mean3 = (c: Correlations) => (c.precision + c.recall + c.f1) / 3

/**
 * Leave one domain out: for each domain, the grid point maximising the mean r (precision, recall,
 * F1) on the other four, scored on the held-out one. `pooled`: every held-out case's metrics (each
 * from its fold's model) put together and scored as one set.
 */
export const leaveOneDomainOut = (
  data: RagCheckerData,
  base: ClaimModel = DEFAULT_MODEL
): { readonly folds: ReadonlyArray<HeldOut>; readonly pooled: Correlations } => {
  const grid: Array<{ readonly params: HeldOut["chosen"]; readonly metrics: CaseMetrics }> = []
  for (const entailAt of GRID.entailAt) {
    for (const sentenceShare of GRID.sentenceShare) {
      for (const questionWeight of GRID.questionWeight) {
        const params = { entailAt, sentenceShare, questionWeight }
        grid.push({ params, metrics: ragCheckerMetrics(data, { model: { ...base, ...params } }) })
      }
    }
  }
  const shippedMetrics = ragCheckerMetrics(data, { model: base })
  const domains = domainsOf(data)
  const pooledMetrics = new Map<string, Record<Metric, number | null>>()
  const folds = domains.map((domain) => {
    const train = new Set(domains.filter((d) => d !== domain))
    let best = grid[0]!
    let bestScore = -Infinity
    for (const g of grid) {
      const score = mean3(correlations(data, g.metrics, train))
      if (score > bestScore) {
        bestScore = score
        best = g
      }
    }
    const test = new Set([domain])
    for (const c of data.cases) if (c.domain === domain) pooledMetrics.set(c.id, { ...best.metrics.get(c.id)! })
    return {
      domain,
      chosen: best.params,
      heldOut: correlations(data, best.metrics, test),
      shipped: correlations(data, shippedMetrics, test)
    }
  })
  return { folds, pooled: correlations(data, pooledMetrics) }
}

// ---------------------------------------------------------------------------------------------
// ExpertQA

/** A context with no passage text: its citation marker and URL only. */
const urlOnly = (context: string): boolean => context.replace(/^\s*\[\d+\]\s*\S+/, "").trim() === ""

export interface Rates {
  readonly claims: number
  readonly balancedAccuracy: number
  readonly truePositiveRate: number
  readonly trueNegativeRate: number
  /** Share predicted complete. */
  readonly predictedComplete: number
}

const rates = (rows: ReadonlyArray<{ readonly complete: boolean; readonly predicted: boolean }>): Rates => {
  let tp = 0
  let p = 0
  let tn = 0
  let n = 0
  for (const r of rows) {
    if (r.complete) {
      p++
      if (r.predicted) tp++
    } else {
      n++
      if (!r.predicted) tn++
    }
  }
  const tpr = p === 0 ? Number.NaN : tp / p
  const tnr = n === 0 ? Number.NaN : tn / n
  return {
    claims: p + n,
    balancedAccuracy: (tpr + tnr) / 2,
    truePositiveRate: tpr,
    trueNegativeRate: tnr,
    predictedComplete: (tp + n - tn) / Math.max(1, p + n)
  }
}

export interface ExpertQaFigures {
  readonly all: Rates
  readonly withPassages: Rates
  readonly urlOnly: Rates
}

/** Faithfulness of each claim (its clauses against every cited context) ≥ 0.5, against the experts' "Complete". */
export const expertQaFigures = (claims: ReadonlyArray<ExpertQaClaim>, setup: ModelSetup = {}): ExpertQaFigures => {
  const rows = claims.map((c) => {
    const texts: CaseTexts = { question: c.question, answer: c.answer, contexts: c.contexts }
    const answerClaims = extractClaims(c.answer, setup.extract)
    const v: CaseVerdicts = {
      answerVsContexts: c.contexts.map((ctx) =>
        checkClaims(answerClaims, ctx, texts, setup.model, GROUNDING).map((x) => x.verdict)
      )
    }
    return { complete: c.complete, predicted: (faithfulness(v) ?? 0) >= 0.5, url: c.contexts.every(urlOnly) }
  })
  return {
    all: rates(rows),
    withPassages: rates(rows.filter((r) => !r.url)),
    urlOnly: rates(rows.filter((r) => r.url))
  }
}

/** The answering system of an ExpertQA claim, from its id ("q12-rr_gs_gpt4-c3" → "rr_gs_gpt4"). */
export const systemOf = (c: ExpertQaClaim): string => c.id.split("-").slice(1, -1).join("-")
/** The question of an ExpertQA claim, from its id ("q12-rr_gs_gpt4-c3" → "q12"). */
const questionOf = (c: ExpertQaClaim): string => c.id.split("-")[0]!

/**
 * Area under the ROC curve of a score against a label: the chance that a random "Complete" claim
 * scores above a random other one (ties count ½). Threshold-free, so a judge and a baseline whose
 * thresholds were chosen differently compare fairly.
 */
export const auc = (scores: ReadonlyArray<number>, labels: ReadonlyArray<boolean>): number => {
  const order = scores.map((s, i) => i).sort((a, b) => scores[a]! - scores[b]!)
  // Mann–Whitney: sum of the positives' mid-ranks.
  let rankSum = 0
  let positives = 0
  for (let i = 0; i < order.length;) {
    let j = i
    while (j + 1 < order.length && scores[order[j + 1]!] === scores[order[i]!]) j++
    const midRank = (i + j) / 2 + 1
    for (let k = i; k <= j; k++) {
      if (labels[order[k]!]) {
        rankSum += midRank
        positives++
      }
    }
    i = j + 1
  }
  const negatives = order.length - positives
  return positives === 0 || negatives === 0
    ? Number.NaN
    : (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives)
}

const balancedAccuracyAt = (scores: ReadonlyArray<number>, labels: ReadonlyArray<boolean>, threshold: number): number =>
  rates(scores.map((s, i) => ({ complete: labels[i]!, predicted: s >= threshold }))).balancedAccuracy

/** The threshold (among the scores) with the best balanced accuracy, and that accuracy: an in-sample optimum. */
export const bestThreshold = (
  scores: ReadonlyArray<number>,
  labels: ReadonlyArray<boolean>
): { readonly threshold: number; readonly balancedAccuracy: number } => {
  let best = { threshold: Number.POSITIVE_INFINITY, balancedAccuracy: 0.5 }
  for (const t of [...new Set(scores)].sort((a, b) => a - b)) {
    const ba = balancedAccuracyAt(scores, labels, t)
    if (ba > best.balancedAccuracy) best = { threshold: t, balancedAccuracy: ba }
  }
  return best
}

/**
 * Balanced accuracy with the threshold cross-validated: the questions are dealt into `folds` groups
 * (all claims of a question in one group); each group is scored with the threshold best on the
 * others, and the held-out predictions are pooled — what a threshold tuned on data would reach on
 * questions it has not seen.
 */
export const crossValidatedBalancedAccuracy = (
  scores: ReadonlyArray<number>,
  labels: ReadonlyArray<boolean>,
  groups: ReadonlyArray<string>,
  folds = 5
): number => {
  const distinct = [...new Set(groups)].sort()
  const foldOf = new Map(distinct.map((g, i) => [g, i % folds]))
  const predicted: Array<boolean> = new Array(scores.length).fill(false)
  for (let f = 0; f < folds; f++) {
    const train = scores.flatMap((s, i) => (foldOf.get(groups[i]!) === f ? [] : [i]))
    const { threshold } = bestThreshold(train.map((i) => scores[i]!), train.map((i) => labels[i]!))
    scores.forEach((s, i) => {
      if (foldOf.get(groups[i]!) === f) predicted[i] = s >= threshold
    })
  }
  return rates(labels.map((complete, i) => ({ complete, predicted: predicted[i]! }))).balancedAccuracy
}

/** The cited passages' text: each context without its marker and URL. */
const passageText = (contexts: ReadonlyArray<string>): string =>
  contexts.map((c) => c.replace(/^\s*\[\d+\]\s*\S+/, "")).join("\n")

/** The baseline: the share of the claim's content terms (soft match) found in its cited passages. */
export const wordShare = (c: ExpertQaClaim): number => {
  const claim = terms(c.answer.replace(/\[\d+\]/g, ""))
  if (claim.length === 0) return 0
  const bag = new TermBag(terms(passageText(c.contexts)))
  return claim.filter((t) => bag.has(t)).length / claim.length
}

export interface ExpertQaComparison {
  /** The checker's faithfulness (a score 0..1) as a ranking: AUC, and balanced accuracy at the pipeline's fixed 0.5. */
  readonly checker: { readonly auc: number; readonly balancedAccuracy: number }
  /** Word share: AUC, balanced accuracy at its in-sample best threshold, and with the threshold cross-validated by question. */
  readonly wordShare: {
    readonly auc: number
    readonly best: { readonly threshold: number; readonly balancedAccuracy: number }
    readonly crossValidated: number
  }
  /** The checker per answering system (ExpertQA's validation split has no field label; the system is the spread it has). */
  readonly bySystem: ReadonlyArray<{ readonly system: string; readonly rates: Rates; readonly urlOnly: number }>
}

/** The checker against the word-share baseline on equal terms, and its spread over the answering systems. */
export const expertQaComparison = (
  claims: ReadonlyArray<ExpertQaClaim>,
  setup: ModelSetup = {}
): ExpertQaComparison => {
  const faith = claims.map((c) => {
    const texts: CaseTexts = { question: c.question, answer: c.answer, contexts: c.contexts }
    const answerClaims = extractClaims(c.answer, setup.extract)
    const v: CaseVerdicts = {
      answerVsContexts: c.contexts.map((ctx) =>
        checkClaims(answerClaims, ctx, texts, setup.model, GROUNDING).map((x) => x.verdict)
      )
    }
    return faithfulness(v) ?? 0
  })
  const labels = claims.map((c) => c.complete)
  const share = claims.map(wordShare)
  const systems = [...new Set(claims.map(systemOf))].sort()
  return {
    checker: { auc: auc(faith, labels), balancedAccuracy: balancedAccuracyAt(faith, labels, 0.5) },
    wordShare: {
      auc: auc(share, labels),
      best: bestThreshold(share, labels),
      crossValidated: crossValidatedBalancedAccuracy(share, labels, claims.map(questionOf))
    },
    bySystem: systems.map((system) => {
      const idx = claims.flatMap((c, i) => (systemOf(c) === system ? [i] : []))
      return {
        system,
        rates: rates(idx.map((i) => ({ complete: labels[i]!, predicted: faith[i]! >= 0.5 }))),
        urlOnly: idx.filter((i) => claims[i]!.contexts.every(urlOnly)).length / idx.length
      }
    })
  }
}

// ---------------------------------------------------------------------------------------------
// Ablation

export interface Variant {
  readonly name: string
  readonly setup: ModelSetup
}

export const ABLATION: ReadonlyArray<Variant> = [
  { name: "shipped model", setup: {} },
  { name: "no clauses (one claim per sentence)", setup: { extract: { clauses: false } } },
  { name: "no case weights (every term 1)", setup: { model: { ...DEFAULT_MODEL, caseWeights: false } } },
  { name: "gold claims weighted within the case too", setup: { model: { ...DEFAULT_MODEL, goldAlike: false } } },
  { name: "question terms weigh 1", setup: { model: { ...DEFAULT_MODEL, questionWeight: 1 } } },
  { name: "whole text only (no best sentence)", setup: { model: { ...DEFAULT_MODEL, sentenceShare: 0 } } },
  { name: "best sentence only (no whole text)", setup: { model: { ...DEFAULT_MODEL, sentenceShare: 1 } } },
  { name: "no number agreement", setup: { model: { ...DEFAULT_MODEL, numbers: false } } },
  { name: "no negation", setup: { model: { ...DEFAULT_MODEL, negation: false } } },
  { name: "no phrases in grounding checks", setup: { model: { ...DEFAULT_MODEL, phraseShare: 0 } } },
  { name: "F1 null when precision is null", setup: { f1NullWhenPrecisionNull: true } }
]

// ---------------------------------------------------------------------------------------------
// Throughput

/** One case as the answer-correctness pipeline would check it, with reference ("" for none) and contexts. */
export interface FullCase {
  readonly question: string
  readonly answer: string
  readonly reference: string
  readonly contexts: ReadonlyArray<string>
}

/** Generated cases: an answer of 3–9 sentences, a reference of 6, five contexts of 1–3 sentences (bench/gen.ts's sentences). */
export const generatedCases = (n: number, seed = 2024): ReadonlyArray<FullCase> => {
  const next = rowGenerator(seed)
  const fragments = (row: Record<string, string>) =>
    row["Fragment Texts"]!.split("\\n").map((f) => f.replace(/^\d+\.\s*/, ""))
  return Array.from({ length: n }, () => {
    const rows = [next(), next(), next()]
    return {
      question: rows[0]!["Current User Question"]!,
      answer: rows.map((r) => r["Assistant Answer"]!).join(" "),
      reference: [...fragments(rows[0]!), ...fragments(rows[1]!)].join(" "),
      contexts: [...fragments(rows[1]!), ...fragments(rows[2]!)].slice(0, 5)
    }
  })
}

/** The RAGChecker cases with five ExpertQA passages each (in turn) as contexts. */
export const realCases = (data: RagCheckerData, claims: ReadonlyArray<ExpertQaClaim>): ReadonlyArray<FullCase> => {
  const passages = claims.flatMap((c) => c.contexts).filter((c) => !urlOnly(c))
  return data.cases.map((c, i) => ({
    question: c.question,
    answer: c.answer,
    reference: c.reference,
    contexts: Array.from({ length: 5 }, (_, k) => passages[(i * 5 + k) % passages.length]!)
  }))
}

/** Every check of one case; returns the number of verdicts (so the work cannot be skipped). */
export const checkCase = (c: FullCase): number => {
  const texts: CaseTexts = c
  const answerClaims = extractClaims(c.answer)
  const referenceClaims = extractClaims(c.reference)
  // A case without a reference (ExpertQA's) has no precision or recall checks.
  let verdicts = c.reference === ""
    ? 0
    : checkClaims(answerClaims, c.reference, texts).length +
      checkClaims(referenceClaims, c.answer, texts, DEFAULT_MODEL, GOLD).length
  for (const ctx of c.contexts) {
    verdicts += checkClaims(answerClaims, ctx, texts, DEFAULT_MODEL, GROUNDING).length +
      checkClaims(referenceClaims, ctx, texts, DEFAULT_MODEL, GOLD).length
  }
  return verdicts
}

/**
 * Cases/s: every case checked repeatedly for about `seconds` after one untimed pass. Each pass
 * checks new case objects, so the case statistics (kept per object) are computed again, as a run
 * computes them once per case; the texts' readings are cached by content in a cache of 64, which
 * the thousands of cases between two visits of a case empty.
 */
export const casesPerSecond = (
  cases: ReadonlyArray<FullCase>,
  seconds = 3
): { readonly perSecond: number; readonly perCpuSecond: number; readonly verdictsPerCase: number } => {
  const fresh = () => cases.map((c) => ({ ...c }))
  let verdicts = 0
  for (const c of fresh()) verdicts += checkCase(c)
  const verdictsPerCase = verdicts / cases.length
  let done = 0
  const cpu = process.cpuUsage()
  const start = performance.now()
  while (performance.now() - start < seconds * 1000) {
    for (const c of fresh()) checkCase(c)
    done += cases.length
  }
  const wallMs = performance.now() - start
  const used = process.cpuUsage(cpu)
  return {
    perSecond: (done * 1000) / wallMs,
    perCpuSecond: (done * 1e6) / Math.max(1, used.user + used.system),
    verdictsPerCase
  }
}

// ---------------------------------------------------------------------------------------------
// Printing

const f3 = (x: number) => (Number.isNaN(x) ? "n/a" : x.toFixed(3))
const pad = (s: string, n: number) => s.padEnd(n)

const consolePrinter: Printer = {
  line: (text = "") => console.log(text),
  figure: (name, value, target, ok) =>
    console.log(`  ${name}: ${value}   (target ${target}) ${ok ? "ok" : "below target"}`)
}

/** Everything above, printed; quality figures only where the data is. */
export const printClaimFigures = (dataDir: string = defaultDataDir, out: Printer = consolePrinter): void => {
  const { line, figure } = out
  const rag = ragCheckerPresent(dataDir) ? readRagChecker(dataDir) : undefined
  const eqa = expertQaPresent(dataDir) ? readExpertQa(dataDir) : undefined
  const quality = process.env["BENCH_CLAIMS_QUALITY"] !== "0"

  if (!quality) line("  Quality figures skipped (BENCH_CLAIMS_QUALITY=0): throughput only")
  else if (rag === undefined) {
    line(
      `  RAGChecker meta-evaluation skipped: ${
        Path.join(dataDir, "ragchecker-dev")
      } is not here (it ships beside the repository in ../shared/data)`
    )
  } else {
    const r = correlations(rag, ragCheckerMetrics(rag))
    const ref = REFERENCES
    line(
      `  RAGChecker meta-evaluation (${rag.pairs.length} pairs, ${
        domainsOf(rag).length
      } domains): Pearson r of per-pair deltas against the human labels`
    )
    figure(
      "claim precision ~ correctness",
      f3(r.precision),
      `≥ ${TARGETS.pearson} (Llama-3-70B ${ref.ragChecker70b.precision}, token overlap ${ref.tokenOverlap.precision})`,
      r.precision >= TARGETS.pearson
    )
    figure(
      "claim recall ~ completeness",
      f3(r.recall),
      `≥ ${TARGETS.pearson} (Llama-3-70B ${ref.ragChecker70b.recall}, token overlap ${ref.tokenOverlap.recall})`,
      r.recall >= TARGETS.pearson
    )
    figure(
      "claim F1 ~ overall",
      f3(r.f1),
      `≥ ${TARGETS.pearson} (Llama-3-70B ${ref.ragChecker70b.f1}, token overlap ${ref.tokenOverlap.f1})`,
      r.f1 >= TARGETS.pearson
    )
    line(`    two annotators agree at ${ref.humans.precision} / ${ref.humans.recall} / ${ref.humans.f1}`)
    const shipped = ragCheckerMetrics(rag)
    line(`    per domain (precision / recall / F1): ${
      domainsOf(rag).map((d) => {
        const c = correlations(rag, shipped, new Set([d]))
        return `${d} ${f3(c.precision)}/${f3(c.recall)}/${f3(c.f1)}`
      }).join(" · ")
    }`)
    const cv = leaveOneDomainOut(rag)
    line(
      `    leave one domain out (entailment threshold, best-sentence share, question weight refitted on the other four; ${
        GRID.entailAt.length * GRID.sentenceShare.length * GRID.questionWeight.length
      } grid points):`
    )
    for (const f of cv.folds) {
      line(
        `      ${
          pad(f.domain, 20)
        } chose ${f.chosen.entailAt}/${f.chosen.sentenceShare}/${f.chosen.questionWeight}: held out ${
          f3(f.heldOut.precision)
        }/${f3(f.heldOut.recall)}/${f3(f.heldOut.f1)} (shipped ${f3(f.shipped.precision)}/${f3(f.shipped.recall)}/${
          f3(f.shipped.f1)
        })`
      )
    }
    line(
      `      all held-out cases together: ${f3(cv.pooled.precision)} / ${f3(cv.pooled.recall)} / ${f3(cv.pooled.f1)}`
    )
  }

  if (!quality) {
    // Said above.
  } else if (eqa === undefined) line(`  ExpertQA skipped: ${Path.join(dataDir, "expertqa-dev")} is not here`)
  else {
    const e = expertQaFigures(eqa)
    const rate = (r: Rates) =>
      `balanced accuracy ${f3(r.balancedAccuracy)} (TPR ${f3(r.truePositiveRate)}, TNR ${f3(r.trueNegativeRate)}, ${
        (100 * r.predictedComplete).toFixed(0)
      }% predicted complete, ${r.claims} claims)`
    line(
      `  ExpertQA (${eqa.length} claims, ${
        (100 * eqa.filter((c) => c.complete).length / eqa.length).toFixed(1)
      }% "Complete"): faithfulness ≥ 0.5 against the experts' label`
    )
    figure(
      "balanced accuracy",
      f3(e.all.balancedAccuracy),
      `≥ ${TARGETS.expertQaBalancedAccuracy} (GPT-4o ${REFERENCES.expertQa.gpt4o}; word share ${REFERENCES.expertQa.wordShare} at its in-sample best threshold)`,
      e.all.balancedAccuracy >= TARGETS.expertQaBalancedAccuracy
    )
    line(`    claims with passage text: ${rate(e.withPassages)}`)
    line(`    claims whose evidence is a URL only: ${rate(e.urlOnly)}`)
    const cmp = expertQaComparison(eqa)
    line(
      `    on equal terms with the word-share baseline (the checker's threshold was not tuned here): AUC ${
        f3(cmp.checker.auc)
      } (word share ${f3(cmp.wordShare.auc)});`
    )
    line(
      `      word share's balanced accuracy ${
        f3(cmp.wordShare.best.balancedAccuracy)
      } at its in-sample best threshold ${f3(cmp.wordShare.best.threshold)}, ${
        f3(cmp.wordShare.crossValidated)
      } with the threshold chosen on the other questions (5 folds)`
    )
    line(
      `    per answering system (the split has no field label): ${
        cmp.bySystem.map((s) =>
          `${s.system} ${f3(s.rates.balancedAccuracy)} (${s.rates.claims}${
            s.urlOnly > 0 ? `, ${(100 * s.urlOnly).toFixed(0)}% URL only` : ""
          })`
        ).join(" · ")
      }`
    )
  }

  if (quality && rag !== undefined && eqa !== undefined) {
    line(
      `  Ablation (one feature removed at a time): precision / recall / F1 r on RAGChecker · ExpertQA balanced accuracy`
    )
    for (const v of ABLATION) {
      const r = correlations(rag, ragCheckerMetrics(rag, v.setup))
      const e = expertQaFigures(eqa, v.setup)
      line(`    ${pad(v.name, 40)} ${f3(r.precision)} / ${f3(r.recall)} / ${f3(r.f1)} · ${f3(e.all.balancedAccuracy)}`)
    }
  }

  const shapes: Array<{ readonly name: string; readonly cases: ReadonlyArray<FullCase>; readonly target: boolean }> = [
    { name: "generated cases (answer, reference, 5 contexts)", cases: generatedCases(2_000), target: true }
  ]
  if (rag !== undefined) {
    shapes.push({
      name: "RAGChecker cases as they are (answer, reference)",
      cases: rag.cases.map((c) => ({ question: c.question, answer: c.answer, reference: c.reference, contexts: [] })),
      target: true
    })
  }
  if (eqa !== undefined) {
    shapes.push({
      name: "ExpertQA claims as they are (claim, cited passages)",
      cases: eqa.map((c) => ({ question: c.question, answer: c.answer, reference: "", contexts: c.contexts })),
      target: false
    })
  }
  if (rag !== undefined && eqa !== undefined) {
    shapes.push({ name: "RAGChecker cases + 5 ExpertQA passages each", cases: realCases(rag, eqa), target: false })
  }
  line(
    `  Throughput, one process (load average ${
      os.loadavg()[0]!.toFixed(1)
    } on ${os.cpus().length} cores: other processes slow every figure)`
  )
  for (const shape of shapes) {
    const r = casesPerSecond(shape.cases)
    const value = `${Math.round(r.perCpuSecond).toLocaleString("en-US")} per CPU-second (${
      (1e6 / r.perCpuSecond).toFixed(0)
    } µs of CPU a case, GC threads included; ${Math.round(r.perSecond).toLocaleString("en-US")}/s by the wall clock; ${
      wordsPerCase(shape.cases).toFixed(0)
    } words and ${r.verdictsPerCase.toFixed(0)} verdicts a case)`
    // The target is judged on CPU time: the machine is shared, and the wall clock measures the other processes too.
    if (shape.target) {
      figure(
        `cases/s, ${shape.name}`,
        value,
        `≥ ${TARGETS.casesPerSecond.toLocaleString("en-US")} per CPU-second`,
        r.perCpuSecond >= TARGETS.casesPerSecond
      )
    } else line(`    cases/s, ${shape.name}: ${value}`)
  }
}

const wordsPerCase = (cases: ReadonlyArray<FullCase>): number => {
  let words = 0
  for (const c of cases) {
    for (const t of [c.question, c.answer, c.reference, ...c.contexts]) {
      words += t.split(/\s+/).filter((w) => w !== "").length
    }
  }
  return words / Math.max(1, cases.length)
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? defaultDataDir
  console.log(
    `[11] The heuristic claim model (src/judges/claims/) against human judgments (${dir}), and its throughput`
  )
  printClaimFigures(dir)
}
