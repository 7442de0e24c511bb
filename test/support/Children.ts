/**
 * The child processes a test file started (`ChildCli.ts`, `Serve.ts`), killed when the file ends
 * (`Setup.ts`, run for every file): a failed assertion must not leave a run or a server behind.
 * Tests of a file may run concurrently, so only at the end of the file.
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
