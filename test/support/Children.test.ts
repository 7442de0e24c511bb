/**
 * What `Setup.ts` checks after every file: the in-process commands still running are counted from
 * their start to their end, whether they succeed or fail; those left are named once, then forgotten.
 */
import { expect, it } from "vitest"
import { countedInProcess, inProcessLeft, inProcessRunning } from "./Children.js"

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

it("the commands a file left are counted once: the files after it start from none", async () => {
  let release!: () => void
  const left = countedInProcess(() => new Promise<void>((resolve) => (release = resolve)))
  expect(inProcessLeft()).toBe(1)
  expect(inProcessRunning()).toBe(0)
  release()
  await left
  expect(inProcessRunning()).toBe(0)
  expect(inProcessLeft()).toBe(0)
})
