/**
 * `rag-eval ui` as users start it (`node dist/bin.js ui …`, a child process): with the token from
 * RAG_EVAL_UI_TOKEN on any address, every request needs it and neither output shows it; a stop
 * signal ends it with exit 0. Refused with exit 2 and one line when its flags cannot work (an address
 * that is not loopback without a token, a bad --listen, --out a file) — checked in-process (`runCli`:
 * the same arguments, environment, output and exit code), as is the run a served --out lists later.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { start } from "../support/ChildCli.js"
import { runCli } from "../support/InProcessCli.js"
import { tempDir } from "../support/RunPipeline.js"
import { raw } from "./Server.js"

const listening = (running: ReturnType<typeof start>) =>
  new Promise<number>((resolve, reject) => {
    let out = ""
    running.child.stdout!.on("data", (d: Buffer) => {
      out += d.toString()
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out)
      if (m !== null) resolve(Number(m[1]))
    })
    void running.result.then((r) => reject(new Error(`rag-eval ui exited ${r.code}: ${r.stderr}`)))
  })

describe("rag-eval ui", () => {
  it("refuses flags that cannot work, with exit 2 and why", async () => {
    const open = await runCli(["ui", "--listen", "0.0.0.0:0", "--out", tempDir()], { env: { RAG_EVAL_UI_TOKEN: "" } })
    expect(open.code).toBe(2)
    expect(open.stderr).toContain("is not a loopback address")
    expect(open.stdout).toBe("")
    const bad = await runCli(["ui", "--listen", "here:there"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("expected HOST:PORT")
    const file = Path.join(tempDir(), "a-file")
    fs.writeFileSync(file, "")
    const notDir = await runCli(["ui", "--out", file, "--listen", "127.0.0.1:0"])
    expect(notDir.code).toBe(2)
    expect(notDir.stderr).toContain("is a file")
  })

  it("with RAG_EVAL_UI_TOKEN on any address: every request needs the token, which no output shows; SIGTERM stops it (exit 0)", async () => {
    const token = "ui-token-4f9a1c"
    const running = start(["ui", "--listen", "0.0.0.0:0", "--out", tempDir()], { env: { RAG_EVAL_UI_TOKEN: token } })
    const port = await listening(running)
    expect((await raw(port, "/api/runs")).status).toBe(401)
    expect((await raw(port, "/")).status).toBe(401)
    const ok = await raw(port, "/api/health", { headers: { authorization: `Bearer ${token}` } })
    expect(ok.status).toBe(200)
    expect(ok.json()).toMatchObject({ status: "ok", runs: 0 })
    running.child.kill("SIGTERM")
    const result = await running.result
    expect(result.code).toBe(0)
    expect(result.stdout + result.stderr).not.toContain(token)
    expect(result.stderr).toContain("the token is required")
  })

  it("an --out that does not exist yet is served with a warning, and a run written there later is listed", async () => {
    const out = Path.join(tempDir(), "not-yet")
    const running = start(["ui", "--listen", "127.0.0.1:0", "--out", out])
    const port = await listening(running)
    expect((await raw(port, "/api/health")).json()).toMatchObject({ status: "ok", runs: 0 })
    const run = await runCli(["run", "rag-answers", "--csv", "test-sets/rag-answers/sample.csv", "--out", out])
    expect(run.code).toBe(0)
    const listed = (await raw(port, "/api/runs")).json() as { runs: ReadonlyArray<{ pipeline: string }> }
    expect(listed.runs.map((r) => r.pipeline)).toEqual(["rag-answers"])
    running.child.kill("SIGTERM")
    const result = await running.result
    expect(result.code).toBe(0)
    expect(result.stderr).toContain("does not exist (yet)")
  })
})
