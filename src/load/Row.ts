/** One input record: the line where it starts and its values by column / key (what every parser yields). */
export interface Row {
  readonly line: number
  readonly values: Readonly<Record<string, unknown>>
}
