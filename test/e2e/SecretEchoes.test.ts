/**
 * A secret rag-eval itself sends never reaches a file or a log — also when the server it was sent to
 * echoes it back (`domain/Redaction.ts`). The fake judge (`FakeOpenAi`, `echo`), the fake RAG service
 * (`FakeRag`, `echo`) and a fake search endpoint repeat, in every reply and every error body (4xx,
 * 5xx), the credentials they got — the API key, its `Bearer` header, the target's header value and
 * the `Basic` header built from its URL's credentials, the search token — and the URL credentials
 * given to them, each also in base64. After a run, its resume, `report`, a cache hit, `--batch`, a
 * search retriever, and runs stopped by a 401 that echoes, every file under the output root (the run
 * directories, `target/`, the cache) and stdout / stderr are searched for every form of every
 * secret: none may be found. The fakes see the secrets arrive and the journals hold `<redacted>`
 * where the echoes were, so the test cannot pass by not sending or not echoing them.
 */
import * as fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { cli, type Result } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import * as FakeRag from "../support/FakeRag.js"
import { printedRunDir, repoRoot, tempDir } from "../support/RunPipeline.js"

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64")

const KEY = "sk-echo-key-7f3a91c2e8"
const JUDGE_PASS = "judge-pass-4b1e9d"
const JUDGE_CRED = `judge-user:${JUDGE_PASS}`
const RAG_PASS = "rag-pass-9c0d7a"
const RAG_CRED = `rag-user:${RAG_PASS}`
const RAG_KEY = "rag-header-key-5e6f21"
const SEARCH_TOKEN = "search-tok-31d7c9aa"

/** Every value rag-eval sends that is a secret, as sent. */
const SECRETS = [
  KEY,
  `Bearer ${KEY}`,
  JUDGE_PASS,
  JUDGE_CRED,
  `Basic ${b64(JUDGE_CRED)}`,
  RAG_PASS,
  RAG_CRED,
  `Basic ${b64(RAG_CRED)}`,
  RAG_KEY,
  SEARCH_TOKEN,
  `Bearer ${SEARCH_TOKEN}`
]

/** Every form searched for: as sent, base64 (a prefix of the padded form), base64url, percent-encoded. */
const FORMS = [
  ...new Set(SECRETS.flatMap((s) => [
    s,
    b64(s).replace(/=+$/, ""),
    Buffer.from(s).toString("base64url"),
    encodeURIComponent(s)
  ]))
]

/** Every file under `dir`, recursively (dot-directories such as `.cache` included). */
const filesUnder = (dir: string): Array<string> =>
  fs.existsSync(dir)
    ? fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const path = Path.join(dir, e.name)
      return e.isDirectory() ? filesUnder(path) : [path]
    })
    : []

/** Every secret form found under `out` or in the runs' output, as `where: form`. */
const leaks = (out: string, results: ReadonlyArray<Result>): Array<string> => {
  const found: Array<string> = []
  for (const file of filesUnder(out)) {
    const text = fs.readFileSync(file, "latin1")
    for (const form of FORMS) if (text.includes(form)) found.push(`${Path.relative(out, file)}: ${form}`)
  }
  results.forEach((r, i) => {
    for (const [name, text] of [["stdout", r.stdout], ["stderr", r.stderr]] as const) {
      for (const form of FORMS) if (text.includes(form)) found.push(`run ${i + 1} ${name}: ${form}`)
    }
  })
  return found
}

const jsonLines = (file: string) =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, any>)

const host = (url: string) => url.replace(/^http:\/\//, "")

describe(
  "no secret on disk or on screen, also when the servers echo them (child processes)",
  { timeout: 180_000 },
  () => {
    it("a judge and a target that echo: a run, its resume (--retry-failed), report, a cache hit, fatal 401s", async () => {
      const judge = await FakeOpenAi.start({
        // The judge never gets the target's header value: echoing it anyway, it is redacted by the run's
        // redactor (built from every secret of the command), not only by what the provider sent itself.
        echo: [JUDGE_PASS, JUDGE_CRED, `Basic ${b64(JUDGE_CRED)}`, RAG_KEY],
        // After the preflight: a 500 (retried), a 400 (a failed judgment), an unusable reply (repaired).
        script: ["ok", "server_error", "bad_request", "malformed"]
      })
      const rag = await FakeRag.start({
        echo: [RAG_PASS, RAG_CRED],
        script: ["server_error"],
        replyFor: (question, nth) => question.startsWith("Why") && nth === 1 ? "bad_request" : "ok"
      })
      try {
        const dir = tempDir()
        const input = Path.join(dir, "cases.jsonl")
        fs.writeFileSync(
          input,
          [
            {
              id: "q1",
              question: "How do heat pumps heat a house?",
              reference: "Heat pumps move heat from outside air."
            },
            { id: "q2", question: "Why is the sky blue?", reference: "Air scatters blue light more than red light." },
            {
              id: "q3",
              question: "What does a solar inverter do?",
              reference: "It turns direct current into alternating current."
            }
          ].map((c) => JSON.stringify(c)).join("\n") + "\n"
        )
        const out = Path.join(dir, "out")
        const args = (...extra: ReadonlyArray<string>) => [
          "run",
          "answer-correctness",
          "--input",
          input,
          "--out",
          out,
          "--provider",
          "openai-compatible",
          "--model",
          "fake",
          "--base-url",
          `http://${JUDGE_CRED}@${host(judge.url)}`,
          "--api-key",
          KEY,
          "--target",
          `http://${RAG_CRED}@${host(rag.url)}`,
          "--target-header",
          "X-Api-Key: ${RAG_KEY}",
          "--target-contexts",
          "$.sources[*].text",
          "--max-failures",
          "1000",
          "--max-retries",
          "2",
          ...extra
        ]
        const env = { RAG_KEY }
        const results: Array<Result> = []

        const first = await cli(args(), { env })
        results.push(first)
        expect(first.stderr).not.toContain("internal error")
        expect(first.code).toBe(0)
        const runDir = printedRunDir(first.stdout)
        // The secrets were sent: the key as the bearer token; the target's header and its URL's credentials as Basic.
        expect(judge.requests.some((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true)
        expect(rag.requests.some((r) => r.headers["x-api-key"] === RAG_KEY)).toBe(true)
        expect(rag.requests.some((r) => r.headers.authorization === `Basic ${b64(RAG_CRED)}`)).toBe(true)
        // …and echoed back: the journals hold what was said, redacted.
        const judgments = jsonLines(Path.join(runDir, "judgments.jsonl"))
        expect(judgments.some((j) => JSON.stringify(j).includes("<redacted>"))).toBe(true)
        expect(judgments.some((j) => j.status === "failed" && /rejected/.test(j.reason))).toBe(true)
        expect(judgments.some((j) => Array.isArray(j.value) && j.value.some((c: string) => c.includes("<redacted>"))))
          .toBe(true)
        const answers = jsonLines(Path.join(runDir, "target", "judgments.jsonl"))
        expect(answers.some((a) => a.status === "ok" && a.value.answer.includes("(echo: <redacted>"))).toBe(true)
        expect(answers.some((a) => a.status === "failed" && a.reason.includes("<redacted>"))).toBe(true)

        // A resume that asks the failures again (they echo again), then `report` in every format.
        results.push(await cli(args("--retry-failed"), { env }))
        expect(results[1]!.code).toBe(0)
        const report = await cli(["report", runDir, "--format", "markdown,csv,json,html"])
        results.push(report)
        expect(report.code).toBe(0)
        // A cache hit: the run made again from the start, its judgments from the cache of earlier runs.
        const fresh = await cli(args("--fresh"), { env })
        results.push(fresh)
        expect(fresh.code).toBe(0)
        expect(fresh.stderr).toMatch(/from the cache/)

        // 401s that echo what they got stop the run with one line (exit 2): the target's, then the judge's.
        rag.setBehaviour({ script: [], replyFor: () => "unauthorized" })
        const targetStop = await cli(args("--fresh", "--no-cache"), { env })
        results.push(targetStop)
        expect(targetStop.code).toBe(2)
        expect(targetStop.stderr).toMatch(/unauthorized/)
        rag.setBehaviour({ replyFor: () => "ok" })
        judge.setBehaviour({ script: [], apiKey: "sk-another-key" })
        const judgeStop = await cli(args("--fresh", "--no-cache"), { env })
        results.push(judgeStop)
        expect(judgeStop.code).toBe(2)
        expect(judgeStop.stderr).toMatch(/rejected the API key/)

        expect(leaks(out, results)).toEqual([])
      } finally {
        await judge.close()
        await rag.close()
      }
    })

    it("--batch: a batch's output and error lines echo the key; nothing is kept of it", async () => {
      let lines = 0
      const judge = await FakeOpenAi.start({
        echo: [JUDGE_PASS, JUDGE_CRED],
        // In the batch: the third line refused (its error line echoes), the fifth unusable (repaired).
        replyFor: (request) => {
          if (request.path !== "/v1/batch") return undefined
          lines++
          return lines === 3 ? "bad_request" : lines === 5 ? "malformed" : "ok"
        }
      })
      try {
        const out = tempDir()
        const results: Array<Result> = []
        const args = [
          "run",
          "rag-answers",
          "--csv",
          Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv"),
          "--limit",
          "2",
          "--out",
          out,
          "--provider",
          "openai-compatible",
          "--model",
          "fake",
          "--base-url",
          `http://${JUDGE_CRED}@${host(judge.url)}`,
          "--api-key",
          KEY,
          "--batch",
          "--batch-poll",
          "0.02",
          "--max-failures",
          "1000"
        ]
        const r = await cli(args)
        results.push(r)
        expect(r.code).toBe(0)
        expect(judge.batches.length).toBeGreaterThan(0)
        const journal = jsonLines(Path.join(printedRunDir(r.stdout), "judgments.jsonl"))
        expect(journal.some((j) => j.status === "ok" && j.reason.includes("(echo: <redacted>"))).toBe(true)
        expect(journal.some((j) => j.status === "failed" && /rejected.*<redacted>/.test(j.reason))).toBe(true)
        results.push(await cli(["report", printedRunDir(r.stdout)]))
        expect(leaks(out, results)).toEqual([])
      } finally {
        await judge.close()
      }
    })

    it("a search endpoint that echoes its token in hits and error bodies", async () => {
      let calls = 0
      const server = Http.createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          calls++
          const echo = FakeRag.echoOf(req.headers, [])
          const status = calls === 2 ? 500 : 200
          const text = status === 200
            ? JSON.stringify({
              hits: [{ id: "h1", text: `Paris is the capital of France. (echo: ${echo})`, score: 0.9 }]
            })
            : JSON.stringify({ error: `overloaded (echo: ${echo})` })
          res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
          res.end(text)
        })
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      try {
        const out = tempDir()
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/search`
        const r = await cli([
          "run",
          "search-relevance",
          "--input",
          Path.join(repoRoot, "test-sets", "search-relevance", "sample.jsonl"),
          "--limit",
          "3",
          "--out",
          out,
          "--retriever",
          "http",
          "--search-url",
          url,
          "--search-token",
          SEARCH_TOKEN
        ])
        expect(r.code).toBe(0)
        expect(calls).toBeGreaterThanOrEqual(3)
        expect(fs.readFileSync(Path.join(printedRunDir(r.stdout), "records-iteration-1.jsonl"), "utf8")).toContain(
          "<redacted>"
        )
        expect(leaks(out, [r])).toEqual([])
      } finally {
        await new Promise<void>((done) => server.close(() => done()))
      }
    })
  }
)
