/**
 * serve takes the options `run` gives search-relevance: `--listwise` (a query's hits in one call,
 * under the CLI's keys, so the cache is shared both ways) and `--fields`; it accepts the
 * `"query": "text"` shorthand; its 400s say what was expected in words.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import * as JudgmentCache from "../../src/store/JudgmentCache.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { loadPipelineModule, runWith, tempDir } from "../support/RunPipeline.js"
import { expectError, fakeJudge, post, type SearchReply, serve, specExample } from "./support.js"

const search = (url: string) => `${url}/v1/eval/search`

describe("serve's options and request shorthand", () => {
  it.scopedLive("--listwise: one call per query, each hit graded; a CLI --listwise run of the same query then asks nothing", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const outRoot = tempDir("rag-eval-serve-out-")
      const server = yield* serve({ judge: fakeJudge(fake), listwise: true, cacheDir: JudgmentCache.cacheDir(outRoot) })
      const reply = yield* post(search(server.url), { ...specExample, eval: { debug: true } })
      expect(reply.status).toBe(200)
      const body = reply.body as SearchReply
      expect(fake.judgeCalls).toBe(1)
      expect(body.hits).toHaveLength(specExample.hits.length)
      expect(body.hits.every((h) => typeof h.score === "number")).toBe(true)
      expect(body.usage.evaluation_input_tokens).toBeGreaterThan(0)
      // The same judgments under the CLI's listwise keys: a run over the same cache asks nothing.
      const input = Path.join(tempDir("rag-eval-serve-in-"), "requests.jsonl")
      fs.writeFileSync(input, JSON.stringify(specExample) + "\n")
      const pipeline = yield* Effect.promise(() => loadPipelineModule("search-relevance", { listwise: true }))
      const outcome = yield* runWith(pipeline, fakeJudge(fake), { input, outRoot, cache: true })
      expect(outcome.judgments).toMatchObject({ total: specExample.hits.length, cached: specExample.hits.length })
      expect(fake.judgeCalls).toBe(1)
    }))

  it.scopedLive("\"query\": \"text\" is the same query as { inputs: { text } } (same judgments: the second asks nothing)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const server = yield* serve({ judge: fakeJudge(fake) })
      const full = yield* post(search(server.url), specExample)
      expect(full.status).toBe(200)
      const calls = fake.judgeCalls
      const short = yield* post(search(server.url), { ...specExample, query: specExample.query.inputs.text })
      expect(short.status).toBe(200)
      expect(fake.judgeCalls).toBe(calls)
      expect((short.body as SearchReply).metrics).toEqual((full.body as SearchReply).metrics)
    }))

  it.scopedLive("--fields: the hit fields the judge reads unless a request says otherwise", () =>
    Effect.gen(function*() {
      const server = yield* serve({ fields: ["title"] })
      const noTitle = expectError(
        yield* post(search(server.url), { query: "q", hits: [{ id: "a", text: "x" }] }),
        400,
        "invalid_request"
      )
      expect(noTitle.problems).toEqual([{
        path: "hits[0]",
        message: expect.stringContaining(`has none of the fields the judge reads ("title")`)
      }])
      const withTitle = yield* post(search(server.url), { query: "q", hits: [{ id: "a", text: "x", title: "q" }] })
      expect(withTitle.status).toBe(200)
      const chosen = yield* post(search(server.url), {
        query: "q",
        hits: [{ id: "a", text: "x" }],
        eval: { fields: ["text"] }
      })
      expect(chosen.status).toBe(200)
    }))

  it.scopedLive("400 messages name the field and the expected type in words, never the parser's type syntax", () =>
    Effect.gen(function*() {
      const server = yield* serve()
      const cases: ReadonlyArray<readonly [unknown, string, string]> = [
        [
          { query: 5, hits: [] },
          "query",
          "expected the query text (a non-empty string) or { \"inputs\": { \"text\": \"…\" } }"
        ],
        [{ query: "q", hits: 5 }, "hits", "expected an array of hits"],
        [{ query: "q", hits: [], eval: { debug: "yes" } }, "eval.debug", "expected true or false, got \"yes\""],
        [{ query: "q", hits: [], eval: { fields: [] } }, "eval.fields", "expected a non-empty array of field names"],
        [{ hits: [] }, "query", "is required"]
      ]
      for (const [body, path, words] of cases) {
        const error = expectError(yield* post(search(server.url), body), 400, "invalid_request")
        const problem = error.problems.find((p: { path: string }) => p.path === path)
        expect(problem?.message).toContain(words)
        expect(error.message).not.toMatch(/readonly|ReadonlyArray|\{ string \| filter \}|Expected /)
      }
    }))
})
