/**
 * rag-eval as users install it: `npm pack` of this repository, the tarball installed into an empty
 * project in a temp dir, then a built-in pipeline run by name through `npx rag-eval` and a user's
 * own pipeline file (importing "rag-eval") run by its path through the CLI npm linked into
 * `node_modules/.bin` — from that project, not the repository.
 * The install prints no engine warning on this Node, and leaves out the optional peers (the cluster
 * stack, pg, @effect/platform-node); the CLI's bundle still runs `--store` without them.
 * Needs the npm registry or npm's cache for the dependencies; skips visibly when npm cannot install.
 */
import { execFile, execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { postgresAvailable, startPostgres } from "../support/Postgres.js"
import { quickStartRunId } from "../support/QuickStart.js"
import { repoRoot } from "../support/RunPipeline.js"

const tmp = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-pack-"))
const project = Path.join(tmp, "project")
const sample = Path.join(repoRoot, "test-sets/rag-answers/sample.csv")
let installed: string | undefined
let installOutput = ""
let problem = ""

const run = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      command,
      [...args],
      { cwd, timeout: 180_000, env: { ...process.env, OPENAI_API_KEY: "" } },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    )
  })

beforeAll(async () => {
  // dist/ is built by `npm test`'s pretest; packing must not build again (--ignore-scripts).
  const packed = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", tmp], repoRoot)
  const tarball = fs.readdirSync(tmp).find((f) => f.endsWith(".tgz"))
  if (packed.code !== 0 || tarball === undefined) {
    problem = `npm pack failed: ${packed.stderr.slice(-500)}`
    return
  }
  fs.mkdirSync(project)
  fs.writeFileSync(
    Path.join(project, "package.json"),
    JSON.stringify({ name: "user-project", version: "1.0.0", private: true, type: "module" })
  )
  const install = await run(
    "npm",
    ["install", "--no-audit", "--no-fund", "--prefer-offline", Path.join(tmp, tarball)],
    project
  )
  if (install.code !== 0) {
    problem = `npm install of the tarball failed (no registry or cache?): ${install.stderr.slice(-500)}`
    return
  }
  installOutput = install.stdout + install.stderr
  installed = project
}, 300_000)
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

/**
 * The installed CLI as npm links it (`node_modules/.bin/rag-eval`): what `npx --no-install rag-eval`
 * runs, without npm's own start-up (~0.65 CPU-s a call). The quick start goes through npx, as users type it.
 */
const ragEval = (args: ReadonlyArray<string>, cwd: string) =>
  run(Path.join(cwd, "node_modules", ".bin", "rag-eval"), args, cwd)

const canInstall = (() => {
  try {
    execFileSync("npm", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

describe.skipIf(!canInstall)("the packed package, installed into an empty project (skipped without npm)", () => {
  it("npx rag-eval run rag-answers: a built-in pipeline by name, the quick start's run id", async () => {
    if (installed === undefined) throw new Error(problem)
    const r = await run("npx", ["--no-install", "rag-eval", "run", "rag-answers", "--csv", sample], installed)
    expect(r.stderr).toContain("using the heuristic judge")
    expect(r.code).toBe(0)
    expect(r.stdout).toContain(`run: out/rag-answers/${quickStartRunId()}`)
    expect(fs.readFileSync(Path.join(installed, `out/rag-answers/${quickStartRunId()}/report.md`), "utf8")).toContain(
      "RAG answer evaluation"
    )
    const list = await ragEval(["pipelines"], installed)
    expect(list.code).toBe(0)
    expect(list.stdout).toContain("evidence-retrieval")
  }, 120_000)

  it("a user's pipeline file importing \"rag-eval\", run by its path", async () => {
    if (installed === undefined) throw new Error(problem)
    fs.writeFileSync(
      Path.join(installed, "my-pipeline.ts"),
      [
        `import { Builtin, Pipeline, Scoring } from "rag-eval"`,
        ``,
        `const dimensions: ReadonlyArray<Scoring.Dimension> = [{ rubric: "rag-answers/groundedness", weight: 1 }]`,
        `const base = Pipeline.instantiate(Builtin.ragAnswers, {})`,
        `export default Pipeline.make({ ...base, name: "my-answers", description: "groundedness only", score: Scoring.rubricScore({ dimensions }) })`
      ].join("\n")
    )
    const r = await ragEval(["run", "./my-pipeline.ts", "--csv", sample], installed)
    expect(r.stderr).toContain("using the heuristic judge")
    // The base pipeline's judge stage (six dimensions) for each of the 12 cases; only groundedness is scored.
    expect(r.stderr).toContain("72 judgments: 72 ok, 0 failed")
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/run: out\/my-answers\/[0-9a-f]{12}/)
  }, 120_000)
  it("the install prints no engine warning, and installs none of the optional peers (cluster stack, pg, @effect/platform-node)", () => {
    if (installed === undefined) throw new Error(problem)
    expect(installOutput).not.toContain("EBADENGINE")
    const pkg = JSON.parse(fs.readFileSync(Path.join(repoRoot, "package.json"), "utf8")) as {
      peerDependencies: Record<string, string>
    }
    const peers = Object.keys(pkg.peerDependencies)
    expect(peers).toEqual(expect.arrayContaining(["@effect/cluster", "@effect/sql-pg", "pg", "@effect/platform-node"]))
    for (const name of [...peers, "@effect/workflow", "@effect/rpc", "@effect/sql", "@effect/experimental"]) {
      expect(fs.existsSync(Path.join(installed, "node_modules", name)), name).toBe(false)
    }
    // The library's server entry point is the one that needs @effect/platform-node: Node names it.
    const server = execFileSync(process.execPath, [
      "-e",
      `import("rag-eval/server").then(() => console.log("loaded"), (e) => console.log(e.message))`
    ], { cwd: installed, encoding: "utf8" })
    expect(server).toContain("Cannot find package '@effect/platform-node'")
  })

  it.skipIf(!postgresAvailable)(
    "--store works from the installed CLI without the peers: its bundle carries them (skipped without PostgreSQL)",
    async () => {
      if (installed === undefined) throw new Error(problem)
      const pg = await startPostgres()
      try {
        const migrate = await ragEval(["store", "migrate", "--store", pg.url], installed)
        expect(migrate.stderr).not.toContain("error")
        expect(migrate.code).toBe(0)
        const r = await ragEval([
          "run",
          "rag-answers",
          "--csv",
          sample,
          "--limit",
          "2",
          "--store",
          pg.url,
          "--out",
          "stored"
        ], installed)
        expect(r.stderr).toContain("12 judgments: 12 ok, 0 failed")
        expect(r.code).toBe(0)
      } finally {
        pg.stop()
      }
    },
    120_000
  )
})
