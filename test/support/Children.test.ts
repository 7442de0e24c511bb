/**
 * What `Setup.ts` checks after every file: the in-process commands still running are counted from
 * their start to their end, whether they succeed or fail.
 */
import { expect, it } from "vitest"
import { countedInProcess, inProcessRunning } from "./Children.js"

it("an in-process command counts while it runs, and not after it ends or fails", async () => {
  let release!: () => void
  const running = countedInProcess(() => new Promise<string>((resolve) => (release = () => resolve("done"))))
  expect(inProcessRunning()).toBe(1)
  const failing = countedInProcess(() => Promise.reject(new Error("refused")))
  expect(inProcessRunning()).toBe(2)
  await expect(failing).rejects.toThrow("refused")
  expect(inProcessRunning()).toBe(1)
  release()
  await expect(running).resolves.toBe("done")
  expect(inProcessRunning()).toBe(0)
})
