/**
 * `rag-eval calibrate` as a user runs it: `rag-eval calibrate …`, in-process (`runCli`: the same
 * arguments, output and exit code as the built CLI's, without a Node start-up per command). The
 * three pinned figures on llmjudge-test (Llama-3-8B grades against NIST's, computed independently of
 * this project: see ../shared/data/llmjudge-test/README.md) skip visibly without ../shared;
 * everything else runs on files made here.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, sharedData, tempDir } from "../support/RunPipeline.js"

const write = (dir: string, name: string, content: string) => {
  const path = Path.join(dir, name)
  fs.writeFileSync(path, content)
  return path
}

const llmjudge = sharedData("llmjudge-test")
const humanQrels = Path.join(llmjudge, "qrels.txt")
const llamaQrels = Path.join(llmjudge, "llama3-8b-grades.qrels")
const present = fs.existsSync(humanQrels) && fs.existsSync(llamaQrels)

describe("rag-eval calibrate on llmjudge-test (Llama-3-8B grades against NIST's)", () => {
  it.skipIf(!present)(
    "prints κ = 0.1044 (four grades), 0.1545 (binary at ≥ 2) and quadratic-weighted κ = 0.3206",
    async () => {
      const r = await runCli(["calibrate", "--judge", llamaQrels, "--labels", humanQrels])
      expect(r.stderr).toBe("")
      expect(r.code).toBe(0)
      expect(r.stdout).toContain(
        "Pairs: **4,410** matched · 0 label(s) without a judgment · 0 judgment(s) without a label · 0 judge failed"
      )
      expect(r.stdout).toMatch(/\| Cohen's κ \(4 grades\) \| 0\.1044 \| \[/)
      expect(r.stdout).toMatch(/\| Cohen's κ \(binary, grade ≥ 2\) \| 0\.1545 \| \[/)
      expect(r.stdout).toMatch(/\| Quadratic-weighted κ \| 0\.3206 \| \[/)
      expect(r.stdout).toContain("10,000 resamples with replacement, seed 42")
      expect(r.stdout).toMatch(/Kendall's τ-b = -?\d\.\d{4}, Spearman's ρ = -?\d\.\d{4} \(n = 25\)/)
      // Its speed (start-up, 2 × 4,410 lines, 10,000 resamples: about 1 s) is `npm run bench` [13]'s figure, not a test's.
    }
  )

  it.skipIf(!present)(
    "--min-kappa 0.2 fails the gate: exit 1, one line per failing criterion, the report still printed",
    async () => {
      const r = await runCli([
        "calibrate",
        "--judge",
        llamaQrels,
        "--labels",
        humanQrels,
        "--min-kappa",
        "0.2",
        "--resamples",
        "200"
      ])
      expect(r.code).toBe(1)
      expect(r.stderr.trim()).toBe("error: relevance: Cohen's κ 0.1044 is below --min-kappa 0.2 (4410 pairs)")
      expect(r.stdout).toContain("# Judge calibration")
      const pass = await runCli([
        "calibrate",
        "--judge",
        llamaQrels,
        "--labels",
        humanQrels,
        "--min-kappa",
        "0.1",
        "--resamples",
        "200"
      ])
      expect(pass.code).toBe(0)
    }
  )
})

describe("rag-eval calibrate on files made here", () => {
  it("--min-kappa exit 1 / 0, JSON to --output written atomically with a summary on stdout", async () => {
    const dir = tempDir("calibrate-e2e-")
    const judge = write(dir, "judge.qrels", "q1 0 a 0\nq1 0 b 1\nq1 0 c 2\nq1 0 d 3\nq2 0 a 0\nq2 0 b 3\n")
    const labels = write(dir, "human.qrels", "q1 0 a 0\nq1 0 b 2\nq1 0 c 2\nq1 0 d 3\nq2 0 a 1\nq2 0 b 3\nq2 0 z 1\n")
    const out = Path.join(dir, "calibration.json")
    const r = await runCli([
      "calibrate",
      "--judge",
      judge,
      "--labels",
      labels,
      "--format",
      "json",
      "--output",
      out,
      "--min-kappa",
      "0.9",
      "--resamples",
      "300"
    ])
    expect(r.code).toBe(1)
    // human (0,2,2,3,1,3) vs judge (0,1,2,3,0,3): p_o = 4/6; r = (1,1,2,2), c = (2,1,1,2) over 0…3: p_e = (2+1+2+4)/36 → κ = (2/3 − 1/4)/(3/4) = 5/9.
    expect(r.stderr.trim()).toBe("error: relevance: Cohen's κ 0.5556 is below --min-kappa 0.9 (6 pairs)")
    expect(r.stdout).toMatch(/^relevance: 6 pairs; κ = 0\.5556 \(4 grades\)/)
    expect(r.stdout).toContain(`wrote ${out}`)
    const json = JSON.parse(fs.readFileSync(out, "utf8"))
    expect(json.criteria[0].cohenKappa.value).toBeCloseTo(5 / 9, 12)
    expect(json.criteria[0].labelsWithoutJudgment.items).toEqual([{ id: "q2", item: "z", grade: 1, line: 7 }])
    expect(json.bootstrap).toEqual({ resamples: 300, seed: 42, level: 0.95, unit: "pair" })
    expect(fs.readdirSync(dir).filter((f) => f.includes(".tmp-"))).toEqual([])
    const pass = await runCli([
      "calibrate",
      "--judge",
      judge,
      "--labels",
      labels,
      "--min-kappa",
      "0.5",
      "--resamples",
      "100"
    ])
    expect(pass.code).toBe(0)
  })

  it("--runs ranks systems under both label sets (flag repeated, or comma-separated); a bad run file is exit 2 with file:line", async () => {
    const dir = tempDir("calibrate-e2e-")
    const judge = write(dir, "judge.qrels", "q1 0 d1 3\nq1 0 d2 1\nq1 0 d3 0\n")
    const labels = write(dir, "human.qrels", "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 1\n")
    const runOf = (tag: string, docs: ReadonlyArray<string>) =>
      write(dir, `${tag}.run`, docs.map((d, i) => `q1 Q0 ${d} ${i + 1} ${10 - i} ${tag}\n`).join(""))
    const [s1, s2, s3] = [
      runOf("S1", ["d1", "d3", "d2"]),
      runOf("S2", ["d2", "d3", "d1"]),
      runOf("S3", ["d3", "d1", "d2"])
    ]
    const r = await runCli([
      "calibrate",
      "--judge",
      judge,
      "--labels",
      labels,
      "--runs",
      s1,
      "--runs",
      `${s2},${s3}`,
      "--format",
      "json",
      "--resamples",
      "100"
    ])
    expect(r.code).toBe(0)
    const s = JSON.parse(r.stdout).systemRanking
    expect(s.systems.map((x: { name: string }) => x.name)).toEqual(["S1", "S2", "S3"])
    // Hand-computed in test/calibrate/Calibration.test.ts: S1 > S3 > S2 (humans), S1 > S2 > S3 (judge).
    expect(s.correlation["ndcg@10"].kendallTauB.value).toBeCloseTo(1 / 3, 12)
    const md = await runCli([
      "calibrate",
      "--judge",
      judge,
      "--labels",
      labels,
      "--runs",
      `${s1},${s2},${s3}`,
      "--resamples",
      "100"
    ])
    expect(md.stdout).toContain("- **ndcg@10**: Kendall's τ-b = 0.3333")
    const bad = write(dir, "bad.run", "q1 Q0 d1 1 high S9\n")
    const badRun = await runCli(["calibrate", "--judge", judge, "--labels", labels, "--runs", bad])
    expect(badRun.code).toBe(2)
    expect(badRun.stderr.trim()).toBe(`error: ${bad}:1 (field "score"): score "high" is not a number`)
  })

  it("a bad labels file: exit 2, file:line and the problem, nothing written", async () => {
    const dir = tempDir("calibrate-e2e-")
    const judge = write(dir, "judge.qrels", "q1 0 a 0\n")
    const labels = write(dir, "human.qrels", "q1 0 a 0\nq1 0 b 1\nq1 0 c x\n")
    const out = Path.join(dir, "report.md")
    const r = await runCli(["calibrate", "--judge", judge, "--labels", labels, "--output", out])
    expect(r.code).toBe(2)
    expect(r.stderr.trim()).toBe(`error: ${labels}:3 (field "grade"): grade "x" is not an integer`)
    expect(fs.existsSync(out)).toBe(false)
  })

  it("usage errors exit 2: no judge given, both given, an unknown flag value", async () => {
    const dir = tempDir("calibrate-e2e-")
    const labels = write(dir, "human.qrels", "q1 0 a 0\n")
    const none = await runCli(["calibrate", "--labels", labels])
    expect(none.code).toBe(2)
    expect(none.stderr).toMatch(/give the judge's grades: a run directory .* or --judge FILE/)
    const both = await runCli(["calibrate", dir, "--judge", labels, "--labels", labels])
    expect(both.code).toBe(2)
    expect(both.stderr).toMatch(/not both/)
    const badFormat = await runCli(["calibrate", "--judge", labels, "--labels", labels, "--format", "html"])
    expect(badFormat.code).toBe(2)
  })

  it("--help explains every flag with its default", async () => {
    const r = await runCli(["calibrate", "--help"])
    expect(r.code).toBe(0)
    for (
      const flag of [
        "--judge",
        "--labels",
        "--relevant-at",
        "--iteration",
        "--runs",
        "--format",
        "--output",
        "--seed",
        "--resamples",
        "--min-kappa"
      ]
    ) {
      expect(r.stdout).toContain(flag)
    }
    // Help is wrapped to the terminal: a phrase may span lines.
    const text = r.stdout.replace(/\s+/g, " ")
    expect(text).toMatch(/default 42/)
    expect(text).toMatch(/default 10000/)
    expect(text).toMatch(/default 4 for answer-synthesis runs/)
  })

  it("calibrates a real search-relevance run directory (heuristic judge) against qrels written here", async () => {
    const dir = tempDir("calibrate-e2e-")
    const input = write(
      dir,
      "search.jsonl",
      [
        {
          id: "q1",
          query: "capital of france",
          hits: [{ id: "a", text: "Paris is the capital of France." }, { id: "b", text: "France is in Europe." }, {
            id: "c",
            text: "Bananas are yellow."
          }]
        },
        {
          id: "q2",
          query: "how do vaccines work",
          hits: [{ id: "v1", text: "Vaccines train the immune system to recognise a pathogen." }, {
            id: "v2",
            text: "The weather is sunny."
          }]
        },
        {
          id: "q3",
          query: "symptoms of vitamin d deficiency",
          hits: [{ id: "d1", text: "Symptoms of vitamin D deficiency include fatigue and bone pain." }, {
            id: "d2",
            text: "Vitamin C is found in oranges."
          }, { id: "d3", text: "Deficiency of sleep causes fatigue." }]
        }
      ].map((o) => JSON.stringify(o)).join("\n") + "\n"
    )
    const out = Path.join(dir, "out")
    const runResult = await runCli(["run", "search-relevance", "--input", input, "--out", out])
    expect(runResult.code).toBe(0)
    const runDir = Path.resolve(repoRoot, runResult.stdout.trim().split("\n").at(-1)!.slice("run: ".length))
    expect(fs.existsSync(Path.join(runDir, "judgments.jsonl"))).toBe(true)
    // Labels for 7 of the 8 hits, one label for a doc the run never retrieved, one query unjudged.
    const labels = write(
      dir,
      "human.qrels",
      "q1 0 a 3\nq1 0 b 1\nq1 0 c 0\nq1 0 zz 2\nq2 0 v1 3\nq2 0 v2 0\nq3 0 d1 3\nq3 0 d2 0\nq4 0 x 1\n"
    )
    const r = await runCli(["calibrate", runDir, "--labels", labels, "--resamples", "500", "--format", "json"])
    // The only note: the run's calibration.json, for its HTML report.
    expect(r.stderr).toBe(
      `wrote ${Path.join(runDir, "calibration.json")} (rag-eval report ${runDir} --format html shows it)\n`
    )
    expect(JSON.parse(fs.readFileSync(Path.join(runDir, "calibration.json"), "utf8")).criteria[0].criterion).toBe(
      "relevance"
    )
    expect(r.code).toBe(0)
    const json = JSON.parse(r.stdout)
    expect(json.judge.kind).toBe("run")
    expect(json.judge.run.pipeline).toBe("search-relevance")
    expect(json.judge.order).toBe("records")
    const c = json.criteria[0]
    expect(c.criterion).toBe("relevance")
    expect(c.rubrics).toEqual(["search-relevance/checklist"])
    expect(c.pairs).toBe(7)
    expect(c.judgmentsWithoutLabel.items.map((i: { id: string; item: string }) => `${i.id}/${i.item}`)).toEqual([
      "q3/d3"
    ])
    expect(c.labelsWithoutJudgment.items.map((i: { id: string; item: string }) => `${i.id}/${i.item}`)).toEqual([
      "q1/zz",
      "q4/x"
    ])
    expect(c.confusion.flat().reduce((s: number, x: number) => s + x, 0)).toBe(7)
    expect(typeof c.cohenKappa.value === "number" || c.cohenKappa.reason !== undefined).toBe(true)
    expect(json.queryRanking.queries.map((q: { id: string }) => q.id)).toEqual(["q1", "q2", "q3"])
    expect(json.queryRanking.labelOnlyQueries).toBe(1)
    // The markdown of the same run: the judge is named, and so is the ranking used.
    const md = await runCli(["calibrate", runDir, "--labels", labels, "--resamples", "200"])
    expect(md.code).toBe(0)
    expect(md.stdout).toContain("search-relevance, run ")
    expect(md.stdout).toContain("heuristic judge")
    expect(md.stdout).toContain("each query's hits in the run's order (rank 1 first, from records-iteration-1.jsonl)")
  })
})
