/**
 * `rag-eval trec`, in-process on tiny files in a temp dir. Hand-computed (level 1 unless said):
 *
 * q1: judged d1=2, d2=1, d3=0; run d1 .9, d3 .8, d2 .7 → grades [2, 0, 1], R = 2
 *     AP = (1/1 + 2/3)/2 = 5/6 · RR = 1 · P@5 = 2/5
 * q2: judged e1=1; run e9 .9 (unjudged), e1 .5 → grades [–, 1], R = 1
 *     AP = (1/2)/1 = 1/2 · RR = 1/2 · P@5 = 1/5
 * q3: judged only (missing from the run) · q9: run only (no qrels, ignored)
 * Means over q1, q2: map 2/3, recip_rank 3/4, P_5 3/10.
 * --complete (q3 scores 0): map 4/9, recip_rank 1/2, P_5 1/5.
 * Default metrics: ndcg@10 = (2.5/(2 + 1/log2 3) + 1/log2 3)/2, recall@10 = 1.
 * --relevance-level 2: q1 R = 1 → AP 1, RR 1, P@5 1/5; q2 has no relevant doc → 0; means 1/2, 1/2, 1/10.
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { vi } from "vitest"
import { trec, trecCommand } from "../../src/cli/Trec.js"
import { tempDir } from "../support/RunPipeline.js"

const qrelsText = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\nq2 0 e1 1\nq3 0 f1 1\n"
const runText = [
  "q1 Q0 d1 1 0.9 sys",
  "q1 Q0 d3 2 0.8 sys",
  "q1 Q0 d2 3 0.7 sys",
  "q2 Q0 e9 1 0.9 sys",
  "q2 Q0 e1 2 0.5 sys",
  "q9 Q0 z 1 1.0 sys",
  ""
].join("\n")

const setup = () => {
  const dir = tempDir("rag-eval-trec-")
  const write = (name: string, text: string) => {
    const path = Path.join(dir, name)
    fs.writeFileSync(path, text)
    return path
  }
  return { dir, write, qrels: write("qrels.txt", qrelsText), run: write("run.txt", runText) }
}

const row = (name: string, qid: string, value: string) => `${name.padEnd(22)}\t${qid}\t${value}`

describe("rag-eval trec", () => {
  it.effect("prints trec_eval lines with 4 decimals and trec_eval names; notes ignored and missing queries", () =>
    Effect.gen(function*() {
      const { qrels, run } = setup()
      const result = yield* trec({ qrels, run, metrics: "map,mrr,p@5" })
      expect(result.output.split("\n")).toEqual([
        row("runid", "all", "sys"),
        row("num_q", "all", "2"),
        row("map", "all", "0.6667"),
        row("recip_rank", "all", "0.7500"),
        row("P_5", "all", "0.3000")
      ])
      expect(result.notes).toEqual([
        "1 run query has no qrels and is ignored: q9",
        "1 qrels query is missing from the run: q3 (not averaged; --complete scores them 0)"
      ])
    }))

  it.effect("--per-query prints each query's lines first", () =>
    Effect.gen(function*() {
      const { qrels, run } = setup()
      const result = yield* trec({ qrels, run, metrics: "map,mrr", perQuery: true })
      expect(result.output.split("\n").slice(0, 4)).toEqual([
        row("map", "q1", "0.8333"),
        row("recip_rank", "q1", "1.0000"),
        row("map", "q2", "0.5000"),
        row("recip_rank", "q2", "0.5000")
      ])
    }))

  it.effect("--complete averages over every qrels query (q3 scores 0)", () =>
    Effect.gen(function*() {
      const { qrels, run } = setup()
      const result = yield* trec({ qrels, run, metrics: "map,mrr,p@5", complete: true })
      expect(result.output.split("\n").slice(1)).toEqual([
        row("num_q", "all", "3"),
        row("map", "all", "0.4444"),
        row("recip_rank", "all", "0.5000"),
        row("P_5", "all", "0.2000")
      ])
      expect(result.notes[1]).toContain("(scored 0, --complete)")
    }))

  it.effect("--relevance-level 2 changes what counts as relevant", () =>
    Effect.gen(function*() {
      const { qrels, run } = setup()
      const result = yield* trec({ qrels, run, metrics: "map,mrr,p@5", relevanceLevel: 2 })
      expect(result.evaluation.mean).toEqual({ map: 0.5, mrr: 0.5, "p@5": 0.1 })
    }))

  it.effect("--json: full precision, per-query values, metric names", () =>
    Effect.gen(function*() {
      const { qrels, run } = setup()
      const result = yield* trec({ qrels, run, metrics: "map,p@5", json: true })
      const json = JSON.parse(result.output)
      expect(json.queries).toBe(2)
      expect(json.mean.map).toBeCloseTo(2 / 3, 15)
      expect(json.perQuery.q1.map).toBeCloseTo(5 / 6, 15)
      expect(json.perQuery.q2["p@5"]).toBe(0.2)
      expect(json.metrics).toEqual([{ name: "map", trecName: "map" }, { name: "p@5", trecName: "P_5" }])
      expect(json.unjudgedQueries).toEqual(["q9"])
      expect(json.missingQueries).toEqual(["q3"])
    }))

  it.effect("default metrics: ndcg@10, map, mrr, p@5, p@10, recall@10", () =>
    Effect.gen(function*() {
      const { qrels, run } = setup()
      const result = yield* trec({ qrels, run })
      expect(result.evaluation.metrics.map((m) => m.name)).toEqual([
        "ndcg@10",
        "map",
        "mrr",
        "p@5",
        "p@10",
        "recall@10"
      ])
      // q1: DCG = 2/log2 2 + 0 + 1/log2 4 = 2.5, IDCG = 2 + 1/log2 3; q2: DCG = 1/log2 3, IDCG = 1.
      const ndcg = (2.5 / (2 + 1 / Math.log2(3)) + 1 / Math.log2(3)) / 2
      expect(result.evaluation.mean["ndcg@10"]).toBeCloseTo(ndcg, 15)
      expect(result.evaluation.mean["recall@10"]).toBe(1)
      expect(result.output).toContain(row("ndcg_cut_10", "all", ndcg.toFixed(4)))
      expect(result.output).toContain(row("recall_10", "all", "1.0000"))
    }))

  it.effect("a missing file is an InputError naming it", () =>
    Effect.gen(function*() {
      const { dir, run } = setup()
      const missing = Path.join(dir, "nope.qrels")
      const error = yield* Effect.flip(trec({ qrels: missing, run }))
      expect(error._tag).toBe("InputError")
      if (error._tag !== "InputError") return
      expect(error.file).toBe(missing)
      expect(error.message).toBe(`${missing}: file not found`)
      const isDir = yield* Effect.flip(trec({ qrels: dir, run }))
      expect(isDir.message).toContain("is a directory")
    }))

  it.effect("parse errors name the file and the line", () =>
    Effect.gen(function*() {
      const { write, qrels, run } = setup()
      const badRun = write("bad.run", "q1 Q0 d1 1 0.9 sys\n\nq1 Q0 d2 2 high sys\n")
      const error = yield* Effect.flip(trec({ qrels, run: badRun }))
      expect(error).toMatchObject({ _tag: "InputError", file: badRun, line: 3, field: "score" })
      const badQrels = write("bad.qrels", "q1 0 d1 1\nq1 0 d2\n")
      const qrelsError = yield* Effect.flip(trec({ qrels: badQrels, run }))
      expect(qrelsError).toMatchObject({ _tag: "InputError", file: badQrels, line: 2 })
      expect(qrelsError.message).toBe(`${badQrels}:2: expected 4 columns "qid iter docid grade", found 3`)
    }))

  it.effect("an unknown metric is a UsageError listing the valid forms", () =>
    Effect.gen(function*() {
      const { qrels, run } = setup()
      const error = yield* Effect.flip(trec({ qrels, run, metrics: "map,bleu" }))
      expect(error._tag).toBe("UsageError")
      expect(error.message).toContain("metric \"bleu\": unknown metric")
    }))

  it.effect("the Command parses its flags and prints with Console.log", () =>
    Effect.gen(function*() {
      const { qrels, run } = setup()
      const logged: Array<string> = []
      const log = vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
        logged.push(args.map(String).join(" "))
      })
      const errors = vi.spyOn(console, "error").mockImplementation(() => {})
      yield* Command.run(trecCommand, { name: "rag-eval", version: "0.0.0" })([
        "node",
        "rag-eval",
        "--qrels",
        qrels,
        "--run",
        run,
        "--metrics",
        "map",
        "--relevance-level",
        "2",
        "--complete",
        "--json"
      ]).pipe(
        Effect.provide(NodeContext.layer),
        Effect.ensuring(Effect.sync(() => {
          log.mockRestore()
          errors.mockRestore()
        }))
      )
      const json = JSON.parse(logged.join("\n"))
      expect(json).toMatchObject({ queries: 3, relevanceLevel: 2, complete: true })
      expect(json.mean.map).toBeCloseTo(1 / 3, 15)
    }))
})
