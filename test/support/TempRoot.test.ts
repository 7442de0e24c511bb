import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

describe("the run's temp directory (test/support/TempRoot.ts)", () => {
  it("os.tmpdir() in a test is the run's own directory, so the run's files go when it ends", () => {
    expect(Path.basename(os.tmpdir())).toMatch(/^rag-eval-test-/)
    expect(fs.statSync(os.tmpdir()).isDirectory()).toBe(true)
    // What a test makes there, by any name, is under it.
    const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "anything-"))
    expect(Path.dirname(dir)).toBe(os.tmpdir())
  })
})
