/**
 * One owner per run directory. Two processes running the same run would pay for the same calls
 * twice and interleave one journal, so the lock must hold even when two of them find a lock a
 * crashed process left behind and both try to take it over.
 *
 * The lock is a series of generations, `.lock-1`, `.lock-2`, …, each created with O_EXCL (`wx`) and
 * holding `<pid> <start time>` of its owner. The run belongs to the newest generation's owner while
 * that process runs (the start time tells a recycled pid from the owner). A process that finds the
 * newest generation's owner gone creates the next generation — O_EXCL lets exactly one of several
 * racers do so — and then checks that its generation is still the newest (a slow racer that read an
 * older listing backs off when it sees a newer one). Nothing is ever deleted from under a live
 * owner: the new owner removes only older generations, which nobody can own any more, and its own
 * on release. (The old read pid → kill(pid, 0) → rm → create sequence let two processes through.)
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as Path from "node:path"
import { OutputError } from "../domain/Errors.js"
import { isAlive } from "../io/Files.js"

const PREFIX = ".lock-"
const GENERATION = /^\.lock-(\d+)$/

/** A process's state letter and start time (clock ticks since boot) from Linux /proc; undefined where unknown. */
const procStat = (pid: number): { readonly state: string; readonly start: string | undefined } | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command (which may hold spaces and parentheses): state is the 3rd field,
    // starttime the 22nd.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return { state: fields[0] ?? "", start: fields[19] }
  } catch {
    return undefined
  }
}

/** A process's start time (clock ticks since boot, Linux /proc), or undefined where unknown. */
export const startTime = (pid: number): string | undefined => procStat(pid)?.start

const ownStart = startTime(process.pid) ?? "?"

/** Is the owner written in a lock generation still running (the same process, not a recycled pid)? */
const ownerRuns = (content: string): { readonly pid: number; readonly runs: boolean } | undefined => {
  const [pidText, start] = content.trim().split(/\s+/)
  const pid = Number(pidText)
  if (!Number.isInteger(pid) || pid <= 0) return undefined
  if (!isAlive(pid)) return { pid, runs: false }
  const now = procStat(pid)
  // A process killed (kill -9) but not yet reaped by its parent is a zombie: it still answers the
  // signal-0 probe, yet it holds nothing — a resume started right after the kill takes the run over.
  if (now !== undefined && (now.state === "Z" || now.state === "X")) return { pid, runs: false }
  return { pid, runs: start === undefined || start === "?" || now?.start === undefined || now.start === start }
}

const generations = (dir: string): Array<number> =>
  fs.readdirSync(dir).flatMap((name) => {
    const m = GENERATION.exec(name)
    return m === null ? [] : [Number(m[1])]
  }).sort((a, b) => a - b)

const read = (path: string): string | undefined => {
  try {
    return fs.readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

/** How long a generation may stay empty (its creator between create and write) before it counts as abandoned. */
const EMPTY_GRACE_MS = 2_000

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/** Take the run's lock, or say who holds it. Synchronous: a handful of file operations. */
export const acquire = (dir: string): number | OutputError => {
  for (let attempt = 0; attempt < 200; attempt++) {
    let listed: Array<number>
    try {
      listed = generations(dir)
    } catch (e) {
      return new OutputError({ path: dir, problem: `cannot lock the run: ${(e as Error).message}` })
    }
    const top = listed.length === 0 ? 0 : listed[listed.length - 1]!
    if (top > 0) {
      const topPath = Path.join(dir, `${PREFIX}${top}`)
      const content = read(topPath)
      if (content === undefined) continue
      const owner = ownerRuns(content)
      if (owner === undefined) {
        // Created but not written yet, or written by a process that died at that instant.
        const age = Date.now() - (fs.statSync(topPath, { throwIfNoEntry: false })?.mtimeMs ?? 0)
        if (age < EMPTY_GRACE_MS) {
          sleep(10)
          continue
        }
      } else if (owner.runs && owner.pid !== process.pid) {
        return new OutputError({
          path: dir,
          problem: `this run is in use by process ${owner.pid}; wait for it or stop it first`
        })
      }
    }
    const mine = top + 1
    const path = Path.join(dir, `${PREFIX}${mine}`)
    let fd: number
    try {
      fd = fs.openSync(path, "wx")
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") continue
      return new OutputError({ path: dir, problem: `cannot lock the run: ${(e as Error).message}` })
    }
    try {
      fs.writeSync(fd, `${process.pid} ${ownStart}\n`)
      fs.fsyncSync(fd)
    } catch (e) {
      fs.closeSync(fd)
      fs.rmSync(path, { force: true })
      return new OutputError({ path: dir, problem: `cannot lock the run: ${(e as Error).message}` })
    }
    fs.closeSync(fd)
    // A racer that read an older listing may have made a newer generation meanwhile: then it is its.
    const after = generations(dir)
    if (after[after.length - 1] !== mine) {
      fs.rmSync(path, { force: true })
      continue
    }
    for (const older of after) if (older < mine) fs.rmSync(Path.join(dir, `${PREFIX}${older}`), { force: true })
    // A lock written by versions before generations: its owner, if running, still owns the run.
    const legacy = Path.join(dir, ".lock")
    const legacyOwner = ownerRuns(read(legacy) ?? "")
    if (legacyOwner?.runs === true && legacyOwner.pid !== process.pid) {
      fs.rmSync(path, { force: true })
      return new OutputError({
        path: dir,
        problem: `this run is in use by process ${legacyOwner.pid}; wait for it or stop it first`
      })
    }
    fs.rmSync(legacy, { force: true })
    return mine
  }
  return new OutputError({ path: dir, problem: "cannot lock the run: it kept changing hands" })
}

/** Give the lock up (only our own generation is removed). */
export const release = (dir: string, generation: number): void => {
  const path = Path.join(dir, `${PREFIX}${generation}`)
  const owner = ownerRuns(read(path) ?? "")
  if (owner?.pid === process.pid) fs.rmSync(path, { force: true })
}

/** The run's lock for the life of the scope. */
export const lock = (dir: string): Effect.Effect<void, OutputError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const taken = acquire(dir)
      return typeof taken === "number" ? Effect.succeed(taken) : Effect.fail(taken)
    }),
    (generation) => Effect.sync(() => release(dir, generation))
  ).pipe(Effect.asVoid)
