/**
 * Python's `difflib.SequenceMatcher(None, a, b)` reproduced exactly (CPython `Lib/difflib.py`), for
 * the fuzzy evidence matching of SPEC §2.5, where similarity must equal the reference tool's
 * `SequenceMatcher(None, span, chunk).ratio()` bit for bit.
 *
 * What "exactly" covers:
 * - strings are sequences of Unicode code points, as Python's `str` (`Array.from`), not UTF-16 units;
 * - no `isjunk` function, but the **autojunk** rule: when `b` has 200 items or more, every element
 *   occurring more than `len(b) // 100 + 1` times in `b` is "popular" and cannot start a match
 *   (it is dropped from `b2j`), although matches may still be extended over it;
 * - `find_longest_match`: the longest block, earliest in `a`, then earliest in `b`, then extended
 *   over equal elements on both sides as CPython does;
 * - `get_matching_blocks`: recursive split around the longest block (with CPython's explicit stack),
 *   sorted, adjacent blocks merged, sentinel `(len(a), len(b), 0)` appended;
 * - `ratio = 2.0 * M / (len(a) + len(b))`, and 1.0 when both are empty.
 * Parity with CPython is pinned by `test/metrics/fixtures/difflib-ratio.json`.
 */

/** A matching block: `a[a .. a+size)` equals `b[b .. b+size)`. */
export interface MatchingBlock {
  readonly a: number
  readonly b: number
  readonly size: number
}

/** The elements of a string as Python sees them: one per code point. */
export const codePoints = (text: string): Array<string> => Array.from(text)

/** CPython `__chain_b` with `isjunk=None`, `autojunk=True`: element → ascending indices in `b`. */
const chainB = <T>(b: ReadonlyArray<T>): Map<T, Array<number>> => {
  const b2j = new Map<T, Array<number>>()
  b.forEach((element, index) => {
    const indices = b2j.get(element)
    if (indices === undefined) b2j.set(element, [index])
    else indices.push(index)
  })
  const n = b.length
  if (n >= 200) {
    const ntest = Math.floor(n / 100) + 1
    const popular: Array<T> = []
    for (const [element, indices] of b2j) if (indices.length > ntest) popular.push(element)
    for (const element of popular) b2j.delete(element)
  }
  return b2j
}

/**
 * CPython `find_longest_match(alo, ahi, blo, bhi)`. With no `isjunk`, the set of junk elements is
 * empty, so of CPython's four extension loops only the two "not junk" ones can move, and they extend
 * over popular elements too (popular ≠ junk).
 */
const findLongestMatch = <T>(
  a: ReadonlyArray<T>,
  b: ReadonlyArray<T>,
  b2j: ReadonlyMap<T, ReadonlyArray<number>>,
  alo: number,
  ahi: number,
  blo: number,
  bhi: number
): MatchingBlock => {
  let besti = alo
  let bestj = blo
  let bestsize = 0
  let j2len = new Map<number, number>()
  const nothing: ReadonlyArray<number> = []
  for (let i = alo; i < ahi; i++) {
    const newj2len = new Map<number, number>()
    for (const j of b2j.get(a[i]) ?? nothing) {
      if (j < blo) continue
      if (j >= bhi) break
      const k = (j2len.get(j - 1) ?? 0) + 1
      newj2len.set(j, k)
      if (k > bestsize) {
        besti = i - k + 1
        bestj = j - k + 1
        bestsize = k
      }
    }
    j2len = newj2len
  }
  while (besti > alo && bestj > blo && a[besti - 1] === b[bestj - 1]) {
    besti--
    bestj--
    bestsize++
  }
  while (besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] === b[bestj + bestsize]) {
    bestsize++
  }
  return { a: besti, b: bestj, size: bestsize }
}

/** CPython `get_matching_blocks()`, including the final `(len(a), len(b), 0)` sentinel. */
export const matchingBlocks = <T>(a: ReadonlyArray<T>, b: ReadonlyArray<T>): Array<MatchingBlock> => {
  const b2j = chainB(b)
  const la = a.length
  const lb = b.length
  const queue: Array<readonly [number, number, number, number]> = [[0, la, 0, lb]]
  const blocks: Array<MatchingBlock> = []
  while (queue.length > 0) {
    const [alo, ahi, blo, bhi] = queue.pop() as readonly [number, number, number, number]
    const match = findLongestMatch(a, b, b2j, alo, ahi, blo, bhi)
    const { a: i, b: j, size: k } = match
    if (k > 0) {
      blocks.push(match)
      if (alo < i && blo < j) queue.push([alo, i, blo, j])
      if (i + k < ahi && j + k < bhi) queue.push([i + k, ahi, j + k, bhi])
    }
  }
  // Python sorts the (i, j, k) tuples lexicographically.
  blocks.sort((x, y) => x.a - y.a || x.b - y.b || x.size - y.size)
  const merged: Array<MatchingBlock> = []
  let i1 = 0
  let j1 = 0
  let k1 = 0
  for (const { a: i2, b: j2, size: k2 } of blocks) {
    if (i1 + k1 === i2 && j1 + k1 === j2) {
      k1 += k2
    } else {
      if (k1 > 0) merged.push({ a: i1, b: j1, size: k1 })
      i1 = i2
      j1 = j2
      k1 = k2
    }
  }
  if (k1 > 0) merged.push({ a: i1, b: j1, size: k1 })
  merged.push({ a: la, b: lb, size: 0 })
  return merged
}

/** CPython `_calculate_ratio`: 2.0 * matches / length, 1.0 for two empty sequences. */
const calculateRatio = (matches: number, length: number): number => (length > 0 ? (2 * matches) / length : 1)

/** `SequenceMatcher(None, a, b).ratio()` over arbitrary sequences (elements compared with `===`). */
export const sequenceRatio = <T>(a: ReadonlyArray<T>, b: ReadonlyArray<T>): number => {
  let matches = 0
  for (const block of matchingBlocks(a, b)) matches += block.size
  return calculateRatio(matches, a.length + b.length)
}

/** `SequenceMatcher(None, a, b).ratio()` for two strings, element = code point. Not symmetric. */
export const ratio = (a: string, b: string): number => sequenceRatio(codePoints(a), codePoints(b))

/** `SequenceMatcher(None, a, b).quick_ratio()`: an upper bound on `ratio` (multiset intersection). */
export const quickRatio = (a: string, b: string): number => {
  const as = codePoints(a)
  const bs = codePoints(b)
  const available = new Map<string, number>()
  for (const element of bs) available.set(element, (available.get(element) ?? 0) + 1)
  let matches = 0
  for (const element of as) {
    const count = available.get(element) ?? 0
    if (count > 0) matches++
    available.set(element, count - 1)
  }
  return calculateRatio(matches, as.length + bs.length)
}

/** `SequenceMatcher(None, a, b).real_quick_ratio()`: the cheapest upper bound on `ratio`. */
export const realQuickRatio = (a: string, b: string): number => {
  const la = codePoints(a).length
  const lb = codePoints(b).length
  return calculateRatio(Math.min(la, lb), la + lb)
}

/**
 * The characters Python's `str.isspace()` accepts (and `str.split()` splits on). JavaScript's `\s`
 * differs: it lacks U+001C–U+001F and U+0085 and adds U+FEFF.
 */
const pythonWhitespace = /[\t\n\v\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g

/**
 * The reference tool's normalisation: lowercase, then collapse whitespace — Python's
 * `" ".join(text.lower().split())` (runs of whitespace become one space, no leading/trailing space).
 */
export const normalize = (text: string): string =>
  text.toLowerCase().replace(pythonWhitespace, " ").replace(/^ | $/g, "")

/** Default `--fuzzy-threshold` (SPEC §2.5). */
export const defaultFuzzyThreshold = 0.7

/**
 * Does a retrieved chunk cover a gold evidence span? After normalising both: the span is a substring
 * of the chunk, or `SequenceMatcher(None, span, chunk).ratio() >= threshold` (the span is `a`, the
 * chunk `b`, so autojunk applies to long chunks). An empty normalised span is covered by nothing:
 * an empty gold span carries no evidence.
 *
 * The cheap upper bounds `real_quick_ratio` and `quick_ratio` are tried first; they only skip the
 * full computation when it could not reach the threshold, so the answer is the same.
 */
export const covers = (chunk: string, span: string, threshold: number = defaultFuzzyThreshold): boolean =>
  coversNormalized(normalize(chunk), normalize(span), threshold)

/** `covers` for texts already passed through `normalize` (lets callers normalise each text once). */
export const coversNormalized = (chunk: string, span: string, threshold: number = defaultFuzzyThreshold): boolean => {
  if (span === "") return false
  if (chunk.includes(span)) return true
  if (realQuickRatio(span, chunk) < threshold) return false
  if (quickRatio(span, chunk) < threshold) return false
  return ratio(span, chunk) >= threshold
}
