/**
 * Colour only where it is wanted: `NO_COLOR` (https://no-color.org, any non-empty value) or output
 * that is not a terminal (a pipe, a file, CI logs) gets plain text — `--help` and every message
 * included. @effect/cli renders help with ANSI styles unconditionally, so the CLI's Console strips
 * them from what it prints when colour is off.
 */
import type * as Console from "effect/Console"

// CSI sequences (colours, styles) and OSC sequences (hyperlinks).
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g

export const stripAnsi = (text: string): string => text.replace(ANSI, "")

/** Colour is off for a stream when NO_COLOR is set (non-empty) or the stream is not a TTY. */
export const colourOff = (env: NodeJS.ProcessEnv, isTty: boolean | undefined): boolean =>
  (env.NO_COLOR !== undefined && env.NO_COLOR !== "") || isTty !== true

const plain = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? stripAnsi(a) : a))

/** The default Console, with ANSI sequences stripped from stdout and/or stderr output. */
export const plainConsole = (
  base: Console.Console,
  options: { readonly stdout: boolean; readonly stderr: boolean }
): Console.Console => ({
  ...base,
  log: (...args) => base.log(...(options.stdout ? plain(args) : args)),
  info: (...args) => base.info(...(options.stdout ? plain(args) : args)),
  error: (...args) => base.error(...(options.stderr ? plain(args) : args)),
  warn: (...args) => base.warn(...(options.stderr ? plain(args) : args)),
  unsafe: {
    ...base.unsafe,
    log: (...args) => base.unsafe.log(...(options.stdout ? plain(args) : args)),
    info: (...args) => base.unsafe.info(...(options.stdout ? plain(args) : args)),
    error: (...args) => base.unsafe.error(...(options.stderr ? plain(args) : args)),
    warn: (...args) => base.unsafe.warn(...(options.stderr ? plain(args) : args))
  }
})

/** `--wizard` asks questions on stdin: without a terminal it would wait forever. */
export const wizardWithoutTerminal = (argv: ReadonlyArray<string>, stdinTty: boolean | undefined): boolean =>
  argv.includes("--wizard") && stdinTty !== true

/**
 * The width `--help` is laid out at: the terminal's columns; when output is not a terminal, the
 * `COLUMNS` convention (as `ls` and `man` follow it) or 80.
 */
export const terminalWidth = (
  env: NodeJS.ProcessEnv,
  stdout: { readonly isTTY?: boolean | undefined; readonly columns?: number | undefined }
): number => {
  if (stdout.isTTY === true && stdout.columns !== undefined && stdout.columns > 0) return stdout.columns
  const columns = Number(env.COLUMNS)
  return Number.isInteger(columns) && columns > 0 ? columns : 80
}
