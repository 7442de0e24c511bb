/**
 * What the help says each built-in pipeline reads is what its loader reads: the two example lines
 * and a file with only the required fields load through the pipeline's own load stage (the column
 * check, then every case); optional fields left out are absent, not refused. rag-answers without a
 * "Conversation History" column is the case a user met (refused before): it loads, and runs.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { builtinInputs, builtins } from "../../src/builtin/index.js"
import type { EvalCase } from "../../src/domain/Case.js"
import { instantiate, type LoadContext } from "../../src/engine/Pipeline.js"
import { scanInput } from "../../src/load/Rows.js"
import { cli } from "../support/ChildCli.js"
import { tempDir } from "../support/RunPipeline.js"

const dir = tempDir("rag-eval-inputs-")

/** The pipeline's load stage over `content`: the column check, then every case. */
const load = (pipeline: string, content: string, extension: string, columns?: Readonly<Record<string, string>>) => {
  const file = Path.join(dir, `${pipeline}-${Math.random().toString(36).slice(2)}${extension}`)
  fs.writeFileSync(file, content)
  const stage = instantiate(builtins.get(pipeline)!, {}).load
  const ctx: LoadContext = { file, ...(columns === undefined ? {} : { columns }) }
  return Effect.runPromise(
    Effect.gen(function*() {
      const scan = yield* scanInput(file)
      yield* stage.checkColumns(ctx, scan.columns)
      return Chunk.toReadonlyArray(yield* Stream.runCollect(stage.cases(ctx)))
    }).pipe(Effect.either, Effect.provide(NodeContext.layer))
  )
}

const cases = (r: Awaited<ReturnType<typeof load>>): ReadonlyArray<EvalCase> => {
  if (r._tag === "Left") throw new Error(`refused: ${r.left.message}`)
  return r.right
}

describe("each built-in pipeline's input, as the help shows it", () => {
  for (const [name, input] of builtinInputs) {
    it(`${name}: the example loads, two cases from JSONL or one from CSV's header and row; only the required fields load too`, async () => {
      const example = cases(await load(name, `${input.example.join("\n")}\n`, input.exampleExtension))
      expect(example).toHaveLength(input.exampleExtension === ".csv" ? 1 : 2)
      expect(cases(await load(name, input.minimal, input.exampleExtension))).toHaveLength(1)
      // Each example line fits an 80-column terminal at the help's indent of 2.
      for (const line of input.example) expect(line.length).toBeLessThanOrEqual(78)
      // Every required field is in the minimal file, and no optional one.
      for (const f of input.fields) expect(input.minimal.includes(`${f.name}`), f.name).toBe(f.required)
    })
  }

  it("a required field left out is refused, naming it", async () => {
    const r = await load("rag-answers", "Current User Question,Fragment Texts\nq,1. f\n", ".csv")
    expect(r._tag).toBe("Left")
    if (r._tag === "Left") expect(r.left.message).toContain(`missing column "Assistant Answer"`)
    const search = await load("search-relevance", `{"id":"q1","hits":[]}\n`, ".jsonl")
    expect(search._tag).toBe("Left")
  })
})

describe("rag-answers: Conversation History is optional", () => {
  it("without the column: every case has no history; with it empty: the same", async () => {
    const without = cases(
      await load(
        "rag-answers",
        "Current User Question,Fragment Texts,Assistant Answer\nq1,1. a fragment,an answer\nq2,1. b,c\n",
        ".csv"
      )
    )
    expect(without.map((c) => c.history)).toEqual([undefined, undefined])
    const empty = cases(
      await load(
        "rag-answers",
        "Current User Question,Conversation History,Fragment Texts,Assistant Answer\nq1,,1. a fragment,an answer\n",
        ".csv"
      )
    )
    expect(empty[0]!.history).toBeUndefined()
    const given = cases(
      await load(
        "rag-answers",
        "Current User Question,Conversation History,Fragment Texts,Assistant Answer\nq1,User: hi,1. a fragment,an answer\n",
        ".csv"
      )
    )
    expect(given[0]!.history).toBe("User: hi")
  })

  it("a history column named with --columns must exist (the user said it does)", async () => {
    const r = await load("rag-answers", "Current User Question,Fragment Texts,Assistant Answer\nq1,1. a,b\n", ".csv", {
      history: "Chat"
    })
    expect(r._tag).toBe("Left")
    if (r._tag === "Left") expect(r.left.message).toContain(`missing column "Chat"`)
  })

  it("the CLI runs a CSV without the column (heuristic judge), exit 0, every judgment ok", async () => {
    const file = Path.join(dir, "no-history.csv")
    fs.writeFileSync(
      file,
      "Current User Question,Fragment Texts,Assistant Answer\nHow do heat pumps work?,1. A heat pump moves heat from outside air.,It moves heat from the outside air inside.\n"
    )
    const r = await cli(["run", "rag-answers", "--csv", file, "--out", Path.join(dir, "out"), "--quiet", "--json"])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout).judgments).toMatchObject({ total: 6, ok: 6, failed: 0 })
  }, 120_000)
})
