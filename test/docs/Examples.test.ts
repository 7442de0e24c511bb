/**
 * Every shell example of README.md and docs/*.md that runs offline is run here, by bash, and its
 * output compared with the output the page shows (conventions: DocExamples.ts), so a page that goes
 * stale fails the build. Examples marked `no-run` are listed as skipped, with why.
 *
 * The `rag-eval` on an example's PATH runs the command in this test's process (`runCli`, the path
 * `bin.ts` takes) through a small bash client (`shimScript`): the examples' subject is what the pages
 * say a command prints, not the process, and a CLI process spends ~0.6 s of CPU starting before its
 * first line (~35 of them here). Long-running commands (`serve`, `ui`) and pipeline files (a `.ts`
 * argument: esbuild's compile beside it) run the built CLI, `dist/bin.js`, as the quick start's
 * `npm run eval` does.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { isCompiledModule } from "../../src/cli/LoadPipeline.js"
import { bin } from "../support/ChildCli.js"
import { runCli } from "../support/InProcessCli.js"
import { repoRoot } from "../support/RunPipeline.js"
import { asCli, type Example, examples, matches, normalise, pages } from "./DocExamples.js"

const built = Fs.existsSync(bin)
/**
 * One example's limit: a CLI run takes about a second of CPU, but the suite shares the machine with
 * its other files (a load average of 20 on two cores has made one run take 25 s).
 */
const exampleTimeout = 120_000
const dirs: Array<string> = []
afterAll(async () => {
  for (const dir of dirs) Fs.rmSync(dir, { recursive: true, force: true })
  if (shim !== undefined) await (await shim).close()
})

/**
 * Where the examples' `rag-eval` sends its commands: a request is a line naming a directory that holds
 * the command's working directory (`cwd`), arguments and environment (`args`, `env`: NUL-separated);
 * the answer is the exit code, once `out` and `err` hold what the command printed.
 */
let shim: Promise<{ readonly port: number; readonly close: () => Promise<void> }> | undefined
const startShim = () =>
  shim ??= new Promise((resolve, reject) => {
    const server = Net.createServer((socket) => {
      let line = ""
      socket.setEncoding("utf8")
      socket.on("error", () => {})
      socket.on("data", (chunk: string) => {
        line += chunk
        const end = line.indexOf("\n")
        if (end === -1) return
        const dir = line.slice(0, end)
        line = ""
        answer(dir).then(
          (code) => socket.end(`${code}\n`),
          (e: unknown) => {
            Fs.writeFileSync(Path.join(dir, "err"), `the examples' rag-eval failed: ${String(e)}\n`)
            socket.end("70\n")
          }
        )
      })
    })
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      if (address === null || typeof address === "string") return reject(new Error("no port"))
      resolve({ port: address.port, close: () => new Promise((done) => server.close(() => done())) })
    })
  })

const nulSeparated = (file: string) => {
  const text = Fs.readFileSync(file, "utf8")
  return text === "" ? [] : text.replace(/\0$/, "").split("\0")
}

const answer = async (dir: string): Promise<number> => {
  const env: Record<string, string> = {}
  for (const entry of nulSeparated(Path.join(dir, "env"))) {
    const eq = entry.indexOf("=")
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1)
  }
  const cwd = Fs.readFileSync(Path.join(dir, "cwd"), "utf8")
  const r = await runCli(nulSeparated(Path.join(dir, "args")), { cwd, env })
  Fs.writeFileSync(Path.join(dir, "out"), r.stdout)
  Fs.writeFileSync(Path.join(dir, "err"), r.stderr)
  return r.code
}

/** The examples' `rag-eval`: the built CLI for `serve`, `ui` and pipeline files, else the shim's. */
const shimScript = (port: number) => {
  const built = `exec "${process.execPath}" "${bin}" "$@"`
  return [
    "#!/bin/bash",
    `case "$1" in serve|ui) ${built} ;; esac`,
    `for a in "$@"; do case "$a" in *.ts|*.mts|*.js|*.mjs) ${built} ;; esac; done`,
    "set -e",
    "req=$(mktemp -d)",
    "trap 'rm -rf \"$req\"' EXIT",
    "printf '%s' \"$PWD\" > \"$req/cwd\"",
    ": > \"$req/args\"",
    "if [ $# -gt 0 ]; then printf '%s\\0' \"$@\" > \"$req/args\"; fi",
    "env -0 > \"$req/env\"",
    `exec 3<>/dev/tcp/127.0.0.1/${port}`,
    "printf '%s\\n' \"$req\" >&3",
    "IFS= read -r code <&3",
    "cat \"$req/out\"",
    "cat \"$req/err\" >&2",
    "exit \"$code\"",
    ""
  ].join("\n")
}

/**
 * Not the module the CLI compiles a pipeline file into while it loads it (`isCompiledModule`):
 * another test's `rag-eval run pipelines/….ts` can write one into `pipelines/` while a page copies
 * it, and it may be gone before the copy reads it (seen once: ENOENT from a fresh clone's suite).
 * `cpSync` asks before it reads.
 */
const notCompiling = (source: string) => !isCompiledModule(source)

/**
 * A temp directory with a copy of the repository's samples (a copy: an example that writes beside
 * them must not write into the repository) and `rag-eval` on its PATH.
 */
const pageDir = async () => {
  const { port } = await startShim()
  const dir = Fs.realpathSync(Fs.mkdtempSync(Path.join(Os.tmpdir(), "rag-eval-docs-")))
  dirs.push(dir)
  for (const name of ["test-sets", "pipelines", "prompts", "examples"]) {
    Fs.cpSync(Path.join(repoRoot, name), Path.join(dir, name), { recursive: true, filter: notCompiling })
  }
  const binDir = Path.join(dir, ".bin")
  Fs.mkdirSync(binDir)
  Fs.writeFileSync(Path.join(binDir, "rag-eval"), shimScript(port), { mode: 0o755 })
  return { dir, binDir }
}

interface Outcome {
  readonly code: number | null
  readonly output: string
}

const run = (script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Outcome> =>
  new Promise((resolve) => {
    const child = spawn("bash", ["-e", "-o", "pipefail", "-c", script], { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    const guard = setTimeout(() => child.kill("SIGKILL"), exampleTimeout - 5_000)
    child.on("close", (code) => {
      clearTimeout(guard)
      resolve({ code, output: stderr + stdout })
    })
  })

/**
 * `rag-eval serve --port 0` (or `rag-eval ui --listen 127.0.0.1:0`) in the page's directory;
 * resolves with its URL once it listens.
 */
const serve = (cwd: string, env: NodeJS.ProcessEnv, args: ReadonlyArray<string> = ["serve", "--port", "0"]) =>
  new Promise<{ url: string; stop: () => Promise<void> }>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    const closed = new Promise<void>((done) => child.on("close", () => done()))
    const stop = () => {
      child.kill("SIGTERM")
      return closed
    }
    const guard = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`serve did not start: ${stdout}`))
    }, exampleTimeout / 2)
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString()
      const url = /listening on (http:\/\/\S+)/.exec(stdout)
      if (url !== null) {
        clearTimeout(guard)
        resolve({ url: url[1]!, stop })
      }
    })
  })

const runExample = async (example: Example, dir: string, binDir: string) => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${binDir}:${process.env.PATH ?? ""}`,
    NO_COLOR: "1",
    OPENAI_API_KEY: "",
    MISTRAL_API_KEY: "",
    API_KEY: "",
    RAG_EVAL_TOKEN: ""
  }
  for (const file of example.files) Fs.writeFileSync(Path.join(dir, file.name), file.content)
  let script = asCli(example.script)
  const server = example.serve
    ? await serve(dir, env)
    : example.ui === true
    ? await serve(dir, env, ["ui", "--listen", "127.0.0.1:0"])
    : undefined
  try {
    if (server !== undefined) {
      script = script.split(example.ui === true ? "http://127.0.0.1:7433" : "http://127.0.0.1:8080").join(server.url)
    }
    const outcome = await run(script, dir, env)
    const actual = normalise(outcome.output, dir)
    const where = `${example.file}:${example.line}`
    expect(outcome.code, `${where} exited ${outcome.code}, expected ${example.exit}; it printed:\n${outcome.output}`)
      .toBe(example.exit)
    if (example.expected !== undefined) {
      const expected = normalise(example.expected)
      if (!matches(expected, actual)) {
        // DOCS_ACTUAL_DIR=dir keeps what a differing example printed (its temp directory as `…`), to
        // paste into the page after checking it is right.
        const keep = process.env.DOCS_ACTUAL_DIR
        if (keep !== undefined && keep !== "") {
          Fs.mkdirSync(keep, { recursive: true })
          const name = `${example.file.replace(/[/\\]/g, "_")}_${example.line}.txt`
          Fs.writeFileSync(Path.join(keep, name), outcome.output.replace(/\r\n/g, "\n").split(dir).join("…"))
        }
        // The diff vitest prints is between the normalised texts, which is what must agree.
        expect(actual, `${where}: the output differs from the page's`).toBe(expected)
      }
    }
  } finally {
    await server?.stop()
  }
}

describe("the examples' conventions", () => {
  it("finds the blocks, their output, exit code and skip reason", () => {
    const text = [
      "```sh",
      "rag-eval --version",
      "```",
      "",
      "```output",
      "0.1.0",
      "```",
      "```sh exit=2",
      "rag-eval run nope",
      "```",
      "```sh no-run (needs an API key)",
      "rag-eval run x --provider openai",
      "```",
      "```ts file=p.ts",
      "const x = 1",
      "```",
      "```sh",
      "rag-eval run ./p.ts",
      "```"
    ].join("\n")
    expect(examples("x.md", text)).toEqual([
      {
        file: "x.md",
        line: 1,
        script: "rag-eval --version",
        expected: "0.1.0",
        exit: 0,
        serve: false,
        skip: undefined,
        files: []
      },
      {
        file: "x.md",
        line: 8,
        script: "rag-eval run nope",
        expected: undefined,
        exit: 2,
        serve: false,
        skip: undefined,
        files: []
      },
      {
        file: "x.md",
        line: 11,
        script: "rag-eval run x --provider openai",
        expected: undefined,
        exit: 0,
        serve: false,
        skip: "needs an API key",
        files: []
      },
      {
        file: "x.md",
        line: 17,
        script: "rag-eval run ./p.ts",
        expected: undefined,
        exit: 0,
        serve: false,
        skip: undefined,
        files: [{ name: "p.ts", content: "const x = 1\n" }]
      }
    ])
  })

  it("lets only rates, durations, run ids and the temp directory differ", () => {
    const shown = normalise(
      "rag-answers: 72/72 100% · 1,636.4/s · ETA 0:00 · failed 0\nrun: out/rag-answers/ba1480b3c794"
    )
    expect(
      matches(
        shown,
        normalise("rag-answers: 72/72 100% · 605.0/s · ETA 0:01 · failed 0\nrun: out/rag-answers/0123456789ab")
      )
    ).toBe(true)
    expect(
      matches(
        shown,
        normalise("rag-answers: 71/72 99% · 605.0/s · ETA 0:01 · failed 1\nrun: out/rag-answers/0123456789ab")
      )
    ).toBe(false)
    expect(matches(normalise("wrote a\n…\nrun: x"), normalise("wrote a\nwrote b\nwrote c\nrun: x"))).toBe(true)
    expect(matches(normalise("wrote a\n…\nrun: x"), normalise("wrote a\nrun: y"))).toBe(false)
    expect(normalise("{\"runDir\":\"/tmp/d/out\"}", "/tmp/d")).toBe("{\"runDir\":\"…/out\"}")
  })

  it("counts consecutive progress lines of one label as the last of them (a slow machine prints more)", () => {
    const shown = normalise("note\nrag-answers: 72/72 100% · 1,636.4/s · ETA 0:00 · failed 0\nrun: x")
    const slow = "note\nrag-answers: 40/72 55% · 8.0/s · ETA 0:04 · failed 0\n" +
      "rag-answers: 72/72 100% · 9.0/s · ETA 0:00 · failed 0\nrun: x"
    expect(matches(shown, normalise(slow))).toBe(true)
    // Not a different last line, nor lines of another label, nor a progress line that is not shown.
    expect(
      matches(
        shown,
        normalise(slow.replace("72/72 100% · 9.0/s · ETA 0:00 · failed 0", "71/72 99% · 9.0/s · ETA 0:00 · failed 1"))
      )
    )
      .toBe(false)
    expect(normalise("a: 1/2 50% · 1.0/s · ETA 0:01 · failed 0\nb: 2/2 100% · 1.0/s · ETA 0:00 · failed 0").split("\n"))
      .toHaveLength(2)
    expect(matches(normalise("note\nrun: x"), normalise(slow))).toBe(false)
  })
})

const all = pages(repoRoot).flatMap((page) => examples(page, Fs.readFileSync(Path.join(repoRoot, page), "utf8")))

/**
 * One page after another, a page's examples in order in the page's own directory (an example may
 * read what an earlier one wrote). Run side by side, pages gained nothing on a loaded machine and
 * made each example's time include its wait for the one before it.
 */
describe("the docs' examples", () => {
  it("are found: the quick start among them", () => {
    expect(all.filter((e) => e.skip === undefined).length).toBeGreaterThanOrEqual(15)
    expect(
      all.some((e) =>
        e.file === "README.md" && e.skip === undefined && e.expected !== undefined && /run rag-answers/.test(e.script)
      )
    ).toBe(true)
  })

  for (const page of pages(repoRoot)) {
    const list = all.filter((e) => e.file === page)
    if (list.length === 0) continue
    describe.sequential(page, () => {
      let where: { dir: string; binDir: string } | undefined
      for (const example of list) {
        const title = `${page}:${example.line} ${
          example.script.split("\n").find((l) => l.trim() !== "" && !l.startsWith("#")) ?? ""
        }`
        if (example.skip !== undefined) {
          it.skip(`${title} — not run: ${example.skip}`, () => {})
          continue
        }
        it.skipIf(!built)(built ? title : `${title} — dist/bin.js is not built (npm run build)`, async () => {
          where ??= await pageDir()
          await runExample(example, where.dir, where.binDir)
        }, exampleTimeout)
      }
    })
  }
})
