/**
 * A digest of everything the heuristic claim model decides, to prove that a change to its internals
 * (tokenising, indexes, caches) leaves every decision as it was:
 *
 *   npx tsx bench/claims-digest.ts [data-dir] [dump-file]
 *
 * Every claim extracted and every check (verdict, support to full precision, evidence sentence) on
 * the generated cases of `bench/claims.ts`, and when the data is here on the RAGChecker cases (with
 * five ExpertQA passages each as contexts) and the ExpertQA claims against their passages. Prints
 * one SHA-256 per set; with a dump file, writes every line too, for a diff between two commits.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { checkClaims } from "../src/judges/claims/Check.js"
import { extractClaims } from "../src/judges/claims/Extract.js"
import {
  defaultDataDir,
  expertQaPresent,
  type FullCase,
  generatedCases,
  ragCheckerPresent,
  readExpertQa,
  readRagChecker,
  realCases
} from "./claims.js"

const dataDir = process.argv[2] ?? defaultDataDir
const dumpFile = process.argv[3]
const dump: Array<string> = []

const digestOf = (name: string, cases: ReadonlyArray<FullCase>): void => {
  const hash = createHash("sha256")
  const out = (line: string) => {
    hash.update(line + "\n")
    if (dumpFile !== undefined) dump.push(`${name}\t${line}`)
  }
  cases.forEach((c, i) => {
    const answerClaims = extractClaims(c.answer)
    const referenceClaims = extractClaims(c.reference)
    out(`${i} answer claims ${JSON.stringify(answerClaims)}`)
    out(`${i} reference claims ${JSON.stringify(referenceClaims)}`)
    const texts = { ...c }
    const checks = (label: string, claims: ReadonlyArray<string>, text: string) => {
      for (const k of checkClaims(claims, text, texts)) {
        out(`${i} ${label} ${k.verdict} ${k.support} ${JSON.stringify(k.evidence)}`)
      }
      // Without a case: every term weighs alike.
      for (const k of checkClaims(claims, text)) out(`${i} ${label} bare ${k.verdict} ${k.support}`)
    }
    if (c.reference !== "") {
      checks("a~r", answerClaims, c.reference)
      checks("r~a", referenceClaims, c.answer)
    }
    c.contexts.forEach((ctx, k) => {
      checks(`a~c${k}`, answerClaims, ctx)
      checks(`r~c${k}`, referenceClaims, ctx)
    })
  })
  console.log(`${name}: ${cases.length} cases, sha256 ${hash.digest("hex")}`)
}

digestOf("generated", generatedCases(2_000))
if (ragCheckerPresent(dataDir) && expertQaPresent(dataDir)) {
  const rag = readRagChecker(dataDir)
  const eqa = readExpertQa(dataDir)
  digestOf("ragchecker+5 passages", realCases(rag, eqa))
  digestOf(
    "expertqa",
    eqa.map((c) => ({ question: c.question, answer: c.answer, reference: "", contexts: c.contexts }))
  )
} else console.log(`RAGChecker / ExpertQA skipped: not in ${dataDir}`)
if (dumpFile !== undefined) fs.writeFileSync(dumpFile, dump.join("\n") + "\n")
