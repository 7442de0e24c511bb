/**
 * The CLI's exit codes, messages, the quick start, and that bad input writes nothing. The installed
 * command as a user runs it — `node dist/bin.js` in a child process (built by `pretest`) — for
 * --version, the quick start and pipeline files (the bundle compiles them with esbuild; under vitest
 * `main` would import them through vite instead); the rest in-process through `main` (`runCli`: the
 * same exit codes and output, without a Node start-up per command).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cli } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { printedRunDir, repoRoot, tempDir } from "../support/RunPipeline.js"

const sample = "test-sets/rag-answers/sample.csv"
const pipeline = "pipelines/rag-answers.ts"

const write = (dir: string, name: string, content: string | Buffer) => {
  const path = Path.join(dir, name)
  fs.writeFileSync(path, content)
  return path
}

/** In-process, with `env` over the environment (OPENAI_API_KEY emptied unless given). */
const inProcess = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => runCli(args, { env })

/** Every bad input must leave the output root empty: nothing half-written. */
const expectNothingWritten = (out: string) => expect(fs.existsSync(out) ? fs.readdirSync(out) : []).toEqual([])

describe("rag-eval CLI", () => {
  it("--version prints the version", async () => {
    const r = await cli(["--version"])
    expect(r.code).toBe(0)
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
  })

  it("the quick start runs on the heuristic judge and ends with the run directory", async () => {
    const out = tempDir()
    const r = await cli(["run", pipeline, "--csv", sample, "--out", out])
    expect(r.stderr).toContain("using the heuristic judge")
    expect(r.code).toBe(0)
    const last = r.stdout.trim().split("\n").at(-1)!
    expect(last).toMatch(/^run: .*rag-answers\/[0-9a-f]{12}$/)
    const runDir = Path.resolve(repoRoot, last.slice("run: ".length))
    for (const f of ["report.md", "report.csv", "summary.json", "manifest.json", "judgments.jsonl"]) {
      expect(fs.existsSync(Path.join(runDir, f))).toBe(true)
    }
    expect(fs.existsSync(Path.join(runDir, "report.json"))).toBe(false)
    const manifest = JSON.parse(fs.readFileSync(Path.join(runDir, "manifest.json"), "utf8"))
    expect(manifest.command).toContain("--csv")
    expect(manifest.counts).toMatchObject({ cases: 12, judgments: 72, failed: 0 })
  })

  it("a YAML --config from the bundle, whose parser is required on use: a broken file is exit 2 naming its line, nothing written", async () => {
    // In-process the parser comes from node_modules as vitest loads it; this is the bundle's path
    // (a262e8b's dynamic import got a chunk with only a default export: an internal error, exit 1).
    const dir = tempDir()
    const out = Path.join(dir, "out")
    const config = write(dir, "broken.yaml", "limit: 3\nformat: [json, csv\nconcurrency: 2\n")
    const r = await cli(["run", "rag-answers", "--csv", sample, "--config", config, "--out", out])
    expect(r.stderr).toContain(`--config ${config}: not valid YAML: line 2: this [ list is not closed with ]`)
    expect(r.code).toBe(2)
    expectNothingWritten(out)
  })

  it("--format json writes only the json report; --limit bounds the cases", async () => {
    const out = tempDir()
    const r = await inProcess(["run", pipeline, "--input", sample, "--out", out, "--format", "json", "--limit", "3"])
    expect(r.code).toBe(0)
    const runDir = Path.resolve(repoRoot, r.stdout.trim().split("\n").at(-1)!.slice(5))
    const report = JSON.parse(fs.readFileSync(Path.join(runDir, "report.json"), "utf8"))
    expect(report.records).toHaveLength(3)
    expect(fs.existsSync(Path.join(runDir, "report.md"))).toBe(false)
  })

  describe("bad input: exit 2, a message naming the problem, nothing written", () => {
    let dir: string
    beforeAll(() => {
      dir = tempDir()
    })
    const cases: ReadonlyArray<[string, () => ReadonlyArray<string>, RegExp]> = [
      ["missing file", () => ["--csv", Path.join(dir, "nope.csv")], /nope\.csv/],
      ["a directory", () => ["--csv", dir], /directory/],
      ["empty file", () => ["--csv", write(dir, "empty.csv", "")], /empty/],
      ["missing columns", () => ["--csv", write(dir, "cols.csv", "Question,Answer\nq,a\n")], /Current User Question/],
      [
        "unbalanced quotes",
        () => [
          "--csv",
          write(
            dir,
            "quote.csv",
            "Current User Question,Conversation History,Fragment Texts,Assistant Answer\nq,,\"1. open,a\n"
          )
        ],
        /:2\b.*quot|quot.*line 2|:2/i
      ],
      [
        "invalid UTF-8",
        () => [
          "--csv",
          write(
            dir,
            "bytes.csv",
            Buffer.concat([
              Buffer.from("Current User Question,Conversation History,Fragment Texts,Assistant Answer\nq,,1. a,"),
              Buffer.from([0xff, 0xfe, 0x41]),
              Buffer.from("\n")
            ])
          )
        ],
        /UTF-8/i
      ],
      [
        "a 10 MB field",
        () => [
          "--csv",
          write(
            dir,
            "big.csv",
            `Current User Question,Conversation History,Fragment Texts,Assistant Answer\nq,,1. ${
              "x".repeat(10 * 1024 * 1024)
            },a\n`
          )
        ],
        /MiB|MB|too (long|large)|exceeds/i
      ],
      ["an unknown format", () => ["--csv", sample, "--format", "pdf"], /pdf/],
      [
        "an unknown provider",
        () => ["--csv", sample, "--provider", "bogus"],
        /heuristic, openai, mistral, ollama, openai-compatible/
      ],
      ["no input", () => [], /--input/],
      ["a missing pipeline", () => ["--csv", sample], /pipeline/i]
    ]
    for (const [name, args, message] of cases) {
      it(name, async () => {
        const out = tempDir()
        const argv = name === "a missing pipeline"
          ? ["run", "pipelines/nope.ts", ...args(), "--out", out]
          : ["run", pipeline, ...args(), "--out", out]
        const r = await inProcess(argv)
        expect(r.code).toBe(2)
        expect(r.stderr).toMatch(message)
        expectNothingWritten(out)
      })
    }

    it("--provider openai without a key names OPENAI_API_KEY", async () => {
      const out = tempDir()
      const r = await inProcess(["run", pipeline, "--csv", sample, "--out", out, "--provider", "openai"], {
        OPENAI_API_KEY: ""
      })
      expect(r.code).toBe(2)
      expect(r.stderr).toContain("OPENAI_API_KEY")
      expectNothingWritten(out)
    })
  })

  describe("against the fake OpenAI-compatible server", () => {
    let server: FakeOpenAi.FakeOpenAi
    beforeAll(async () => {
      server = await FakeOpenAi.start()
    })
    afterAll(() => server.close())

    it("judges with the LLM; the API key never reaches a file", async () => {
      const out = tempDir()
      const key = "sk-cli-SECRET-999"
      const r = await inProcess([
        "run",
        pipeline,
        "--csv",
        sample,
        "--out",
        out,
        "--provider",
        "openai-compatible",
        "--base-url",
        server.url,
        "--model",
        "fake",
        "--api-key",
        key,
        "--seed",
        "7",
        "--temperature",
        "0"
      ])
      expect(r.stderr).not.toContain(key)
      expect(r.code).toBe(0)
      expect(r.stdout).not.toContain(key)
      const runDir = Path.resolve(repoRoot, r.stdout.trim().split("\n").at(-1)!.slice(5))
      for (const f of fs.readdirSync(runDir)) expect(fs.readFileSync(Path.join(runDir, f), "utf8")).not.toContain(key)
      const manifest = JSON.parse(fs.readFileSync(Path.join(runDir, "manifest.json"), "utf8"))
      expect(manifest.judge).toMatchObject({ provider: "openai-compatible", model: "fake" })
      expect(manifest.judge.params).toMatchObject({ seed: 7, temperature: 0 })
    })

    it("exit 1 when failed judgments exceed --max-failures, with every report still written", async () => {
      server.setBehaviour({ faults: { malformed: 1 } })
      const out = tempDir()
      const r = await inProcess([
        "run",
        pipeline,
        "--csv",
        sample,
        "--out",
        out,
        "--provider",
        "openai-compatible",
        "--base-url",
        server.url,
        "--model",
        "fake",
        "--limit",
        "1",
        "--max-retries",
        "0"
      ])
      server.setBehaviour({ faults: {} })
      expect(r.code).toBe(1)
      expect(r.stderr).toMatch(/6 judgment\(s\) failed \(allowed: 0\)/)
      const runDir = Path.join(out, "rag-answers")
      const [id] = fs.readdirSync(runDir)
      expect(fs.existsSync(Path.join(runDir, id!, "report.md"))).toBe(true)
    })
  })

  describe("pipeline files", () => {
    it("a pipeline importing its own TypeScript helper runs, and leaves no compiled file behind", async () => {
      const dir = fs.mkdtempSync(Path.join(repoRoot, "pipelines", ".test-"))
      try {
        write(dir, "dims.ts", "export const dims: Array<string> = [\"rag-answers/groundedness\"]\n")
        write(
          dir,
          "mine.ts",
          [
            "import { Columns, Pipeline, Reports, Scoring, Stages, Summary } from \"rag-eval\"",
            "import { dims } from \"./dims.js\"",
            "const dimensions = dims.map((rubric) => ({ rubric, weight: 1 }))",
            "export default Pipeline.make({",
            "  name: \"mine\", description: \"groundedness only\",",
            "  load: Stages.loadRows({ columns: Columns.ragAnswersColumns }),",
            "  judge: Stages.judgeAnswer(dims),",
            "  score: Scoring.rubricScore({ dimensions, lowest: 3 }),",
            "  aggregate: Summary.rubricSummary(),",
            "  report: Reports.rubricReport({ dimensions, title: \"Mine\" })",
            "})",
            ""
          ].join("\n")
        )
        const out = tempDir()
        const r = await cli(["run", Path.join(dir, "mine.ts"), "--csv", sample, "--out", out, "--limit", "2"])
        expect(r.stderr).not.toContain("error")
        expect(r.code).toBe(0)
        expect(fs.readdirSync(Path.join(out, "mine"))).toHaveLength(1)
        expect(fs.readdirSync(dir).sort()).toEqual(["dims.ts", "mine.ts"])
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })

    it("a pipeline with a syntax error: exit 2 naming the file and line", async () => {
      const dir = tempDir()
      const file = write(
        dir,
        "broken.ts",
        "import { Pipeline } from \"rag-eval\"\nexport default Pipeline.make({ name: \"x\",, })\n"
      )
      const r = await cli(["run", file, "--csv", sample, "--out", Path.join(dir, "out")])
      expect(r.code).toBe(2)
      expect(r.stderr).toMatch(/cannot load pipeline .*broken\.ts:2:\d+: /)
      expect(fs.readdirSync(dir)).toEqual(["broken.ts"])
    })
  })

  describe("rag-eval report <run-dir>", () => {
    it("rebuilds the same reports from the journal with no judge; refuses a changed input or an incomplete run (exit 2)", async () => {
      const dir = tempDir()
      const input = write(dir, "cases.csv", fs.readFileSync(Path.join(repoRoot, sample)))
      const made = await inProcess(["run", pipeline, "--csv", input, "--out", Path.join(dir, "out"), "--limit", "3"])
      expect(made.code).toBe(0)
      const runDir = printedRunDir(made.stdout)
      const before = fs.readFileSync(Path.join(runDir, "report.md"), "utf8")
      fs.rmSync(Path.join(runDir, "report.md"))
      const rebuilt = await inProcess(["report", runDir])
      expect(rebuilt.code).toBe(0)
      expect(fs.readFileSync(Path.join(runDir, "report.md"), "utf8")).toBe(before)

      const journal = Path.join(runDir, "judgments.jsonl")
      const lines = fs.readFileSync(journal, "utf8").trim().split("\n")
      fs.writeFileSync(journal, lines.slice(1).join("\n") + "\n")
      const incomplete = await inProcess(["report", runDir])
      expect(incomplete.code).toBe(2)
      expect(incomplete.stderr).toContain("is incomplete")
      fs.writeFileSync(journal, lines.join("\n") + "\n")

      fs.appendFileSync(input, "a,b,c,d\n")
      const changed = await inProcess(["report", runDir])
      expect(changed.code).toBe(2)
      expect(changed.stderr).toMatch(/cases\.csv.*changed since run/)
    })

    it("a run made with --listwise is judged a query at a time, recorded, and reported again as it ran, whatever this shell's settings", async () => {
      const out = tempDir()
      const made = await inProcess([
        "run",
        "pipelines/search-relevance.ts",
        "--input",
        "test-sets/search-relevance/sample.jsonl",
        "--out",
        out,
        "--listwise"
      ])
      expect(made.code).toBe(0)
      const runDir = printedRunDir(made.stdout)
      const manifest = JSON.parse(fs.readFileSync(Path.join(runDir, "manifest.json"), "utf8"))
      expect(manifest.options).toEqual({ listwise: true })
      const before = fs.readFileSync(Path.join(runDir, "report.md"), "utf8")
      expect(before).toContain("Judged listwise")
      const rebuilt = await inProcess(["report", runDir], { RAG_EVAL_LISTWISE: "", RAG_TOP_K: "2" })
      expect(rebuilt.code).toBe(0)
      expect(fs.readFileSync(Path.join(runDir, "report.md"), "utf8")).toBe(before)
    })
  })
})
