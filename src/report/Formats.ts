/** Report formats `--format` accepts, and the default. */
export const FORMATS = ["markdown", "csv", "json", "html"] as const
export const defaultFormats = ["markdown", "csv"] as const

/** `--format`'s help, from the lists above. */
export const formatsHelp = `Reports to write: ${FORMATS.join(", ")}, comma-separated (default ${
  defaultFormats.join(",")
})`
