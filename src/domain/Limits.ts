/**
 * Every size rag-eval accepts, declared once. Beyond a bound nothing is built, sent or stored:
 *
 * - **an input** (a test set read by `load/`) is refused while it is validated, before any call,
 *   with the file, the line and the field (exit 2, nothing written). CSV and JSONL are checked while
 *   they stream — a field or a line is refused as it grows past its bound, before the string is
 *   built whole; a JSON document (read whole) is refused by its size before it is read, and each of
 *   its rows' fields once parsed;
 * - **a reply** — a judge's or the live system's (`--target`) — is recorded as a failed judgment
 *   (or a failed case) with the reason, once, without asking again: a resume keeps it and pays for
 *   nothing twice. An oversized reply is never repaired (a repair sends the reply back).
 *
 * Why these figures: a test case's text is a question, an answer and passages — a field of 1 MiB is
 * a 150,000-word answer; a judge's structured reply is a few hundred words (a listwise grade list of
 * 20 hits, a few dozen claims). Without them a 50 MB answer in a JSONL file took 0.8–1.6 GB of memory
 * and wrote a 100–150 MB `summary.json`, and a judge reply listing 100,000 claims made 600,000 paid
 * checks and crashed the run on every resume.
 */

const KiB = 1024
const MiB = 1024 * KiB

export const Limits = {
  /** One text value of a test case — a CSV cell, a JSON string (a key too) — in UTF-8 bytes. */
  fieldBytes: 1 * MiB,
  /** One record of a streamed input — a CSV row, a JSONL line — in UTF-8 bytes. */
  recordBytes: 16 * MiB,
  /** A JSON test set (read whole; JSONL streams, for anything larger). */
  jsonDocumentBytes: 256 * MiB,
  /**
   * Levels of objects and arrays a JSON row (or a `serve` request) may nest, the row itself being 1:
   * later stages walk rows recursively (hashing, JSON.stringify, prompts).
   */
  jsonDepth: 64,
  /** A judge's reply (the message's text), in characters. */
  replyChars: 1_000_000,
  /** Claims one extraction may list (each is checked by a judgment of its own). */
  claims: 1_000,
  /** Characters of an unusable reply kept with its failed judgment (for the report). */
  keptReplyChars: 2_000,
  /** A response body read from a judge's server (`providers/NodeFetch.ts`) or from `--target`. */
  responseBytes: 32 * MiB
} as const satisfies Readonly<Record<string, number>>

export type Limits = { readonly [K in keyof typeof Limits]: number }

/** "1 MiB", "64 KiB", "1000 bytes". */
export const formatBytes = (bytes: number): string =>
  bytes >= MiB && bytes % MiB === 0
    ? `${bytes / MiB} MiB`
    : bytes >= KiB && bytes % KiB === 0
    ? `${bytes / KiB} KiB`
    : `${bytes} bytes`

/** Whether a string is longer than `bytes` in UTF-8 (exact, and cheap for the strings far under it). */
export const overBytes = (text: string, bytes: number): boolean =>
  text.length > bytes || (text.length * 3 > bytes && Buffer.byteLength(text, "utf8") > bytes)
