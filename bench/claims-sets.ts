/**
 * The labelled sets the heuristic claim checker is chosen and measured on, read from disk, each with
 * its figure for a judge and for plain word overlap. Six sets of different kinds:
 *
 * | set | what a case is | human label | judge's figure | word overlap's figure |
 * |---|---|---|---|---|
 * | `ragchecker` | a pair of answers to one question, each with the reference | correctness / completeness / overall preference, −2…+2 | Pearson r of the per-pair deltas of claim precision / recall / F1 (RAGChecker's meta_eval) | the same with token-overlap precision / recall / F1 against the reference |
 * | `expertqa` | a claim and the passages its answer cited | "Complete" support | balanced accuracy of faithfulness ≥ 0.5; AUC | balanced accuracy of the claim's word share at its best threshold (in sample: generous); AUC |
 * | `wice` | a Wikipedia claim and the sentences its citation holds (oracle chunks) | "supported" (not partially / not) | as ExpertQA | as ExpertQA |
 * | `halueval` | a question, its knowledge passage and an answer, right or hallucinated | hallucinated | AUC of a hallucination score (`ungrounded`, 1 − faithfulness or `unsupportedClaims`) | AUC of 1 − the answer's word share in the knowledge |
 * | `faithbench`, `frank` | a summary and its source | hallucinated (`readFaithBench`, `readFrank`) | as HaluEval | as HaluEval |
 *
 * Where the data comes from (research data, never copied into the repository):
 * - `ragchecker`, `expertqa`: `../shared/data/ragchecker-dev`, `../shared/data/expertqa-dev` (their READMEs).
 * - `wice`: github.com/ryokamoi/wice at commit ddeb6c183665e2a20c5f03c5aa07f03888b9870f, file
 *   `code_and_resources/entailment_inputs/oracle_chunks/claim/dev.jsonl` (the dev split; the test split
 *   is not used), saved as `<dir>/wice/claim-dev.jsonl`. Annotations ODC-BY, texts from Wikipedia
 *   (CC BY-SA) and Common Crawl. 1,043 rows: 349 claims, each with up to three oracle chunks (the
 *   annotators' supporting sentences plus random sentences of the same article). A claim's chunks are
 *   its contexts, so faithfulness counts a clause supported by any of them (the maximum the README
 *   asks for). Label: "supported" = 1; "partially_supported", "not_supported" = 0.
 * - `halueval`: github.com/RUCAIBox/HaluEval at commit b7253db3cdaa0ab2c382f92b26b390109174f77e (MIT),
 *   files `generation/qa/qa_one-turn_data.json` and `generation/qa/qa_multi-turn_data.json` (JSON
 *   lines: `knowledge`, `question`, `right_answer`, `hallucinated_answer`; the same 500 HotpotQA
 *   questions with a hallucinated answer from each of the two generation schemes), saved under
 *   `<dir>/halueval/`. Cases: each question's right answer (label 0) and its two hallucinated answers
 *   (label 1), the knowledge as the one context: 1,500 answers.
 *
 * - `faithbench`, `frank`: `<dir>/faithbench/batch_*.json` (FaithBench; CC BY-NC-SA 4.0) and
 *   `<dir>/frank/` (`human_annotations.json`, `validation_split.txt`, `articles/`); the repositories and
 *   commits they were fetched from were not recorded when they were added.
 *
 * Re-fetch: clone the two repositories at those commits and copy the files (`git show
 * <commit>:<path> > <dir>/<set>/<name>`); `<dir>` defaults to `../data-heur` beside the repository
 * (`BENCH_EXTRA_DATA` or the second argument of the scripts overrides it).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import {
  auc,
  bestThreshold,
  defaultDataDir,
  type ExpertQaClaim,
  expertQaPresent,
  pearson,
  type RagCheckerData,
  ragCheckerPresent,
  readExpertQa,
  readRagChecker
} from "./claims.js"

const here = Path.dirname(fileURLToPath(import.meta.url))
export const defaultExtraDir = process.env["BENCH_EXTRA_DATA"] ?? Path.resolve(here, "..", "..", "data-heur")

/** A claim against the texts that should support it, with a binary human label (ExpertQA, WiCE). */
export interface SupportCase {
  readonly id: string
  readonly question: string
  readonly claim: string
  readonly contexts: ReadonlyArray<string>
  readonly supported: boolean
}

/** An answer with its grounding passages and whether it is hallucinated (HaluEval). */
export interface HallucinationCase {
  readonly id: string
  readonly question: string
  readonly answer: string
  readonly contexts: ReadonlyArray<string>
  readonly hallucinated: boolean
}

export interface LabelledSets {
  readonly ragchecker?: RagCheckerData | undefined
  readonly expertqa?: ReadonlyArray<SupportCase> | undefined
  readonly wice?: ReadonlyArray<SupportCase> | undefined
  readonly halueval?: ReadonlyArray<HallucinationCase> | undefined
  readonly faithbench?: ReadonlyArray<HallucinationCase> | undefined
  readonly frank?: ReadonlyArray<HallucinationCase> | undefined
}

export type SetName = "ragchecker" | "expertqa" | "wice" | "halueval" | "faithbench" | "frank"
export const SET_NAMES: ReadonlyArray<SetName> = ["ragchecker", "expertqa", "wice", "halueval", "faithbench", "frank"]
/** The sets whose cases are answers with a hallucinated / not label: their figure is the AUC of a hallucination score. */
export const HALLUCINATION_SETS = ["halueval", "faithbench", "frank"] as const
export type HallucinationSet = typeof HALLUCINATION_SETS[number]
export const isHallucinationSet = (s: SetName): s is HallucinationSet =>
  (HALLUCINATION_SETS as ReadonlyArray<string>).includes(s)

const jsonl = (file: string): Array<any> =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l))

const fromExpertQa = (c: ExpertQaClaim): SupportCase => ({
  id: c.id,
  question: c.question,
  claim: c.answer,
  contexts: c.contexts,
  supported: c.complete
})

export const readWice = (dir: string): ReadonlyArray<SupportCase> | undefined => {
  const file = Path.join(dir, "wice", "claim-dev.jsonl")
  if (!fs.existsSync(file)) return undefined
  const byId = new Map<string, { claim: string; label: string; chunks: Array<string> }>()
  for (const row of jsonl(file)) {
    const id: string = row.meta.id
    const entry = byId.get(id) ??
      { claim: row.claim as string, label: row.label as string, chunks: [] as Array<string> }
    entry.chunks.push((row.evidence as Array<string>).join(" "))
    byId.set(id, entry)
  }
  return [...byId].map(([id, e]) => ({
    id,
    question: "",
    claim: e.claim,
    contexts: e.chunks,
    supported: e.label === "supported"
  }))
}

export const readHaluEval = (dir: string): ReadonlyArray<HallucinationCase> | undefined => {
  const one = Path.join(dir, "halueval", "qa_one-turn_data.json")
  const multi = Path.join(dir, "halueval", "qa_multi-turn_data.json")
  if (!fs.existsSync(one) || !fs.existsSync(multi)) return undefined
  const out: Array<HallucinationCase> = []
  const a = jsonl(one)
  const b = jsonl(multi)
  a.forEach((row, i) => {
    const base = { question: row.question as string, contexts: [row.knowledge as string] }
    out.push({ id: `h${i}-right`, ...base, answer: row.right_answer, hallucinated: false })
    out.push({ id: `h${i}-one`, ...base, answer: row.hallucinated_answer, hallucinated: true })
    const other = b[i]
    if (other !== undefined && other.question === row.question) {
      out.push({ id: `h${i}-multi`, ...base, answer: other.hallucinated_answer, hallucinated: true })
    }
  })
  return out
}

/**
 * FaithBench: each summary a modern LLM wrote of its source, hallucinated when the worst of its
 * annotations is "Unwanted" or "Questionable" (the authors' `binarize.py` default: "worst",
 * hallucinated classes Questionable and Unwanted); "Benign" or none is not.
 */
export const readFaithBench = (dir: string): ReadonlyArray<HallucinationCase> | undefined => {
  const folder = Path.join(dir, "faithbench")
  if (!fs.existsSync(folder)) return undefined
  const batches = fs.readdirSync(folder).filter((f) => /^batch_\d+\.json$/.test(f)).sort()
  return batches.flatMap((file) =>
    (JSON.parse(fs.readFileSync(Path.join(folder, file), "utf8")).samples as Array<any>).map((s) => {
      const labels = new Set<string>((s.annotations as Array<any>).flatMap((a) => a.label as Array<string>))
      return {
        id: `${file.replace(".json", "")}-${s.sample_id}`,
        question: "",
        answer: (s.summary as string).trim(),
        contexts: [s.source as string],
        hallucinated: [...labels].some((l) => l.startsWith("Unwanted") || l === "Questionable")
      }
    })
  )
}

/**
 * FRANK, validation split: the summaries of its CNN/DM and XSum articles, hallucinated when an
 * annotated sentence holds a factual error (`Factuality` < 1).
 */
export const readFrank = (dir: string): ReadonlyArray<HallucinationCase> | undefined => {
  const folder = Path.join(dir, "frank")
  const labels = Path.join(folder, "human_annotations.json")
  if (!fs.existsSync(labels)) return undefined
  const valid = new Set(fs.readFileSync(Path.join(folder, "validation_split.txt"), "utf8").split(/\s+/))
  const articles = new Map<string, any>()
  const article = (hash: string) => {
    if (!articles.has(hash)) {
      articles.set(hash, JSON.parse(fs.readFileSync(Path.join(folder, "articles", `${hash}.json`), "utf8")))
    }
    return articles.get(hash)
  }
  return (JSON.parse(fs.readFileSync(labels, "utf8")) as Array<any>).filter((h) => valid.has(h.hash)).map((h) => ({
    id: `${h.hash}-${h.model_name}`,
    question: "",
    answer: article(h.hash)[h.model_name] as string,
    contexts: [article(h.hash).article as string],
    hallucinated: h.Factuality < 1
  }))
}

export const readSets = (dataDir = defaultDataDir, extraDir = defaultExtraDir): LabelledSets => ({
  ragchecker: ragCheckerPresent(dataDir) ? readRagChecker(dataDir) : undefined,
  expertqa: expertQaPresent(dataDir) ? readExpertQa(dataDir).map(fromExpertQa) : undefined,
  wice: readWice(extraDir),
  halueval: readHaluEval(extraDir),
  faithbench: readFaithBench(extraDir),
  frank: readFrank(extraDir)
})

// ---------------------------------------------------------------------------------------------
// Plain word overlap: lower-cased words, a short stop list (the data README's baseline)

const SHORT_STOP = new Set(
  "a an the of to and or in on at for with by from as is are was were be been it its this that these those".split(" ")
)
export const plainWords = (text: string): Array<string> =>
  (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => !SHORT_STOP.has(w))

/** Share of `a`'s distinct words found in `b`; null when `a` has none. */
export const wordShareOf = (a: string, b: string): number | null => {
  const words = new Set(plainWords(a))
  if (words.size === 0) return null
  const other = new Set(plainWords(b))
  let n = 0
  for (const w of words) if (other.has(w)) n++
  return n / words.size
}

/**
 * Token-overlap precision, recall and F1 of an answer against its reference (distinct ASCII words, an
 * empty side scoring 0): 0.349 / 0.646 / 0.595 on ragchecker-dev, within 0.012 of its README's figures.
 */
export const overlapPrf = (answer: string, reference: string) => {
  const p = wordShareOf(answer, reference) ?? 0
  const r = wordShareOf(reference, answer) ?? 0
  return { precision: p, recall: r, f1: p + r === 0 ? 0 : (2 * p * r) / (p + r) }
}

// ---------------------------------------------------------------------------------------------
// Figures

export const balancedAccuracy = (predicted: ReadonlyArray<boolean>, labels: ReadonlyArray<boolean>): number => {
  let tp = 0
  let p = 0
  let tn = 0
  let n = 0
  labels.forEach((l, i) => {
    if (l) {
      p++
      if (predicted[i]) tp++
    } else {
      n++
      if (!predicted[i]) tn++
    }
  })
  return (tp / Math.max(1, p) + tn / Math.max(1, n)) / 2
}

/** The pair protocol on per-case values of one metric: delta (second − first), the median for a missing one, r against the label. */
export const pairPearson = (
  data: RagCheckerData,
  value: (caseId: string) => number | null,
  label: "correctness" | "completeness" | "overall"
): number => {
  const deltas = data.pairs.map((p) => {
    const a = value(p.cases[0])
    const b = value(p.cases[1])
    return a === null || b === null ? Number.NaN : b - a
  })
  const known = deltas.filter((d) => !Number.isNaN(d)).sort((x, y) => x - y)
  const fill = known.length === 0 ? 0 : known[Math.floor(known.length / 2)]!
  const x: Array<number> = []
  const y: Array<number> = []
  data.pairs.forEach((p, i) => {
    for (const a of p.annotators) {
      x.push(Number.isNaN(deltas[i]!) ? fill : deltas[i]!)
      y.push(a[label])
    }
  })
  return pearson(x, y)
}

export interface SupportFigures {
  readonly balancedAccuracy: number
  readonly auc: number
}

/** Scores (higher = supported) against labels: balanced accuracy at `threshold` (best in sample when undefined) and AUC. */
export const supportFigures = (
  scores: ReadonlyArray<number>,
  labels: ReadonlyArray<boolean>,
  threshold?: number
): SupportFigures => ({
  balancedAccuracy: threshold === undefined
    ? bestThreshold(scores, labels).balancedAccuracy
    : balancedAccuracy(scores.map((s) => s >= threshold), labels),
  auc: auc(scores, labels)
})

/** The claim's word share in its passages, per case of a support set. */
const supportShares = (cases: ReadonlyArray<SupportCase>) =>
  cases.map((c) => wordShareOf(c.claim, c.contexts.join("\n")) ?? 0)

/**
 * Word overlap's balanced accuracy on each support set with its threshold chosen as the judge's is:
 * on the other support set (the best there), not on the set it is scored on.
 */
export const overlapHeldOut = (sets: LabelledSets): Partial<Record<"expertqa" | "wice", number>> => {
  const out: Partial<Record<"expertqa" | "wice", number>> = {}
  for (const [held, other] of [["expertqa", "wice"], ["wice", "expertqa"]] as const) {
    const h = sets[held]
    const o = sets[other]
    if (h === undefined || o === undefined) continue
    const t = bestThreshold(supportShares(o), o.map((c) => c.supported)).threshold
    out[held] = balancedAccuracy(supportShares(h).map((s) => s >= t), h.map((c) => c.supported))
  }
  return out
}

/** Word overlap's figures on each set present. */
export const overlapFigures = (sets: LabelledSets) => {
  const out: Record<string, unknown> = {}
  if (sets.ragchecker !== undefined) {
    const byId = new Map(sets.ragchecker.cases.map((c) => [c.id, overlapPrf(c.answer, c.reference)]))
    out["ragchecker"] = {
      precision: pairPearson(sets.ragchecker, (id) => byId.get(id)!.precision, "correctness"),
      recall: pairPearson(sets.ragchecker, (id) => byId.get(id)!.recall, "completeness"),
      f1: pairPearson(sets.ragchecker, (id) => byId.get(id)!.f1, "overall")
    }
  }
  for (const name of ["expertqa", "wice"] as const) {
    const cases = sets[name]
    if (cases === undefined) continue
    out[name] = supportFigures(supportShares(cases), cases.map((c) => c.supported))
  }
  for (const name of HALLUCINATION_SETS) {
    const cases = sets[name]
    if (cases === undefined) continue
    const scores = cases.map((c) => 1 - (wordShareOf(c.answer, c.contexts.join("\n")) ?? 1))
    const lengths = cases.map((c) => plainWords(c.answer).length)
    out[name] = {
      auc: auc(scores, cases.map((c) => c.hallucinated)),
      lengthAuc: auc(lengths, cases.map((c) => c.hallucinated))
    }
  }
  return out
}
