/**
 * The heuristic judge's lexical relevance model (the `relevance-grade` heuristic): a query (or a
 * skill in a question's context) and one retrieved hit → a grade 0–3 with a confidence 1–5, using
 * the other hits retrieved for the same query (the **pool**) as its only corpus statistics.
 *
 * Why the pool: the hits a retriever returns for a query say which of its words matter. Measured on
 * TREC Deep Learning judgments (docs/judge-quality.md, "The heuristic relevance model"), weighting query terms by
 * how many pool hits contain them lifted Cohen's κ against NIST assessors from 0.13 to 0.19, and
 * adding how typical the hit's other words are of the pool lifted it to 0.24. Static statistics did
 * worse than none: weighting by general rarity (IDF over 25,000 passages of mixed topics) lowered κ
 * below plain coverage, and so did classic pool IDF, which rewards the query words *few* hits hold.
 *
 * Terms are the heuristic judge's content terms (`Terms.ts`: lower-cased, stopwords removed,
 * light-stemmed, soft prefix match). For a hit h with pool P (the other hits: the hit itself is
 * left out when it is in the pool), M = |P|, and Q the distinct terms of the query (of the skill,
 * when a skill is judged in a question's context):
 *
 * 1. **Pool-weighted coverage** C = Σ_{q ∈ Q ∩ h} w_q / Σ_{q ∈ Q} w_q, with
 *      w_q = (df_q + ½) / (M + 1),
 *    df_q = hits of P containing q: the share of the pool that uses q, smoothed by one pseudo-hit so
 *    an empty pool (M = 0) weighs every term ½ — plain coverage.
 * 2. **Relative typicality** R'. T_h = mean over the hit's distinct non-query terms t of df_t / M:
 *    how many of the other hits use the hit's other words (a hit on the pool's topic shares its
 *    vocabulary — a lexical relevance-feedback signal). R = T_h / mean_{j ∈ pool} T_j, shrunk
 *    towards 1 for small pools, R' = 1 + (R − 1)·M/(M + 2), clamped to [0, 2]; R' = 1 (no effect)
 *    when M = 0 or the hit has no other terms.
 * 3. **Answer type** A ∈ {0, 1}: 1 when the query asks for a kind of answer the hit has — "how
 *    much / cost / price / salary" a number or amount, "how long" a duration, "when / what year" a
 *    year or month, "phone / number" a phone number, "who" a capitalised name, "what is / define /
 *    meaning" a defining phrase ("is a …", "refers to", "means"). 0 for other queries.
 * 4. **Proximity** P ∈ {0, 1}: every query term (|Q| ≥ 2) within |Q| + 1 consecutive hit terms.
 * 5. **Title** T ∈ {0, 1}: the hit's title — a first line of at most 12 words with more text after
 *    it, such as a course name — contains every query term.
 * 6. **Question context** X: for a skill judged in a question's context, the pool-weighted coverage
 *    of the question's other terms (0 otherwise); it can only add.
 *
 *    s = C + 0.5·(R' − 1) + 0.1·A + 0.2·P + 0.2·T + 0.1·X
 *
 * Grade: s ≥ 1.30 → 3, ≥ 0.90 → 2, ≥ 0.65 → 1, else 0 — chosen on the LLMJudge test set (25 TREC
 * DL 2023 queries: the 0.05-grid values maximising κ on four grades + κ on relevant/not), then
 * checked unchanged on TREC DL 2019 and 2020 and with pools cut to 2–50 hits (docs/judge-quality.md). A hit judged
 * alone (M = 0) has no pool evidence: C is then plain coverage, which runs lower for the same
 * relevance, and the grade thresholds are 1.10 / 0.65 / 0.40 (chosen the same way with every
 * test-set hit judged alone). In between, each threshold is λ·pooled + (1 − λ)·alone with
 * λ = M / (M + 1), the pool's share of a query term's weight: with one other hit (λ = ½) the pooled
 * thresholds alone cost κ 0.03–0.11 on the test set, the blend nothing.
 *
 * Confidence: 1 + 4·min(1, distance of s from the nearest threshold / 0.15), rounded; at most 3 when
 * the query has fewer than 2 terms or the pool fewer than 3 other hits.
 *
 * The weights were set for generality, not fitted: on the three TREC collections κ moved by less
 * than 0.02 for a typicality weight 0.4–0.6, smoothing ½–2 pseudo-hits, shrinkage 0–2 and a
 * proximity weight 0–0.2; the proximity, title and context terms exist for short multi-word skills
 * and titled hits (course retrieval), where they decide between grades 2 and 3.
 */

/** Do two terms match? The heuristic judge's soft match (`Terms.ts` `termsMatch`), symmetric. */
export type TermMatch = (a: string, b: string) => boolean

/** Grade thresholds on s with a pool of at least one other hit (see the module comment). */
export const THRESHOLDS = { grade1: 0.65, grade2: 0.9, grade3: 1.3 } as const
/**
 * Grade thresholds on s for a hit judged alone (no other hit): its coverage is then plain coverage,
 * whose values sit lower than pool-weighted coverage's for hits of the same relevance.
 */
export const THRESHOLDS_ALONE = { grade1: 0.4, grade2: 0.65, grade3: 1.1 } as const

export type Thresholds = { readonly grade1: number; readonly grade2: number; readonly grade3: number }
/** Weight of relative typicality. */
export const TYPICALITY_WEIGHT = 0.5
/** Bonus when the hit has the kind of answer the query asks for. */
export const ANSWER_TYPE_WEIGHT = 0.1
/** Pseudo-hits in the query-term weight: w = (df + PRIOR_SHARE·PRIOR_HITS) / (M + PRIOR_HITS). */
const PRIOR_HITS = 1
const PRIOR_SHARE = 0.5
/** Shrinkage of relative typicality for small pools: R' = 1 + (R − 1)·M / (M + SHRINK). */
const SHRINK = 2
const TYPICALITY_MAX = 2
/** Scale of the confidence: s this far from every threshold is certain (5). */
const CONFIDENCE_SPAN = 0.15
/** Bonus when every query term (at least two) occurs within a window of |Q| + 1 consecutive hit terms. */
export const PROXIMITY_WEIGHT = 0.2

/** Bonus when the hit's title (a short first line) contains every query term. */
export const TITLE_WEIGHT = 0.2

/** A skill judged in a question's context: the question's other terms can add this much, never subtract. */
export const CONTEXT_WEIGHT = 0.1

// ---------------------------------------------------------------------------------------------
// Query terms

/** The distinct terms of a query: the primary query's (the skill's) first, then the context's others. */
export interface QueryTerms {
  readonly terms: ReadonlyArray<string>
  /** How many leading terms are the primary query's; the rest are the context question's. */
  readonly primary: number
  readonly match: TermMatch
}

/** Query terms from the primary query's distinct terms and, optionally, a context question's. */
export const queryTerms = (
  primary: Iterable<string>,
  context: Iterable<string> | undefined,
  match: TermMatch
): QueryTerms => {
  const terms = [...primary]
  const n = terms.length
  if (context !== undefined) {
    for (const t of context) if (!terms.slice(0, n).some((q) => match(q, t))) terms.push(t)
  }
  return { terms, primary: n, match }
}

/** Term → indexes of the query terms it matches (null: none). A cache, filled as terms are seen. */
type MatchMemo = Map<string, ReadonlyArray<number> | null>

const queryMatches = (t: string, query: QueryTerms, memo: MatchMemo): ReadonlyArray<number> | null => {
  let m = memo.get(t)
  if (m === undefined) {
    let found: Array<number> | null = null
    for (let k = 0; k < query.terms.length; k++) if (query.match(query.terms[k]!, t)) (found ??= []).push(k)
    memo.set(t, m = found)
  }
  return m
}

/** Which query terms a text contains: one flag per query term. */
const matchedIn = (doc: ReadonlySet<string>, query: QueryTerms, memo: MatchMemo): Uint8Array => {
  const flags = new Uint8Array(query.terms.length)
  for (const t of doc) {
    const m = queryMatches(t, query, memo)
    if (m !== null) { for (const k of m) flags[k] = 1 }
  }
  return flags
}

// ---------------------------------------------------------------------------------------------
// Pool statistics

/** What the pool knows of one of its hits. */
interface PooledHit {
  readonly matched: Uint8Array
  /** T_j, leaving the hit itself out; undefined when unknown. */
  readonly typicality: number | undefined
}

/** Document frequencies of one pool (one query's hits), computed once and shared by its hits. */
export interface PoolStats {
  /** Hits in the pool. */
  readonly size: number
  readonly query: QueryTerms
  /** Exact document frequency of every term of the pool. */
  readonly df: ReadonlyMap<string, number>
  /** Soft document frequency of each query term (by index in `query.terms`). */
  readonly queryDf: ReadonlyArray<number>
  /** Mean typicality T_j over the pool's hits (each computed leaving itself out); 0 when unknown. */
  readonly meanTypicality: number
  /** Each hit of the pool, by its term set. */
  readonly hits: ReadonlyMap<ReadonlySet<string>, PooledHit>
  readonly memo: MatchMemo
}

/**
 * T_h = mean over the hit's distinct non-query terms (not matching a primary query term) of df_t / M, where df counts the other hits
 * (`self` = 1 when the hit is in the pool and must be left out). Undefined when there is no other
 * hit or no such term.
 */
const typicalityOf = (
  hit: ReadonlySet<string>,
  df: ReadonlyMap<string, number>,
  others: number,
  self: 0 | 1,
  query: QueryTerms,
  memo: MatchMemo
): number | undefined => {
  if (others <= 0) return undefined
  let sum = 0
  let n = 0
  for (const t of hit) {
    // Only the primary query's terms are set aside: a skill's question context stays ordinary words.
    const m = queryMatches(t, query, memo)
    if (m !== null && m[0]! < query.primary) continue
    sum += ((df.get(t) ?? 0) - self) / others
    n++
  }
  return n === 0 ? undefined : sum / n
}

/** The statistics of a pool of hits (their distinct terms) for one query. O(total terms of the pool). */
export const poolStats = (docs: ReadonlyArray<ReadonlySet<string>>, query: QueryTerms): PoolStats => {
  const memo: MatchMemo = new Map()
  const queryDf = new Array<number>(query.terms.length).fill(0)
  const df = new Map<string, number>()
  // One pass: document frequencies, and which query terms each hit contains.
  const matched = docs.map((d) => {
    const flags = new Uint8Array(query.terms.length)
    for (const t of d) {
      df.set(t, (df.get(t) ?? 0) + 1)
      const m = queryMatches(t, query, memo)
      if (m !== null) { for (const k of m) flags[k] = 1 }
    }
    for (let k = 0; k < flags.length; k++) queryDf[k]! += flags[k]!
    return flags
  })
  const hits = new Map<ReadonlySet<string>, PooledHit>()
  let sum = 0
  let n = 0
  docs.forEach((d, i) => {
    const typicality = typicalityOf(d, df, docs.length - 1, 1, query, memo)
    hits.set(d, { matched: matched[i]!, typicality })
    if (typicality === undefined) return
    sum += typicality
    n++
  })
  return { size: docs.length, query, df, queryDf, meanTypicality: n === 0 ? 0 : sum / n, hits, memo }
}

// ---------------------------------------------------------------------------------------------
// Answer types

export type AnswerType = "quantity" | "duration" | "date" | "phone" | "person" | "definition"

const ANSWER_TYPES: ReadonlyArray<
  { readonly type: AnswerType; readonly asks: RegExp; readonly wants: string; readonly has: RegExp }
> = [
  {
    type: "duration",
    asks: /\bhow long\b/,
    wants: "a duration",
    has:
      /\b\d+(?:[.,]\d+)?(?:\s*(?:-|–|to)\s*\d+(?:[.,]\d+)?)?\s*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|decades?)\b/
  },
  {
    type: "quantity",
    asks:
      /\bhow (?:much|many)\b|\b(?:cost|costs|price|prices|salary|salaries|wage|wages|fee|fees|paid|pay|earn|earns|worth|money)\b/,
    wants: "a number or an amount",
    has:
      /[$€£¥]\s?\d|\b\d[\d,.]*\s*(?:%|percent|dollars?|usd|euros?|pounds?|cents?|thousand|million|billion|k)\b|\b\d[\d,.]*\b/
  },
  {
    type: "date",
    asks: /\bwhen\b|\bwhat (?:year|date|day|month|time)\b/,
    wants: "a date",
    has:
      /\b(?:1[5-9]\d\d|20\d\d)\b|\b(?:january|february|march|april|may|june|july|august|september|october|november|december)\b/
  },
  {
    type: "phone",
    asks: /\b(?:phone|telephone|contact|customer service|fax)\b|\bnumber\b/,
    wants: "a phone number",
    has: /(?:\+?\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]?\d{4}\b/
  },
  {
    type: "person",
    asks:
      /^\s*who\b|\bwho (?:is|was|are|were|played|plays|owns|owned|invented|wrote|founded|discovered|sang|sings|directed|created)\b/,
    wants: "a person's name",
    // Two capitalised words in a row, checked on the original casing.
    has: /\b\p{Lu}\p{Ll}+\s+\p{Lu}\p{Ll}+/u
  },
  {
    type: "definition",
    asks: /^\s*(?:what|who)(?:'s| is| are| was| were| does| do)\b|\bdefin(?:e|ition)\b|\bmeaning\b|\bmeans?\b/,
    wants: "a defining sentence",
    has:
      /\b(?:is|are|was|were) (?:a|an|the|one|any|defined|known|called)\b|\brefers? to\b|\bmeans?\b|\bdefin(?:ed|ition)\b|\b(?:a|an) (?:type|kind|form|term|word|name|way) (?:of|for)\b/
  }
]

type AnswerRule = (typeof ANSWER_TYPES)[number]

let lastQuery: { readonly text: string; readonly rule: AnswerRule | undefined } = { text: "", rule: undefined }

/** The kind of answer a query asks for (first matching rule), if any; the last query's is kept. */
export const answerTypeOf = (query: string): AnswerRule | undefined => {
  if (lastQuery.text !== query) {
    lastQuery = {
      text: query,
      rule: ANSWER_TYPES.find((a) => a.asks.test(query.toLowerCase()))
    }
  }
  return lastQuery.rule
}

/** Does the hit have the kind of answer asked for? `text` in its original casing, `lower` lower-cased. */
export const hasAnswerType = (type: AnswerType, text: string, lower: string = text.toLowerCase()): boolean => {
  const rule = ANSWER_TYPES.find((a) => a.type === type)!
  return rule.has.test(type === "person" ? text : lower)
}

// ---------------------------------------------------------------------------------------------
// Score and grade

export interface RelevanceInput {
  readonly query: QueryTerms
  /** The query's raw text (for its answer type). */
  readonly queryText: string
  /** The hit's distinct terms. */
  readonly hit: ReadonlySet<string>
  /** The hit's terms in order (for proximity); without them no proximity bonus is given. */
  readonly hitTerms?: ReadonlyArray<string> | undefined
  /** The terms of the hit's title (a short first line with more text after it), if it has one. */
  readonly titleTerms?: ReadonlySet<string> | undefined
  /** The hit's raw text (for the answer type), and lower-cased when the caller has it. */
  readonly hitText: string
  readonly hitLower?: string | undefined
  /** The pool's statistics (for `query`) and whether the hit is one of its hits (then it is left out). */
  readonly pool?: { readonly stats: PoolStats; readonly includesHit: boolean } | undefined
}

export interface Relevance {
  /** 0–3. */
  readonly grade: number
  /** 1–5. */
  readonly confidence: number
  /** s. */
  readonly score: number
  /** The thresholds that graded s: between `THRESHOLDS_ALONE` (M = 0) and `THRESHOLDS` (large M). */
  readonly thresholds: Thresholds
  /** C, 0–1 (of the primary query: the skill when one is judged in a question's context). */
  readonly coverage: number
  /** The context question's other terms' pool-weighted coverage, 0–1 (0 without a context). */
  readonly contextCoverage: number
  /** R' (1 = as typical as the average hit, or no pool). */
  readonly typicality: number
  /** Primary query terms in the hit, of `queryTerms`. */
  readonly matched: number
  readonly queryTerms: number
  /** The context question's other terms in the hit, of `contextTerms` (0 without a context). */
  readonly contextMatched: number
  readonly contextTerms: number
  /** Other hits the statistics came from (M). */
  readonly poolOthers: number
  /** Every query term (at least two) within |Q| + 1 consecutive hit terms. */
  readonly close: boolean
  /** Every query term in the hit's title. */
  readonly titled: boolean
  readonly answer?: { readonly wants: string; readonly found: boolean } | undefined
}

/**
 * Do all primary query terms occur within some `window` consecutive terms of `terms`? A sliding
 * window counting, per query term, its occurrences inside; O(terms).
 */
export const withinWindow = (
  terms: ReadonlyArray<string>,
  query: QueryTerms,
  memo: MatchMemo,
  window: number
): boolean => {
  const need = query.primary
  const inside = new Array<number>(need).fill(0)
  let present = 0
  const enter = (i: number, step: 1 | -1) => {
    const m = queryMatches(terms[i]!, query, memo)
    if (m === null) return
    for (const k of m) {
      if (k >= need) continue
      if (step === 1 && inside[k]++ === 0) present++
      else if (step === -1 && --inside[k]! === 0) present--
    }
  }
  for (let i = 0; i < terms.length; i++) {
    enter(i, 1)
    if (i >= window) enter(i - window, -1)
    if (present === need) return true
  }
  return false
}

/** Round to 1e-9 so sums of shares that equal a threshold on paper are not a hair below it. */
const tidy = (x: number): number => Math.round(x * 1e9) / 1e9

/** The thresholds for a hit with `others` other hits: λ·pooled + (1 − λ)·alone, λ = M / (M + 1). */
export const thresholdsFor = (others: number): Thresholds => {
  if (others <= 0) return THRESHOLDS_ALONE
  const lambda = others / (others + PRIOR_HITS)
  const mix = (pooled: number, alone: number) => tidy(lambda * pooled + (1 - lambda) * alone)
  return {
    grade1: mix(THRESHOLDS.grade1, THRESHOLDS_ALONE.grade1),
    grade2: mix(THRESHOLDS.grade2, THRESHOLDS_ALONE.grade2),
    grade3: mix(THRESHOLDS.grade3, THRESHOLDS_ALONE.grade3)
  }
}

/** The grade of score `s` under thresholds `t`. */
export const gradeOf = (s: number, t: Thresholds = THRESHOLDS): number => {
  const x = tidy(s)
  return x >= t.grade3 ? 3 : x >= t.grade2 ? 2 : x >= t.grade1 ? 1 : 0
}

/**
 * The relevance of one hit (see the module comment). The query must have at least one term and the
 * hit at least one; the caller handles those edge cases.
 */
export const relevance = (input: RelevanceInput): Relevance => {
  const { query, hit } = input
  const stats = input.pool?.stats
  const pooled = input.pool?.includesHit === true ? stats?.hits.get(hit) : undefined
  const self: 0 | 1 = pooled === undefined ? 0 : 1
  const others = stats === undefined ? 0 : Math.max(0, stats.size - self)
  const memo = stats?.memo ?? new Map()
  const flags = pooled?.matched ?? matchedIn(hit, query, memo)

  const share = (
    from: number,
    to: number
  ): { readonly found: number; readonly all: number; readonly covered: number } => {
    let wAll = 0
    let wHit = 0
    let found = 0
    for (let k = from; k < to; k++) {
      const df = stats === undefined ? 0 : stats.queryDf[k]! - self * flags[k]!
      const w = (df + PRIOR_SHARE * PRIOR_HITS) / (others + PRIOR_HITS)
      wAll += w
      if (flags[k] === 1) {
        wHit += w
        found++
      }
    }
    return { found, all: to - from, covered: wAll === 0 ? 0 : wHit / wAll }
  }
  const primary = share(0, query.primary)
  const context = share(query.primary, query.terms.length)
  const coverage = primary.covered

  let typicality = 1
  if (stats !== undefined && others > 0 && stats.meanTypicality > 0) {
    const own = pooled !== undefined ? pooled.typicality : typicalityOf(hit, stats.df, others, 0, query, memo)
    if (own !== undefined) {
      const r = own / stats.meanTypicality
      typicality = Math.min(TYPICALITY_MAX, Math.max(0, 1 + ((r - 1) * others) / (others + SHRINK)))
    }
  }

  const close = primary.all >= 2 && primary.found === primary.all && input.hitTerms !== undefined &&
    withinWindow(input.hitTerms, query, memo, primary.all + 1)

  const titled = input.titleTerms !== undefined && input.titleTerms.size > 0 &&
    matchedIn(input.titleTerms, query, memo).subarray(0, query.primary).every((f) => f === 1)

  const asked = answerTypeOf(input.queryText)
  const found = asked !== undefined && hasAnswerType(asked.type, input.hitText, input.hitLower)
  const score = coverage + TYPICALITY_WEIGHT * (typicality - 1) + (found ? ANSWER_TYPE_WEIGHT : 0) +
    CONTEXT_WEIGHT * context.covered + (close ? PROXIMITY_WEIGHT : 0) + (titled ? TITLE_WEIGHT : 0)

  const thresholds = thresholdsFor(others)
  const margin = Math.min(
    Math.abs(score - thresholds.grade1),
    Math.abs(score - thresholds.grade2),
    Math.abs(score - thresholds.grade3)
  )
  let confidence = Math.round(1 + 4 * Math.min(1, margin / CONFIDENCE_SPAN))
  if (query.terms.length < 2 || others < 3) confidence = Math.min(confidence, 3)

  return {
    grade: gradeOf(score, thresholds),
    thresholds,
    confidence,
    score,
    coverage,
    contextCoverage: context.covered,
    typicality,
    matched: primary.found,
    queryTerms: primary.all,
    contextMatched: context.found,
    contextTerms: context.all,
    poolOthers: others,
    close,
    titled,
    answer: asked === undefined ? undefined : { wants: asked.wants, found }
  }
}
