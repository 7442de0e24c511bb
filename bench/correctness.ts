/**
 * Bench [12]: the answer-correctness pipeline on the heuristic judge, through the installed CLI
 * (`node dist/bin.js run answer-correctness …` under GNU time), on 1,000, 10,000 and 100,000
 * generated cases (seeded): cases per CPU-second (user + system time of the process: the machine is
 * shared, so its wall clock counts other jobs' turns; the load average is printed beside each run)
 * and peak RSS, which must stay flat as the input grows
 * (the runner streams cases and folds the summary online: the claims of a case live only while it
 * is judged). `npx tsx bench/correctness.ts` runs it alone; BENCH_CORRECTNESS_CASES sets the
 * largest size (default 100000).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { prng } from "./gen.js"
import { consolePrinter, isMain, type Printer, timedCli } from "./timed.js"

export const TARGETS = {
  /** Issue #35: cases per CPU-second (user + system), end to end (validation, extraction, checks, journal, records, reports). */
  casesPerCpuSecond: 2_000,
  /** Peak RSS may grow at most this much from 10,000 to the largest size. */
  flatShare: 0.1
}

const WORDS = (
  "river mountain city engine protein market signal theory planet archive harvest museum " +
  "algorithm vaccine treaty glacier satellite compiler orchestra reactor vineyard cathedral " +
  "battery language currency volcano telescope library railway harbour manuscript climate"
).split(" ")

/** One seeded case: a 3-sentence answer, a 2-sentence reference, 3 contexts, nuggets on every third case. */
const caseLine = (i: number, random: () => number): string => {
  const word = () => WORDS[Math.floor(random() * WORDS.length)]!
  const sentence = () =>
    `The ${word()} of the ${word()} was ${Math.floor(random() * 2000)} in ${
      1900 + Math.floor(random() * 120)
    } near the ${word()}.`
  const answer = [sentence(), sentence(), sentence()].join(" ")
  const reference = [sentence(), sentence()].join(" ")
  const contexts = [sentence() + " " + sentence(), sentence(), sentence() + " " + sentence()]
  return JSON.stringify({
    id: `c${i + 1}`,
    question: `What happened to the ${word()} near the ${word()}?`,
    answer,
    reference,
    contexts,
    ...(i % 3 === 0 ? { nuggets: [{ text: sentence(), importance: "vital" }, sentence()] } : {})
  })
}

export const writeCases = (file: string, n: number, seed = 7) => {
  const random = prng(seed)
  const fd = fs.openSync(file, "w")
  let buffer: Array<string> = []
  for (let i = 0; i < n; i++) {
    buffer.push(caseLine(i, random))
    if (buffer.length === 1000) {
      fs.writeSync(fd, buffer.join("\n") + "\n")
      buffer = []
    }
  }
  if (buffer.length > 0) fs.writeSync(fd, buffer.join("\n") + "\n")
  fs.closeSync(fd)
}

/** answer-correctness on `input` through the CLI: times, peak RSS, and the judgments it counted. */
const cliRun = (input: string, out: string) => {
  const load = os.loadavg()[0]!
  const r = timedCli(["run", "answer-correctness", "--input", input, "--out", out])
  const judged = /^([\d,]+) judgments:/m.exec(r.stderr)
  return { ...r, load, judgments: judged === null ? 0 : Number(judged[1]!.replace(/,/g, "")) }
}

const int = (n: number) => n.toLocaleString("en-US")

export const printCorrectnessFigures = (
  printer: Printer,
  largest = Number(process.env["BENCH_CORRECTNESS_CASES"] ?? 100_000)
) => {
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-correctness-"))
  try {
    const sizes = [1_000, 10_000, largest].filter((n, i, all) => all.indexOf(n) === i && n > 0)
    const runs = sizes.map((n) => {
      const input = Path.join(dir, `cases-${n}.jsonl`)
      writeCases(input, n)
      const r = cliRun(input, Path.join(dir, `out-${n}`))
      printer.line(
        `    ${int(n)} cases: ${r.seconds.toFixed(1)} s wall, ${r.userSeconds.toFixed(1)} s user + ${
          r.systemSeconds.toFixed(1)
        } s system CPU, ${int(r.judgments)} judgments, peak RSS ${
          r.peakMB.toFixed(0)
        } MB (exit ${r.status}; load average ${r.load.toFixed(1)})`
      )
      return { n, ...r }
    })
    const big = runs.at(-1)!
    const mid = runs.find((r) => r.n === 10_000) ?? runs[0]!
    const perCpuSecond = big.n / (big.userSeconds + big.systemSeconds)
    printer.figure(
      `answer-correctness, heuristic, ${int(big.n)} cases through the CLI`,
      `${int(Math.round(perCpuSecond))} cases per CPU-second (${
        int(Math.round(big.n / big.seconds))
      }/s by the wall clock, load average ${big.load.toFixed(1)})`,
      `≥ ${int(TARGETS.casesPerCpuSecond)} per CPU-second`,
      big.status === 0 && perCpuSecond >= TARGETS.casesPerCpuSecond
    )
    const growth = big.peakMB - mid.peakMB
    printer.figure(
      `answer-correctness peak RSS, ${int(mid.n)} → ${int(big.n)} cases`,
      `${mid.peakMB.toFixed(0)} → ${big.peakMB.toFixed(0)} MB (${growth >= 0 ? "+" : ""}${growth.toFixed(0)} MB)`,
      `flat: within ${TARGETS.flatShare * 100}%`,
      big.status === 0 && Math.abs(growth) <= TARGETS.flatShare * mid.peakMB
    )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (isMain(import.meta.url)) printCorrectnessFigures(consolePrinter)
