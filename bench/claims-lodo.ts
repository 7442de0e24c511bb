/**
 * Leave-one-dataset-out: which rules of the heuristic claim checker help on data they were not
 * chosen on.
 *
 *   npx tsx bench/claims-lodo.ts [shared-data-dir] [extra-data-dir]
 *
 * The sets (`claims-sets.ts`): ragchecker-dev, expertqa-dev, WiCE dev (oracle chunks) and HaluEval QA.
 * A set's **gain** for a model is its figure minus plain word overlap's on the same set (RAGChecker:
 * the mean of the three r; ExpertQA and WiCE: balanced accuracy of faithfulness ≥ 0.5, word overlap at
 * its best in-sample threshold; HaluEval: AUC of hallucination). For each held-out set, the candidate
 * model with the largest mean gain on the other sets is chosen, and its figures on the held-out set
 * are printed beside word overlap's. A rule is kept when the models chosen with it beat those chosen
 * without it on the held-out sets — the table at the end.
 */
import { type CaseTexts, checkClaims, type ClaimModel, DEFAULT_MODEL } from "../src/judges/claims/Check.js"
import { extractClaims, type ExtractOptions } from "../src/judges/claims/Extract.js"
import { type CaseVerdicts, claimF1, claimPrecision, claimRecall, faithfulness } from "../src/metrics/claims.js"
import {
  balancedAccuracy,
  defaultExtraDir,
  type LabelledSets,
  overlapFigures,
  pairPearson,
  readSets,
  SET_NAMES,
  type SetName
} from "./claims-sets.js"
import { auc, defaultDataDir } from "./claims.js"

export interface Candidate {
  readonly name: string
  readonly model: ClaimModel
  readonly extract?: ExtractOptions | undefined
}

const GROUNDING = { grounding: true } as const
const GOLD = { gold: true } as const

/** Every figure of a model on every set present. */
export const judgeFigures = (sets: LabelledSets, c: Candidate) => {
  const out: Record<string, Record<string, number>> = {}
  if (sets.ragchecker !== undefined) {
    const m = new Map<string, { p: number | null; r: number | null; f: number | null }>()
    for (const k of sets.ragchecker.cases) {
      const texts: CaseTexts = { question: k.question, answer: k.answer, reference: k.reference }
      const v: CaseVerdicts = {
        answerVsReference: checkClaims(extractClaims(k.answer, c.extract), k.reference, texts, c.model).map((x) =>
          x.verdict
        ),
        referenceVsAnswer: checkClaims(extractClaims(k.reference, c.extract), k.answer, texts, c.model, GOLD).map((
          x
        ) => x.verdict)
      }
      m.set(k.id, { p: claimPrecision(v), r: claimRecall(v), f: claimF1(v) })
    }
    out["ragchecker"] = {
      precision: pairPearson(sets.ragchecker, (id) => m.get(id)!.p, "correctness"),
      recall: pairPearson(sets.ragchecker, (id) => m.get(id)!.r, "completeness"),
      f1: pairPearson(sets.ragchecker, (id) => m.get(id)!.f, "overall")
    }
  }
  const faith = (question: string, answer: string, contexts: ReadonlyArray<string>): number | null => {
    const texts: CaseTexts = { question, answer, contexts }
    const claims = extractClaims(answer, c.extract)
    return faithfulness({
      answerVsContexts: contexts.map((ctx) => checkClaims(claims, ctx, texts, c.model, GROUNDING).map((x) => x.verdict))
    })
  }
  for (const name of ["expertqa", "wice"] as const) {
    const cases = sets[name]
    if (cases === undefined) continue
    const scores = cases.map((k) => faith(k.question, k.claim, k.contexts) ?? 0)
    const labels = cases.map((k) => k.supported)
    out[name] = { balancedAccuracy: balancedAccuracy(scores.map((s) => s >= 0.5), labels), auc: auc(scores, labels) }
  }
  if (sets.halueval !== undefined) {
    const scores = sets.halueval.map((k) => 1 - (faith(k.question, k.answer, k.contexts) ?? 1))
    out["halueval"] = { auc: auc(scores, sets.halueval.map((k) => k.hallucinated)) }
  }
  return out
}

type Figures = Record<string, Record<string, number>>

/** The figure a set is judged by: RAGChecker the mean r, ExpertQA and WiCE balanced accuracy, HaluEval AUC. */
const headline = (set: SetName, f: Record<string, number>): number =>
  set === "ragchecker"
    ? (f["precision"]! + f["recall"]! + f["f1"]!) / 3
    : set === "halueval"
    ? f["auc"]!
    : f["balancedAccuracy"]!

const gainOn = (set: SetName, judge: Figures, overlap: Figures): number =>
  headline(set, judge[set]!) - headline(set, overlap[set]!)

export interface Fold {
  readonly heldOut: SetName
  readonly chosen: string
  readonly judge: Record<string, number>
  readonly overlap: Record<string, number>
}

export const leaveOneSetOut = (
  sets: LabelledSets,
  candidates: ReadonlyArray<Candidate>,
  figures: ReadonlyArray<Figures> = candidates.map((c) => judgeFigures(sets, c))
): ReadonlyArray<Fold> => {
  const overlap = overlapFigures(sets) as Figures
  const present = SET_NAMES.filter((s) => overlap[s] !== undefined)
  return present.map((heldOut) => {
    const train = present.filter((s) => s !== heldOut)
    let best = 0
    let bestGain = -Infinity
    figures.forEach((f, i) => {
      const g = train.reduce((sum, s) => sum + gainOn(s, f, overlap), 0) / train.length
      if (g > bestGain) {
        bestGain = g
        best = i
      }
    })
    return { heldOut, chosen: candidates[best]!.name, judge: figures[best]![heldOut]!, overlap: overlap[heldOut]! }
  })
}

const f3 = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? "n/a" : x.toFixed(3))
const row = (f: Record<string, number>) => Object.entries(f).map(([k, v]) => `${k} ${f3(v)}`).join(" · ")

/** The candidates: the shipped model, each rule switched off, and the entailment threshold's grid. */
export const CANDIDATES: ReadonlyArray<Candidate> = (() => {
  const base = DEFAULT_MODEL
  const off: ReadonlyArray<[string, Partial<ClaimModel>]> = [
    ["shipped", {}],
    ["no case weights", { caseWeights: false }],
    ["no question weight", { questionWeight: 1 }],
    ["no best sentence", { sentenceShare: 0 }],
    ["no numbers", { numbers: false }],
    ["no names", { names: false }],
    ["no names together", { namesTogether: false }],
    ["no negation", { negation: false }],
    ["no phrases", { phraseShare: 0 }]
  ]
  const out: Array<Candidate> = []
  for (const [name, change] of off) {
    for (const entailAt of [0.3, 0.4, 0.5, 0.6]) {
      out.push({ name: `${name} @${entailAt}`, model: { ...base, ...change, entailAt } })
    }
  }
  out.push({ name: "no clauses @0.4", model: base, extract: { clauses: false } })
  return out
})()

if (import.meta.url === `file://${process.argv[1]}`) {
  const sets = readSets(process.argv[2] ?? defaultDataDir, process.argv[3] ?? defaultExtraDir)
  const overlap = overlapFigures(sets) as Figures
  console.log("word overlap:")
  for (const [k, v] of Object.entries(overlap)) console.log(`  ${k}: ${row(v)}`)
  const figures = CANDIDATES.map((c) => judgeFigures(sets, c))
  console.log("\ncandidates (in sample):")
  CANDIDATES.forEach((c, i) => {
    console.log(`  ${c.name}`)
    for (const [k, v] of Object.entries(figures[i]!)) console.log(`    ${k}: ${row(v)}`)
  })
  console.log("\nleave one set out:")
  for (const f of leaveOneSetOut(sets, CANDIDATES, figures)) {
    console.log(`  held out ${f.heldOut}: chosen "${f.chosen}": ${row(f.judge)}   | word overlap: ${row(f.overlap)}`)
  }
}
