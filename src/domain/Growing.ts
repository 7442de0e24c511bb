/**
 * Numbers appended to a typed array that doubles as it fills: for passes whose count is known only
 * at their end (a million offsets in 8 MB, not an array's boxed numbers and slack).
 */
export class Growing<T extends Float64Array | Uint32Array | Int32Array | Uint8Array> {
  length = 0
  /** The array as it is now: its first `length` entries are the numbers pushed. */
  constructor(public data: T, private readonly make: (n: number) => T) {}
  push(x: number) {
    if (this.length === this.data.length) {
      const bigger = this.make(Math.max(16, this.data.length * 2))
      bigger.set(this.data)
      this.data = bigger
    }
    this.data[this.length++] = x
  }
  get(i: number): number {
    return this.data[i]!
  }
  set(i: number, x: number) {
    this.data[i] = x
  }
  /** The numbers pushed, in an array of their own length (the array itself when it is full). */
  done(): T {
    return this.data.length === this.length ? this.data : (this.data.slice(0, this.length) as T)
  }
}

export const f64 = (n: number) => new Float64Array(n)
export const u32 = (n: number) => new Uint32Array(n)
export const i32 = (n: number) => new Int32Array(n)
export const u8 = (n: number) => new Uint8Array(n)
