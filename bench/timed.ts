/**
 * What the benchmark sections share: how a figure is printed beside its target (`Printer`, and the
 * console's when a section runs alone), and the installed CLI timed from outside — GNU time's wall
 * time, CPU and peak RSS of `node dist/bin.js …`.
 */
import { spawnSync } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export interface Printer {
  readonly line: (text?: string) => void
  readonly figure: (name: string, value: string, target: string, ok: boolean) => void
}

/** A section run alone (`npx tsx bench/….ts`): each figure on a line, "ok" or "below target" first. */
export const consolePrinter: Printer = {
  line: (text = "") => console.log(text),
  figure: (name, value, target, ok) =>
    console.log(`  ${ok ? "ok" : "below target"}  ${name}: ${value} (target ${target})`)
}

/** Whether this module is the script node was asked to run (a section run alone), not one imported. */
export const isMain = (url: string): boolean =>
  process.argv[1] !== undefined && fileURLToPath(url) === Path.resolve(process.argv[1])

const repo = fileURLToPath(new URL("..", import.meta.url))

export interface TimedCli {
  readonly status: number | null
  readonly seconds: number
  readonly userSeconds: number
  readonly systemSeconds: number
  readonly peakMB: number
  readonly stdout: string
  /** The CLI's stderr, GNU time's own last line removed. */
  readonly stderr: string
}

/** `node dist/bin.js <args>` from the repository, under GNU time (needed for peak RSS). */
export const timedCli = (args: ReadonlyArray<string>): TimedCli => {
  const r = spawnSync("/usr/bin/time", [
    "-f",
    "%M %e %U %S",
    process.execPath,
    Path.join(repo, "dist", "bin.js"),
    ...args
  ], { cwd: repo, encoding: "utf8", maxBuffer: 64 * 2 ** 20 })
  if (r.error !== undefined) {
    throw new Error(`cannot run /usr/bin/time (GNU time is needed for peak RSS): ${r.error.message}`)
  }
  const lines = r.stderr.trimEnd().split("\n")
  const [kb, seconds, user, system] = (lines.at(-1) ?? "").split(" ")
  return {
    status: r.status,
    seconds: Number(seconds),
    userSeconds: Number(user),
    systemSeconds: Number(system),
    peakMB: Number(kb) / 1024,
    stdout: r.stdout,
    stderr: lines.slice(0, -1).join("\n")
  }
}
