/**
 * Smaller manners of the CLI, as users run it (in-process, `runCli`: the arguments, stdout and
 * stderr apart, the exit code): a pipeline that judges nothing does not claim a judge; `run --json`
 * answers on stdout even for bad input; counts are printed with thousands separators; a YAML config
 * error names the line to fix.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")

describe("CLI manners", () => {
  it(
    "evidence-retrieval (metrics against gold spans, no judge) does not say it uses the heuristic judge; rag-answers does",
    async () => {
      const out = tempDir("rag-eval-manners-")
      const evidence = await runCli([
        "run",
        "evidence-retrieval",
        "--input",
        Path.join(repoRoot, "test-sets/evidence-retrieval/sample.jsonl"),
        "--out",
        out
      ])
      expect(evidence.code).toBe(0)
      expect(evidence.stderr).not.toContain("heuristic judge")
      const rag = await runCli(["run", "rag-answers", "--csv", sample, "--out", out])
      expect(rag.stderr).toContain("no --provider given: using the heuristic judge")
    },
    120_000
  )

  it(
    "run --json with bad input: one JSON error object on stdout (kind, message, file), the message on stderr, exit 2",
    async () => {
      const out = tempDir("rag-eval-manners-")
      const missing = await runCli(["run", "rag-answers", "--csv", "no-such.csv", "--out", out, "--json"])
      expect(missing.code).toBe(2)
      const error = JSON.parse(missing.stdout.trim()).error
      expect(error).toMatchObject({ exitCode: 2, kind: "input", file: "no-such.csv" })
      expect(missing.stderr).toContain(`error: ${error.message}`)
      const gate = await runCli([
        "run",
        "rag-answers",
        "--csv",
        sample,
        "--out",
        out,
        "--json",
        "--fail-under",
        "failedJudgments=0"
      ])
      expect(gate.code).toBe(2)
      expect(JSON.parse(gate.stdout.trim()).error).toMatchObject({
        exitCode: 2,
        kind: "usage",
        message: expect.stringContaining("--fail-over failedJudgments=")
      })
      // Without --json, stdout stays empty.
      const plain = await runCli(["run", "rag-answers", "--csv", "no-such.csv", "--out", out])
      expect(plain.code).toBe(2)
      expect(plain.stdout).toBe("")
    },
    120_000
  )

  it("counts are printed one way: 1,020 judgments, not 1020", async () => {
    const dir = tempDir("rag-eval-manners-")
    const input = Path.join(dir, "cases.csv")
    const rows = Array.from(
      { length: 170 },
      (_, i) => `Question ${i} about heat pumps?,,"1. A heat pump moves heat.",A heat pump moves heat ${i}.`
    )
    fs.writeFileSync(
      input,
      ["Current User Question,Conversation History,Fragment Texts,Assistant Answer", ...rows].join("\n") + "\n"
    )
    const r = await runCli(["run", "rag-answers", "--csv", input, "--out", Path.join(dir, "out")])
    expect(r.code).toBe(0)
    expect(r.stderr).toContain("1,020 judgments: 1,020 ok, 0 failed")
    expect(r.stderr).not.toMatch(/\b1020\b/)
  }, 120_000)

  it(
    "a YAML config error names the line to fix: an unclosed [ list at the line it opens, not the next key's",
    async () => {
      const cwd = tempDir("rag-eval-manners-")
      fs.writeFileSync(
        Path.join(cwd, "open.yaml"),
        "# it's a comment\nrun-id: don't-care\nfields: [a, b\nlistwise: true\n"
      )
      const open = await runCli([
        "run",
        "search-relevance",
        "--input",
        Path.join(repoRoot, "test-sets/search-relevance/sample.jsonl"),
        "--config",
        "open.yaml"
      ], { cwd })
      expect(open.code).toBe(2)
      expect(open.stderr).toContain("--config open.yaml: not valid YAML: line 3: this [ list is not closed with ]")
      fs.writeFileSync(Path.join(cwd, "indent.yaml"), "top-k: 2\nrun-id: x\n  listwise: true\n")
      const indent = await runCli([
        "run",
        "search-relevance",
        "--input",
        Path.join(repoRoot, "test-sets/search-relevance/sample.jsonl"),
        "--config",
        "indent.yaml"
      ], { cwd })
      expect(indent.code).toBe(2)
      expect(indent.stderr).toMatch(/--config indent\.yaml: not valid YAML: line \d+, column \d+: /)
      expect(fs.existsSync(Path.join(cwd, "out"))).toBe(false)
    },
    120_000
  )
})
