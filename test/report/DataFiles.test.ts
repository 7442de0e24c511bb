/**
 * Data files come from the whole run: `qrels.txt` holds every judged hit of every query, whatever
 * `--details` and the formats chosen, and the manifest names it. (It used to be written by the
 * markdown view from the cases it showed — 100 of 122 queries — and not at all without markdown.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { readManifest } from "../../src/domain/RunFiles.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { csv, markdown } from "../../src/report/Reporter.js"
import { loadPipelineModule, runWith, tempDir } from "../support/RunPipeline.js"

const QUERIES = 150
const HITS = 5

/** 150 queries of 5 hits; one hit id with a space (qrels ids cannot hold whitespace). */
const writeInput = (dir: string) => {
  const words = ["river", "city", "capital", "mountain", "history", "music", "ocean", "forest", "bridge", "market"]
  const lines = Array.from({ length: QUERIES }, (_, q) =>
    JSON.stringify({
      id: `q${q + 1}`,
      query: `${words[q % 10]} ${words[(q * 3) % 10]} facts`,
      hits: Array.from(
        { length: HITS },
        (_, h) => ({
          id: q === 7 && h === 2 ? "hit two" : `h${h + 1}`,
          text: `About the ${words[(q + h) % 10]} and the ${words[(q * 7 + h) % 10]}: ${q} ${h}.`
        })
      )
    }))
  const file = Path.join(dir, "queries.jsonl")
  fs.writeFileSync(file, lines.join("\n") + "\n")
  return file
}

interface JournalLine {
  readonly caseId: string
  readonly target: string
  readonly status: string
  readonly score: number | null
}

describe("data files from the whole run", () => {
  for (const reporters of [[markdown, csv], [csv]] as const) {
    it.effect(
      `search-relevance, ${QUERIES} queries, --details 10, --format ${
        reporters.map((r) => r.format).join(",")
      }: qrels.txt holds every judgment and the manifest names it`,
      () =>
        Effect.gen(function*() {
          const dir = tempDir("rag-eval-datafiles-")
          const input = writeInput(dir)
          const pipeline = yield* Effect.promise(() => loadPipelineModule("search-relevance"))
          const outcome = yield* runWith(pipeline, HeuristicJudge.layer, {
            input,
            outRoot: Path.join(dir, "out"),
            details: 10,
            reporters
          })
          const runDir = outcome.info.runDir
          const journal = fs.readFileSync(Path.join(runDir, "judgments.jsonl"), "utf8").trim().split("\n").map((l) =>
            JSON.parse(l) as JournalLine
          )
          expect(journal).toHaveLength(QUERIES * HITS)
          const expected = journal
            .filter((j) => j.status === "ok" && j.score !== null)
            .map((j) =>
              `${j.caseId.replace(/\s+/g, "_")} 0 ${j.target.slice("hit:".length).replace(/\s+/g, "_")} ${j.score}`
            )
          const qrels = fs.readFileSync(Path.join(runDir, "qrels.txt"), "utf8").trim().split("\n")
          expect(qrels).toHaveLength(QUERIES * HITS)
          expect([...qrels].sort()).toEqual([...expected].sort())
          expect(new Set(qrels.map((l) => l.split(" ")[0])).size).toBe(QUERIES)
          expect(qrels.filter((l) => /^q8 0 hit_two \d$/.test(l))).toHaveLength(1)
          const manifest = yield* readManifest(runDir)
          expect(manifest.files).toContain("qrels.txt")
          if (reporters.length === 2) {
            const md = fs.readFileSync(Path.join(runDir, "report.md"), "utf8")
            expect(md).toContain("**Details for 10 of 150 cases**")
            expect(md).toContain("`qrels.txt`")
          }
        }),
      60_000
    )
  }
})
