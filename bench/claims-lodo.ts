/**
 * Leave-one-dataset-out: which rules of the heuristic claim checker help on data they were not
 * chosen on.
 *
 *   npx tsx bench/claims-lodo.ts [shared-data-dir] [extra-data-dir]
 *
 * The sets (`claims-sets.ts`): ragchecker-dev, expertqa-dev, WiCE dev (oracle chunks), and three of
 * answers labelled hallucinated or not — HaluEval QA, FaithBench, FRANK's validation split. A set's
 * **gain** for a model is its figure minus plain word overlap's on the same set (RAGChecker: the mean
 * of the three r; ExpertQA and WiCE: balanced accuracy of faithfulness ≥ 0.5, word overlap at its best
 * in-sample threshold; the hallucination sets: AUC of a per-case hallucination score — `ungrounded`,
 * 1 − faithfulness or `unsupportedClaims`, chosen with the model — against 1 − the answer's word share). For each held-out set, the candidate
 * model with the largest mean gain on the other sets is chosen, and its figures on the held-out set
 * are printed beside word overlap's — first with the shipped rules (only the entailment threshold
 * and the hallucination score chosen), then with any candidate. A rule is kept when the models
 * chosen with it beat those chosen without it on the held-out sets — the table at the end.
 */
import * as fs from "node:fs"
import { type CaseTexts, checkClaims, type ClaimModel, DEFAULT_MODEL } from "../src/judges/claims/Check.js"
import { extractClaims, type ExtractOptions } from "../src/judges/claims/Extract.js"
import {
  type CaseVerdicts,
  claimF1,
  claimPrecision,
  claimRecall,
  faithfulness,
  ungrounded,
  unsupportedClaims
} from "../src/metrics/claims.js"
import {
  balancedAccuracy,
  defaultExtraDir,
  HALLUCINATION_SETS,
  isHallucinationSet,
  type LabelledSets,
  overlapFigures,
  overlapHeldOut,
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
  const grounding = (question: string, answer: string, contexts: ReadonlyArray<string>): CaseVerdicts => {
    const texts: CaseTexts = { question, answer, contexts }
    const claims = extractClaims(answer, c.extract)
    const checks = contexts.map((ctx) => checkClaims(claims, ctx, texts, c.model, GROUNDING))
    return {
      answerVsContexts: checks.map((row) => row.map((x) => x.verdict)),
      answerSupportVsContexts: checks.map((row) => row.map((x) => x.support))
    }
  }
  for (const name of ["expertqa", "wice"] as const) {
    const cases = sets[name]
    if (cases === undefined) continue
    const scores = cases.map((k) => faithfulness(grounding(k.question, k.claim, k.contexts)) ?? 0)
    const labels = cases.map((k) => k.supported)
    out[name] = { balancedAccuracy: balancedAccuracy(scores.map((s) => s >= 0.5), labels), auc: auc(scores, labels) }
  }
  for (const name of HALLUCINATION_SETS) {
    const cases = sets[name]
    if (cases === undefined) continue
    const v = cases.map((k) => grounding(k.question, k.answer, k.contexts))
    const labels = cases.map((k) => k.hallucinated)
    // An answer without claims (an abstention) has no score: ranked as the least hallucinated.
    const aucOf = (score: (v: CaseVerdicts) => number | null) => auc(v.map((x) => score(x) ?? 0), labels)
    out[name] = {
      auc: aucOf(ungrounded),
      aucUnfaithful: aucOf((x) => {
        const f = faithfulness(x)
        return f === null ? null : 1 - f
      }),
      aucUnsupportedClaims: aucOf(unsupportedClaims)
    }
  }
  return out
}

type Figures = Record<string, Record<string, number>>

/** The per-case hallucination scores the protocol chooses between, by their figure's key. */
export const HALLUCINATION_SCORES: Readonly<Record<string, string>> = {
  auc: "ungrounded",
  aucUnfaithful: "1 − faithfulness",
  aucUnsupportedClaims: "unsupportedClaims"
}

/**
 * The figure a set is judged by: RAGChecker the mean r, ExpertQA and WiCE balanced accuracy, the
 * hallucination sets the AUC of the hallucination score (`auc`: ungrounded; or another score's key).
 */
const headline = (set: SetName, f: Record<string, number>, score = "auc"): number =>
  set === "ragchecker"
    ? (f["precision"]! + f["recall"]! + f["f1"]!) / 3
    : isHallucinationSet(set)
    ? f[score] ?? f["auc"]!
    : f["balancedAccuracy"]!

const gainOn = (set: SetName, judge: Figures, overlap: Figures, score?: string): number =>
  headline(set, judge[set]!, score) - headline(set, overlap[set]!)

export interface Fold {
  readonly heldOut: SetName
  readonly chosen: string
  /** The hallucination score chosen with it (a key of `HALLUCINATION_SCORES`). */
  readonly score: string
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
    let bestScore = "auc"
    let bestGain = -Infinity
    figures.forEach((f, i) => {
      for (const score of Object.keys(HALLUCINATION_SCORES)) {
        const g = train.reduce((sum, s) => sum + gainOn(s, f, overlap, score), 0) / train.length
        if (g > bestGain) {
          bestGain = g
          best = i
          bestScore = score
        }
      }
    })
    return {
      heldOut,
      chosen: candidates[best]!.name,
      score: bestScore,
      judge: figures[best]![heldOut]!,
      overlap: overlap[heldOut]!
    }
  })
}

/**
 * The shipped checker held out beside plain word overlap on every labelled set present (what
 * `npm run bench` prints in section [11]): its threshold and hallucination score chosen on the other
 * sets (`leaveOneSetOut` over the shipped rules), each figure against word overlap's as its target —
 * word overlap's balanced accuracy at its best threshold on the set itself (generous to it), with the
 * same figure at the threshold best on the other support set beside it (the judge's protocol).
 */
export const printHeldOut = (
  line: (text?: string) => void,
  figure: (name: string, value: string, target: string, ok: boolean) => void,
  sets: LabelledSets = readSets()
): void => {
  const overlap = overlapFigures(sets) as Figures
  const missing = SET_NAMES.filter((s) => overlap[s] === undefined)
  line(
    `  Leave one dataset out: the shipped checker, its threshold and hallucination score chosen on the other sets, beside plain word overlap${
      missing.length === 0 ? "" : ` — not here: ${missing.join(", ")} (bench/claims-sets.ts says where from)`
    }`
  )
  const shipped = CANDIDATES.filter((c) => c.off === undefined)
  const sameProtocol = overlapHeldOut(sets)
  for (const f of leaveOneSetOut(sets, shipped)) {
    const at = `chosen on the other sets: ${f.chosen.replace("shipped ", "")}, ${HALLUCINATION_SCORES[f.score]}`
    const keys = f.heldOut === "ragchecker"
      ? ["precision", "recall", "f1"]
      : isHallucinationSet(f.heldOut)
      ? [f.score]
      : ["balancedAccuracy"]
    for (const k of keys) {
      const base = f.overlap[k === f.score ? "auc" : k]!
      const extra = f.heldOut === "expertqa" || f.heldOut === "wice"
        ? `; ${f3(sameProtocol[f.heldOut])} with its threshold chosen on the other support set`
        : ""
      figure(
        `${f.heldOut} ${k === f.score ? "AUC" : k}`,
        `${f3(f.judge[k])} (${at})`,
        `≥ word overlap's ${f3(base)}${extra}`,
        f.judge[k]! >= base
      )
    }
  }
}

const f3 = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? "n/a" : x.toFixed(3))
const row = (f: Record<string, number>) => Object.entries(f).map(([k, v]) => `${k} ${f3(v)}`).join(" · ")

/** The rules that can be switched off, each with the change that switches it off. */
export const RULES: ReadonlyArray<readonly [string, Partial<ClaimModel>, ExtractOptions?]> = [
  ["case weights", { caseWeights: false }],
  ["question terms weigh ½", { questionWeight: 1 }],
  ["best sentence (30% of the support)", { sentenceShare: 0 }],
  ["numbers agree", { numbers: false }],
  ["negation", { negation: false }],
  ["phrases in grounding checks", { phraseShare: 0 }],
  ["universal quantity against a figure", { universals: false }],
  ["names together", { namesTogether: false }],
  ["gold claims weigh alike", { goldAlike: false }],
  ["clauses (not whole sentences)", {}, { clauses: false }]
]

export const THRESHOLDS: ReadonlyArray<number> = [0.3, 0.4, 0.5, 0.6]

/** The candidates: the shipped model and each rule switched off, at each entailment threshold. */
export const CANDIDATES: ReadonlyArray<Candidate & { readonly off?: string | undefined }> = [
  ["shipped", {}, undefined] as const,
  ...RULES
].flatMap(([name, change, extract]) =>
  THRESHOLDS.map((entailAt) => ({
    name: `${name === "shipped" ? "shipped" : `no ${name}`} @${entailAt}`,
    model: { ...DEFAULT_MODEL, ...change, entailAt },
    extract,
    off: name === "shipped" ? undefined : name
  }))
)

/**
 * Does a rule help on data it was not chosen on? Leave one set out twice, with the same freedom on
 * each side — the entailment threshold, chosen on the other sets: the shipped model, and the model
 * without the rule; the held-out gain over word overlap of each, per set. A rule is kept when it
 * helps on average over the held-out sets.
 */
export const ruleVerdicts = (sets: LabelledSets, figures: ReadonlyArray<Figures>) =>
  RULES.map(([rule]) => {
    const keep = CANDIDATES.flatMap((c, i) => (c.off === undefined ? [i] : []))
    const drop = CANDIDATES.flatMap((c, i) => (c.off === rule ? [i] : []))
    const heldOut = (idx: ReadonlyArray<number>) =>
      leaveOneSetOut(sets, idx.map((i) => CANDIDATES[i]!), idx.map((i) => figures[i]!))
    const overlap = overlapFigures(sets) as Figures
    const gain = (folds: ReadonlyArray<Fold>) =>
      folds.map((f) => headline(f.heldOut, f.judge, f.score) - headline(f.heldOut, overlap[f.heldOut]!))
    const withRule = gain(heldOut(keep))
    const without = gain(heldOut(drop))
    const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
    return { rule, withRule, without, helps: mean(withRule) > mean(without) }
  })

if (import.meta.url === `file://${process.argv[1]}`) {
  const sets = readSets(process.argv[2] ?? defaultDataDir, process.argv[3] ?? defaultExtraDir)
  const overlap = overlapFigures(sets) as Figures
  console.log("word overlap:")
  for (const [k, v] of Object.entries(overlap)) console.log(`  ${k}: ${row(v)}`)
  for (const [k, v] of Object.entries(overlapHeldOut(sets))) {
    console.log(`  ${k}: balancedAccuracy ${f3(v)} with its threshold chosen on the other support set`)
  }
  // BENCH_LODO_CACHE=FILE: the candidates' figures are read from FILE when it is there, else computed and written.
  const cache = process.env["BENCH_LODO_CACHE"]
  const figures: ReadonlyArray<Figures> = cache !== undefined && fs.existsSync(cache)
    ? JSON.parse(fs.readFileSync(cache, "utf8"))
    : CANDIDATES.map((c) => judgeFigures(sets, c))
  if (cache !== undefined && !fs.existsSync(cache)) fs.writeFileSync(cache, JSON.stringify(figures))
  console.log("\ncandidates (in sample):")
  CANDIDATES.forEach((c, i) => {
    console.log(`  ${c.name}: ${Object.entries(figures[i]!).map(([k, v]) => `${k} ${row(v)}`).join(" | ")}`)
  })
  const shipped = CANDIDATES.flatMap((c, i) => (c.off === undefined ? [i] : []))
  console.log(
    "\nleave one set out: the shipped rules, their threshold and the hallucination score chosen on the other sets:"
  )
  for (const f of leaveOneSetOut(sets, shipped.map((i) => CANDIDATES[i]!), shipped.map((i) => figures[i]!))) {
    console.log(
      `  held out ${f.heldOut}: chosen "${f.chosen}", ${HALLUCINATION_SCORES[f.score]}: ${
        row(f.judge)
      }   | word overlap: ${row(f.overlap)}`
    )
  }
  console.log("\nleave one set out, any candidate (a rule switched off too) chosen on the other sets:")
  for (const f of leaveOneSetOut(sets, CANDIDATES, figures)) {
    console.log(
      `  held out ${f.heldOut}: chosen "${f.chosen}", ${HALLUCINATION_SCORES[f.score]}: ${
        row(f.judge)
      }   | word overlap: ${row(f.overlap)}`
    )
  }
  console.log("\nrules (held-out gain over word overlap per set, in the order of the sets above):")
  for (const v of ruleVerdicts(sets, figures)) {
    console.log(
      `  ${v.helps ? "keep" : "drop"} ${v.rule}: with ${v.withRule.map(f3).join(" / ")} · without ${
        v.without.map(f3).join(" / ")
      }`
    )
  }
}
