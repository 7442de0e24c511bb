/**
 * The temporary module the CLI compiles a pipeline file into (src/cli/LoadPipeline.ts) is what
 * `isCompiledModule` recognises — the docs' examples leave such modules out of their copies of
 * `pipelines/` by it — and a pipeline file itself is not.
 */
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { compiledModulePath, isCompiledModule } from "../../src/cli/LoadPipeline.js"

describe("the module a pipeline file is compiled into", () => {
  it("lies beside the file, and isCompiledModule knows it; pipeline files and other dot files are not it", () => {
    const file = "/work/pipelines/rag-answers.ts"
    const compiled = compiledModulePath(file)
    expect(Path.dirname(compiled)).toBe("/work/pipelines")
    expect(isCompiledModule(compiled)).toBe(true)
    for (const other of [file, "/work/pipelines/mine.mjs", "/work/pipelines/.gitkeep", "/work/.eslintrc.mjs"]) {
      expect(isCompiledModule(other), other).toBe(false)
    }
  })
})
