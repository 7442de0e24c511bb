/**
 * Duplicate case ids, found in the validation pass in memory that stays small as the input grows
 * (issue #35: peak RSS flat from 10,000 to 1,000,000 cases — a `Map` of a million ids held ~52 MB):
 *
 * - an id that is its row's number after a fixed prefix (`"1"`, `"c1"`, `"case-1"` for the first
 *   case: what a case gets when no id column is mapped, and the commonest explicit ids) is known from
 *   its position alone, one bit per case. The prefix is the first such id's;
 * - any other id is kept as a 64-bit hash in an open-addressing table (8 bytes a slot, at most 3/4
 *   full): ~11–22 MB for a million ids of any form.
 *
 * A hash met again means an earlier case *may* have the same id: the caller looks for it (re-reading
 * the input, which only an error — or a 64-bit hash collision, which then costs nothing else — does).
 */
export type Duplicate =
  /** The first case with this id is the case at this ordinal (its id is its row's number). */
  | { readonly ordinal: number }
  /** An earlier case has an id with the same hash: the first case with this id, if earlier, is the duplicate. */
  | { readonly suspect: true }

const CANONICAL_POSITIVE = /^[1-9][0-9]*$/

/** 64 bits of a string, as two 32-bit halves (cyrb53's mixing, both halves kept whole). */
export const hash64 = (s: string, out: Uint32Array): void => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  out[0] = h1 >>> 0
  out[1] = h2 >>> 0
  // (0, 0) marks an empty slot.
  if (out[0] === 0 && out[1] === 0) out[1] = 1
}

export class CaseIds {
  /** `hash`: `hash64` (tests give a weaker one, to meet collisions). */
  constructor(private readonly hash: (s: string, out: Uint32Array) => void = hash64) {}
  /** Bit `o` set: the case at ordinal `o` had the id `prefix + String(o + 1)`. */
  private numbered = new Uint8Array(1024)
  /** The prefix of numbered ids: the first id that was its row's number after one. */
  private prefix: string | undefined
  /** Hashes of the other ids: slot i at [2i, 2i + 1]; (0, 0) is empty. */
  private slots = new Uint32Array(2 * 1024)
  private held = 0
  private readonly h = new Uint32Array(2)

  /** Record a case's id; undefined when no earlier case can have it. */
  add(id: string, ordinal: number): Duplicate | undefined {
    this.hash(id, this.h)
    const suspect = this.has64(this.h[0]!, this.h[1]!) ? { suspect: true } as const : undefined
    const own = String(ordinal + 1)
    if (id.endsWith(own)) {
      const prefix = id.slice(0, id.length - own.length)
      this.prefix ??= prefix
      if (prefix === this.prefix) {
        // Recorded even when suspect: a later case with this id is found by its position.
        this.set(ordinal)
        return suspect
      }
    }
    if (this.prefix !== undefined && id.startsWith(this.prefix)) {
      const rest = id.slice(this.prefix.length)
      if (CANONICAL_POSITIVE.test(rest)) {
        const o = Number(rest) - 1
        if (this.has(o)) return { ordinal: o }
      }
    }
    // A hash already held stays held: a later case with this id meets it as well.
    if (suspect === undefined) this.insert64(this.h[0]!, this.h[1]!)
    return suspect
  }

  /** Other ids held (hashed). */
  get hashed(): number {
    return this.held
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

  private has64(a: number, b: number): boolean {
    const mask = this.slots.length / 2 - 1
    for (let i = (a ^ b) & mask;; i = (i + 1) & mask) {
      const x = this.slots[2 * i]!
      const y = this.slots[2 * i + 1]!
      if (x === 0 && y === 0) return false
      if (x === a && y === b) return true
    }
  }

  private insert64(a: number, b: number) {
    if (4 * (this.held + 1) > 3 * (this.slots.length / 2)) {
      const old = this.slots
      this.slots = new Uint32Array(old.length * 2)
      this.held = 0
      for (let i = 0; i < old.length; i += 2) {
        if (old[i] !== 0 || old[i + 1] !== 0) this.insert64(old[i]!, old[i + 1]!)
      }
    }
    const mask = this.slots.length / 2 - 1
    let i = (a ^ b) & mask
    while (this.slots[2 * i] !== 0 || this.slots[2 * i + 1] !== 0) i = (i + 1) & mask
    this.slots[2 * i] = a
    this.slots[2 * i + 1] = b
    this.held++
  }
}
