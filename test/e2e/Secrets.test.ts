/**
 * No secret on disk or on screen: the CLI (`node dist/bin.js`) is run with every secret-bearing flag
 * — `--api-key`, `--search-token` (as `--flag value` and `--flag=value`), credentials in a URL's
 * userinfo and secret query parameters in `--base-url` and `--search-url` — against a fake LLM and
 * a fake search endpoint on 127.0.0.1. Every file under the output root (manifest, journal, reports,
 * cache) and stdout / stderr are searched for each secret value: none may appear. The fakes check
 * that the secrets were really sent, so the test cannot pass by not using them.
 */
import * as fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cli } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { printedRunDir, tempDir } from "../support/RunPipeline.js"

/** Every file under `dir`, recursively (dot-directories such as `.cache` included). */
const filesUnder = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = Path.join(dir, e.name)
    return e.isDirectory() ? filesUnder(path) : [path]
  })

/** The secrets found anywhere in the output root or in the process's output, as `file: secret`. */
const leaks = (out: string, secrets: ReadonlyArray<string>, streams: { stdout: string; stderr: string }) => {
  const found: Array<string> = []
  for (const file of filesUnder(out)) {
    const text = fs.readFileSync(file, "latin1")
    for (const s of secrets) if (text.includes(s)) found.push(`${Path.relative(out, file)}: ${s}`)
  }
  for (const [name, text] of Object.entries(streams)) {
    for (const s of secrets) if (text.includes(s)) found.push(`${name}: ${s}`)
  }
  return found
}

describe("no secret on disk", () => {
  let fake: FakeOpenAi.FakeOpenAi
  let search: { url: string; server: Http.Server; received: Array<{ url: string; authorization: string | undefined }> }
  beforeAll(async () => {
    fake = await FakeOpenAi.start()
    const received: Array<{ url: string; authorization: string | undefined }> = []
    search = await new Promise((resolve) => {
      const server = Http.createServer((req, res) => {
        received.push({ url: req.url ?? "", authorization: req.headers.authorization })
        req.resume()
        req.on("end", () => {
          const text = JSON.stringify({ hits: [{ id: "h1", text: "Paris is the capital of France.", score: 0.9 }] })
          res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
          res.end(text)
        })
      })
      server.listen(
        0,
        "127.0.0.1",
        () => resolve({ url: `127.0.0.1:${(server.address() as AddressInfo).port}`, server, received })
      )
    })
  })
  afterAll(async () => {
    await fake.close()
    await new Promise<void>((done) => search.server.close(() => done()))
  })

  it(
    "LLM flags: --api-key (both forms) and a --base-url with user:pass@ and ?api_key= never reach out/, stdout or stderr",
    async () => {
      const secrets = [
        "sk-apikey-c0ffee11",
        "sk-apikey-eq-d00dfeed",
        "basic-pass-5eed",
        "query-key-ba5eba11",
        "fragment-tok-f00d"
      ]
      const out = tempDir()
      const host = fake.url.slice("http://".length)
      // 1. user:pass@ in the base URL and `--api-key=value`.
      const a = await cli([
        "run",
        "rag-answers",
        "--csv",
        "test-sets/rag-answers/sample.csv",
        "--limit",
        "2",
        "--out",
        out,
        "--provider",
        "openai-compatible",
        "--model",
        "fake-judge",
        "--concurrency",
        "2",
        "--base-url",
        `http://judge-user:${secrets[2]}@${host}`,
        `--api-key=${secrets[1]}`
      ])
      expect(a.stderr).not.toContain("internal error")
      expect(fs.existsSync(Path.join(printedRunDir(a.stdout), "manifest.json"))).toBe(true)
      // 2. `--base-url=` with a secret query parameter and fragment, and `--api-key value`.
      const b = await cli([
        "run",
        "rag-answers",
        "--csv",
        "test-sets/rag-answers/sample.csv",
        "--limit",
        "1",
        "--out",
        out,
        "--fresh",
        "--provider",
        "openai-compatible",
        "--model",
        "fake-judge-2",
        "--max-failures",
        "100",
        `--base-url=http://${host}?api_key=${secrets[3]}&x=1#access_token=${secrets[4]}`,
        "--api-key",
        secrets[0]
      ])
      // Its base URL, query first, has no chat endpoint (a 404): the run stops at once, exit 2.
      expect(b.code).toBe(2)
      expect(b.stderr).toContain("answered HTTP 404 for its chat-completions endpoint")
      const runB = fs.readdirSync(Path.join(out, "rag-answers")).map((id) => Path.join(out, "rag-answers", id)).find((
        d
      ) => d !== printedRunDir(a.stdout))!
      // The secrets were used: the fake judge saw the key of run 1 as its bearer token (run 2's base URL,
      // query first, cannot reach the chat endpoint: it only has to be masked).
      expect(new Set(fake.requests.map((r) => String(r.headers.authorization)))).toContain(`Bearer ${secrets[1]}`)
      // The manifest still tells which flags were given.
      const manifest = JSON.parse(fs.readFileSync(Path.join(printedRunDir(a.stdout), "manifest.json"), "utf8")) as {
        command: string
      }
      expect(manifest.command).toContain(`--base-url http://<redacted>@${host}`)
      expect(manifest.command).toContain("--api-key=<redacted>")
      const manifestB = JSON.parse(fs.readFileSync(Path.join(runB, "manifest.json"), "utf8")) as { command: string }
      expect(manifestB.command).toContain(`--base-url=http://${host}?api_key=<redacted>&x=1#access_token=<redacted>`)
      expect(manifestB.command).toContain("--api-key <redacted>")
      // `report` re-renders from the journal: still nothing.
      const r = await cli(["report", printedRunDir(a.stdout), "--format", "markdown,csv,json"])
      expect(r.code).toBe(0)
      expect(leaks(out, secrets, { stdout: a.stdout + b.stdout + r.stdout, stderr: a.stderr + b.stderr + r.stderr }))
        .toEqual([])
    },
    120_000
  )

  it(
    "search flags: --search-token (both forms) and a --search-url with user:pass@ and ?token= never reach out/, stdout or stderr",
    async () => {
      const secrets = [
        "search-tok-abad1dea",
        "search-tok-eq-deadbeef",
        "search-pass-0ddba11",
        "search-query-tok-ace0fbase"
      ]
      const out = tempDir()
      const url = `http://searcher:${secrets[2]}@${search.url}/search?token=${secrets[3]}&index=docs`
      const a = await cli([
        "run",
        "search-relevance",
        "--input",
        "test-sets/search-relevance/sample.jsonl",
        "--limit",
        "2",
        "--out",
        out,
        "--retriever",
        "http",
        "--search-url",
        url,
        "--search-token",
        secrets[0]
      ])
      expect(a.code).toBe(0)
      const b = await cli([
        "run",
        "search-relevance",
        "--input",
        "test-sets/search-relevance/sample.jsonl",
        "--limit",
        "1",
        "--out",
        out,
        "--retriever",
        "http",
        `--search-url=${url}`,
        `--search-token=${secrets[1]}`
      ])
      expect(b.code).toBe(0)
      // The secrets were used: the endpoint saw both tokens and the secret query parameter.
      expect(search.received.map((x) => x.authorization)).toEqual(
        expect.arrayContaining([`Bearer ${secrets[0]}`, `Bearer ${secrets[1]}`])
      )
      expect(search.received.some((x) => x.url.includes(secrets[3]!))).toBe(true)
      const manifest = JSON.parse(fs.readFileSync(Path.join(printedRunDir(a.stdout), "manifest.json"), "utf8")) as {
        command: string
        argv: Array<string>
        options: Record<string, string>
      }
      expect(manifest.command).toContain("--search-token <redacted>")
      expect(manifest.argv).toContain("<redacted>")
      expect(manifest.options.searchToken).toBeUndefined()
      expect(manifest.options.searchUrl).toBe(`http://<redacted>@${search.url}/search?token=<redacted>&index=docs`)
      const r = await cli(["report", printedRunDir(a.stdout)])
      expect(r.code).toBe(0)
      expect(leaks(out, secrets, { stdout: a.stdout + b.stdout + r.stdout, stderr: a.stderr + b.stderr + r.stderr }))
        .toEqual([])
    },
    120_000
  )
})
