/**
 * The store's packages are optional peer dependencies: a module that needs one that is missing fails
 * with a message naming it and the command that installs them all (a UsageError: exit 2), and the
 * list the message uses is package.json's. The packages are resolved by Node from a temp directory,
 * outside this repository's node_modules, so they are really missing there.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { installCommand, loadStoreModule, missingPackage, storePeers } from "../../src/cluster/Peers.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

const dir = tempDir("rag-eval-peers-")
/**
 * A loader resolving `specifier` with Node's own resolution from a file in the temp directory (the
 * test runner's import() would resolve from this repository, where every package is installed).
 */
const loaderFromTemp = (specifier: string) => () => {
  const require = createRequire(Path.join(dir, "module.cjs"))
  return Promise.resolve().then(() => require(specifier) as Record<string, unknown>)
}

describe("optional peer dependencies of the store", () => {
  it("a missing store package: a UsageError naming it and the install command", async () => {
    const exit = await Effect.runPromiseExit(loadStoreModule("--store", loaderFromTemp("@effect/sql-pg")))
    expect(Exit.isFailure(exit)).toBe(true)
    if (Exit.isFailure(exit)) {
      const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
      expect(error?._tag).toBe("UsageError")
      expect(error?.message).toBe(
        `--store needs @effect/sql-pg, an optional dependency of rag-eval that is not installed; install the store's packages with: ${installCommand()}`
      )
      expect(error?.message).toContain("npm install @effect/cluster@0.60.2 ")
      expect(error?.message).toContain(" pg@^8.23.1")
    }
  })

  it("a deep import (pg/lib/…) names the package; a missing package that is not a store peer is a defect, not a usage error", async () => {
    expect(
      missingPackage({
        code: "ERR_MODULE_NOT_FOUND",
        message: "Cannot find module '/x/node_modules/pg/lib/client' imported from /y"
      })
    ).toBe("pg")
    expect(missingPackage({ code: "ERR_MODULE_NOT_FOUND", message: "Cannot find package 'pg' imported from /y" })).toBe(
      "pg"
    )
    expect(
      missingPackage({
        code: "ERR_MODULE_NOT_FOUND",
        message: "Cannot find package '@effect/cluster' imported from /y"
      })
    ).toBe("@effect/cluster")
    expect(missingPackage(new Error("boom"))).toBeUndefined()
    const other = await Effect.runPromiseExit(loadStoreModule("--store", loaderFromTemp("left-pad-not-installed")))
    expect(Exit.isFailure(other) && other.cause._tag === "Die").toBe(true)
  })

  it("a module that loads is returned as it is", async () => {
    const m = await Effect.runPromise(loadStoreModule("--store", loaderFromTemp("node:fs")))
    expect(typeof m.readFileSync).toBe("function")
  })

  it("the packages named are package.json's optional peer dependencies, also dev dependencies (the tests use them)", () => {
    const pkg = JSON.parse(fs.readFileSync(Path.join(repoRoot, "package.json"), "utf8"))
    expect(storePeers).toEqual(pkg.peerDependencies)
    for (const name of Object.keys(storePeers)) {
      expect(pkg.peerDependenciesMeta[name]).toEqual({ optional: true })
      expect(pkg.devDependencies[name]).toBe(storePeers[name])
      expect(pkg.dependencies[name]).toBeUndefined()
    }
  })
})
