/**
 * The review's JSON API over real runs (answer-correctness with failing and hostile cases, a worse
 * second run, search-relevance), served in-process on 127.0.0.1: runs, cases (paging, filters,
 * sorting, search), a case and its targets, labels (201, whole lines, two writers at once, refused
 * labels), agreement, the review queue, compare, and the safety rules — Host, token, X-Requested-By,
 * no CORS, no path outside the run directories.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as FakeRag from "../support/FakeRag.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot, tempDir } from "../support/RunPipeline.js"
import { buildFixtures, failingCaseIds, type Fixtures, HOSTILE_ID, runIdOf } from "./Fixtures.js"
import { post, raw, startServer, type TestServer } from "./Server.js"

let fx: Fixtures
let server: TestServer
let a: string
let b: string
let search: string

beforeAll(async () => {
  fx = await buildFixtures()
  // compare's tests by the built CLI in a child process even for these 12-case runs, as `rag-eval ui`
  // tests large ones (a small comparison runs in-process: "small comparisons" below).
  server = await startServer({ out: fx.out, compareInProcessUpTo: 0 })
  a = runIdOf(fx.correctnessA)
  b = runIdOf(fx.correctnessB)
  search = runIdOf(fx.search)
})

afterAll(async () => {
  await server?.close()
})

const get = (path: string) => raw(server.port, path)

describe("runs", () => {
  it("GET /api/runs lists every run with its id, pipeline, judge, status, cases and headline metrics", async () => {
    const r = await get("/api/runs")
    expect(r.status).toBe(200)
    const runs = r.json().runs as Array<any>
    expect(runs.map((x) => x.id).sort()).toEqual([a, b, search].sort())
    const runA = runs.find((x) => x.id === a)
    expect(runA.pipeline).toBe("answer-correctness")
    expect(runA.judge.heuristic).toBe(true)
    expect(runA.status).toBe("failed-judgments")
    expect(runA.cases).toBe(12)
    expect(runA.headline).toBe("score")
    expect(runA.metrics.find((m: any) => m.name === "f1").spec.direction).toBe("higher")
    expect(runs.find((x) => x.id === search).status).toBe("complete")
    // Filters: by pipeline, by text.
    expect((await get("/api/runs?pipeline=search-relevance")).json().runs.map((x: any) => x.id)).toEqual([search])
    expect((await get(`/api/runs?q=${a.slice(0, 6)}`)).json().runs.map((x: any) => x.id)).toEqual([a])
  })

  it("a run: its cases and failing cases, and, once opened, 95% intervals of its headline metrics", async () => {
    const r = await get(`/api/runs/${a}`)
    expect(r.status).toBe(200)
    expect(r.json().cases).toBe(12)
    expect(r.json().failing).toBe(2)
    await Effect.runPromise(server.review.settled(a))
    const f1 = (await get("/api/runs")).json().runs.find((x: any) => x.id === a).metrics.find((m: any) =>
      m.name === "f1"
    )
    expect(f1.ci).not.toBeNull()
    expect(f1.ci.lower).toBeLessThanOrEqual(f1.value)
    expect(f1.ci.upper).toBeGreaterThanOrEqual(f1.value)
    expect((await get("/api/runs/nope")).status).toBe(404)
  })
})

describe("cases", () => {
  it("pages in input order by default; limit and offset", async () => {
    const first = (await get(`/api/runs/${a}/cases?limit=5&sort=line`)).json()
    expect(first.total).toBe(12)
    expect(first.rows.map((x: any) => x.caseId)).toEqual(["q1", "q2", "q3", "q4", "q5"])
    const second = (await get(`/api/runs/${a}/cases?limit=5&offset=10&sort=line`)).json()
    expect(second.rows.map((x: any) => x.caseId)).toEqual(["judge-fails-1", "judge-fails-2"])
    expect(second.rows[0].status).toBe("fail")
  })

  it("sorts by a metric, nulls last; filters failing, a metric range, and text", async () => {
    const sorted = (await get(`/api/runs/${a}/cases?sort=f1&order=desc&limit=500`)).json().rows as Array<any>
    const f1 = sorted.map((x) => x.metrics.f1)
    const known = f1.filter((v) => v !== null)
    expect(known).toEqual([...known].sort((x, y) => y - x))
    expect(f1.slice(known.length).every((v) => v === null)).toBe(true)
    // Failing: a failed judgment, or the pipeline's own verdict (answer-correctness' --pass-if) says fail —
    // the filter waits for the verdicts, whenever it is asked.
    const failing = (await get(`/api/runs/${a}/cases?failing=true&limit=500`)).json()
    const expected = failingCaseIds(fx.correctnessA)
    expect(expected).toEqual(expect.arrayContaining(["judge-fails-1", "judge-fails-2"]))
    expect(expected.length).toBeGreaterThan(2)
    expect(failing.rows.map((x: any) => x.caseId).sort()).toEqual(expected.sort())
    expect((await get(`/api/runs/${a}`)).json()).toMatchObject({ failing: expected.length, verdictsReady: true })
    const range = (await get(`/api/runs/${a}/cases?metric=f1&min=0.5&max=1&limit=500`)).json().rows as Array<any>
    expect(range.length).toBeGreaterThan(0)
    expect(range.every((x) => x.metrics.f1 >= 0.5 && x.metrics.f1 <= 1)).toBe(true)
    const text = (await get(`/api/runs/${a}/cases?q=${encodeURIComponent("EIFFEL tower")}`)).json()
    expect(text.rows.map((x: any) => x.caseId)).toEqual(["q1"])
    const hostile = (await get(`/api/runs/${a}/cases?q=${encodeURIComponent("<script>window.__pwned")}`)).json()
    // The hostile case, and the failing ones: the judge's raw replies in their records quote the same text.
    expect(hostile.rows.map((x: any) => x.caseId).sort()).toEqual([HOSTILE_ID, "judge-fails-1", "judge-fails-2"].sort())
    expect((await get(`/api/runs/${a}/cases?sort=nope`)).status).toBe(400)
    expect((await get(`/api/runs/${a}/cases?limit=0`)).status).toBe(400)
  })

  it("a case: its fields, its claims with the judge's verdicts, the judge's raw replies of failed checks", async () => {
    const q2 = (await get(`/api/runs/${a}/cases/q2`)).json()
    expect(q2.fields.map((f: any) => f[0])).toEqual(["Question", "Answer", "Reference"])
    const claim = q2.targets.find((t: any) => t.key === "claim:answer:1:reference")
    const record = q2.record
    expect(claim.judged).toBe(record.claims.answer.claims[0].against.verdict)
    expect(claim.choices.map((c: any) => c.key)).toEqual(["0", "1", "2", "y", "x"])
    expect(q2.targets.some((t: any) => t.target.kind === "metric" && t.target.metric === "f1")).toBe(true)
    const failed = (await get(`/api/runs/${a}/cases/judge-fails-1`)).json()
    expect(failed.status).toBe("fail")
    const replies = failed.judgments.filter((j: any) => j.status === "failed")
    expect(replies.length).toBeGreaterThan(0)
    expect(replies[0].raw).toContain("<b>probably</b>")
    const hostile = await get(`/api/runs/${a}/cases/${encodeURIComponent(HOSTILE_ID)}`)
    expect(hostile.status).toBe(200)
    expect(hostile.json().caseId).toBe(HOSTILE_ID)
    expect((await get(`/api/runs/${a}/cases/nope`)).status).toBe(404)
  })
})

describe("labels", () => {
  const claim = (index: number, side = "answer", against: unknown = "reference") => ({
    kind: "claim",
    side,
    index,
    against
  })

  it("POST appends a label with who, when and the judge's own value, and answers 201 with the agreement", async () => {
    const r = await post(server.port, `/api/runs/${a}/labels`, {
      caseId: "q2",
      target: claim(1),
      label: { verdict: "contradicted" },
      note: "Ganymede is Jupiter's <script>"
    })
    expect(r.status).toBe(201)
    const { label, agreement } = r.json()
    expect(label).toMatchObject({
      runId: a,
      caseId: "q2",
      by: "tester",
      judged: "neutral",
      note: "Ganymede is Jupiter's <script>"
    })
    expect(Number.isNaN(Date.parse(label.at))).toBe(false)
    expect(agreement.labels).toBe(1)
    const lines = fs.readFileSync(Path.join(fx.correctnessA, "labels.jsonl"), "utf8").split("\n").filter((l) =>
      l !== ""
    )
    expect(JSON.parse(lines.at(-1)!)).toEqual(label)
    const listed = (await get(`/api/runs/${a}/labels`)).json()
    expect(listed.labels).toContainEqual(label)
    // The case shows it on its target; the case list counts it and `labelled` finds it.
    const q2 = (await get(`/api/runs/${a}/cases/q2`)).json()
    expect(q2.targets.find((t: any) => t.key === "claim:answer:1:reference").label).toEqual(label)
    const labelled = (await get(`/api/runs/${a}/cases?labelled=yes`)).json()
    expect(labelled.rows.map((x: any) => x.caseId)).toEqual(["q2"])
  })

  it("refuses labels that do not fit: no header (403), a target the case lacks, a value of another kind or off the scale, unknown fields (400), a body over 64 KiB (413)", async () => {
    const body = { caseId: "q2", target: claim(1), label: { verdict: "entailed" } }
    const before = fs.readFileSync(Path.join(fx.correctnessA, "labels.jsonl"), "utf8")
    expect((await post(server.port, `/api/runs/${a}/labels`, body, { "x-requested-by": "" })).status).toBe(403)
    expect((await post(server.port, `/api/runs/${a}/labels`, { ...body, target: claim(9) })).status).toBe(400)
    expect((await post(server.port, `/api/runs/${a}/labels`, { ...body, label: { grade: 2 } })).status).toBe(400)
    expect((await post(server.port, `/api/runs/${a}/labels`, { ...body, extra: 1 })).status).toBe(400)
    expect((await post(server.port, `/api/runs/${a}/labels`, { ...body, label: { verdict: "maybe" } })).status).toBe(
      400
    )
    const hit = { kind: "hit", hitId: "a" }
    const sr = await post(server.port, `/api/runs/${search}/labels`, {
      caseId: "sr-001",
      target: hit,
      label: { grade: 7 }
    })
    expect(sr.status).toBe(400)
    expect(sr.json().error.message).toContain("not on the scale")
    const huge = await post(server.port, `/api/runs/${a}/labels`, { ...body, note: "x".repeat(70_000) })
    expect(huge.status).toBe(413)
    const bad = await raw(server.port, `/api/runs/${a}/labels`, {
      method: "POST",
      headers: { "x-requested-by": "rag-eval", "content-type": "application/json" },
      body: "{not json"
    })
    expect(bad.status).toBe(400)
    expect(bad.json().error.code).toBe("invalid_json")
    expect(fs.readFileSync(Path.join(fx.correctnessA, "labels.jsonl"), "utf8")).toBe(before)
  })

  it("two tabs labelling at once lose nothing: every acknowledged label is one whole line", async () => {
    const run = search
    const detail = (await get(`/api/runs/${run}/cases?limit=500`)).json().rows as Array<any>
    const targets: Array<{ caseId: string; hitId: string }> = []
    for (const row of detail) {
      const c = (await get(`/api/runs/${run}/cases/${encodeURIComponent(row.caseId)}`)).json()
      for (const t of c.targets) {
        if (t.target.kind === "hit") targets.push({ caseId: row.caseId, hitId: t.target.hitId })
      }
    }
    expect(targets.length).toBeGreaterThanOrEqual(20)
    const results = await Promise.all(targets.map((t, i) =>
      post(server.port, `/api/runs/${run}/labels`, {
        caseId: t.caseId,
        target: { kind: "hit", hitId: t.hitId },
        label: i % 3 === 0 ? { agree: true } : { grade: i % 4 }
      })
    ))
    expect(results.every((r) => r.status === 201)).toBe(true)
    const text = fs.readFileSync(Path.join(fx.search, "labels.jsonl"), "utf8")
    expect(text.endsWith("\n")).toBe(true)
    const lines = text.split("\n").filter((l) => l !== "")
    expect(lines).toHaveLength(targets.length)
    const parsed = lines.map((l) => JSON.parse(l))
    expect(new Set(parsed.map((l) => `${l.caseId}/${l.target.hitId}`)).size).toBe(targets.length)
    const agreement = (await get(`/api/runs/${run}/agreement`)).json()
    expect(agreement.labels).toBe(targets.length)
    const hits = agreement.groups.find((g: any) => g.kind === "hit")
    expect(hits.pairs).toBe(targets.length)
    expect(hits.headline.statistic).toBe("Cohen's κ")
  })

  it("agreement is calibrate's over the labels so far: κ with CIs, agree-only labels counted, metric and preference labels paired", async () => {
    const fresh = await startServer({ out: fx.out })
    try {
      const c = (await raw(fresh.port, `/api/runs/${b}/cases/q2`)).json()
      const claims = c.targets.filter((t: any) => t.target.kind === "claim").slice(0, 5)
      expect(claims).toHaveLength(5)
      let last: any
      for (const [i, t] of claims.entries()) {
        // Four agree with the judge, the fifth says another verdict.
        const verdict = i < 4 ? t.judged : t.judged === "entailed" ? "neutral" : "entailed"
        const r = await post(fresh.port, `/api/runs/${b}/labels`, {
          caseId: "q2",
          target: t.target,
          label: { verdict }
        })
        expect(r.status, r.body).toBe(201)
        last = r.json().agreement
      }
      const group = last.groups.find((g: any) => g.kind === "claim")
      expect(last.labels).toBe(5)
      expect(group.pairs).toBe(5)
      expect(last.calibration.answers.claims.exactAgreement.value).toBeCloseTo(0.8, 10)
      expect(group.headline.estimate.ci).not.toBeNull()
      // Five pairs are too few to say how many more would narrow the interval: calibrate says why.
      expect(group.more).toBeNull()
      expect(group.moreNote).toContain("too few")
      // "The judge is wrong" without a value: counted, not paired.
      const wrong = await post(fresh.port, `/api/runs/${b}/labels`, {
        caseId: "q1",
        target: claims[0].target,
        label: { agree: false }
      })
      expect(wrong.status).toBe(201)
      const after = wrong.json().agreement
      expect(after.agreeOnly).toMatchObject({ labels: 1, agreed: 0 })
      expect(after.groups.find((g: any) => g.kind === "claim").pairs).toBe(5)
      // A metric value and a preference between the two runs: calibrate pairs them too.
      const metric = await post(fresh.port, `/api/runs/${b}/labels`, {
        caseId: "q1",
        target: { kind: "metric", metric: "f1" },
        label: { value: 0.25 }
      })
      expect(metric.status).toBe(201)
      expect(metric.json().agreement.groups.find((g: any) => g.kind === "metric")).toMatchObject({
        title: "Per-case metric: f1",
        pairs: 1
      })
      const preference = await post(fresh.port, `/api/runs/${b}/labels`, {
        caseId: "q1",
        target: { kind: "preference", other: { runId: a } },
        label: { preference: -1 }
      })
      expect(preference.status).toBe(201)
      expect(preference.json().label.judged).toEqual(expect.any(Number))
      expect(preference.json().agreement.calibration.answers.labels.preference).toBe(1)
      const outOfRange = await post(fresh.port, `/api/runs/${b}/labels`, {
        caseId: "q1",
        target: { kind: "metric", metric: "f1" },
        label: { value: 3 }
      })
      expect(outOfRange.status).toBe(400)
    } finally {
      await fresh.close()
    }
  })
})

describe("queue and compare", () => {
  it("the review queue: unlabelled cases only, across the strata of the headline metric, seeded", async () => {
    const q = (await get(`/api/runs/${a}/queue?size=6&seed=7`)).json()
    expect(q.metric).toBe("score")
    expect(q.items).toHaveLength(6)
    const ids = q.items.map((x: any) => x.caseId)
    expect(new Set(ids).size).toBe(6)
    expect(ids).not.toContain("q2")
    expect(q.items.some((x: any) => x.reason.startsWith("stratum 1 of"))).toBe(true)
    expect((await get(`/api/runs/${a}/queue?size=6&seed=7`)).json()).toEqual(q)
  })

  it("compare: the paired tests per metric and the cases worst first", async () => {
    let r = await get(`/api/compare?a=${a}&b=${b}&metric=f1&limit=500`)
    expect(r.status).toBe(200)
    // compare's tests run in the background, f1 first: asked again until none is pending.
    expect(r.json().pending).toContain("f1")
    while (r.json().pending.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      r = await get(`/api/compare?a=${a}&b=${b}&metric=f1&limit=500`)
    }
    const c = r.json()
    expect(c.failed).toEqual([])
    expect(c.cases).toBe(12)
    const f1 = c.metrics.find((m: any) => m.metric === "f1")
    expect(f1.delta).toBeLessThan(0)
    const changes = c.changed.rows.map((x: any) => x.change).filter((x: any) => x !== null)
    expect(changes).toEqual([...changes].sort((x, y) => x - y))
    expect(c.changed.rows[0].change).toBeLessThan(0)
    expect(c.changed.worse).toBeGreaterThan(0)
    expect(c.changed.rows.slice(0, c.changed.worse).map((x: any) => x.caseId)).toContain("q1")
    const other = await get(`/api/compare?a=${a}&b=${search}`)
    expect(other.status).toBe(400)
    expect(other.json().error.message).toContain("different pipelines")
  })
})

describe("small comparisons", () => {
  /** A CLI whose compare always fails: a test that ran in it says so. */
  const failingBin = () => {
    const file = Path.join(tempDir(), "failing-cli.mjs")
    fs.writeFileSync(file, `process.stderr.write("not asked\\n"); process.exit(3)\n`)
    return file
  }
  /** Asks until no metric is pending; the last answer. */
  const settled = async (port: number, query: string) => {
    for (;;) {
      const r = await raw(port, `/api/compare?${query}`)
      expect(r.status).toBe(200)
      if (r.json().pending.length === 0) return r.json()
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  it("at most IN_PROCESS_VALUES case × metric values: tested in the server's process, not by the CLI", async () => {
    const own = await startServer({ out: fx.out, compareBin: failingBin() })
    try {
      const c = await settled(own.port, `a=${a}&b=${b}&metric=f1`)
      expect(c.failed).toEqual([])
      expect(c.cases).toBe(12)
      // The numbers `rag-eval compare` gives from the runs' files (what the child process would run).
      expect(c.metrics.length).toBeGreaterThan(4)
      const cli = await runCli([
        "compare",
        fx.correctnessA,
        fx.correctnessB,
        "--format",
        "json",
        "--metrics",
        c.metrics.map((m: any) => m.metric).join(",")
      ])
      expect(cli.code, cli.stderr).toBe(0)
      const finite = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : null)
      const fromCli = (JSON.parse(cli.stdout).metrics as Array<any>).map((m) => ({
        metric: m.metric,
        n: m.n,
        delta: finite(m.delta),
        ci: { lower: finite(m.bootstrap.lower), upper: finite(m.bootstrap.upper) },
        pTTest: finite(m.tTest.p),
        pRandomisation: finite(m.randomisation.p),
        verdict: m.verdict
      }))
      const fromReview = c.metrics.map((m: any) => ({
        metric: m.metric,
        n: m.n,
        delta: m.delta,
        ci: m.ci,
        pTTest: m.pTTest,
        pRandomisation: m.pRandomisation,
        verdict: m.verdict
      }))
      expect(new Set(fromReview.map((m: any) => JSON.stringify(m)))).toEqual(
        new Set(fromCli.map((m) => JSON.stringify(m)))
      )
    } finally {
      await own.close()
    }
  })

  it("above it: by the CLI in one child process (here one that fails, named in each metric's problem)", async () => {
    const first = await startServer({ out: fx.out, compareBin: failingBin() })
    let values: number
    try {
      const c = await settled(first.port, `a=${a}&b=${b}&metric=f1`)
      values = c.cases * c.metrics.length
    } finally {
      await first.close()
    }
    // At the bound: in-process (above); one value fewer: the child's.
    const own = await startServer({ out: fx.out, compareBin: failingBin(), compareInProcessUpTo: values })
    const child = await startServer({ out: fx.out, compareBin: failingBin(), compareInProcessUpTo: values - 1 })
    try {
      expect((await settled(own.port, `a=${a}&b=${b}&metric=f1`)).failed).toEqual([])
      const d = await settled(child.port, `a=${a}&b=${b}&metric=f1`)
      expect(d.metrics).toEqual([])
      expect(d.failed.length * d.cases).toBe(values)
      for (const f of d.failed) expect(f.problem).toMatch(/^rag-eval compare failed \(exit 3\): not asked$/)
    } finally {
      await own.close()
      await child.close()
    }
  })
})

describe("a --target run", () => {
  it("shows the live system's latency of each case it answered, and the judge's tokens and cost", async () => {
    const fake = await FakeRag.start()
    try {
      const out = Path.join(tempDir(), "out")
      const r = await runCli([
        "run",
        "rag-answers",
        "--csv",
        Path.join(repoRoot, "test-sets", "rag-answers", "sample.csv"),
        "--out",
        out,
        "--quiet",
        "--target",
        fake.url,
        "--target-contexts",
        "$.sources[*].text"
      ])
      expect(r.code, r.stderr).toBe(0)
      const runDir = /^run: (.+)$/m.exec(r.stdout)![1]!.trim()
      const records = fs.readFileSync(Path.join(runDir, "records-iteration-1.jsonl"), "utf8").trim().split("\n")
        .map((l) => JSON.parse(l))
      const answered = records.find((x) => x.generated?.status === "ok")
      expect(answered).toBeDefined()
      const target = await startServer({ out })
      try {
        const id = Path.basename(runDir)
        expect((await raw(target.port, "/api/runs")).json().runs[0].target).toBe(fake.url)
        const c = (await raw(target.port, `/api/runs/${id}/cases/${encodeURIComponent(answered.caseId)}`)).json()
        expect(c.system.latencyMs).toBe(answered.generated.latencyMs)
        expect(c.system.answerStatus).toBe("ok")
        expect(c.system.judgeInputTokens).toBe(0)
        expect(c.system.judgeCostUsd).toBe(0)
      } finally {
        await target.close()
      }
    } finally {
      await fake.close()
    }
  })
})

describe("safe by default", () => {
  it("answers only to loopback host names (DNS rebinding), sends no CORS header, and a CSP on every response", async () => {
    const evil = await raw(server.port, "/api/runs", { headers: { host: "evil.example:80" } })
    expect(evil.status).toBe(403)
    expect(evil.body).not.toContain(a)
    for (const host of [`localhost:${server.port}`, `127.0.0.1:${server.port}`]) {
      expect((await raw(server.port, "/api/runs", { headers: { host } })).status).toBe(200)
    }
    const page = await raw(server.port, "/", { headers: { origin: "http://evil.example" } })
    expect(page.status).toBe(200)
    expect(page.headers["access-control-allow-origin"]).toBeUndefined()
    expect(page.headers["content-security-policy"]).toContain("default-src 'none'")
    expect(page.headers["x-content-type-options"]).toBe("nosniff")
    const preflight = await raw(server.port, `/api/runs/${a}/labels`, {
      method: "OPTIONS",
      headers: { origin: "http://evil.example", "access-control-request-method": "POST" }
    })
    expect(preflight.headers["access-control-allow-origin"]).toBeUndefined()
    expect(preflight.status).toBeGreaterThanOrEqual(400)
  })

  it("no request path reaches a file outside the run directories, encoded or not", async () => {
    const paths = [
      "/assets/../../package.json",
      "/assets/..%2F..%2Fpackage.json",
      "/assets/%2e%2e%2f%2e%2e%2fpackage.json",
      "/assets/%252e%252e%252fpackage.json",
      "/assets/app.js%00.json",
      "/../../../../etc/passwd",
      "/%2e%2e/%2e%2e/etc/passwd",
      "/api/runs/..%2F..%2F..%2Fetc%2Fpasswd",
      "/api/runs/%2e%2e/cases",
      `/api/runs/${a}/cases/..%2F..%2F..%2F..%2Fetc%2Fpasswd`,
      `/api/runs/${a}/cases/..%2Fmanifest.json`,
      `/api/runs/..%2F${a}/cases/q1`,
      `/api/runs/answer-correctness%2F${a}`,
      "/api/runs/%2Fetc%2Fpasswd/labels",
      "/dist/ui-page/app.js",
      "/src/ui/Http.ts"
    ]
    for (const path of paths) {
      const r = await raw(server.port, path)
      expect(r.status, path).toBeGreaterThanOrEqual(400)
      expect(r.body, path).not.toMatch(/root:x:0:0|"name": "rag-eval"|"tool":"rag-eval"|import \* as/)
    }
    const posted = await post(server.port, "/api/runs/..%2F..%2Ftmp/labels", {
      caseId: "x",
      target: { kind: "grade", criterion: "c" },
      label: { grade: 1 }
    })
    expect(posted.status).toBe(404)
    // The page's own assets are there, by name only.
    expect((await get("/assets/app.js")).status).toBe(200)
  })

  it("with a token: 401 without it; Bearer works; /?token= gives a session cookie (not the token) and drops it from the address", async () => {
    const token = "s3cret-token-value"
    const guarded = await startServer({ out: fx.out, token })
    try {
      expect((await raw(guarded.port, "/api/runs")).status).toBe(401)
      expect((await raw(guarded.port, "/")).status).toBe(401)
      expect((await raw(guarded.port, "/assets/app.js")).status).toBe(401)
      expect((await raw(guarded.port, "/api/runs", { headers: { authorization: "Bearer wrong" } })).status).toBe(401)
      expect((await raw(guarded.port, "/api/runs", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
      expect((await raw(guarded.port, "/?token=wrong")).status).toBe(401)
      const opened = await raw(guarded.port, `/?token=${token}`)
      expect(opened.status).toBe(303)
      expect(opened.headers.location).toBe("/")
      const cookie = String(opened.headers["set-cookie"])
      expect(cookie).toContain("HttpOnly")
      expect(cookie).toContain("SameSite=Strict")
      expect(cookie).not.toContain(token)
      const session = cookie.split(";")[0]!
      expect((await raw(guarded.port, "/api/runs", { headers: { cookie: session } })).status).toBe(200)
      const labelled = await post(guarded.port, `/api/runs/${search}/labels`, {
        caseId: "sr-001",
        target: { kind: "hit", hitId: "a" },
        label: { agree: true }
      }, { cookie: session })
      expect(labelled.status).toBe(201)
      expect(labelled.body).not.toContain(token)
      // The token is in no file the server wrote.
      expect(fs.readFileSync(Path.join(fx.search, "labels.jsonl"), "utf8")).not.toContain(token)
    } finally {
      await guarded.close()
    }
  })

  it("documents itself: /api/openapi.json lists every endpoint", async () => {
    const doc = (await get("/api/openapi.json")).json()
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([
      "/api/runs",
      "/api/runs/{id}",
      "/api/runs/{id}/cases",
      "/api/runs/{id}/cases/{caseId}",
      "/api/runs/{id}/queue",
      "/api/runs/{id}/agreement",
      "/api/runs/{id}/labels",
      "/api/compare",
      "/api/health"
    ]))
    expect(Object.keys(doc.paths)).not.toContain("/")
    expect(doc.paths["/api/runs/{id}/labels"].post).toBeDefined()
  })
})
