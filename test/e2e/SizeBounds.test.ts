/**
 * Every size bounded (`domain/Limits.ts`), at real sizes, through the CLI as users run it
 * (`node dist/bin.js` in a child process):
 *
 * - a 50 MB answer in a JSONL, a JSON or a CSV test set is refused while the input is validated —
 *   exit 2, the file, the line and the field named, nothing written — with the child's heap capped
 *   at 256 MB (before the bound, the same JSONL took 0.8–2.7 GB and ended in a crash);
 * - a judge reply listing 100,000 claims (the fake OpenAI server) is a failed judgment with the
 *   reason: the run finishes, and a resume pays for nothing again (before, it made 600,000 paid
 *   checks and crashed, on every resume).
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { cli } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

/** The child's heap is capped: a run that built the 50 MB field into its cases would not fit. */
const smallHeap = { NODE_OPTIONS: "--max-old-space-size=256" }

const FIFTY_MB = 50_000_000
const huge = () => "The tower is tall. ".repeat(Math.ceil(FIFTY_MB / 19)).slice(0, FIFTY_MB)

/** Every entry under `dir`, recursively, relative to it. */
const entries = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = Path.join(dir, e.name)
    return [Path.relative(dir, path), ...(e.isDirectory() ? entries(path).map((p) => Path.join(e.name, p)) : [])]
  })

describe("an input field past its bound (50 MB): refused naming the file, line and field; nothing written", {
  timeout: 120_000
}, () => {
  const cases = [
    {
      format: "JSONL",
      file: "cases.jsonl",
      write: (big: string) =>
        [
          JSON.stringify({ id: "q1", question: "How tall is it?", answer: "330 m.", reference: "330 m." }),
          JSON.stringify({ id: "q2", question: "How tall is it?", answer: big, reference: "330 m." })
        ].join("\n") + "\n",
      line: 2
    },
    {
      format: "JSON",
      file: "cases.json",
      write: (big: string) =>
        `[\n  {"id": "q1", "question": "How tall is it?", "answer": "330 m.", "reference": "330 m."},\n  ${
          JSON.stringify({ id: "q2", question: "How tall is it?", answer: big, reference: "330 m." })
        }\n]\n`,
      line: 3
    },
    {
      format: "CSV",
      file: "cases.csv",
      write: (big: string) => `id,question,answer,reference\nq1,How tall?,330 m.,330 m.\nq2,How tall?,${big},330 m.\n`,
      line: 3
    }
  ]
  for (const c of cases) {
    it(`${c.format}: exit 2, "${c.file}:${c.line} (field "answer"): field exceeds 1 MiB…", under a 256 MB heap`, async () => {
      const dir = tempDir()
      const input = Path.join(dir, c.file)
      fs.writeFileSync(input, c.write(huge()))
      const cwd = Path.join(dir, "work")
      fs.mkdirSync(cwd)
      const r = await cli(["run", "answer-correctness", "--input", input, "--quiet"], { cwd, env: smallHeap })
      expect(r.code).toBe(2)
      expect(r.stderr).toContain(`${input}:${c.line} (field "answer"): field exceeds 1 MiB`)
      expect(r.stderr).not.toContain("internal error")
      expect(entries(cwd)).toEqual([])
    })
  }
})

describe("a judge reply past its bound: a failed judgment with the reason, never a crash, never paid twice", {
  timeout: 180_000
}, () => {
  it("an extraction listing 100,000 claims: the run finishes; the judgment is failed with the reason; a resume asks nothing", async () => {
    const claims = JSON.stringify({ claims: Array.from({ length: 100_000 }, (_, i) => `c${i}`) })
    const fake = await FakeOpenAi.start({
      record: false,
      answer: (request) => {
        const schema = request.body.response_format?.json_schema?.schema as
          | { properties?: Record<string, unknown> }
          | undefined
        return schema?.properties?.claims !== undefined ? claims : FakeOpenAi.defaultAnswer(request)
      }
    })
    try {
      const out = tempDir()
      const args = [
        "run",
        "answer-correctness",
        "--input",
        Path.join(repoRoot, "test-sets", "answer-correctness", "sample.jsonl"),
        "--limit",
        "1",
        "--out",
        out,
        "--provider",
        "openai-compatible",
        "--model",
        "fake",
        "--base-url",
        fake.url,
        "--max-failures",
        "100"
      ]
      const first = await cli(args, { env: smallHeap })
      expect(first.stderr).not.toContain("internal error")
      expect(first.code).toBe(0)
      // Each extraction asked once (never repaired); no claim of theirs checked.
      const paid = fake.paidJudgeCalls
      expect(paid).toBeGreaterThan(0)
      expect(paid).toBeLessThan(10)
      const runDir = Path.resolve(repoRoot, first.stdout.trim().split("\n").at(-1)!.slice("run: ".length))
      const journal = fs.readFileSync(Path.join(runDir, "judgments.jsonl"), "utf8").trim().split("\n").map((l) =>
        JSON.parse(l) as { status: string; failure?: string; reason: string; raw?: string }
      )
      const failed = journal.filter((j) => j.status === "failed")
      expect(failed.length).toBeGreaterThan(0)
      for (const j of failed) {
        expect(j).toMatchObject({
          failure: "judge",
          reason:
            "unusable answer after 1 try: the reply lists 100,000 claims; an extraction may list at most 1,000 (not asked again)"
        })
        expect((j.raw ?? "").length).toBeLessThanOrEqual(2000)
      }
      expect(fs.statSync(Path.join(runDir, "summary.json")).size).toBeLessThan(1024 * 1024)
      // The same command again: everything is in the journal, nothing is asked again.
      const again = await cli(args, { env: smallHeap })
      expect(again.code).toBe(0)
      expect(again.stderr).toMatch(/resuming run/)
      expect(fake.paidJudgeCalls).toBe(paid)
    } finally {
      await fake.close()
    }
  })
})
