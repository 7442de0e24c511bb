/**
 * `--target`: rag-eval asks a live RAG service for each case's answer, then judges it — tested as
 * users run it, through the CLI's arguments, against the fake RAG service (real HTTP on 127.0.0.1,
 * `test/support/FakeRag.ts`), with the heuristic judge and real temporary directories. Outcomes
 * only: who was asked how often, what the files say; never a duration. The kill -9 test's runs are
 * child processes (the process is its subject); the rest run the CLI in-process (`runCli`: the same
 * arguments, environment, output and exit code).
 */
import { describe, expect, it } from "@effect/vitest"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as Path from "node:path"
import { cli, start, waitFor } from "../support/ChildCli.js"
import { parseCsv as csvRows } from "../support/Csv.js"
import * as FakeRag from "../support/FakeRag.js"
import { runCli } from "../support/InProcessCli.js"
import { freePort } from "../support/Ports.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"

const QUESTIONS = [
  "How do heat pumps heat a house in winter?",
  "What is the boiling point of water at sea level?",
  "Why is the sky blue?",
  "How long does a passport renewal take?",
  "What does a solar inverter do?",
  "How often should a smoke alarm be tested?",
  "What is compound interest?",
  "Why do leaves change colour in autumn?"
]

/** A CSV of questions, the answer column empty except where `answers` gives one. */
const writeCsv = (dir: string, questions: ReadonlyArray<string>, answers: Readonly<Record<number, string>> = {}) => {
  const file = Path.join(dir, "questions.csv")
  const quote = (s: string) => `"${s.replace(/"/g, "\"\"")}"`
  fs.writeFileSync(
    file,
    ["Current User Question,Assistant Answer", ...questions.map((q, i) => `${quote(q)},${quote(answers[i] ?? "")}`)]
      .join("\n") + "\n"
  )
  return file
}

const runArgs = (input: string, out: string, fake: FakeRag.FakeRag, extra: ReadonlyArray<string> = []) => [
  "run",
  "rag-answers",
  "--input",
  input,
  "--out",
  out,
  "--quiet",
  "--target",
  fake.url,
  "--target-contexts",
  "$.sources[*].text",
  ...extra
]

const runDirs = (out: string) => {
  const root = Path.join(out, "rag-answers")
  return fs.existsSync(root) ? fs.readdirSync(root).map((id) => Path.join(root, id)) : []
}
const onlyRunDir = (out: string) => {
  const dirs = runDirs(out)
  expect(dirs).toHaveLength(1)
  return dirs[0]!
}

const readJson = (file: string) => JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, any>
const jsonLines = (file: string) =>
  fs.existsSync(file)
    ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, any>)
    : []

const column = (rows: Array<Array<string>>, name: string) => {
  const i = rows[0]!.indexOf(name)
  expect(i).toBeGreaterThanOrEqual(0)
  return rows.slice(1).map((r) => r[i]!)
}

/** Every file under a directory, recursively. */
const filesUnder = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(Path.join(dir, e.name)) : [Path.join(dir, e.name)]
  )

describe.concurrent("--target: answers from a live RAG service (against the fake service)", {
  timeout: 120_000
}, () => {
  it("asks each case without an answer once, judges it, and reports the answers as generated with the service's latency", async () => {
    const fake = await FakeRag.start()
    try {
      const dir = tempDir()
      const input = writeCsv(dir, QUESTIONS.slice(0, 5), {
        2: "The sky is blue because air scatters blue light more than red light."
      })
      const out = Path.join(dir, "out")
      const r = await runCli(runArgs(input, out, fake, ["--format", "markdown,csv,json,html"]))
      expect(r.stderr).toBe("")
      expect(r.code).toBe(0)
      // The four cases without an answer, once each; the one with an answer never.
      expect(fake.calls).toBe(4)
      expect([...fake.asked.entries()].sort()).toEqual(
        QUESTIONS.slice(0, 5).filter((_, i) => i !== 2).map((q) => [q, 1]).sort()
      )
      const run = onlyRunDir(out)
      const rows = csvRows(fs.readFileSync(Path.join(run, "report.csv"), "utf8"))
      expect(column(rows, "answer_source")).toEqual(["generated", "generated", "input", "generated", "generated"])
      expect(column(rows, "generated_answer")[0]).toBe(FakeRag.defaultAnswer(QUESTIONS[0]!).answer)
      expect(column(rows, "target_latency_ms").map((v) => v === "" ? "" : "n")).toEqual(["n", "n", "", "n", "n"])
      // The judged answer is the service's, with its passages.
      const records = jsonLines(Path.join(run, "records-iteration-1.jsonl"))
      expect(records[0]!.answer).toBe(FakeRag.defaultAnswer(QUESTIONS[0]!).answer)
      expect(records[0]!.generated.status).toBe("ok")
      expect(records[2]!.generated).toBeUndefined()
      const judgments = jsonLines(Path.join(run, "judgments.jsonl"))
      expect(judgments.filter((j) => j.caseId === "1" && j.status === "ok")).toHaveLength(6)
      // The latency: declared metrics in the summary (ms, lower is better), in every report.
      const summary = readJson(Path.join(run, "summary.json"))
      // The mean latency is the per-case metric's mean (with its interval); the percentiles are the target's own.
      expect(summary.metrics.targetLatencyMs).toMatchObject({ n: 4 })
      expect(summary.metrics.targetLatencyMs.ci).not.toBeNull()
      for (const m of ["targetLatencyMs", "targetLatencyP50Ms", "targetLatencyP90Ms", "targetLatencyP99Ms"]) {
        expect(typeof summary.metrics[m].mean).toBe("number")
        expect(summary.metricSpecs.find((s: any) => s.name === m)).toMatchObject({ unit: "ms", direction: "lower" })
      }
      expect(summary.metrics.targetFailures.mean).toBe(0)
      expect(summary.iterations[0].extra.target.answers).toEqual({ generated: 4, failed: 0, fromInput: 1 })
      expect(summary.caseMetricSpecs.map((s: any) => s.name)).toContain("targetLatencyMs")
      const md = fs.readFileSync(Path.join(run, "report.md"), "utf8")
      expect(md).toContain("## The system under test (--target)")
      expect(md).toMatch(/target latency \| avg [\d.]+ ms · P50 [\d.]+ ms · P90 [\d.]+ ms · P99 [\d.]+ ms/)
      expect(md).toContain("4 generated, 0 failed, 1 from the input")
      const html = fs.readFileSync(Path.join(run, "report.html"), "utf8")
      expect(html).toContain("targetLatencyP90Ms")
      expect(html).toContain("generated")
      expect(readJson(Path.join(run, "report.json")).summary.extra.target.answers.generated).toBe(4)
      // The target, masked, in the manifest; this invocation's calls.
      const manifest = readJson(Path.join(run, "manifest.json"))
      expect(manifest.target.config).toMatchObject({
        url: fake.url,
        body: "{\"question\": \"{{question}}\"}",
        answer: "$.answer",
        contexts: "$.sources[*].text"
      })
      expect(manifest.target.calls).toEqual({ asked: 4, reused: 0, failed: 0 })

      // The same command again: the journal answers, the service is not asked.
      const again = await runCli(runArgs(input, out, fake, ["--format", "markdown,csv,json,html"]))
      expect(again.code).toBe(0)
      expect(fake.calls).toBe(4)
      expect(readJson(Path.join(run, "manifest.json")).target.calls).toEqual({ asked: 0, reused: 4, failed: 0 })
      expect(fs.readFileSync(Path.join(run, "report.csv"), "utf8")).toBe(
        fs.readFileSync(Path.join(run, "report.csv"), "utf8")
      )

      // `rag-eval report` re-renders from the journals, asking nobody.
      const report = await runCli(["report", run])
      expect(report.code).toBe(0)
      expect(report.stderr).not.toContain("error")
      expect(fake.calls).toBe(4)
    } finally {
      await fake.close()
    }
  })

  it("progress counts the judgments of the passages the target returned (--target-contexts): it ends at n/n 100%", async () => {
    const fake = await FakeRag.start()
    try {
      const dir = tempDir()
      // answer-correctness checks every claim against each passage: an input without passages plans
      // none of those checks, and the target's two passages add them.
      const input = Path.join(dir, "cases.jsonl")
      fs.writeFileSync(
        input,
        QUESTIONS.slice(0, 3).map((q, i) =>
          JSON.stringify({ id: `q${i + 1}`, question: q, reference: `About ${q} The handbook has notes.` })
        ).join("\n") + "\n"
      )
      const args = runArgs(input, Path.join(dir, "out"), fake).map((a) =>
        a === "rag-answers" ? "answer-correctness" : a
      )
        .filter((a) => a !== "--quiet")
      const done = await runCli(args)
      expect(done.code).toBe(0)
      const last = [...done.stderr.matchAll(/answer-correctness: ([\d,]+)\/([\d,]+) (\d+)%/g)].at(-1)
      expect(last).toBeDefined()
      const [, made, total, pct] = last!
      expect(Number(made!.replace(/,/g, ""))).toBeGreaterThan(0)
      expect([made, pct]).toEqual([total, "100"])
    } finally {
      await fake.close()
    }
  })

  it("kill -9 mid-run, then the same command: no answered case is asked again, every case answered once", async () => {
    // The first 3 cases are answered; the next ones hang the first time they are asked (a slow
    // service), so the first run is killed with exactly those answers journaled.
    const answeredFirst = new Set(QUESTIONS.slice(0, 3))
    const hangOnce = new Set(QUESTIONS.slice(3, 5))
    const fake = await FakeRag.start({ replyFor: (q, nth) => hangOnce.has(q) && nth === 1 ? "hang" : "ok" })
    try {
      const dir = tempDir()
      const input = writeCsv(dir, QUESTIONS)
      const out = Path.join(dir, "out")
      const args = runArgs(input, out, fake, ["--target-concurrency", "2"])
      const first = start(args)
      const targetJournal = () =>
        runDirs(out).length === 1 ? jsonLines(Path.join(runDirs(out)[0]!, "target", "judgments.jsonl")) : []
      await waitFor(
        "3 answers journaled and 2 calls hanging",
        () => (targetJournal().length >= 3 && fake.calls >= 5) || first.exited()
      )
      first.child.kill("SIGKILL")
      const killed = await first.result
      expect(killed.signal).toBe("SIGKILL")
      const run = onlyRunDir(out)
      const journaled = targetJournal()
      expect(journaled.map((j) => j.caseId).sort()).toEqual(["1", "2", "3"])
      // Journaled before judged: the answers are there whatever the judging had reached.
      expect(journaled.every((j) => j.status === "ok" && typeof j.value.answer === "string")).toBe(true)
      const hung = QUESTIONS.filter((q) => !answeredFirst.has(q) && fake.asked.get(q) === 1)
      expect(hung).toHaveLength(2)

      const second = await cli(args)
      expect(second.stderr).toBe("")
      expect(second.code).toBe(0)
      // The journaled cases were not asked again; the two that hung (never answered) were asked
      // once more; the others once. Every case was answered exactly once.
      for (const q of QUESTIONS) expect(fake.asked.get(q)).toBe(answeredFirst.has(q) || !hung.includes(q) ? 1 : 2)
      expect(fake.replies.ok).toBe(QUESTIONS.length)
      const lines = jsonLines(Path.join(run, "target", "judgments.jsonl"))
      expect(new Set(lines.map((l) => l.caseId)).size).toBe(QUESTIONS.length)
      expect(lines).toHaveLength(QUESTIONS.length)
      expect(jsonLines(Path.join(run, "records-iteration-1.jsonl")).map((r) => r.caseId)).toEqual(
        QUESTIONS.map((_, i) => String(i + 1))
      )
    } finally {
      await fake.close()
    }
  })

  it("a changed body template is another system: a new run that asks again; the same one resumes", async () => {
    const fake = await FakeRag.start()
    try {
      const dir = tempDir()
      const input = writeCsv(dir, QUESTIONS.slice(0, 3))
      const out = Path.join(dir, "out")
      expect((await runCli(runArgs(input, out, fake))).code).toBe(0)
      expect(fake.calls).toBe(3)
      const changed = ["--target-body", "{\"question\": \"{{question}}\", \"top_k\": 3}"]
      expect((await runCli(runArgs(input, out, fake, changed))).code).toBe(0)
      expect(fake.calls).toBe(6)
      expect(JSON.parse(fake.requests[5]!.body)).toEqual({ question: QUESTIONS[2], top_k: 3 })
      const dirs = runDirs(out)
      expect(dirs).toHaveLength(2)
      expect(new Set(dirs.map((d) => readJson(Path.join(d, "manifest.json")).identity)).size).toBe(2)
      // Each run resumes as itself.
      expect((await runCli(runArgs(input, out, fake, changed))).code).toBe(0)
      expect((await runCli(runArgs(input, out, fake))).code).toBe(0)
      expect(fake.calls).toBe(6)
      expect(runDirs(out)).toHaveLength(2)
      // compare of the two systems pairs their latencies case by case, beside the quality metrics.
      const compared = await runCli(["compare", ...dirs, "--format", "json"])
      expect(compared.code).toBe(0)
      const metrics =
        (JSON.parse(compared.stdout) as { metrics: Array<{ metric: string; n: number; lowerIsBetter: boolean }> })
          .metrics
      expect(metrics.find((m) => m.metric === "targetLatencyMs")).toMatchObject({ n: 3, lowerIsBetter: true })
      expect(metrics.map((m) => m.metric)).toContain("composite")
    } finally {
      await fake.close()
    }
  })

  it("a secret header reaches the service and no file, log or report; a 401 stops the run with one line", async () => {
    const token = "s3cr3t-TOKEN-7f2a9c41"
    const literal = "literal-key-0b8d5e77"
    const fake = await FakeRag.start({ token })
    try {
      const dir = tempDir()
      const input = writeCsv(dir, QUESTIONS.slice(0, 4))
      const out = Path.join(dir, "out")
      const headers = [
        "--target-header",
        "Authorization: Bearer ${RAG_TOKEN}",
        "--target-header",
        `X-Api-Key: ${literal}`,
        "--format",
        "markdown,csv,json,html"
      ]
      const ok = await runCli(runArgs(input, out, fake, headers), { env: { RAG_TOKEN: token } })
      expect(ok.code).toBe(0)
      expect(fake.calls).toBe(4)
      expect(
        fake.requests.every((r) => r.headers.authorization === `Bearer ${token}` && r.headers["x-api-key"] === literal)
      ).toBe(true)
      // A wrong token: the service answers 401 echoing the header it got; the run stops at the
      // preflight (one call), with one line that names the fix and not the token.
      const wrong = "wrong-token-44c1e9ab"
      const denied = await runCli(runArgs(input, Path.join(dir, "out-denied"), fake, [...headers, "--regenerate"]), {
        env: { RAG_TOKEN: wrong }
      })
      expect(denied.code).toBe(2)
      expect(fake.calls).toBe(5)
      const lines = denied.stderr.trim().split("\n").filter((l) => l.startsWith("error:"))
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain("unauthorized (HTTP 401)")
      expect(lines[0]).toContain("--target-header")
      const deniedRun = onlyRunDir(Path.join(dir, "out-denied"))
      expect(readJson(Path.join(deniedRun, "manifest.json"))).toMatchObject({
        status: "stopped",
        stoppedBy: expect.stringContaining("unauthorized")
      })
      // Nowhere: every file of both runs, stdout and stderr.
      for (const file of [...filesUnder(out), ...filesUnder(Path.join(dir, "out-denied"))]) {
        const text = fs.readFileSync(file, "utf8")
        for (const secret of [token, literal, wrong]) expect(text.includes(secret), `${secret} in ${file}`).toBe(false)
      }
      for (const text of [ok.stdout, ok.stderr, denied.stdout, denied.stderr]) {
        for (const secret of [token, literal, wrong]) expect(text).not.toContain(secret)
      }
      expect(readJson(Path.join(onlyRunDir(out), "manifest.json")).target.config.headers).toEqual({
        Authorization: "<redacted>",
        "X-Api-Key": "<redacted>"
      })
    } finally {
      await fake.close()
    }
  })

  it("429s and 500s are waited out and retried; malformed JSON and a missing answer fail their case, recorded, not a crash", async () => {
    const [limited, failing, malformed, missing, fine] = QUESTIONS
    const fake = await FakeRag.start({
      retryAfterSeconds: 1,
      replyFor: (q, nth) =>
        q === limited && nth === 1 ?
          "rate_limit"
          : q === failing && nth === 1 ?
          "server_error"
          : q === malformed ?
          "malformed"
          : q === missing ?
          "missing_answer"
          : "ok"
    })
    try {
      const dir = tempDir()
      const input = writeCsv(dir, [limited!, failing!, malformed!, missing!, fine!])
      const out = Path.join(dir, "out")
      const args = runArgs(input, out, fake, ["--max-failures", "100"])
      const r = await runCli(args)
      expect(r.code).toBe(0)
      expect(fake.asked.get(limited!)).toBe(2)
      expect(fake.asked.get(failing!)).toBe(2)
      // A case's own failure is not retried.
      expect(fake.asked.get(malformed!)).toBe(1)
      expect(fake.asked.get(missing!)).toBe(1)
      const run = onlyRunDir(out)
      const rows = csvRows(fs.readFileSync(Path.join(run, "report.csv"), "utf8"))
      expect(column(rows, "answer_source")).toEqual([
        "generated",
        "generated",
        "generation failed",
        "generation failed",
        "generated"
      ])
      const errors = column(rows, "target_error")
      expect(errors[2], errors[2]).toMatch(/malformed \(HTTP 200\): the response is not JSON/)
      expect(errors[3], errors[3]).toMatch(/shape \(HTTP 200\): the response has no \$\.answer/)
      const summary = readJson(Path.join(run, "summary.json"))
      expect(summary.metrics.targetFailures.mean).toBe(2)
      // Their judgments failed with the reason (never scored as 0), not asked of the judge.
      const records = jsonLines(Path.join(run, "records-iteration-1.jsonl"))
      expect(records[2]!.composite).toBeNull()
      expect(
        records[2]!.dimensions.every((d: any) =>
          d.status === "failed" && d.reason.startsWith("no answer to judge: target")
        )
      ).toBe(true)
      expect(records[4]!.composite).not.toBeNull()
      // A resume keeps the failures (the service is not asked); --retry-failed asks them again.
      expect((await runCli(args)).code).toBe(0)
      expect(fake.calls).toBe(7)
      expect((await runCli([...args, "--retry-failed"])).code).toBe(0)
      expect(fake.asked.get(malformed!)).toBe(2)
      expect(fake.asked.get(missing!)).toBe(2)
      expect(fake.calls).toBe(9)
    } finally {
      await fake.close()
    }
  })

  it("a streamed (SSE) answer is read to its end, with its time to first byte", async () => {
    const fake = await FakeRag.start({ stream: "generic", streamGapMs: 5 })
    try {
      const dir = tempDir()
      const input = writeCsv(dir, QUESTIONS.slice(0, 3))
      const out = Path.join(dir, "out")
      const r = await runCli(runArgs(input, out, fake))
      expect(r.code).toBe(0)
      const run = onlyRunDir(out)
      const records = jsonLines(Path.join(run, "records-iteration-1.jsonl"))
      expect(records.map((x) => x.answer)).toEqual(QUESTIONS.slice(0, 3).map((q) => FakeRag.defaultAnswer(q).answer))
      expect(records.every((x) => x.generated.streamed === true)).toBe(true)
      const summary = readJson(Path.join(run, "summary.json"))
      expect(typeof summary.metrics.targetTtfbP50Ms.mean).toBe("number")
      expect(summary.metrics.targetTtfbP50Ms.mean).toBeLessThanOrEqual(summary.metrics.targetLatencyP50Ms.mean)
      const rows = csvRows(fs.readFileSync(Path.join(run, "report.csv"), "utf8"))
      expect(column(rows, "target_ttfb_ms").every((v) => /^\d+\.\d$/.test(v))).toBe(true)
      expect(fs.readFileSync(Path.join(run, "report.md"), "utf8")).toContain("target time to first byte (streamed)")
    } finally {
      await fake.close()
    }
  })

  it("--dry-run says how many target calls the run would make, and calls nothing", async () => {
    const fake = await FakeRag.start()
    try {
      const dir = tempDir()
      const input = writeCsv(dir, QUESTIONS.slice(0, 6), { 0: "Given already." })
      const out = Path.join(dir, "out")
      const dry = await runCli(runArgs(input, out, fake, ["--dry-run"]))
      expect(dry.code).toBe(0)
      expect(dry.stdout).toMatch(/target calls: +5 /)
      expect(fake.calls).toBe(0)
      expect(runDirs(out)).toHaveLength(0)
      const regenerate = await runCli(runArgs(input, out, fake, ["--dry-run", "--regenerate"]))
      expect(regenerate.stdout).toMatch(/target calls: +6 /)
      // After the run, nothing is left to ask.
      expect((await runCli(runArgs(input, out, fake))).code).toBe(0)
      expect(fake.calls).toBe(5)
      const after = await runCli(runArgs(input, out, fake, ["--dry-run"]))
      expect(after.stdout).toMatch(/target calls: +0 /)
      expect(fake.calls).toBe(5)
    } finally {
      await fake.close()
    }
  })

  it("a target block in --config: the same settings, a credential header read from the environment", async () => {
    const token = "cfg-token-91d3e0c2"
    const fake = await FakeRag.start({ token })
    try {
      const dir = tempDir()
      const input = writeCsv(dir, QUESTIONS.slice(0, 2))
      const config = Path.join(dir, "rag-eval.yaml")
      fs.writeFileSync(
        config,
        [
          "target:",
          `  url: ${fake.url}`,
          "  body: { question: \"{{question}}\", case: \"{{id}}\" }",
          "  headers:",
          "    Authorization: \"Bearer ${RAG_TOKEN}\"",
          "  contexts: \"$.sources[*].text\"",
          "  concurrency: 1",
          ""
        ].join("\n")
      )
      const out = Path.join(dir, "out")
      const r = await runCli(["run", "rag-answers", "--input", input, "--out", out, "--quiet", "--config", config], {
        env: { RAG_TOKEN: token }
      })
      expect(r.stderr).toBe("")
      expect(r.code).toBe(0)
      expect(fake.requests.map((q) => JSON.parse(q.body))).toEqual([{ question: QUESTIONS[0], case: "1" }, {
        question: QUESTIONS[1],
        case: "2"
      }])
      const manifest = readJson(Path.join(onlyRunDir(out), "manifest.json"))
      expect(manifest.target).toMatchObject({
        concurrency: 1,
        config: { url: fake.url, headers: { Authorization: "<redacted>" }, contexts: "$.sources[*].text" }
      })
      for (const file of filesUnder(out)) expect(fs.readFileSync(file, "utf8")).not.toContain(token)
      // A credential written into the file itself is refused, naming the fix.
      fs.writeFileSync(config, `target:\n  url: ${fake.url}\n  headers:\n    Authorization: Bearer ${token}\n`)
      const refused = await runCli([
        "run",
        "rag-answers",
        "--input",
        input,
        "--out",
        Path.join(dir, "out2"),
        "--config",
        config
      ])
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain("target.headers: Authorization holds a credential as text")
      expect(refused.stderr).not.toContain(token)
    } finally {
      await fake.close()
    }
  })

  it("the worked example of docs/target.md: the tiny RAG service in examples/, evaluated end to end", async () => {
    const port = await freePort()
    const token = "dev-token"
    const server = ChildProcess.spawn(process.execPath, [Path.join(repoRoot, "examples", "tiny-rag-server.mjs")], {
      env: { ...process.env, PORT: String(port), RAG_TOKEN: token },
      stdio: ["ignore", "pipe", "inherit"]
    })
    try {
      await new Promise<void>((ready, failed) => {
        server.stdout!.on("data", (d: Buffer) => {
          if (d.toString().includes("tiny RAG service on")) ready()
        })
        server.once("exit", (code) => failed(new Error(`tiny-rag-server exited with ${code}`)))
      })
      const out = Path.join(tempDir(), "out")
      // The documented command, with --out for the test.
      const r = await runCli([
        "run",
        "rag-answers",
        "--csv",
        "test-sets/rag-answers/sample.csv",
        "--provider",
        "heuristic",
        "--target",
        `http://127.0.0.1:${port}/ask`,
        "--target-header",
        "Authorization: Bearer ${RAG_TOKEN}",
        "--target-contexts",
        "$.sources[*].text",
        "--regenerate",
        "--out",
        out
      ], { env: { RAG_TOKEN: token } })
      expect(r.code).toBe(0)
      expect(r.stderr).toContain("72 judgments: 72 ok, 0 failed")
      const run = onlyRunDir(out)
      const summary = readJson(Path.join(run, "summary.json"))
      expect(summary.iterations[0].extra.target.answers).toEqual({ generated: 12, failed: 0, fromInput: 0 })
      expect(summary.metrics.targetLatencyP99Ms.mean).toBeGreaterThanOrEqual(summary.metrics.targetLatencyP50Ms.mean)
      const records = jsonLines(Path.join(run, "records-iteration-1.jsonl"))
      expect(records[0]!.answer).toMatch(/^From my documents: A heat pump moves heat/)
      expect(fs.readFileSync(Path.join(run, "report.md"), "utf8")).toContain("12 generated, 0 failed, 0 from the input")
    } finally {
      server.kill()
    }
  })

  it("answer-correctness opts in with one declaration: the service's answer checked claim by claim against the reference", async () => {
    const fake = await FakeRag.start()
    try {
      const dir = tempDir()
      const input = Path.join(dir, "cases.jsonl")
      fs.writeFileSync(
        input,
        QUESTIONS.slice(0, 3).map((q, i) =>
          JSON.stringify({ id: `c${i + 1}`, question: q, reference: `The answer to "${q}" is in the handbook.` })
        ).join("\n") + "\n"
      )
      const out = Path.join(dir, "out")
      const r = await runCli([
        "run",
        "answer-correctness",
        "--input",
        input,
        "--out",
        out,
        "--quiet",
        "--target",
        fake.url,
        "--target-contexts",
        "$.sources[*].text"
      ])
      expect(r.stderr).toBe("")
      expect(r.code).toBe(0)
      expect(fake.calls).toBe(3)
      const run = Path.join(out, "answer-correctness", fs.readdirSync(Path.join(out, "answer-correctness"))[0]!)
      const summary = readJson(Path.join(run, "summary.json"))
      expect(summary.iterations[0].extra.target.answers).toEqual({ generated: 3, failed: 0, fromInput: 0 })
      expect(typeof summary.metrics.targetLatencyP50Ms.mean).toBe("number")
      const records = jsonLines(Path.join(run, "records-iteration-1.jsonl"))
      expect(records.map((x) => x.generated.status)).toEqual(["ok", "ok", "ok"])
    } finally {
      await fake.close()
    }
  })

  it("--iterations 2 judges the same answers twice and asks the service once per case", async () => {
    const fake = await FakeRag.start()
    try {
      const dir = tempDir()
      const input = writeCsv(dir, QUESTIONS.slice(0, 3))
      const out = Path.join(dir, "out")
      const r = await runCli(runArgs(input, out, fake, ["--iterations", "2"]))
      expect(r.code).toBe(0)
      expect(fake.calls).toBe(3)
      const run = onlyRunDir(out)
      expect(jsonLines(Path.join(run, "records-iteration-2.jsonl")).map((x) => x.answer)).toEqual(
        jsonLines(Path.join(run, "records-iteration-1.jsonl")).map((x) => x.answer)
      )
      expect(jsonLines(Path.join(run, "target", "judgments.jsonl"))).toHaveLength(3)
    } finally {
      await fake.close()
    }
  })

  it("refuses --target-* flags without --target, and a pipeline that judges no answers", async () => {
    const dir = tempDir()
    const input = writeCsv(dir, QUESTIONS.slice(0, 2))
    const orphan = await runCli([
      "run",
      "rag-answers",
      "--input",
      input,
      "--out",
      Path.join(dir, "out"),
      "--regenerate",
      "--target-rpm",
      "10"
    ])
    expect(orphan.code).toBe(2)
    expect(orphan.stderr).toContain("--target-rpm, --regenerate need --target URL")
    const badUrl = await runCli([
      "run",
      "rag-answers",
      "--input",
      input,
      "--out",
      Path.join(dir, "out"),
      "--target",
      "ftp://example.com/ask"
    ])
    expect(badUrl.code).toBe(2)
    expect(badUrl.stderr).toContain("--target must be an http or https URL")
    expect(fs.existsSync(Path.join(dir, "out"))).toBe(false)
  })
})
