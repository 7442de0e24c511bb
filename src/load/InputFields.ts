/**
 * What a pipeline reads from each input row, for `rag-eval pipelines` and `rag-eval run <name>
 * --help`: the fields (required or optional, and what each holds) and two example lines a user can
 * copy. Each loader declares its own beside its code; a test loads every example through its
 * loader, and rows with only the required fields, so the description cannot drift from the code.
 */
export interface InputField {
  /** The column (CSV) or key (JSON). */
  readonly name: string
  readonly required: boolean
  /** What it holds, briefly. */
  readonly holds: string
}

export interface InputDoc {
  /** The file formats read, and how rows are given. */
  readonly format: string
  readonly fields: ReadonlyArray<InputField>
  /** The extension the example is written in (`.csv`, `.jsonl`). */
  readonly exampleExtension: ".csv" | ".jsonl"
  /** Two lines of an input file: a CSV header and a row, or two JSONL rows. */
  readonly example: readonly [string, string]
  /** The required fields alone, as a file of the same format (the test loads it). */
  readonly minimal: string
}
