/**
 * A user's own rubrics, as users run them (the CLI in-process, `runCli`) against the fake
 * OpenAI-compatible server: `run rag-answers --rubrics DIR` judges each file of DIR as an extra
 * dimension (summary, report, composite weight from the file), `--only-rubrics` judges those alone,
 * answer-synthesis takes them too, `rubrics:` in `--config` works, and the heuristic judge or a bad
 * rubric file is refused before anything is judged or written (exit 2, naming the file and field).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, runDirIn, tempDir } from "../support/RunPipeline.js"

const sample = Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv")
const synthesisSample = Path.join(repoRoot, "test-sets", "answer-synthesis", "sample.json")

/** A rubric of the user's: "Tone", 1–3, weight 2. */
const tone = (extra: Record<string, unknown> = {}) => ({
  id: "tone",
  version: "1",
  name: "Tone",
  description: "Is the answer courteous and professional?",
  weight: 2,
  scale: [
    { score: 1, label: "Rude", description: "Curt or dismissive." },
    { score: 2, label: "Neutral", description: "Neither warm nor rude." },
    { score: 3, label: "Courteous", description: "Polite and professional throughout." }
  ],
  system: [
    "You judge one dimension: {{criterion}}.",
    "Scale:",
    "{{scale}}",
    "Answer only with the JSON object requested."
  ],
  user: [
    "Question:",
    "<data name=\"question\">",
    "{{question}}",
    "</data>",
    "Answer:",
    "<data name=\"answer\">",
    "{{answer}}",
    "</data>"
  ],
  ...extra
})

const writeDir = (files: Record<string, unknown>) => {
  const dir = tempDir("rag-eval-rubrics-")
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(Path.dirname(Path.join(dir, name)), { recursive: true })
    fs.writeFileSync(Path.join(dir, name), typeof content === "string" ? content : JSON.stringify(content, null, 2))
  }
  return dir
}

let server: FakeOpenAi.FakeOpenAi
beforeAll(async () => {
  // The user's rubric gets its lowest score (1 of 3), every built-in one its highest.
  server = await FakeOpenAi.start({
    answer: (request) => {
      const system = JSON.stringify(request.body.messages?.[0]?.content ?? "")
      return system.includes("You judge one dimension: Tone")
        ? JSON.stringify({ reasoning: "fake judge: curt.", score: 1 })
        : FakeOpenAi.defaultAnswer(request)
    }
  })
})
afterAll(() => server.close())

const llm = () => ["--provider", "openai-compatible", "--base-url", server.url, "--model", "fake"]

describe("--rubrics DIR", () => {
  it(
    "rag-answers: the rubric is a seventh dimension (summary, per-case metrics, report), weighted by its file in the composite",
    async () => {
      const rubrics = writeDir({ "tone.json": tone() })
      const out = tempDir("rag-eval-rubrics-out-")
      const before = server.judgeCalls
      const r = await runCli([
        "run",
        "rag-answers",
        "--csv",
        sample,
        "--out",
        out,
        "--rubrics",
        rubrics,
        "--json",
        "--quiet",
        ...llm(),
        "--fail-under",
        "tone.normalised=0.3"
      ])
      expect(r.stderr).toBe("")
      expect(r.code).toBe(0)
      // 12 cases × (6 built-in + 1 own) judgments.
      expect(server.judgeCalls - before).toBe(84)
      const json = JSON.parse(r.stdout)
      expect(json.judgments).toMatchObject({ total: 84, ok: 84, failed: 0 })
      const dir = runDirIn(out, "rag-answers")
      const summary = JSON.parse(fs.readFileSync(Path.join(dir, "summary.json"), "utf8"))
      expect(summary.metrics.tone.mean).toBe(1)
      expect(summary.metrics["tone.normalised"].mean).toBeCloseTo(1 / 3, 10)
      expect(summary.metricSpecs).toContainEqual(
        expect.objectContaining({ name: "tone", min: 1, max: 3, direction: "higher" })
      )
      // Six built-ins at their maximum (weight 1 each) and tone at 1/3 with weight 2.
      expect(summary.metrics.composite.mean).toBeCloseTo((6 + 2 / 3) / 8, 10)
      expect(summary.run.rubrics.map((x: { id: string }) => x.id)).toContain("tone")
      const manifest = JSON.parse(fs.readFileSync(Path.join(dir, "manifest.json"), "utf8"))
      expect(manifest.options).toEqual({ rubrics })
      expect(manifest.caseMetricSpecs.map((m: { name: string }) => m.name)).toContain("tone")
      const report = fs.readFileSync(Path.join(dir, "report.md"), "utf8")
      expect(report).toContain("Tone")
      expect(report).toContain("weight 2")
      const csv = fs.readFileSync(Path.join(dir, "report.csv"), "utf8")
      expect(csv.split("\n")[0]).toContain("Tone")
      // `report` rebuilds the run from its manifest, user rubrics included, with no call.
      const calls = server.judgeCalls
      const again = await runCli(["report", dir, "--format", "markdown"])
      expect(again.code).toBe(0)
      expect(server.judgeCalls).toBe(calls)
    },
    120_000
  )

  it("--only-rubrics: the user's rubrics alone (no harmfulness gate); also from --config", async () => {
    const rubrics = writeDir({
      "tone.json": tone({ weight: undefined }),
      "style/brevity.json": { ...tone(), id: "style/brevity", name: "Brevity", weight: undefined }
    })
    const cwd = tempDir("rag-eval-rubrics-config-")
    fs.writeFileSync(Path.join(cwd, "rag-eval.yaml"), `rubrics: ${rubrics}\nonly-rubrics: true\n`)
    const before = server.judgeCalls
    const r = await runCli(["run", "rag-answers", "--csv", sample, "--config", "rag-eval.yaml", "--quiet", ...llm()], {
      cwd
    })
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(server.judgeCalls - before).toBe(24)
    const summary = JSON.parse(
      fs.readFileSync(Path.join(runDirIn(Path.join(cwd, "out"), "rag-answers"), "summary.json"), "utf8")
    )
    expect(Object.keys(summary.metrics).sort()).toEqual([
      "composite",
      "failedJudgments",
      "style/brevity",
      "style/brevity.normalised",
      "tone",
      "tone.normalised"
    ])
    // Brevity is not "Tone": the fake gives it its maximum (3 of 3); tone 1 of 3; equal weights.
    expect(summary.metrics.composite.mean).toBeCloseTo((1 + 1 / 3) / 2, 10)
  }, 120_000)

  it("answer-synthesis: the rubric beside faithfulness and completeness (overall and pass stay theirs)", async () => {
    const rubrics = writeDir({
      "tone.json": tone({
        user: [
          "<data name=\"question\">",
          "{{question}}",
          "</data>",
          "<data name=\"answer\">",
          "{{answer}}",
          "</data>",
          "<data name=\"context\">",
          "{{context}}",
          "</data>"
        ]
      })
    })
    const out = tempDir("rag-eval-rubrics-synthesis-")
    const r = await runCli([
      "run",
      "answer-synthesis",
      "--input",
      synthesisSample,
      "--out",
      out,
      "--rubrics",
      rubrics,
      "--quiet",
      ...llm()
    ])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    const dir = runDirIn(out, "answer-synthesis")
    const summary = JSON.parse(fs.readFileSync(Path.join(dir, "summary.json"), "utf8"))
    expect(summary.metrics.tone.mean).toBe(1)
    expect(summary.metrics.overallPassRate.mean).toBe(1)
    expect(fs.readFileSync(Path.join(dir, "report.md"), "utf8")).toContain("**Your rubrics**")
  }, 120_000)
})

describe("refused before anything is judged or written (exit 2)", () => {
  it("with the heuristic judge, saying to use an LLM provider", async () => {
    const rubrics = writeDir({ "tone.json": tone() })
    const out = tempDir("rag-eval-rubrics-refused-")
    const r = await runCli(["run", "rag-answers", "--csv", sample, "--out", out, "--rubrics", rubrics])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(`--rubrics ${rubrics}: the heuristic judge cannot judge your own rubrics (tone)`)
    expect(r.stderr).toContain("Give an LLM provider: --provider openai")
    expect(fs.readdirSync(out)).toEqual([])
  }, 120_000)

  it("a bad rubric file names the file and the field; a wrong directory or --only-rubrics alone says so", async () => {
    const calls = server.calls
    const cases: ReadonlyArray<[Record<string, unknown> | undefined, ReadonlyArray<string>, ReadonlyArray<string>]> = [
      [
        {
          "tone.json": tone({
            scale: [{ score: "high", label: "x", description: "y" }, { score: 1, label: "a", description: "b" }]
          })
        },
        [],
        ["tone.json (field \"scale.0.score\"): not a rubric"]
      ],
      [{ "tone.json": tone({ weight: 0 }) }, [], [
        "tone.json (field \"weight\"): not a rubric: a weight is a number > 0"
      ]],
      [{ "tone.json": tone({ colour: "blue" }) }, [], ["tone.json (field \"colour\"): not a rubric"]],
      [{ "tone.json": "{ not json" }, [], ["tone.json: not valid JSON"]],
      [{ "tone.json": tone({ id: "my/tone" }) }, [], [
        "tone.json (field \"id\"): expected \"tone\", found \"my/tone\""
      ]],
      [{ "tone.json": tone({ user: ["<data name=\"answer\">", "{{answr}}", "</data>"] }) }, [], [
        "tone.json (field \"user\"): {{answr}} is not a variable of this pipeline; its rubrics can use {{question}}, {{history}}, {{passages}}, {{answer}}"
      ]],
      [{ "rag-answers/clarity.json": tone({ id: "rag-answers/clarity" }) }, [], [
        "rag-answers/clarity.json has the id of a built-in rubric"
      ]],
      [{ "notes.txt": "x" }, [], ["holds no rubric files (*.json)"]],
      [undefined, ["--only-rubrics"], ["--only-rubrics needs --rubrics DIR"]]
    ]
    for (const [files, flags, messages] of cases) {
      const out = tempDir("rag-eval-rubrics-bad-")
      const rubricFlags = files === undefined ? [] : ["--rubrics", writeDir(files)]
      const r = await runCli(["run", "rag-answers", "--csv", sample, "--out", out, ...rubricFlags, ...flags, ...llm()])
      expect(r.code, JSON.stringify(files)).toBe(2)
      for (const m of messages) expect(r.stderr).toContain(m)
      expect(fs.readdirSync(out)).toEqual([])
    }
    const missing = await runCli(["run", "rag-answers", "--csv", sample, "--rubrics", "/nonexistent/rubrics", ...llm()])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("--rubrics /nonexistent/rubrics: no such directory")
    // Nothing was asked of the server: not even the preflight request.
    expect(server.calls).toBe(calls)
  }, 120_000)
})
