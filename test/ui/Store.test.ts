/**
 * `rag-eval ui --store`: a run made with `--store` keeps its journal in PostgreSQL and its other
 * files in its directory; the review shows its cases from the directory and each case's judgments
 * (the judge's reasons) from the store. A private PostgreSQL (`test/support/Postgres.ts`); skipped,
 * visibly, without PostgreSQL's binaries.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../support/InProcessCli.js"
import { postgresAvailable, type PrivatePostgres, startPostgres } from "../support/Postgres.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"
import { raw, startServer } from "./Server.js"

describe.skipIf(!postgresAvailable)("rag-eval ui --store", () => {
  let pg: PrivatePostgres
  let out: string
  let runDir: string

  beforeAll(async () => {
    pg = await startPostgres()
    out = Path.join(tempDir(), "out")
    expect((await runCli(["store", "migrate", "--store", pg.url])).code).toBe(0)
    const run = await runCli([
      "run",
      "search-relevance",
      "--input",
      Path.join(repoRoot, "test-sets", "search-relevance", "sample.jsonl"),
      "--out",
      out,
      "--store",
      pg.url
    ])
    expect(run.code, run.stderr).toBe(0)
    runDir = /^run: (.+)$/m.exec(run.stdout)![1]!.trim()
  })

  afterAll(() => pg?.stop())

  it("shows a --store run's cases from its directory and their judgments from the store", async () => {
    expect(fs.existsSync(Path.join(runDir, "judgments.jsonl"))).toBe(false)
    const id = Path.basename(runDir)
    const withStore = await startServer({ out, store: pg.url })
    const without = await startServer({ out })
    try {
      const c = (await raw(withStore.port, `/api/runs/${id}/cases/sr-001`)).json()
      expect(c.judgments.length).toBeGreaterThan(0)
      const hit = c.targets.find((t: any) => t.target.kind === "hit")
      const judgment = c.judgments.find((j: any) => j.target === `hit:${hit.target.hitId}`)
      expect(judgment.reason).toBe(hit.reason)
      expect(judgment.score).toBe(hit.judged)
      const plain = (await raw(without.port, `/api/runs/${id}/cases/sr-001`)).json()
      expect(plain.judgments).toEqual([])
      expect(plain.targets).toEqual(c.targets)
    } finally {
      await withStore.close()
      await without.close()
    }
  })
})

describe.skipIf(postgresAvailable)("rag-eval ui --store", () => {
  it.skip("skipped: PostgreSQL's binaries are not installed (apt-get install postgresql)", () => {})
})
