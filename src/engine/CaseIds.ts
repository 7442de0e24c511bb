/**
 * Duplicate case ids, found in the validation pass without holding every id: an id that is its
 * row's number (`"1"` for the first case — what a case gets when no id column is mapped, and the
 * commonest explicit ids) is known from its position alone, one bit per case; only other ids are
 * kept, with their line. A 300k-row input without ids peaked 20 MB higher holding them all.
 */
export type Duplicate =
  /** The first case with this id, by line. */
  | { readonly line: number }
  /** The first case with this id is the case at this ordinal (its id is its number). */
  | { readonly ordinal: number }

export class CaseIds {
  /** Bit `o` set: the case at ordinal `o` had the id `String(o + 1)`. */
  private numbered = new Uint8Array(1024)
  private readonly others = new Map<string, number>()

  /** Record a case's id; the earlier case with the same id, if any. */
  add(id: string, ordinal: number, line: number): Duplicate | undefined {
    const other = this.others.get(id)
    if (other !== undefined) return { line: other }
    if (id === String(ordinal + 1)) {
      this.set(ordinal)
      return undefined
    }
    const n = Number(id)
    if (Number.isInteger(n) && n >= 1 && String(n) === id && this.has(n - 1)) return { ordinal: n - 1 }
    this.others.set(id, line)
    return undefined
  }

  private set(ordinal: number) {
    const byte = ordinal >>> 3
    if (byte >= this.numbered.length) {
      const grown = new Uint8Array(Math.max(byte + 1, this.numbered.length * 2))
      grown.set(this.numbered)
      this.numbered = grown
    }
    this.numbered[byte]! |= 1 << (ordinal & 7)
  }

  private has(ordinal: number): boolean {
    const byte = ordinal >>> 3
    return byte < this.numbered.length && (this.numbered[byte]! & (1 << (ordinal & 7))) !== 0
  }
}
