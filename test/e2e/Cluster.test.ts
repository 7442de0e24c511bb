/**
 * One run across processes, as a user runs it: a private PostgreSQL (Debian's `postgresql`, started
 * by the test; skipped visibly without it), `rag-eval store migrate`, two `rag-eval runner`
 * processes, and `rag-eval run … --store … --cluster` over ~2,000 judgments against the fake
 * OpenAI-compatible server. One runner is killed with SIGKILL mid-run, the coordinator is stopped with
 * Ctrl+C and then, resumed, killed with SIGKILL; the same command resumes it. The records equal a local run's; every judgment is in the journal once;
 * the calls made are at most the judgments plus the killed runner's calls in flight.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { writeCsv } from "../../bench/gen.js"
import { cli, type Running, start, waitFor } from "../support/ChildCli.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { freePort } from "../support/Ports.js"
import { postgresAvailable, type PrivatePostgres, startPostgres } from "../support/Postgres.js"
import { tempDir } from "../support/RunPipeline.js"

const ROWS = 334 // × 6 rubrics = 2,004 judgments
const JUDGMENTS = ROWS * 6
const RUNNER_CONCURRENCY = 8

const recordsOf = (out: string) => {
  const root = Path.join(out, "rag-answers")
  const [id] = fs.readdirSync(root)
  return fs.readFileSync(Path.join(root, id!, "records-iteration-1.jsonl"), "utf8").split("\n").filter((l) => l !== "")
    .map((l) => JSON.parse(l, (k, v) => k === "latencyMs" ? undefined : v))
}

/** The prompts asked more than once: at which calls (counted from the cluster run's start) and by which runner. */
const paidTwice = (requests: ReadonlyArray<FakeOpenAi.RecordedRequest>, events: ReadonlyArray<string>): string => {
  const seen = new Map<string, Array<string>>()
  requests.forEach((r, i) => {
    const prompt = JSON.stringify(r.body.messages)
    const by = String(r.headers.authorization ?? "").replace("Bearer runner-key-", "runner ")
    seen.set(prompt, [...(seen.get(prompt) ?? []), `call ${i + 1} by ${by}`])
  })
  const twice = [...seen.values()].filter((calls) => calls.length > 1)
  return `${twice.length} prompts asked more than once: ${twice.map((c) => c.join(" & ")).join("; ")}. Events: ${
    events.join(", ")
  }`
}

describe.skipIf(!postgresAvailable)(
  "cluster across processes (needs PostgreSQL binaries in /usr/lib/postgresql: skipped without them)",
  () => {
    let pg: PrivatePostgres
    let fake: FakeOpenAi.FakeOpenAi
    const runners: Array<Running> = []
    beforeAll(async () => {
      pg = await startPostgres()
      // Requests are recorded: a failure of the paid-calls bound lists what was paid twice, by whom and when.
      fake = await FakeOpenAi.start({ answer: FakeOpenAi.variedAnswer, latencyMs: 15 })
    }, 120_000)
    afterAll(async () => {
      for (const r of runners) if (!r.exited()) r.child.kill("SIGKILL")
      await fake?.close()
      pg?.stop()
    })

    it(
      "2,000 judgments on two runners, one runner killed with SIGKILL, the coordinator stopped by Ctrl+C and then killed: the records of a local run, each judgment once",
      async () => {
        // Trust authentication ignores the password: it is there to show it never appears anywhere.
        const store = pg.url.replace("rag@", "rag:hunter2-secret@")
        const dir = tempDir("rag-eval-cluster-")
        const input = Path.join(dir, "rows.csv")
        writeCsv(input, ROWS)
        const llm = (
          out: string,
          ...extra: ReadonlyArray<string>
        ) => [
          "run",
          "rag-answers",
          "--csv",
          input,
          "--out",
          out,
          "--provider",
          "openai-compatible",
          "--base-url",
          fake.url,
          "--model",
          "fake",
          ...extra
        ]

        // The reference: a local run.
        const localOut = Path.join(dir, "local")
        const local = await cli(llm(localOut, "--concurrency", "16"))
        expect(local.code, local.stderr).toBe(0)
        expect(fake.judgeCalls).toBe(JUDGMENTS)

        const migrated = await cli(["store", "migrate", "--store", store])
        expect(migrated.code, migrated.stderr).toBe(0)
        const logs: Array<string> = []
        for (let i = 0; i < 2; i++) {
          const port = await freePort()
          const runner = start([
            "runner",
            "--store",
            store,
            "--listen",
            `127.0.0.1:${port}`,
            "--concurrency",
            String(RUNNER_CONCURRENCY)
          ], { env: { OPENAI_API_KEY: `runner-key-${i}` }, guardMs: 0 })
          logs.push("")
          runner.child.stdout!.on("data", (d: Buffer) => (logs[i] += d.toString()))
          runners.push(runner)
        }
        await waitFor(
          () => `both runners listening (their stderr: ${runners.map((r) => r.stderr().slice(-400)).join(" | ")})`,
          () => logs.every((l) => l.includes("Listening on")),
          120_000
        )

        fake.reset()
        // What happened when, in judge calls received: read with the calls paid twice if the bound fails.
        const events: Array<string> = []
        const mark = (event: string) => events.push(`${event} at call ${fake.judgeCalls}`)
        const clusterOut = Path.join(dir, "cluster")
        const args = llm(clusterOut, "--store", store, "--cluster")
        const first = start(args, { guardMs: 0 })
        await waitFor("a quarter of the judgments", () => fake.judgeCalls >= JUDGMENTS / 4, 180_000)
        runners[0]!.child.kill("SIGKILL")
        mark("runner 0 killed")
        // Ctrl+C: nothing new is sent, the batches in flight land, exit 130 as in a local run.
        // A third: the batches in flight when it stops land (~700 calls were seen after a Ctrl+C at half),
        // and the second coordinator must still have work to be killed in.
        await waitFor("a third of the judgments", () => fake.judgeCalls >= JUDGMENTS / 3 || first.exited(), 180_000)
        first.child.kill("SIGINT")
        mark("coordinator stopped (Ctrl+C)")
        const interrupted = await first.result
        mark("coordinator exited")
        expect(interrupted.code, interrupted.stderr).toBe(130)
        expect(interrupted.stderr).toContain("run the same command again to resume")
        // The judgments are in the store, not in a judgments.jsonl (and the URL's password is masked).
        expect(interrupted.stderr).toMatch(/judgments are saved in postgres:\/\/\S+ \(run /)
        expect(interrupted.stderr).not.toContain("judgments.jsonl")
        const second = start(args, { guardMs: 0 })
        mark("second coordinator started")
        const before = fake.judgeCalls
        await waitFor(
          "100 calls of the second coordinator's",
          () => fake.judgeCalls >= before + 100 || second.exited(),
          180_000
        )
        second.child.kill("SIGKILL")
        mark("second coordinator killed")
        // Killed mid-run, not finished before the kill.
        expect((await second.result).signal).toBe("SIGKILL")
        // The same command resumes it.
        mark("resumed")
        const resumed = await cli(args)
        // Seen twice (2026-11-29, full suites beside two busy processes, load ~11): this resume stalled
        // with 8 batches in flight until the child's 100 s guard killed it — the guard had killed the
        // surviving runner first (started > 100 s before on that machine; runners now have none).
        // What the runners said goes with a failure.
        expect(
          resumed.code,
          `${resumed.stderr}\n${
            runners.map((r, i) =>
              `runner ${i}${r.exited() ? " (exited)" : ""}: ${logs[i]!.slice(-3_000)}${r.stderr().slice(-3_000)}`
            )
              .join("\n")
          }`
        ).toBe(0)
        expect(resumed.stderr).toMatch(/resuming run/)

        expect(recordsOf(clusterOut)).toEqual(recordsOf(localOut))
        // Every judgment once; paid calls: the judgments, plus at most the calls in flight at each of the
        // two crashes — the killed runner's, and the surviving runner's when the coordinator was killed
        // (their answers had nowhere to go): --concurrency per crash, as SPEC §5 bounds it.
        expect(fake.judgeCalls).toBeGreaterThanOrEqual(JUDGMENTS)
        expect(fake.judgeCalls, paidTwice(fake.judgeRequests, events)).toBeLessThanOrEqual(
          JUDGMENTS + 2 * RUNNER_CONCURRENCY
        )

        // The run's cluster messages go with `store prune`; its judgments stay (report still works).
        const runDir = Path.join(clusterOut, "rag-answers", fs.readdirSync(Path.join(clusterOut, "rag-answers"))[0]!)
        const pruned = await cli(["store", "prune", "--store", store, "--run-id", runDir])
        expect(pruned.code, pruned.stderr).toBe(0)
        expect(pruned.stdout).toMatch(/removed [1-9]\d* cluster message/)
        const report = await cli(["report", runDir, "--store", store])
        expect(report.code, report.stderr).toBe(0)
        // The store's password is in no output and no file of the run.
        for (const r of [migrated, resumed, pruned, report]) {
          expect(r.stdout + r.stderr).not.toContain("hunter2")
        }
        for (const r of runners) expect(r.stderr()).not.toContain("hunter2")
        for (const l of logs) expect(l).not.toContain("hunter2")
        for (const f of fs.readdirSync(runDir)) {
          expect(fs.readFileSync(Path.join(runDir, f), "utf8")).not.toContain("hunter2")
        }
        expect(JSON.parse(fs.readFileSync(Path.join(runDir, "manifest.json"), "utf8")).store).toMatch(
          /^postgres:\/\/<redacted>@/
        )
        console.log(`cluster e2e: ${fake.judgeCalls} judge calls for ${JUDGMENTS} judgments`)
      },
      300_000
    )

    it(
      "--rpm for the whole cluster: two runners against a server allowing 3,000 requests/min and charging rejected requests: every judgment ends ok, each paid once beyond the calls in flight at a re-delivery",
      async () => {
        const store = pg.url
        const limited = await FakeOpenAi.start({
          latencyMs: 10,
          record: false,
          limit: { rpm: 3_000, burst: 20, chargeRejected: true }
        })
        const started: Array<Running> = []
        try {
          const dir = tempDir("rag-eval-cluster-rpm-")
          const input = Path.join(dir, "rows.csv")
          writeCsv(input, 60) // 360 judgments: ~7 s at 3,000/min
          const migrated = await cli(["store", "migrate", "--store", store])
          expect(migrated.code, migrated.stderr).toBe(0)
          const logs: Array<string> = []
          for (let i = 0; i < 2; i++) {
            const port = await freePort()
            const runner = start(["runner", "--store", store, "--listen", `127.0.0.1:${port}`, "--concurrency", "16"], {
              env: { OPENAI_API_KEY: "runner-key" },
              guardMs: 0
            })
            logs.push("")
            runner.child.stdout!.on("data", (d: Buffer) => (logs[i] += d.toString()))
            started.push(runner)
          }
          await waitFor(
            () => `both runners listening (their stderr: ${started.map((r) => r.stderr().slice(-400)).join(" | ")})`,
            () => logs.every((l) => l.includes("Listening on")),
            120_000
          )
          const run = await cli([
            "run",
            "rag-answers",
            "--csv",
            input,
            "--out",
            Path.join(dir, "out"),
            "--provider",
            "openai-compatible",
            "--base-url",
            limited.url,
            "--model",
            "fake",
            "--rpm",
            "3000",
            "--store",
            store,
            "--cluster"
          ])
          expect(run.code, run.stderr).toBe(0)
          expect(run.stderr).toContain("360 judgments: 360 ok, 0 failed")
          // Outcomes only: how many requests meet a 429 here depends on the machine's load (a stalled
          // process releases its reserved starts together); the shared limit's targets are asserted on
          // the simulated server (test/providers/RatePolicy.test.ts, three runners).
          // Each judgment paid once — beyond, at most, the calls in flight when a batch is delivered
          // again (under heavy load a runner's batch can be re-sent while its calls are still out:
          // 376 and 386 paid were seen beside two busy processes; the bound is both runners' permits).
          expect(limited.paidJudgeCalls).toBeGreaterThanOrEqual(360)
          expect(limited.paidJudgeCalls).toBeLessThanOrEqual(360 + 2 * 16)
          console.log(`cluster --rpm 3000: ${limited.calls} calls, ${limited.limited} met a 429`)
        } finally {
          for (const r of started) r.child.kill("SIGKILL")
          await limited.close()
        }
      },
      120_000
    )
  }
)
