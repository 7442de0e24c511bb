/**
 * Pipelines take options, not the environment: built-in pipelines by name from any directory (the
 * built binary, `node dist/bin.js`: its prompts and pipelines are the bundle's), options that do not
 * apply refused, environment variables announced and recorded, `--config` files, `rag-eval resume`
 * (in-process through `main`, `runCli`: the same exit codes, output and files, without a Node start-up
 * per command; the environment through Config, as the CLI reads it), and no `process.env` in the library.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { cli } from "../support/ChildCli.js"
import { runCli } from "../support/InProcessCli.js"
import { quickStartRunId } from "../support/QuickStart.js"
import { repoRoot } from "../support/RunPipeline.js"

const tmp = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-options-"))
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))
const sampleCsv = Path.join(repoRoot, "test-sets/rag-answers/sample.csv")
const searchSample = Path.join(repoRoot, "test-sets/search-relevance/sample.jsonl")
const dir = (name: string) => {
  const d = Path.join(tmp, name)
  fs.mkdirSync(d, { recursive: true })
  return d
}
const manifestOf = (out: string, pipeline: string) => {
  const root = Path.join(out, pipeline)
  const [id] = fs.readdirSync(root)
  return JSON.parse(fs.readFileSync(Path.join(root, id!, "manifest.json"), "utf8")) as Record<string, any>
}

describe("built-in pipelines by name", () => {
  it("rag-eval run rag-answers works from a directory outside the repository, with the quick start's run id", async () => {
    const cwd = dir("by-name")
    const r = await cli(["run", "rag-answers", "--csv", sampleCsv], { cwd })
    expect(r.stderr).toContain("using the heuristic judge")
    expect(r.code).toBe(0)
    expect(r.stdout).toContain(`run: out/rag-answers/${quickStartRunId()}`)
    expect(fs.existsSync(Path.join(cwd, `out/rag-answers/${quickStartRunId()}/report.md`))).toBe(true)
  })

  it("an unknown name lists the built-in ones (exit 2)", async () => {
    const r = await runCli(["run", "rag-answer", "--csv", sampleCsv], { cwd: dir("unknown") })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(
      `unknown pipeline "rag-answer": built-in pipelines are rag-answers, answer-synthesis, answer-correctness, course-retrieval, search-relevance, evidence-retrieval`
    )
  })

  it("rag-eval pipelines lists the five with their options; run <pipeline> --help shows that pipeline's", async () => {
    const list = await runCli(["pipelines"])
    expect(list.code).toBe(0)
    for (
      const name of ["rag-answers", "answer-synthesis", "course-retrieval", "search-relevance", "evidence-retrieval"]
    ) expect(list.stdout).toContain(name)
    expect(list.stdout).toContain("--fuzzy-threshold")
    const help = await runCli(["run", "search-relevance", "--help"])
    expect(help.code).toBe(0)
    const own = help.stdout.slice(0, help.stdout.indexOf("Common flags of rag-eval run")).replace(/\s+/g, " ")
    expect(own).toContain("Pipeline search-relevance")
    expect(own).toContain("--listwise")
    expect(own).toContain("--fields TEXT")
    expect(own).toContain("environment: RAG_EVAL_TOP_K, RAG_TOP_K")
    expect(own).not.toContain("--fuzzy-threshold")
    const rag = await runCli(["run", "rag-answers", "--help"])
    const ragOwn = rag.stdout.slice(0, rag.stdout.indexOf("Common flags"))
    expect(ragOwn).toContain("--rubrics TEXT")
    expect(ragOwn).not.toContain("--listwise")
  })
})

describe("options that do not apply are refused", () => {
  it("--listwise on rag-answers: exit 2 naming the pipeline's options; nothing written", async () => {
    const cwd = dir("listwise-rag")
    const r = await runCli(["run", "rag-answers", "--csv", sampleCsv, "--listwise"], { cwd })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(
      "error: --listwise does not apply to rag-answers (its options: --rubrics, --only-rubrics)"
    )
    expect(fs.existsSync(Path.join(cwd, "out"))).toBe(false)
  })

  it("--retriever bm25 on rag-answers, --fuzzy-threshold on search-relevance", async () => {
    const a = await runCli(["run", "rag-answers", "--csv", sampleCsv, "--retriever", "bm25"], { cwd: dir("bm25-rag") })
    expect(a.code).toBe(2)
    expect(a.stderr).toContain("--retriever does not apply to rag-answers")
    const b = await runCli(["run", "search-relevance", "--input", searchSample, "--fuzzy-threshold", "0.5"], {
      cwd: dir("fuzzy-search")
    })
    expect(b.code).toBe(2)
    expect(b.stderr).toMatch(
      /--fuzzy-threshold does not apply to search-relevance \(its options: --retriever, --top-k, .*--listwise, --fields\)/
    )
  })

  it("--prefetch-limit on precomputed hits: exit 2, it only means something to a live retriever", async () => {
    const r = await runCli(["run", "search-relevance", "--input", searchSample, "--prefetch-limit", "50"], {
      cwd: dir("prefetch")
    })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("--prefetch-limit applies only to a live retriever (--retriever http or bm25)")
  })
})

describe("the environment: announced, recorded, checked", () => {
  it("RAG_TOP_K=2 is announced on stderr, applied, and recorded with its source", async () => {
    const cwd = dir("env-topk")
    const r = await runCli(["run", "search-relevance", "--input", searchSample], { cwd, env: { RAG_TOP_K: "2" } })
    expect(r.code).toBe(0)
    expect(r.stderr).toContain("RAG_TOP_K=2 from the environment: --top-k 2")
    const m = manifestOf(Path.join(cwd, "out"), "search-relevance")
    expect(m.options).toEqual({ topK: 2 })
    expect(m.optionSources).toEqual({ topK: "environment RAG_TOP_K" })
    expect(m.retriever.params.topK).toBe(2)
  })

  it("RAG_EVAL_TOP_K wins over its alias; a flag wins over both", async () => {
    const a = dir("env-both")
    const r = await runCli(["run", "search-relevance", "--input", searchSample], {
      cwd: a,
      env: { RAG_TOP_K: "2", RAG_EVAL_TOP_K: "3" }
    })
    expect(r.code).toBe(0)
    expect(r.stderr).toContain("RAG_EVAL_TOP_K=3 from the environment")
    expect(manifestOf(Path.join(a, "out"), "search-relevance").options).toEqual({ topK: 3 })
    const b = dir("env-flag")
    const f = await runCli(["run", "search-relevance", "--input", searchSample, "--top-k", "4"], {
      cwd: b,
      env: { RAG_TOP_K: "2" }
    })
    expect(f.code).toBe(0)
    expect(f.stderr).not.toContain("from the environment")
    expect(manifestOf(Path.join(b, "out"), "search-relevance").optionSources).toEqual({ topK: "--top-k" })
  })

  it("a variable of an option the pipeline does not take changes nothing and is not recorded", async () => {
    const cwd = dir("env-unrelated")
    const r = await runCli(["run", "rag-answers", "--csv", sampleCsv], {
      cwd,
      env: { RAG_TOP_K: "2", RAG_EVAL_LISTWISE: "1" }
    })
    expect(r.code).toBe(0)
    expect(r.stdout).toContain(quickStartRunId())
    expect(manifestOf(Path.join(cwd, "out"), "rag-answers").options).toEqual({})
  })

  it("an invalid value names the variable and what was expected (exit 2)", async () => {
    const r = await runCli(["run", "search-relevance", "--input", searchSample], {
      cwd: dir("env-bad"),
      env: { RAG_TOP_K: "ten" }
    })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(`RAG_TOP_K (from the environment, for --top-k) must be a whole number ≥ 1 (got "ten")`)
  })
})

describe("--config FILE", () => {
  it("JSON: keys are long flag names; the command line wins", async () => {
    const cwd = dir("config-json")
    fs.writeFileSync(
      Path.join(cwd, "rag-eval.json"),
      JSON.stringify({ "top-k": 2, listwise: true, "run-id": "from-config", fields: ["title", "text"] })
    )
    const r = await runCli([
      "run",
      "search-relevance",
      "--input",
      searchSample,
      "--config",
      "rag-eval.json",
      "--top-k",
      "3"
    ], { cwd })
    // 7 queries × the command line's 3 hits (the file's 2 would judge 14).
    expect(r.stderr).toContain("21 judgments: 21 ok, 0 failed")
    expect(r.stderr).not.toContain("error")
    expect(r.code).toBe(0)
    const m = JSON.parse(fs.readFileSync(Path.join(cwd, "out/search-relevance/from-config/manifest.json"), "utf8"))
    expect(m.options).toEqual({ topK: 3, listwise: true, fields: ["title", "text"] })
  })

  it("YAML, read with a YAML parser", async () => {
    const cwd = dir("config-yaml")
    fs.writeFileSync(Path.join(cwd, "rag-eval.yaml"), "# a comment\ntop-k: 2\nrun-id: yaml-run\nlistwise: true\n")
    const r = await runCli(["run", "search-relevance", "--input", searchSample, "--config", "rag-eval.yaml"], { cwd })
    expect(r.code).toBe(0)
    expect(JSON.parse(fs.readFileSync(Path.join(cwd, "out/search-relevance/yaml-run/manifest.json"), "utf8")).options)
      .toEqual({ topK: 2, listwise: true })
  })

  it("gates in the file: fail-under / fail-over as maps, checked on the declared scale like the flags", async () => {
    const cwd = dir("config-gates")
    fs.writeFileSync(
      Path.join(cwd, "gates.yaml"),
      "fail-under:\n  composite: 99%\n  clarity: 1\nfail-over:\n  failedJudgments: 0\n"
    )
    const r = await runCli(["run", "rag-answers", "--csv", sampleCsv, "--config", "gates.yaml"], { cwd })
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/error: --fail-under: composite = [\d.]+%, below 99%/)
    expect(r.stderr).not.toContain("clarity =")
    fs.writeFileSync(Path.join(cwd, "wrong.json"), JSON.stringify({ "fail-under": { failedJudgments: 0 } }))
    const w = await runCli(["run", "rag-answers", "--csv", sampleCsv, "--config", "wrong.json", "--out", "wrong-out"], {
      cwd
    })
    expect(w.code).toBe(2)
    expect(w.stderr).toContain(
      "--fail-under failedJudgments=0: lower is better for failedJudgments, so its gate is --fail-over failedJudgments=…"
    )
    expect(fs.existsSync(Path.join(cwd, "wrong-out"))).toBe(false)
  })

  it("refuses secrets, unknown keys and malformed files (exit 2, naming the file and key)", async () => {
    const cwd = dir("config-bad")
    fs.writeFileSync(Path.join(cwd, "secret.json"), JSON.stringify({ "api-key": "sk-in-a-file" }))
    const s = await runCli(["run", "rag-answers", "--csv", sampleCsv, "--config", "secret.json"], { cwd })
    expect(s.code).toBe(2)
    expect(s.stderr).toContain(`--config secret.json: "api-key" is a secret and is not accepted in a config file`)
    expect(s.stderr).not.toContain("sk-in-a-file")
    fs.writeFileSync(Path.join(cwd, "unknown.json"), JSON.stringify({ topk: 2 }))
    const u = await runCli(["run", "rag-answers", "--csv", sampleCsv, "--config", "unknown.json"], { cwd })
    expect(u.code).toBe(2)
    expect(u.stderr).toContain(`--config unknown.json: unknown key "topk"`)
    fs.writeFileSync(Path.join(cwd, "broken.yaml"), "top-k: [1,\n")
    const b = await runCli(["run", "rag-answers", "--csv", sampleCsv, "--config", "broken.yaml"], { cwd })
    expect(b.code).toBe(2)
    expect(b.stderr).toContain("--config broken.yaml: not valid YAML")
    expect(fs.existsSync(Path.join(cwd, "out"))).toBe(false)
  })
})

describe("rag-eval resume <run-dir>", () => {
  it("runs the run's own command again, from its directory, with secrets left to the environment", async () => {
    const cwd = dir("resume")
    const first = await runCli([
      "run",
      "search-relevance",
      "--input",
      searchSample,
      "--top-k",
      "2",
      "--run-id",
      "to-resume"
    ], { cwd })
    expect(first.code).toBe(0)
    const runDir = Path.join(cwd, "out/search-relevance/to-resume")
    // Half the journal lost, as after a crash: resume re-judges what is missing.
    const journal = Path.join(runDir, "judgments.jsonl")
    const lines = fs.readFileSync(journal, "utf8").trimEnd().split("\n")
    fs.writeFileSync(journal, lines.slice(0, Math.floor(lines.length / 2)).join("\n") + "\n")
    const r = await runCli(["resume", runDir], { cwd: tmp })
    expect(r.code).toBe(0)
    expect(r.stderr).toContain("resuming: rag-eval run search-relevance --input")
    expect(r.stderr).toMatch(/resuming run to-resume: \d+ of \d+ judgments done/)
    expect(fs.readFileSync(journal, "utf8").trimEnd().split("\n").length).toBe(lines.length)
    const m = JSON.parse(fs.readFileSync(Path.join(runDir, "manifest.json"), "utf8"))
    expect(m.status).toBe("complete")
    expect(m.options).toEqual({ topK: 2 })
  })

  it("a directory that is not a run: exit 2", async () => {
    const r = await runCli(["resume", tmp])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("is not a run directory")
  })
})

describe("the library never touches the environment", () => {
  it("no module under src/ reads or writes process.env (settings arrive as options; the CLI reads the environment through Config; the entry point only for NO_COLOR)", () => {
    const offenders: Array<string> = []
    const walk = (d: string) => {
      for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
        const p = Path.join(d, entry.name)
        if (entry.isDirectory()) walk(p)
        else if (/\.ts$/.test(entry.name)) {
          const code = fs.readFileSync(p, "utf8").split("\n").filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l)).join("\n")
          if (/process\.env\b/.test(code)) offenders.push(Path.relative(repoRoot, p))
        }
      }
    }
    walk(Path.join(repoRoot, "src"))
    // The entry point reads NO_COLOR and COLUMNS (terminal conventions, not settings) before anything runs.
    expect(offenders).toEqual(["src/bin.ts"])
    const bin = fs.readFileSync(Path.join(repoRoot, "src/bin.ts"), "utf8")
    expect([...bin.matchAll(/process\.env\b[^\n]*/g)].map((m) => m[0])).toEqual([
      "process.env, process.stdout.isTTY)",
      "process.env, process.stderr.isTTY)",
      "process.env, process.stdout)"
    ])
  })
})

describe("--iterations with a deterministic judge", () => {
  it("says once on stderr that the heuristic judge's iterations will agree exactly", async () => {
    const r = await runCli(["run", "rag-answers", "--csv", sampleCsv, "--iterations", "2", "--limit", "3"], {
      cwd: dir("iterations")
    })
    expect(r.code).toBe(0)
    expect(r.stderr.split("the heuristic judge is deterministic: iterations will agree exactly").length).toBe(2)
  })
})

describe("answer-correctness --pass-if", () => {
  const sample = Path.join(repoRoot, "test-sets/answer-correctness/sample.jsonl")
  const records = (out: string) => {
    const root = Path.join(out, "answer-correctness")
    const [id] = fs.readdirSync(root)
    return fs.readFileSync(Path.join(root, id!, "records-iteration-1.jsonl"), "utf8").trim().split("\n").map((l) =>
      JSON.parse(l) as { caseId: string; verdict?: { pass: boolean; why: string } }
    )
  }

  it("a threshold that names no per-case metric, or is not METRIC OP VALUE, exits 2 before anything is judged", async () => {
    for (
      const [value, problem] of [
        ["f2>=0.5", `--pass-if: "f2" is not a per-case metric of answer-correctness`],
        ["f1 is high", `--pass-if: "f1 is high" is not METRIC OP VALUE`]
      ] as const
    ) {
      const cwd = dir(`pass-if-bad-${value.length}`)
      const r = await runCli(["run", "answer-correctness", "--input", sample, "--pass-if", value], { cwd })
      expect(r.code).toBe(2)
      expect(r.stderr).toContain(problem)
      expect(fs.existsSync(Path.join(cwd, "out", "answer-correctness"))).toBe(false)
    }
  })

  it("the thresholds decide each case's verdict, and the manifest records them", async () => {
    const lenient = dir("pass-if-lenient")
    const strict = dir("pass-if-strict")
    expect(
      (await runCli(["run", "answer-correctness", "--input", sample, "--pass-if", "recall>=0"], { cwd: lenient }))
        .code
    ).toBe(0)
    expect(
      (await runCli(["run", "answer-correctness", "--input", sample, "--pass-if", "f1>=0.99,faithfulness>=0.99"], {
        cwd: strict
      })).code
    ).toBe(0)
    const l = records(Path.join(lenient, "out"))
    const s = records(Path.join(strict, "out"))
    // recall ≥ 0 holds wherever there is a reference; under the strict rule a case passes exactly when
    // its F1 and faithfulness both reach 0.99, and most of the sample does not.
    expect(l.filter((r) => r.verdict !== undefined).every((r) => r.verdict!.pass)).toBe(true)
    const judged = s.filter((r) => r.verdict !== undefined)
    expect(judged.length).toBeGreaterThan(0)
    for (const r of judged) {
      const m = (r as unknown as { metrics: Record<string, number | null> }).metrics
      expect(r.verdict!.pass).toBe((m["f1"] ?? -1) >= 0.99 && (m["faithfulness"] ?? -1) >= 0.99)
    }
    expect(judged.filter((r) => !r.verdict!.pass).length).toBeGreaterThan(judged.length / 2)
    expect(manifestOf(Path.join(strict, "out"), "answer-correctness")["options"]).toMatchObject({
      passIf: "f1>=0.99,faithfulness>=0.99"
    })
  })
})
