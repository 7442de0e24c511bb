/**
 * Builds the human-labelled sets `rag-eval judge-bench` ships (`judge-bench/`) from the development
 * halves in ../shared/data — the recipe, so the shipped files can be checked and rebuilt:
 *
 *   npx tsx bench/judge-bench-data.ts [data-dir] [out-dir]     (defaults ../shared/data, judge-bench)
 *
 * - `ragchecker/`: RAGChecker's meta-evaluation pairs (Apache-2.0), all 140 of the development half
 *   (five domains): `cases.jsonl` in answer-correctness's input (`id, question, answer, reference`,
 *   plus `domain`), and `preferences.jsonl` in calibrate's flat preference form — one row per pair,
 *   aspect and annotator: `id_a` (the pair's first answer), `id_b` (its second), `aspect`
 *   (correctness, completeness, overall), `preference` (−2 … 2 as the annotator gave it: −2 the first
 *   is much better) and `annotator`.
 * - `expertqa/`: ExpertQA's claims with an expert's support label (MIT), the 677 of the development
 *   split whose cited evidence has text (249 cite only a URL: no judge can check a claim against an
 *   address, so they measure nothing but a judge's prior): `cases.jsonl` in answer-correctness's
 *   input (`id, question, answer` = the claim, `contexts` = its cited passages), and `labels.jsonl`
 *   in calibrate's flat metric form: `faithfulness` 1 when the expert marked the support "Complete",
 *   0 for "Partial" or "Incomplete".
 *
 * Each folder gets the source's LICENSE. Lines are written in the source's order.
 */
import * as fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))
const dataDir = process.argv[2] ?? Path.resolve(here, "..", "..", "shared", "data")
const outDir = process.argv[3] ?? Path.resolve(here, "..", "judge-bench")

const readJsonl = (file: string): Array<Record<string, unknown>> =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l))
const writeJsonl = (file: string, rows: ReadonlyArray<unknown>) =>
  fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join("\n") + "\n")

/** A context with no passage text: its citation marker and URL only. */
const urlOnly = (context: string): boolean => context.replace(/^\s*\[\d+\]\s*\S+/, "").trim() === ""

// RAGChecker
{
  const src = Path.join(dataDir, "ragchecker-dev")
  const dst = Path.join(outDir, "ragchecker")
  fs.mkdirSync(dst, { recursive: true })
  const cases = readJsonl(Path.join(src, "cases.jsonl")).map((c) => ({
    id: c["id"],
    question: c["question"],
    answer: c["answer"],
    reference: c["reference"],
    domain: c["domain"]
  }))
  const preferences: Array<Record<string, unknown>> = []
  for (const pair of readJsonl(Path.join(src, "human-labels.jsonl"))) {
    const [a, b] = pair["cases"] as [string, string]
    const annotators = pair["annotators"] as Array<Record<string, number>>
    for (const aspect of ["correctness", "completeness", "overall"]) {
      annotators.forEach((ann, i) => {
        preferences.push({
          id_a: a,
          id_b: b,
          aspect,
          preference: ann[`${aspect}_label`],
          annotator: `annotator-${i + 1}`
        })
      })
    }
  }
  writeJsonl(Path.join(dst, "cases.jsonl"), cases)
  writeJsonl(Path.join(dst, "preferences.jsonl"), preferences)
  fs.copyFileSync(Path.join(src, "LICENSE"), Path.join(dst, "LICENSE"))
  console.log(`ragchecker: ${cases.length} cases, ${preferences.length} preference rows`)
}

// ExpertQA
{
  const src = Path.join(dataDir, "expertqa-dev")
  const dst = Path.join(outDir, "expertqa")
  fs.mkdirSync(dst, { recursive: true })
  const labels = JSON.parse(fs.readFileSync(Path.join(src, "labels.json"), "utf8")) as Record<string, number>
  const all = readJsonl(Path.join(src, "claims.jsonl"))
  const kept = all.filter((c) => !(c["contexts"] as Array<string>).every(urlOnly))
  writeJsonl(
    Path.join(dst, "cases.jsonl"),
    kept.map((c) => ({ id: c["id"], question: c["question"], answer: c["answer"], contexts: c["contexts"] }))
  )
  writeJsonl(
    Path.join(dst, "labels.jsonl"),
    kept.map((c) => ({ id: c["id"], metric: "faithfulness", value: labels[c["id"] as string], annotator: "expert" }))
  )
  fs.copyFileSync(Path.join(src, "LICENSE"), Path.join(dst, "LICENSE"))
  console.log(`expertqa: ${kept.length} of ${all.length} claims (the rest cite a URL only)`)
}
