/** Report formats `--format` accepts, and the default. */
export const FORMATS = ["markdown", "csv", "json", "html"] as const
export const defaultFormats = ["markdown", "csv"] as const
