/**
 * Input limits, through the CLI as a user runs it (in-process, `runCli`, in a temp working directory;
 * the built-in pipelines by name):
 * a `--run-id` that is not a plain name, and JSON nested deeper than 64 levels anywhere in a row,
 * are refused with exit 2 before anything is judged or written.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

/** `rag-eval …args` in `cwd`, in-process (`runCli`: the output and exit code the built CLI gives). */
const cli = (args: ReadonlyArray<string>, cwd: string) => runCli(args, { cwd })

const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")

/** Every entry under `dir`, recursively, relative to it. */
const entries = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = Path.join(dir, e.name)
    return [Path.relative(dir, path), ...(e.isDirectory() ? entries(path).map((p) => Path.join(e.name, p)) : [])]
  })

describe("--run-id must be a plain name", () => {
  const bad: ReadonlyArray<[string, string]> = [
    ["parent directories", "../.."],
    ["empty", ""],
    ["a path", "a/b"],
    ["a dot name", "."],
    ["hidden", ".hidden"],
    ["absolute", "/tmp/run"],
    ["a backslash", "a\\b"],
    ["whitespace", "my run"],
    ["a NUL", "a\u0001b"],
    ["129 characters", "a".repeat(129)]
  ]
  for (const [name, id] of bad) {
    it(`${name}: exit 2, nothing written anywhere`, async () => {
      const cwd = tempDir()
      const r = await cli(["run", "rag-answers", "--csv", sample, "--limit", "1", "--run-id", id], cwd)
      expect(r.code).toBe(2)
      expect(r.stderr + r.stdout).toMatch(/run-id/)
      expect(entries(cwd)).toEqual([])
    })
  }

  it("a plain name (letters, digits, . _ -, up to 128 characters) is accepted", async () => {
    const cwd = tempDir()
    const id = `My_run-1.2${"x".repeat(118)}`
    const r = await cli(["run", "rag-answers", "--csv", sample, "--limit", "1", "--run-id", id], cwd)
    expect(r.code).toBe(0)
    expect(fs.existsSync(Path.join(cwd, "out", "rag-answers", id, "manifest.json"))).toBe(true)
  })
})

/** `{"a":{"a":…}}` nested `depth` objects deep (the outer one counts as 1). */
const nested = (depth: number, leaf = "\"x\"") => "{\"a\":".repeat(depth) + leaf + "}".repeat(depth)

describe("JSON nested deeper than 64 levels is refused at validation, before any judge call", () => {
  let lineNo = 0
  const searchLine = (extra: string) =>
    `{"id": "q${++lineNo}", "query": "capital of france", "hits": [{"id": "a", "text": "Paris is the capital of France."}], "extra": ${extra}}`

  it(
    "JSONL: an unused field nested 100 levels deep → exit 2 naming the file and line; the LLM is never called",
    async () => {
      const fake = await FakeOpenAi.start()
      try {
        const cwd = tempDir()
        const input = Path.join(cwd, "deep.jsonl")
        // Line 2 holds 100 levels in a field the pipeline never reads.
        fs.writeFileSync(input, [searchLine("1"), searchLine(nested(99)), searchLine("2")].join("\n") + "\n")
        const r = await cli([
          "run",
          "search-relevance",
          "--input",
          input,
          "--provider",
          "openai-compatible",
          "--model",
          "m",
          "--base-url",
          fake.url,
          "--out",
          Path.join(cwd, "out")
        ], cwd)
        expect(r.stderr).not.toMatch(/Maximum call stack|internal error/)
        expect(r.code).toBe(2)
        expect(r.stderr).toMatch(/deep\.jsonl:2\b.*nest/i)
        expect(fake.calls).toBe(0)
        expect(fs.existsSync(Path.join(cwd, "out"))).toBe(false)
      } finally {
        await fake.close()
      }
    },
    120_000
  )

  it("JSONL: 100,000 levels (arrays) → exit 2 naming the line, no stack overflow", async () => {
    const cwd = tempDir()
    const input = Path.join(cwd, "very-deep.jsonl")
    fs.writeFileSync(input, searchLine("1") + "\n" + searchLine("[".repeat(100_000) + "]".repeat(100_000)) + "\n")
    const r = await cli(["run", "search-relevance", "--input", input, "--out", Path.join(cwd, "out")], cwd)
    expect(r.stderr).not.toMatch(/Maximum call stack|internal error/)
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/very-deep\.jsonl:2\b.*nest/i)
    expect(fs.existsSync(Path.join(cwd, "out"))).toBe(false)
  }, 120_000)

  it("JSON document: a case nested 65 levels deep → exit 2 naming the case's line", async () => {
    const cwd = tempDir()
    const input = Path.join(cwd, "deep.json")
    const ok = {
      queryLogId: "q1",
      question: "Which course?",
      answer: "Take STAT101.",
      context: [{ name: "Stats", code: "STAT101" }]
    }
    // The second case starts on line 3; its `meta` field holds 64 more levels (65 with the case).
    fs.writeFileSync(
      input,
      `{"cases": [\n${JSON.stringify(ok)},\n${JSON.stringify({ ...ok, queryLogId: "q2" }).slice(0, -1)}, "meta": ${
        nested(64)
      }}\n]}\n`
    )
    const r = await cli(["run", "answer-synthesis", "--input", input, "--out", Path.join(cwd, "out")], cwd)
    expect(r.stderr).not.toMatch(/Maximum call stack|internal error/)
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/deep\.json:3\b.*nest/i)
    expect(fs.existsSync(Path.join(cwd, "out"))).toBe(false)
  }, 120_000)

  it("64 levels are fine", async () => {
    const cwd = tempDir()
    const input = Path.join(cwd, "ok.jsonl")
    // The row object is level 1, `extra` holds 63 more.
    fs.writeFileSync(input, searchLine(nested(63)) + "\n")
    const r = await cli(["run", "search-relevance", "--input", input, "--out", Path.join(cwd, "out")], cwd)
    expect(r.stderr).not.toMatch(/Maximum call stack|internal error/)
    expect(r.code).toBe(0)
  }, 120_000)
})
