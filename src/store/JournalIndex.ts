/**
 * What a resume needs to know about a journal of any size, in ~7 bytes per judgment: for each key,
 * its state (ok, a kept judge failure, a transport failure to ask again, or a paid reply awaiting
 * repair) and the byte offset of its latest line. The judgments themselves stay on disk and are read
 * back (`JournalReader`) when a case is rebuilt — a 6M-judgment journal is 2–3 GB of text, and a
 * resume must not hold it (SPEC §5: resume holds only a compact key index).
 *
 * An open-addressing hash table in three typed arrays (linear probing, load ≤ 0.75): a 16-bit
 * fingerprint of the key, the offset's low 32 bits, and one byte of state (3 bits) and the offset's
 * high 5 bits (journals up to 128 GiB). A fingerprint can collide, so a found slot is only a
 * candidate: `find` confirms it by the key on the line it points at, and goes on probing if not.
 */

/** A journal line's state. 0 marks an empty slot. */
export const State = { ok: 1, judgeFailed: 2, transportFailed: 3, attempt: 4 } as const
export type State = (typeof State)[keyof typeof State]

const HIGH_SHIFT = 3
const STATE_MASK = 0b111
const MAX_OFFSET = 2 ** 37

/** FNV-1a over the key's characters: a key that is not 32 hex digits still hashes evenly. */
const fnv = (key: string, seed: number): number => {
  let h = seed >>> 0
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/** A lowercase hex digit's value, or −1. */
const hexDigit = (c: number): number => (c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1)

/**
 * The slot hash (32 bits) and the fingerprint (16 bits) of a key: a judgment key is hex already, so
 * its first 8 and next 4 digits are read as they are (digit by digit: a regex and two `parseInt`s of
 * slices were a tenth of a resume's journal scan); any other key is hashed.
 */
const hashes = (key: string): readonly [number, number] => {
  if (key.length >= 12) {
    let h = 0
    let fp = 0
    let i = 0
    for (; i < 12; i++) {
      const d = hexDigit(key.charCodeAt(i))
      if (d < 0) break
      if (i < 8) h = h * 16 + d
      else fp = fp * 16 + d
    }
    if (i === 12) return [h, fp]
  }
  return [fnv(key, 0x811c9dc5), fnv(key, 0x1000193) & 0xffff]
}

/**
 * `hashes` of the key whose latin1 bytes are [start, end) of `buf` (the scan's keys: read from the
 * line's bytes, no string made), into `out`: `out[0]` the slot hash, `out[1]` the fingerprint. The
 * same numbers as `hashes(buf.toString("latin1", start, end))` (tested). The rule is written twice on
 * purpose: `hashes` going through this one (the key's characters copied into bytes first) made a
 * lookup — a few per judgment while a run judges — 65–80 ns slower (~130 → ~200 ns, 200,000 keys).
 */
export const hashKeyBytes = (buf: Uint8Array, start: number, end: number, out: Uint32Array): void => {
  if (end - start >= 12) {
    let h = 0
    let fp = 0
    let i = 0
    for (; i < 12; i++) {
      const d = hexDigit(buf[start + i]!)
      if (d < 0) break
      if (i < 8) h = h * 16 + d
      else fp = fp * 16 + d
    }
    if (i === 12) {
      out[0] = h
      out[1] = fp
      return
    }
  }
  let a = 0x811c9dc5
  let b = 0x1000193
  for (let i = start; i < end; i++) {
    a = Math.imul(a ^ buf[i]!, 0x01000193)
    b = Math.imul(b ^ buf[i]!, 0x01000193)
  }
  out[0] = a >>> 0
  out[1] = (b >>> 0) & 0xffff
}

export class JournalIndex {
  private fp: Uint16Array
  private low: Uint32Array
  private meta: Uint8Array
  private mask: number
  size = 0

  /**
   * Room for about `expected` keys before the table grows. `keyAt(offset)` reads the key of the
   * journal line at an offset: it confirms fingerprint matches and re-places keys when the table
   * grows (a slot comes from a key's 32-bit hash, which the 16-bit fingerprint cannot give back).
   */
  constructor(expected: number, private readonly keyAt: (offset: number) => string | undefined) {
    let capacity = 1024
    while (capacity * 0.75 < expected) capacity *= 2
    this.fp = new Uint16Array(capacity)
    this.low = new Uint32Array(capacity)
    this.meta = new Uint8Array(capacity)
    this.mask = capacity - 1
  }

  get capacity(): number {
    return this.mask + 1
  }

  /** Bytes the table holds (for figures). */
  get bytes(): number {
    return this.fp.byteLength + this.low.byteLength + this.meta.byteLength
  }

  private stateAt(slot: number): number {
    return this.meta[slot]! & STATE_MASK
  }

  offsetAt(slot: number): number {
    return (this.meta[slot]! >>> HIGH_SHIFT) * 2 ** 32 + this.low[slot]!
  }

  private write(slot: number, fp: number, state: State, offset: number) {
    if (offset >= MAX_OFFSET) throw new RangeError(`journal offset ${offset} is beyond the index's 128 GiB`)
    this.fp[slot] = fp
    this.low[slot] = offset % 2 ** 32
    this.meta[slot] = (Math.floor(offset / 2 ** 32) << HIGH_SHIFT) | state
  }

  /** Record the latest line of `key` (an earlier line of the same key is replaced: the latest wins). */
  set(key: string, state: State, offset: number): void {
    const [h, fp] = hashes(key)
    this.setHashed(h, fp, state, offset, key)
  }

  /**
   * `set` for a key already hashed (`hashKeyBytes`): the journal's scan makes no string of a key.
   * A fingerprint met again is confirmed by the keys of both lines (`key`, or read at `offset`).
   */
  setHashed(h: number, fp: number, state: State, offset: number, key?: string): void {
    if ((this.size + 1) > this.capacity * 0.75) this.grow()
    for (let slot = h & this.mask;; slot = (slot + 1) & this.mask) {
      if (this.stateAt(slot) === 0) {
        this.write(slot, fp, state, offset)
        this.size++
        return
      }
      if (this.fp[slot] === fp) {
        const held = this.keyAt(this.offsetAt(slot))
        if (held !== undefined && held === (key ?? this.keyAt(offset))) {
          this.write(slot, fp, state, offset)
          return
        }
      }
    }
  }

  /**
   * The state and offset of `key`, or undefined. A candidate is confirmed by the key on its line (the
   * fingerprint is 16 bits: a lookup meets a false candidate about once in 65,000 slots probed).
   */
  find(key: string): { readonly state: State; readonly offset: number } | undefined {
    const [h, fp] = hashes(key)
    for (let slot = h & this.mask;; slot = (slot + 1) & this.mask) {
      const state = this.stateAt(slot)
      if (state === 0) return undefined
      if (this.fp[slot] === fp) {
        const offset = this.offsetAt(slot)
        if (this.keyAt(offset) === key) return { state: state as State, offset }
      }
    }
  }

  /** Doubles the table, re-placing every key (read back from its line: the rare path — the
   * journal reader sizes the table up front from the journal's length). */
  private grow() {
    const old = { fp: this.fp, low: this.low, meta: this.meta }
    const capacity = this.capacity * 2
    this.fp = new Uint16Array(capacity)
    this.low = new Uint32Array(capacity)
    this.meta = new Uint8Array(capacity)
    this.mask = capacity - 1
    for (let slot = 0; slot < old.meta.length; slot++) {
      if ((old.meta[slot]! & STATE_MASK) === 0) continue
      const key = this.keyAt((old.meta[slot]! >>> HIGH_SHIFT) * 2 ** 32 + old.low[slot]!)
      if (key === undefined) throw new Error("journal index: a line it points at has no key")
      let s = hashes(key)[0] & this.mask
      while ((this.meta[s]! & STATE_MASK) !== 0) s = (s + 1) & this.mask
      this.fp[s] = old.fp[slot]!
      this.low[s] = old.low[slot]!
      this.meta[s] = old.meta[slot]!
    }
  }

  /** Keys by the state of their latest line. */
  counts(): {
    readonly ok: number
    readonly judgeFailed: number
    readonly transportFailed: number
    readonly attempts: number
  } {
    const n = [0, 0, 0, 0, 0]
    for (let slot = 0; slot < this.meta.length; slot++) n[this.meta[slot]! & STATE_MASK]!++
    return {
      ok: n[State.ok]!,
      judgeFailed: n[State.judgeFailed]!,
      transportFailed: n[State.transportFailed]!,
      attempts: n[State.attempt]!
    }
  }
}
