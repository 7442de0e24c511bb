/**
 * The child processes a test file started (`ChildCli.ts`, `Serve.ts`), killed when the file ends
 * (`Setup.ts`, run for every file): a failed assertion must not leave a run or a server behind.
 * Tests of a file may run concurrently, so only at the end of the file. And the in-process commands
 * (`InProcessCli.ts`) still running: one left by a file would write into the next file's captures
 * and hold the queue its commands wait in, so the file that left it fails, by name (`Setup.ts`).
 */
import type { ChildProcess } from "node:child_process"

const children = new Set<ChildProcess>()

export const track = (child: ChildProcess): void => {
  children.add(child)
  child.once("close", () => children.delete(child))
}

export const killChildren = (): void => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  children.clear()
}

const inProcess = new Set<object>()

/** Runs `command` (an in-process CLI command), counted while it runs. */
export const countedInProcess = async <A>(command: () => Promise<A>): Promise<A> => {
  const token = {}
  inProcess.add(token)
  try {
    return await command()
  } finally {
    inProcess.delete(token)
  }
}

/** In-process commands started and not ended. */
export const inProcessRunning = (): number => inProcess.size

/**
 * In-process commands started and not ended, then forgotten (as `killChildren` forgets the children):
 * the file that left them is named once, and the files after it are not failed for it.
 */
export const inProcessLeft = (): number => {
  const left = inProcess.size
  inProcess.clear()
  return left
}
