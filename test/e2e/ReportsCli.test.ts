/**
 * Reports people look at and CI can gate on: exit codes of --fail-under and compare --fail-if-worse,
 * `run --json` on stdout, --quiet, `report --partial` of a stopped run — in-process through `main`
 * (`runCli`: what a command prints, writes and exits with, without a Node start-up per command) —
 * and, as users run them (`node dist/bin.js`, built by `pretest`), what is the process's: SIGTERM →
 * 143, no colour codes in pipes or with NO_COLOR, --wizard without a terminal.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { cli, start, waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

// The built-in pipeline by name: loading a pipeline file is Cli.test.ts's subject, and costs each run an esbuild compile.
const pipeline = "rag-answers"
const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const ESC = "\u001b"

const runDir = (out: string, name = "rag-answers") => {
  const root = Path.join(out, name)
  return Path.join(root, fs.readdirSync(root)[0]!)
}

describe("run: CI gate, --json, --quiet", () => {
  it(
    "--fail-under / --fail-over: met → 0; unmet → 1 with one line per gate, after every file is written; a gate off the declared metrics → 2 before anything is judged or written",
    async () => {
      const out = tempDir("rag-eval-gate-")
      const met = await runCli([
        "run",
        pipeline,
        "--csv",
        sample,
        "--out",
        out,
        "--fail-under",
        "composite=0.1,clarity=1,clarity.normalised=10%",
        "--fail-over",
        "failedJudgments=0"
      ])
      expect(met.code).toBe(0)
      const unmet = await runCli([
        "run",
        pipeline,
        "--csv",
        sample,
        "--out",
        out,
        "--fail-under",
        "composite=99%,rag-answers/clarity=3.9,harmfulness=0"
      ])
      expect(unmet.code).toBe(1)
      const lines = unmet.stderr.split("\n").filter((l) => l.startsWith("error: --fail-under"))
      expect(lines).toHaveLength(2)
      expect(lines[0]).toMatch(/^error: --fail-under: composite = \d+(\.\d+)?%, below 99%$/)
      expect(lines[1]).toMatch(/^error: --fail-under: rag-answers\/clarity = 3\.\d+, below 3\.9$/)
      expect(fs.existsSync(Path.join(runDir(out), "report.md"))).toBe(true)
      // `report` gates the same way, from the run's summary.json.
      const report = await runCli(["report", runDir(out), "--fail-under", "composite=0.99"])
      expect(report.code).toBe(1)
      expect(report.stderr).toMatch(/error: --fail-under: composite = 0\.\d+, below 0\.99/)
      const wrong: ReadonlyArray<[ReadonlyArray<string>, string]> = [
        [
          ["--fail-under", "ndcg@10=0.5"],
          `--fail-under ndcg@10=0.5: no metric "ndcg@10" in this run; its metrics: rag-answers/answer-relevance (0–3, higher is better)`
        ],
        [["--fail-under", "groundednes=1"], `did you mean rag-answers/groundedness?`],
        [
          ["--fail-under", "failedJudgments=0"],
          "lower is better for failedJudgments, so its gate is --fail-over failedJudgments=…"
        ],
        [["--fail-over", "composite=0.9"], "higher is better for composite, so its gate is --fail-under composite=…"],
        [["--fail-under", "composite=70"], "composite is a fraction, 0–1 (a percentage needs %); write 0.7 or 70%"],
        [
          ["--fail-under", "groundedness=80%"],
          "rag-answers/groundedness is a score on 0–2, not a rate: give it without %"
        ]
      ]
      for (const [gate, message] of wrong) {
        const fresh = tempDir("rag-eval-gate-")
        const r = await runCli(["run", pipeline, "--csv", sample, "--out", fresh, ...gate])
        expect(r.code, gate.join(" ")).toBe(2)
        expect(r.stderr).toContain(message)
        expect(fs.readdirSync(fresh)).toEqual([])
      }
      // The same check on a dry run, which judges nothing either.
      const dry = await runCli([
        "run",
        pipeline,
        "--csv",
        sample,
        "--dry-run",
        "--out",
        tempDir("rag-eval-gate-"),
        "--fail-under",
        "failedJudgments=0"
      ])
      expect(dry.code).toBe(2)
      const syntax = await runCli([
        "run",
        pipeline,
        "--csv",
        sample,
        "--out",
        tempDir("rag-eval-gate-"),
        "--fail-under",
        "composite"
      ])
      expect(syntax.code).toBe(2)
      expect(syntax.stderr).toContain("not metric=number")
    },
    120_000
  )

  it(
    "--json: one JSON object on stdout (run dir, counts, metrics, cost, thresholds); --quiet: nothing on stderr",
    async () => {
      const out = tempDir("rag-eval-json-")
      const r = await runCli([
        "run",
        pipeline,
        "--csv",
        sample,
        "--out",
        out,
        "--json",
        "--quiet",
        "--fail-under",
        "composite=0.1"
      ])
      expect(r.code).toBe(0)
      expect(r.stderr).toBe("")
      const lines = r.stdout.trim().split("\n")
      expect(lines).toHaveLength(1)
      const summary = JSON.parse(lines[0]!)
      expect(summary.runDir).toBe(runDir(out))
      expect(summary.judgments).toMatchObject({ total: 72, ok: 72, failed: 0 })
      expect(summary.cases).toBe(12)
      expect(typeof summary.metrics.composite).toBe("number")
      expect(summary.cost.usd).toBe(0)
      expect(summary.thresholds).toEqual({
        met: true,
        results: [{
          flag: "--fail-under",
          metric: "composite",
          limit: 0.1,
          value: summary.metrics.composite,
          met: true
        }]
      })
      // summary.json: authoritative, prompts only as hashes.
      const file = JSON.parse(fs.readFileSync(Path.join(runDir(out), "summary.json"), "utf8"))
      expect(file.authoritative).toBe(true)
      expect(file.metrics.composite.mean).toBe(summary.metrics.composite)
      expect(file.metrics.composite.ci.lower).toBeLessThan(summary.metrics.composite)
      expect(file.run.rubrics[0]).toEqual(
        expect.objectContaining({ id: "rag-answers/answer-relevance", hash: expect.stringMatching(/^[0-9a-f]+$/) })
      )
      expect(file.run.rubrics[0].system).toBeUndefined()
      expect(JSON.stringify(file)).not.toContain("{{")
    },
    120_000
  )
})

describe("terminal manners", () => {
  it("no colour codes in a pipe or with NO_COLOR: --help, errors", async () => {
    for (const env of [{}, { NO_COLOR: "1" }] as ReadonlyArray<Record<string, string>>) {
      const help = await cli(["--help"], { env })
      expect(help.code).toBe(0)
      expect(help.stdout).toContain("rag-eval")
      expect(help.stdout).not.toContain(ESC)
      const runHelp = await cli(["run", "--help"], { env })
      expect(runHelp.stdout).toContain("--fail-under")
      expect(runHelp.stdout).not.toContain(ESC)
      const bad = await cli(["run", pipeline, "--nosuchflag"], { env })
      expect(bad.code).toBe(2)
      expect(bad.stderr + bad.stdout).not.toContain(ESC)
    }
  }, 120_000)

  it("--wizard without a terminal exits 2 at once, saying it needs one", async () => {
    const r = await cli(["--wizard"])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("--wizard needs a terminal")
  })

  it(
    "SIGTERM: the run stops cleanly and exits 143; report --partial renders what the journal holds, marked partial; report without it refuses",
    async () => {
      const server = await FakeOpenAi.start({ latencyMs: 100 })
      try {
        const out = tempDir("rag-eval-sigterm-")
        const args = [
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
          "--concurrency",
          "4"
        ]
        const first = start(args)
        await waitFor("24 calls", () => server.judgeCalls >= 24 || first.exited())
        first.child.kill("SIGTERM")
        const stopped = await first.result
        expect(stopped.stderr).toContain("stopping: no new judge calls")
        expect(stopped.code).toBe(143)
        const dir = runDir(out)
        const calls = server.judgeCalls
        const refused = await runCli(["report", dir])
        expect(refused.code).toBe(2)
        expect(refused.stderr).toContain("report --partial")
        const partial = await runCli(["report", dir, "--partial", "--format", "markdown,csv,html", "--json"])
        expect(partial.stderr).toBe("")
        expect(partial.code).toBe(0)
        expect(server.judgeCalls).toBe(calls)
        const summary = JSON.parse(partial.stdout)
        expect(summary.partial).toBe(true)
        expect(summary.judgments.total).toBeGreaterThan(0)
        expect(summary.judgments.total).toBeLessThan(72)
        expect(fs.readFileSync(Path.join(dir, "report.md"), "utf8")).toMatch(/^> \*\*Partial report\*\*/)
        expect(fs.readFileSync(Path.join(dir, "report.html"), "utf8")).toContain(`id="partial"`)
        const rows = fs.readFileSync(Path.join(dir, "report.csv"), "utf8").trim().split("\r\n")
        expect(rows.length - 1).toBeLessThan(12)
        expect(JSON.parse(fs.readFileSync(Path.join(dir, "summary.json"), "utf8")).partial).toBe(true)
      } finally {
        await server.close()
      }
    },
    120_000
  )
})

describe("compare as a CI gate", () => {
  it(
    "different pipelines: exit 2 saying what differs; --fail-if-worse: exit 1 when B is significantly worse",
    async () => {
      const out = tempDir("rag-eval-compare-cli-")
      const a = await runCli(["run", pipeline, "--csv", sample, "--out", out, "--quiet"])
      expect(a.code).toBe(0)
      // Same questions; every answer replaced by one that ignores the fragments.
      const text = fs.readFileSync(sample, "utf8")
      const { parse } = await import("csv-parse/sync")
      const rows = parse(text, { bom: true }) as Array<Array<string>>
      const quote = (s: string) => `"${s.replace(/"/g, "\"\"")}"`
      const worse = [
        rows[0]!.map(quote).join(","),
        ...rows.slice(1).map((r) => [...r.slice(0, 3), "Bananas are a good source of potassium."].map(quote).join(","))
      ].join("\n") + "\n"
      const worseFile = Path.join(out, "worse.csv")
      fs.writeFileSync(worseFile, worse)
      const outB = Path.join(out, "b")
      const b = await runCli(["run", pipeline, "--csv", worseFile, "--out", outB, "--quiet"])
      expect(b.code).toBe(0)
      const runA = runDir(out)
      const runB = runDir(outB)
      const gate = await runCli(["compare", runA, runB, "--fail-if-worse", "groundedness"])
      expect(gate.code).toBe(1)
      expect(gate.stderr).toContain("error: B is significantly worse than A on rag-answers/groundedness")
      expect(gate.stdout).toContain("## Verdicts")
      const reverse = await runCli(["compare", runB, runA, "--fail-if-worse", "groundedness"])
      expect(reverse.code).toBe(0)
      // --format jsonl: json's metrics, one line each (printed as each metric's tests end), and nothing else;
      // with --output, the same lines in the file.
      const json = await runCli(["compare", runA, runB, "--format", "json"])
      const lines = await runCli(["compare", runA, runB, "--format", "jsonl"])
      expect(lines.code, lines.stderr).toBe(0)
      const metrics = JSON.parse(json.stdout).metrics as Array<unknown>
      expect(metrics.length).toBeGreaterThan(1)
      expect(lines.stdout).toBe(metrics.map((m) => JSON.stringify(m) + "\n").join(""))
      const file = Path.join(out, "compare.jsonl")
      const written = await runCli(["compare", runA, runB, "--format", "jsonl", "--output", file])
      expect(written.code).toBe(0)
      expect(fs.readFileSync(file, "utf8")).toBe(lines.stdout)
      const course = tempDir("rag-eval-compare-cli-")
      expect(
        (await runCli([
          "run",
          "pipelines/course-retrieval.ts",
          "--input",
          "test-sets/course-retrieval/sample.json",
          "--out",
          course,
          "--quiet"
        ])).code
      ).toBe(0)
      const mixed = await runCli(["compare", runA, runDir(course, "course-retrieval")])
      expect(mixed.code).toBe(2)
      expect(mixed.stderr).toContain("run A is rag-answers and run B is course-retrieval")
    },
    120_000
  )

  it(
    "--fail-if-worse on 5 paired cases cannot fail: exit 2 naming the minimum (6) and the count; on 6, all worse: exit 1",
    async () => {
      const root = tempDir("rag-eval-compare-min-")
      /** A run directory of n rag-answers records (composite only): the candidate's are all 0. */
      const writeRun = (name: string, n: number, worse: boolean) => {
        const dir = Path.join(root, name, "rag-answers", "run")
        fs.mkdirSync(dir, { recursive: true })
        const manifest = {
          tool: "rag-eval",
          command: "rag-eval run rag-answers",
          pipeline: { name: "rag-answers" },
          runId: "run",
          identity: "x",
          input: { path: "cases.csv", sha256: "x", rows: n, cases: n, columns: [] },
          iterations: 1,
          judgmentsPerIteration: n,
          concurrency: 1,
          judge: { provider: "heuristic", model: "heuristic", label: "heuristic", params: {} },
          retriever: { name: "precomputed", params: {} },
          prompts: [],
          startedAt: "2026-01-01T00:00:00.000Z",
          status: "complete",
          caseMetricSpecs: [{
            name: "composite",
            description: "composite",
            min: 0,
            max: 1,
            direction: "higher",
            unit: "fraction"
          }]
        }
        fs.writeFileSync(Path.join(dir, "manifest.json"), JSON.stringify(manifest))
        const cases = Array.from(
          { length: n },
          (_, i) =>
            JSON.stringify({
              caseId: `c${i + 1}`,
              line: i + 2,
              iteration: 1,
              metrics: { composite: worse ? 0 : 0.9 - i * 0.05 },
              failed: false
            })
        )
        fs.writeFileSync(Path.join(dir, "case-metrics-iteration-1.jsonl"), cases.join("\n") + "\n")
        return dir
      }
      const five = await runCli([
        "compare",
        writeRun("a5", 5, false),
        writeRun("b5", 5, true),
        "--fail-if-worse",
        "composite"
      ])
      expect(five.code).toBe(2)
      expect(five.stderr).toContain(
        "error: --fail-if-worse cannot fail on composite: the randomisation test needs at least 6 paired cases to reach p < 0.05, and these runs have 5"
      )
      expect(five.stdout).toBe("")
      const six = await runCli([
        "compare",
        writeRun("a6", 6, false),
        writeRun("b6", 6, true),
        "--fail-if-worse",
        "composite"
      ])
      expect(six.code).toBe(1)
      expect(six.stderr).toContain("error: B is significantly worse than A on composite")
      expect(six.stdout).toContain("0/0/6")
    },
    120_000
  )
})

describe("calibrate on a run directory feeds the HTML report", () => {
  it(
    "calibrate <run-dir> writes calibration.json into the run; report --format html shows the calibration section",
    async () => {
      const out = tempDir("rag-eval-calibrate-html-")
      expect(
        (await runCli([
          "run",
          "pipelines/course-retrieval.ts",
          "--input",
          "test-sets/course-retrieval/sample.json",
          "--out",
          out,
          "--quiet"
        ])).code
      ).toBe(0)
      const dir = runDir(out, "course-retrieval")
      // The query with no course (IDCG = 0): NDCG 0, flagged in report.csv's flags column and in report.md.
      const csvRows = fs.readFileSync(Path.join(dir, "report.csv"), "utf8").trim().split("\r\n")
      expect(csvRows[0]!.endsWith(",flags")).toBe(true)
      const flagged = csvRows.filter((r) => r.includes("ndcg@10: IDCG = 0 (no hit graded above 0), set to 0"))
      expect(flagged).toHaveLength(1)
      expect(flagged[0]).toMatch(/^v1-006,/)
      expect(fs.readFileSync(Path.join(dir, "report.md"), "utf8")).toContain("IDCG = 0")
      // Human labels: the judge's own grades with every 3 lowered to 2.
      const labels = Path.join(out, "human.qrels")
      fs.writeFileSync(labels, fs.readFileSync(Path.join(dir, "qrels.txt"), "utf8").replace(/ 3$/gm, " 2"))
      const cal = await runCli(["calibrate", dir, "--labels", labels, "--resamples", "50"])
      expect(cal.code).toBe(0)
      const json = JSON.parse(fs.readFileSync(Path.join(dir, "calibration.json"), "utf8"))
      expect(json.criteria[0].pairs).toBeGreaterThan(0)
      const report = await runCli(["report", dir, "--format", "html"])
      expect(report.code).toBe(0)
      const page = fs.readFileSync(Path.join(dir, "report.html"), "utf8")
      expect(page).toContain(`id="calibration"`)
      expect(page).toContain("human × judge grades")
    },
    120_000
  )
})
