/**
 * The layering of `src/`, as docs/architecture.md draws it: every import — static, `export … from`,
 * `import()` and type-only alike — goes down the floors below, never up or sideways into another
 * folder of the same floor, and no file reaches itself through its imports (no cycle at run time or
 * in types). The engine depends on ports (`Judge`, `Generator`, `Retriever`, `JudgmentJournal`, …):
 * their implementations sit above it and are provided as layers by the CLI.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as Path from "node:path"
import ts from "typescript"

/** Floors, lowest first. A folder may import its own files and any folder on a lower floor. */
const FLOORS: ReadonlyArray<ReadonlyArray<string>> = [
  ["domain", "stats"],
  ["io", "load", "metrics", "pricing", "providers"],
  // A run read back and two runs compared: it reads run files the way io/ reads them.
  ["compare"],
  // judges/Judge.ts is the port the engine judges through; the store holds the journal behind its Tag.
  ["judges", "store", "calibrate"],
  ["engine"],
  // Plug-ins of the engine: reports, retrievers, the live system under test, the cluster's runners.
  ["report", "retrieval", "target", "cluster", "judgebench"],
  ["kinds", "synthesize"],
  ["builtin", "server", "testset"],
  ["index", "ui"],
  ["cli"],
  ["bin"]
]

const SRC = Path.resolve("src")

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = Path.join(dir, e.name)
    return e.isDirectory() ? sourceFiles(path) : /\.tsx?$/.test(e.name) && !e.name.endsWith(".d.ts") ? [path] : []
  })

/**
 * Every module a file names — imports, re-exports, `import()` and `import("…").T` types — and whether
 * naming it loads it at run time (type-only imports and `import("…").T` are erased).
 */
const specifiersOf = (file: string): Array<{ readonly spec: string; readonly runtime: boolean }> => {
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const found: Array<{ readonly spec: string; readonly runtime: boolean }> = []
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ spec: node.moduleSpecifier.text, runtime: node.importClause?.isTypeOnly !== true })
    } else if (
      ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)
    ) found.push({ spec: node.moduleSpecifier.text, runtime: !node.isTypeOnly })
    else if (
      ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined && ts.isStringLiteral(node.arguments[0])
    ) found.push({ spec: node.arguments[0].text, runtime: true })
    else if (
      ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)
    ) found.push({ spec: node.argument.literal.text, runtime: false })
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** The source file a relative specifier of `file` names. */
const resolveFrom = (file: string, spec: string): string => {
  const target = Path.resolve(Path.dirname(file), spec).replace(/\.js$/, ".ts")
  return fs.existsSync(target) ? target : target.replace(/\.ts$/, ".tsx")
}

/** Every relative module a file names, at run time or in types. */
const importsOf = (file: string): Array<string> =>
  specifiersOf(file).filter((s) => s.spec.startsWith(".")).map((s) => resolveFrom(file, s.spec))

/** `engine` for src/engine/Runner.ts; `bin` for src/bin.ts. */
const folderOf = (file: string) => Path.relative(SRC, file).split(Path.sep)[0]!.replace(/\.tsx?$/, "")
const rel = (file: string) => Path.relative(Path.resolve("."), file)

const graph = new Map(sourceFiles(SRC).map((f) => [f, importsOf(f)]))
const floorOf = new Map(FLOORS.flatMap((folders, floor) => folders.map((f) => [f, floor] as const)))

/** Strongly connected components of more than one file (or a file importing itself): the cycles. */
const cycles = (): Array<Array<string>> => {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const connect = (v: string): void => {
    index.set(v, next)
    low.set(v, next)
    next++
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.map(rel).sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) connect(v)
  return found
}

/** What a file loads when it runs: the relative modules (resolved) and the bare packages. */
const runtimeImportsOf = (file: string): { readonly files: Array<string>; readonly packages: Array<string> } => {
  const runtime = specifiersOf(file).filter((s) => s.runtime).map((s) => s.spec)
  return {
    files: runtime.filter((s) => s.startsWith(".")).map((s) => resolveFrom(file, s)),
    packages: runtime.filter((s) => !s.startsWith("."))
  }
}

describe("architecture", () => {
  it("npm run bench runs outside vitest: nothing bench/ loads imports vitest (it throws when imported outside a test run)", () => {
    const BENCH = Path.resolve("bench")
    const seen = new Set<string>()
    const offending: Array<string> = []
    const walk = (file: string, via: ReadonlyArray<string>) => {
      if (seen.has(file) || !fs.existsSync(file)) return
      seen.add(file)
      const { files, packages } = runtimeImportsOf(file)
      if (packages.some((p) => p === "vitest" || p.startsWith("vitest/") || p.startsWith("@effect/vitest"))) {
        offending.push([...via, file].map(rel).join(" → "))
      }
      for (const f of files) walk(f, [...via, file])
    }
    for (const f of fs.readdirSync(BENCH).filter((n) => n.endsWith(".ts"))) walk(Path.join(BENCH, f), [])
    // The walk reaches the test helpers the benchmarks share (the fake server, in-process runs).
    expect(seen).toContain(Path.resolve("test", "support", "RunPipeline.ts"))
    expect(offending).toEqual([])
  })

  it("reads the whole of src/ (the check would pass vacuously on nothing)", () => {
    expect(graph.size).toBeGreaterThan(200)
    expect([...graph.values()].reduce((n, out) => n + out.length, 0)).toBeGreaterThan(1000)
    expect(graph.get(Path.join(SRC, "engine", "Runner.ts"))).toContain(Path.join(SRC, "engine", "Generator.ts"))
  })

  it("every folder of src/ has a floor", () => {
    const folders = [...new Set([...graph.keys()].map(folderOf))].sort()
    expect(folders.filter((f) => !floorOf.has(f))).toEqual([])
  })

  it("every import goes down a floor (or stays in its folder): no arrow runs back up", () => {
    const upward: Array<string> = []
    for (const [file, targets] of graph) {
      const from = folderOf(file)
      for (const target of targets) {
        const to = folderOf(target)
        if (to === from) continue
        if (!(floorOf.get(to)! < floorOf.get(from)!)) upward.push(`${rel(file)} → ${rel(target)}`)
      }
    }
    expect(upward).toEqual([])
  })

  it("the engine depends on the target's port only, never on its implementation", () => {
    const engineToTarget = [...graph].flatMap(([file, targets]) =>
      folderOf(file) === "engine"
        ? targets.filter((t) => folderOf(t) === "target").map((t) => `${rel(file)} → ${rel(t)}`)
        : []
    )
    expect(engineToTarget).toEqual([])
    // …and the implementation does plug into that port.
    expect(graph.get(Path.join(SRC, "target", "Generate.ts"))).toContain(Path.join(SRC, "engine", "Generator.ts"))
  })

  it("no import cycle, at run time or in types", () => {
    expect(cycles()).toEqual([])
  })
})
