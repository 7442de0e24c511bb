/**
 * A run id names a directory under `<out>/<pipeline>/`, so it must be a plain name: a letter or
 * digit, then up to 127 letters, digits, `.`, `_` or `-`. No separators (`a/b`, `..\\x`), no `.` or
 * `..`, no hidden names, nothing empty — a `--run-id ../..` must not write a run over the current
 * directory.
 */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

export const isRunId = (id: string): boolean => RUN_ID_PATTERN.test(id)

/** Why `id` is not a run id, for messages. */
export const runIdProblem = (id: string): string =>
  `${
    JSON.stringify(id.length > 140 ? `${id.slice(0, 140)}…` : id)
  } is not a run id: use 1 to 128 letters, digits, ".", "_" or "-", starting with a letter or digit`
