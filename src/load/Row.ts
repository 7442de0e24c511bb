/** One input record: the line where it starts and its values by column / key (what every parser yields). */
export interface Row {
  readonly line: number
  readonly values: Readonly<Record<string, unknown>>
}

/** A field's path inside a row: `["hits", 0, "id"]` → `hits[0].id`. */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`),
    ""
  )
