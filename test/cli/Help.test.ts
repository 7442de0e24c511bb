/**
 * `--help` that fits a terminal, and parse errors a user can act on — in-process through `main`
 * (the same path `bin.ts` takes, stdout and stderr captured), then a few through the built binary:
 * - every help page (the root, every command, `run <pipeline>` for each built-in, `pipelines`) has
 *   no line wider than the width it was asked for (80, 120), no padding, none of the library's
 *   filler sentences, and every option the command takes;
 * - `rag-eval pipelines` and `run <name> --help` show each built-in pipeline's input fields, marked
 *   required or optional, and its example lines;
 * - a bad flag or value: `error: ` first, the flag named, the nearest flag or value suggested, exit 2.
 */
import { describe, expect, it } from "vitest"
import { builtinInputs, builtins } from "../../src/builtin/index.js"
import { tree } from "../../src/cli/Cli.js"
import { terminalWidth } from "../../src/cli/Colour.js"
import { entriesOf } from "../../src/cli/Help.js"
import { cli } from "../support/ChildCli.js"
import { runCli } from "../support/InProcessCli.js"

/** `rag-eval …args` in-process at `width` columns. */
const run = runCli

/** Every help page a user can ask for. */
const pages: ReadonlyArray<ReadonlyArray<string>> = [
  ["--help"],
  [],
  ["pipelines"],
  ...tree.children.flatMap((c) => [[...c.path, "--help"], ...c.children.map((g) => [...g.path, "--help"])]),
  ...[...builtins.keys()].map((name) => ["run", name, "--help"])
]

const FILLER = [
  "A user-defined piece of text",
  "This setting is optional",
  "A true or false value",
  "An integer.",
  "A floating point number",
  "One of the following",
  "Defaults to:",
  "may be repeated"
]

describe("--help fits the terminal", () => {
  for (const width of [80, 120]) {
    it(`every page at ${width} columns: no line wider, no padding, no filler`, async () => {
      for (const args of pages) {
        const r = await run(args, width)
        expect(r.code, args.join(" ")).toBe(0)
        expect(r.stderr, args.join(" ")).toBe("")
        const lines = r.stdout.split("\n")
        expect(lines.length, args.join(" ")).toBeGreaterThan(3)
        for (const line of lines) {
          expect(line.length, `${args.join(" ")}: ${line}`).toBeLessThanOrEqual(width)
          expect(line, args.join(" ")).toBe(line.trimEnd())
          // Padding: a run of spaces after the line's text has started.
          expect(line.trimStart(), `${args.join(" ")}: ${line}`).not.toMatch(/\S {3,}/)
        }
        for (const filler of FILLER) expect(r.stdout, `${args.join(" ")}: ${filler}`).not.toContain(filler)
      }
    }, 120_000)
  }

  it("the root lists every command, nested ones too; the page is short (it was 227 rows at 120 columns)", async () => {
    const r = await run(["--help"], 120)
    for (const c of tree.children.flatMap((c) => [c, ...c.children])) {
      expect(r.stdout).toContain(`  ${c.path.join(" ")}`)
    }
    expect(r.stdout.split("\n").length).toBeLessThan(60)
  })

  it("a command's page lists each of its options with its description, and the built-in options are named once at the root", async () => {
    for (const c of tree.children.flatMap((c) => [c, ...c.children])) {
      const page = (await run([...c.path, "--help"])).stdout.replace(/\s+/g, " ")
      const entries = c.path[0] === "run" ? [] : entriesOf(c.descriptor, "OPTIONS")
      for (const e of entries) {
        expect(page, `${c.path.join(" ")}: ${e.term}`).toContain(e.term)
        expect(page, `${c.path.join(" ")}: ${e.term}`).toContain(e.text)
      }
      expect(page).not.toContain("--wizard")
    }
    expect((await run(["--help"])).stdout).toContain("--wizard")
  })

  it("run --help: the common flags with their descriptions and defaults; the pipeline options only named", async () => {
    const page = (await run(["run", "--help"])).stdout
    const flat = page.replace(/\s+/g, " ")
    expect(flat).toContain("--concurrency integer Most judge calls in flight at once (default 8)")
    expect(flat).toContain("--fail-under text")
    expect(page).not.toMatch(/^ {2}--top-k/m)
    expect(flat).toMatch(/Pipeline options \(.*\): --retriever, --top-k, .*--listwise/)
  })
})

describe("each pipeline's input", () => {
  it("run <name> --help: the input fields, required or optional, and the two example lines, then the pipeline's options and the common flags", async () => {
    for (const [name, input] of builtinInputs) {
      const r = await run(["run", name, "--help"])
      const own = r.stdout.slice(0, r.stdout.indexOf("Common flags of rag-eval run"))
      expect(own).toContain(`Pipeline ${name}`)
      for (const f of input.fields) expect(own).toContain(`${f.name} (${f.required ? "required" : "optional"})`)
      for (const line of input.example) expect(own).toContain(`  ${line}`)
      expect(r.stdout).toContain("Common flags of rag-eval run")
      expect(r.stdout).toContain("--concurrency")
    }
    const search = (await run(["run", "search-relevance", "--help"])).stdout
    const own = search.slice(0, search.indexOf("Common flags")).replace(/\s+/g, " ")
    expect(own).toContain("--listwise")
    expect(own).toContain("--fields TEXT")
    expect(own).toContain("environment: RAG_EVAL_TOP_K, RAG_TOP_K")
    expect(own).not.toContain("--fuzzy-threshold")
    const rag = (await run(["run", "rag-answers", "--help"])).stdout
    const ragOwn = rag.slice(0, rag.indexOf("Common flags"))
    expect(ragOwn).toContain("--rubrics TEXT")
    expect(ragOwn).toContain("--only-rubrics")
    expect(ragOwn).not.toContain("--top-k")
    const course = (await run(["run", "course-retrieval", "--help"])).stdout
    expect(course.slice(0, course.indexOf("Common flags"))).not.toContain("--rubrics")
    expect(rag).toContain("Conversation History (optional)")
  })

  it("rag-eval pipelines: all five, each with its input fields and example, its options named", async () => {
    const r = (await run(["pipelines"])).stdout
    for (const [name, input] of builtinInputs) {
      expect(r).toMatch(new RegExp(`^${name}$`, "m"))
      for (const f of input.fields) expect(r).toContain(`${f.name} (${f.required ? "required" : "optional"})`)
      for (const line of input.example) expect(r).toContain(line)
    }
    expect(r.replace(/\s+/g, " ")).toContain("Options: --retriever, --top-k, --score-threshold")
    expect([...builtinInputs.keys()]).toEqual([...builtins.keys()])
  })
})

describe("parse errors: error:, the flag, the nearest flag, exit 2", () => {
  const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
    [
      ["run", "rag-answers", "--csv", "x.csv", "--concurrency", "abc"],
      `error: --concurrency takes a whole number, not "abc"`
    ],
    [
      ["run", "rag-answers", "--csv", "x.csv", "--concurrency=abc"],
      `error: --concurrency takes a whole number, not "abc"`
    ],
    [["run", "rag-answers", "--csv", "x.csv", "--timeout", "soon"], `error: --timeout takes a number, not "soon"`],
    [
      ["run", "rag-answers", "--csv", "x.csv", "--concurency", "4"],
      "error: unknown flag --concurency for rag-eval run; did you mean --concurrency?"
    ],
    [
      ["run", "rag-answers", "--csv", "x.csv", "--provider", "opena"],
      `error: --provider takes one of heuristic, openai, mistral, ollama, openai-compatible, not "opena"; did you mean openai?`
    ],
    [["run", "rag-answers", "--csv", "x.csv", "--timeout"], "error: --timeout needs a number"],
    [["run", "rag-answers", "--csv", "x.csv", "--csv", "y.csv"], "error: --csv is given twice"],
    [
      ["run", "rag-answers", "--csv", "x.csv", "--verbose"],
      "error: unknown flag --verbose for rag-eval run (rag-eval run --help lists its flags)"
    ],
    [["run", "rag-answers", "--csv", "x.csv", "--rpm", "0"], "error: --rpm must be greater than 0 (got 0)"],
    [["compare", "a"], "error: rag-eval compare needs <runB>"],
    [["compare", "a", "b", "c"], `error: unexpected argument "c" for rag-eval compare`],
    [
      ["compare", "a", "b", "--alhpa", "0.1"],
      "error: unknown flag --alhpa for rag-eval compare; did you mean --alpha?"
    ],
    [["build-test-set", "--name", "x"], "error: rag-eval build-test-set needs --logs"],
    [["runn"], `error: unknown command "runn" for rag-eval; did you mean run?`],
    [["store", "migrat"], `error: unknown command "migrat" for rag-eval store; did you mean migrate?`],
    [["--versio"], "error: unknown flag --versio for rag-eval; did you mean --version?"],
    // A boolean flag's own value is not an argument too many; the real mistake is named.
    [["compare", "a", "b", "--seed", "x"], `error: --seed takes a whole number, not "x"`],
    [["run", "rag-answers", "--dry-run", "false", "--limit", "many"], `error: --limit takes a whole number, not "many"`]
  ]
  it("each mistake: one line starting with error:, naming the flag, exit 2, nothing on stdout", async () => {
    for (const [args, message] of cases) {
      const r = await run(args)
      expect(r.stderr, args.join(" ")).toContain(message)
      expect(r.stderr.startsWith("error: "), args.join(" ")).toBe(true)
      expect(r.stderr.trimEnd().split("\n"), args.join(" ")).toHaveLength(1)
      expect(r.stdout, args.join(" ")).toBe("")
      expect(r.code, args.join(" ")).toBe(2)
    }
  })
})

describe("the built binary", () => {
  it("lays help out at COLUMNS when stdout is not a terminal, 80 without it; a parse error exits 2", async () => {
    const wide = await cli(["run", "--help"], { env: { COLUMNS: "120" } })
    expect(wide.code).toBe(0)
    const widths = wide.stdout.split("\n").map((l) => l.length)
    expect(Math.max(...widths)).toBeLessThanOrEqual(120)
    expect(Math.max(...widths)).toBeGreaterThan(80)
    const narrow = await cli(["run", "--help"], { env: { COLUMNS: "" } })
    expect(Math.max(...narrow.stdout.split("\n").map((l) => l.length))).toBeLessThanOrEqual(80)
    const bad = await cli(["run", "rag-answers", "--concurency", "2"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("error: unknown flag --concurency for rag-eval run; did you mean --concurrency?")
  }, 120_000)

  it("terminalWidth: the terminal's columns, else COLUMNS, else 80", () => {
    expect(terminalWidth({}, { isTTY: true, columns: 132 })).toBe(132)
    expect(terminalWidth({ COLUMNS: "100" }, { isTTY: true, columns: 132 })).toBe(132)
    expect(terminalWidth({ COLUMNS: "100" }, { isTTY: false })).toBe(100)
    expect(terminalWidth({ COLUMNS: "wide" }, {})).toBe(80)
    expect(terminalWidth({}, {})).toBe(80)
  })
})
