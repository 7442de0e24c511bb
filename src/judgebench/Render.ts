/**
 * `judge-bench`'s report: per set, the judge's figures with their CIs beside the published ones
 * (each source numbered once, below), as markdown; or the result as JSON (`Result.ts`).
 */
import * as Schema from "effect/Schema"
import { markdownText } from "../calibrate/Render.js"
import { thousands } from "../domain/Numbers.js"
import { type Figure, JudgeBenchResult, type SetResult } from "./Result.js"

const f3 = (x: number | null) => (x === null ? "—" : x.toFixed(3))

const ciText = (f: Figure) => (f.ci === null ? "—" : `[${f3(f.ci.lower)}, ${f3(f.ci.upper)}]`)

const usd = (x: number | null) => (x === null ? "unpriced" : `$${x.toFixed(4)}`)

const setSection = (set: SetResult, cite: (source: string) => number): Array<string> => {
  const head = `## ${set.name}`
  if (set.status === "skipped") {
    return [head, "", markdownText(set.title, 400), "", `**Skipped**: ${markdownText(set.reason ?? "", 600)}.`, ""]
  }
  const used = `${thousands(set.items)} of ${thousands(set.of)} ${set.unit}`
  if (set.status === "estimated") {
    return [
      head,
      "",
      markdownText(set.title, 400),
      "",
      `${used}:`,
      "",
      "```",
      (set.estimate ?? "").trimEnd(),
      "```",
      ""
    ]
  }
  const run = set.run!
  const published = (f: Figure, same: boolean) =>
    f.published.filter((p) => p.same === same).map((p) => `${p.judge} ${f3(p.value)} [${cite(p.source)}]`).join(
      " · "
    ) ||
    "—"
  return [
    head,
    "",
    markdownText(set.title, 400),
    "",
    `${used} · run \`${markdownText(run.dir)}\` (${markdownText(run.pipeline)}): ${thousands(run.cases)} cases, ${
      thousands(run.judgments)
    } judgments, ${thousands(run.failed)} failed, cost ${usd(run.costUsd)}`,
    "",
    "| figure | this judge | 95% CI | n | published, same items | published, comparable sets |",
    "|---|---:|---|---:|---|---|",
    ...set.figures.map((f) =>
      `| ${f.name} | ${f.value === null ? `— (${markdownText(f.reason ?? "undefined")})` : f3(f.value)} | ${
        ciText(f)
      } | ${thousands(f.units)} | ${published(f, true)} | ${published(f, false)} |`
    ),
    "",
    ...set.figures.map((f) => `- *${f.name}*: ${f.description}.`),
    ...set.notes.map((n) => `- ${markdownText(n, 600)}.`),
    ""
  ]
}

/** The report as markdown. */
export const judgeBenchMarkdown = (result: JudgeBenchResult): string => {
  const sources: Array<string> = []
  const cite = (source: string) => {
    const i = sources.indexOf(source)
    if (i !== -1) return i + 1
    sources.push(source)
    return sources.length
  }
  const sections = result.sets.flatMap((s) => setSection(s, cite))
  const lines = [
    `# judge-bench: ${markdownText(result.judge.label)}`,
    "",
    ...(result.caveat === null ? [] : [`> **Not a result**: ${result.caveat}`, ""]),
    ...(result.dryRun
      ? ["Dry run: what each set's run would call and cost; nothing was called.", ""]
      : [
        `Agreement with people's labels; 95% CIs by percentile bootstrap over the units (${
          thousands(result.bootstrap.resamples)
        } resamples, seed ${result.bootstrap.seed}).${
          result.sample === null
            ? ""
            : ` A sample of ${
              thousands(result.sample)
            } per set (stratified, seed ${result.sampleSeed}): a cheap estimate, with CIs to match.`
        }`,
        ""
      ]),
    ...sections,
    ...(sources.length === 0 ? [] : ["Sources:", "", ...sources.map((s, i) => `${i + 1}. ${markdownText(s, 400)}`), ""])
  ]
  return lines.join("\n").replace(/\n+$/, "") + "\n"
}

export const judgeBenchJson = (result: JudgeBenchResult): string =>
  JSON.stringify(Schema.encodeSync(JudgeBenchResult)(result), null, 2) + "\n"
