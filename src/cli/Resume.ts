/**
 * `rag-eval resume <run-dir> [flags…]`: the run's own `run` command again, from its manifest.
 *
 * The manifest records the arguments of the `run` that made the run (`argv`, secrets masked). A
 * resume replays them and records them unchanged, so the tenth resume runs the same command as the
 * first — the resume's own command line (`resume <dir>`) is never a run's command. What a replay
 * leaves out or replaces:
 * - a secret flag (recorded masked): dropped, so the environment supplies the secret again;
 * - `--fresh`: a resume continues the run, it never discards its journal;
 * - a flag also given after the run directory: the one given now wins, for this invocation only
 *   (the manifest keeps the original, so `resume DIR --concurrency 2` does not stick);
 * - a value whose secret part was masked (a URL's credentials): refused unless given again.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { type InputError, UsageError } from "../domain/Errors.js"
import { readManifest } from "../domain/RunFiles.js"
import { flagDescriptors, MASK } from "../domain/Secrets.js"
import { displayPath } from "./Display.js"
import { runConfig } from "./RunFlags.js"

/**
 * The arguments (after `rag-eval`) a `run` records as its command: those typed, or for a resume the
 * original run's (already masked). `runAction` masks them again, which changes nothing masked.
 */
export class RecordedArgv extends Context.Reference<RecordedArgv>()("rag-eval/RecordedArgv", {
  defaultValue: (): ReadonlyArray<string> => []
}) {}

/** What a resume runs, and what it records. */
export interface Replay {
  /** The arguments to run (after `rag-eval`). */
  readonly argv: ReadonlyArray<string>
  /** The manifest's own `argv`, recorded again unchanged. */
  readonly recorded: ReadonlyArray<string>
}

/** The flags of `run`: each name and alias (`--input`, `-i`) → whether it takes a value. */
const runFlagTakesValue: ReadonlyMap<string, boolean> = new Map(
  flagDescriptors(runConfig).flatMap((f) =>
    [f.name, ...f.aliases].map((n) => [n.length === 1 ? `-${n}` : `--${n}`, f.primitive !== "Bool"] as const)
  )
)

/** `--name=value` → `--name`; anything else unchanged. */
const flagName = (arg: string) => arg.startsWith("-") && arg.includes("=") ? arg.slice(0, arg.indexOf("=")) : arg

/** Arguments split into units: a flag with its value, a boolean flag, or a positional argument. */
const segments = (argv: ReadonlyArray<string>): Array<ReadonlyArray<string>> => {
  const out: Array<ReadonlyArray<string>> = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const takesValue = a.startsWith("-") && !a.includes("=") && runFlagTakesValue.get(a) === true
    if (takesValue && i + 1 < argv.length) {
      out.push([a, argv[i + 1]!])
      i++
    } else if (
      a.startsWith("-") && runFlagTakesValue.get(a) === false && (argv[i + 1] === "true" || argv[i + 1] === "false")
    ) {
      out.push([a, argv[i + 1]!])
      i++
    } else {
      out.push([a])
    }
  }
  return out
}

/** Every name (and alias) of the flag `name` belongs to, so `-i` given now replaces a recorded `--input`. */
const sameFlag = (name: string): ReadonlyArray<string> => {
  const f = flagDescriptors(runConfig).find((d) =>
    [d.name, ...d.aliases].some((n) => (n.length === 1 ? `-${n}` : `--${n}`) === name)
  )
  return f === undefined ? [name] : [f.name, ...f.aliases].map((n) => (n.length === 1 ? `-${n}` : `--${n}`))
}

/**
 * The arguments a resume runs, from the manifest's `argv` and the flags given after the run
 * directory (see the module comment). Fails when a recorded value had a masked secret in it.
 */
export const replayArgv = (
  recorded: ReadonlyArray<string>,
  extra: ReadonlyArray<string>,
  runDir: string
): Effect.Effect<ReadonlyArray<string>, UsageError> =>
  Effect.suspend(() => {
    const replaced = new Set(
      segments(extra).filter((s) => s[0]!.startsWith("-")).flatMap((s) => sameFlag(flagName(s[0]!)))
    )
    const kept: Array<string> = []
    for (const segment of segments(recorded)) {
      const name = flagName(segment[0]!)
      const isFlag = name.startsWith("-")
      // A secret flag's value was recorded masked: the environment supplies it again.
      if (isFlag && (segment[1] === MASK || segment[0]!.endsWith(`=${MASK}`))) continue
      if (isFlag && name === "--fresh") continue
      if (isFlag && replaced.has(name)) continue
      if (segment.some((a) => a.includes(MASK))) {
        return Effect.fail(
          new UsageError({
            problem:
              `the run's ${isFlag ? name : "command"} held credentials, which are never recorded (${
                segment.join(" ")
              }): ` +
              `give it again after the run directory, e.g. rag-eval resume ${displayPath(runDir)} ${
                isFlag ? `${name} …` : "…"
              }`
          })
        )
      }
      kept.push(...segment)
    }
    return Effect.succeed([...kept, ...extra])
  })

/** Enters the directory a run or synthesis was made in (recorded in its manifest), so relative paths mean what they meant. */
const enterDirOf = (cwd: string | undefined, what: "run" | "synthesis"): Effect.Effect<void, UsageError> =>
  Effect.suspend(() => {
    if (cwd === undefined || cwd === process.cwd()) return Effect.void
    if (!fs.existsSync(cwd)) {
      return Effect.fail(new UsageError({ problem: `the ${what} was made in ${cwd}, which no longer exists` }))
    }
    process.chdir(cwd)
    return Effect.void
  })

/**
 * The manifest of `runDir`: its recorded `argv` (a `run` command), and the directory the run was
 * made in, entered so that relative paths mean what they meant.
 */
export const resumeArgv = (
  runDir: string,
  extra: ReadonlyArray<string>
): Effect.Effect<Replay, UsageError | InputError> =>
  Effect.gen(function*() {
    const m = yield* readManifest(runDir)
    // A wave of `rag-eval synthesize`: the synthesis's own command again (it replays every wave).
    if (m.argv !== undefined && m.argv[0] === "synthesize") {
      if (extra.length > 0) {
        return yield* new UsageError({
          problem:
            `${runDir} is a wave of a synthesis: it resumes with its own command; to change a flag, run that command again`
        })
      }
      const recorded = m.argv
      // Masked secrets (--api-key) are left out: the environment supplies them again.
      const argv = recorded.filter((a, i) =>
        a !== "--fresh" && a !== MASK && !(a === "--api-key" && recorded[i + 1] === MASK)
      )
      yield* enterDirOf(m.cwd, "synthesis")
      return { argv, recorded }
    }
    if (m.argv === undefined || m.argv[0] !== "run") {
      return yield* new UsageError({
        problem: `${
          Path.join(runDir, "manifest.json")
        } does not record its arguments (made by an older rag-eval): run its command again${
          m.command === "" ? "" : `: ${m.command}`
        }`
      })
    }
    const recorded = m.argv
    const argv = yield* replayArgv(recorded, extra, runDir)
    yield* enterDirOf(m.cwd, "run")
    return { argv, recorded }
  })
