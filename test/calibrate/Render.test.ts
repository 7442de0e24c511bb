import { Effect } from "effect"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { calibrate, type JudgeGrades } from "../../src/calibrate/Calibration.js"
import type { CriterionGrades, Graded } from "../../src/calibrate/Grades.js"
import { calibrationJson, calibrationMarkdown, markdownText, summaryLines } from "../../src/calibrate/Render.js"
import { CalibrationFile } from "../../src/domain/RunFiles.js"

const grades = (entries: ReadonlyArray<readonly [string, string, number | null]>): CriterionGrades => {
  const groups = new Map<string, Map<string, Graded>>()
  entries.forEach(([group, item, grade], i) => {
    if (!groups.has(group)) groups.set(group, new Map())
    groups.get(group)!.set(item, { grade, line: i + 1 })
  })
  return new Map([["relevance", groups]])
}

const judge = (g: CriterionGrades): JudgeGrades => ({
  source: { kind: "qrels", file: "j.qrels", negative: 0 },
  kind: "retrieval",
  grades: g,
  rubrics: new Map(),
  rubricNames: new Map()
})

const calibrated = (j: CriterionGrades, l: CriterionGrades) =>
  Effect.runPromise(
    calibrate(judge(j), { file: "h.qrels", format: "qrels", kind: "retrieval", grades: l, count: 0, negative: 0 }, {
      relevantAt: 2,
      seed: 1,
      resamples: 200
    })
  )

describe("markdown escaping of ids from users' files", () => {
  it("escapes table pipes, backticks, markup and HTML; keeps ordinary ids readable", () => {
    expect(markdownText("a|b")).toBe("a\\|b")
    expect(markdownText("`code`")).toBe("\\`code\\`")
    expect(markdownText("<script>alert(1)</script>")).toBe("&lt;script&gt;alert(1)&lt;/script&gt;")
    expect(markdownText("*bold* [link](x) back\\slash & co")).toBe("\\*bold\\* \\[link\\](x) back\\\\slash &amp; co")
    expect(markdownText("msmarco_passage_01_52")).toBe("msmarco_passage_01_52")
    expect(markdownText("_emph_")).toBe("\\_emph\\_")
    expect(markdownText("line\nbreak")).toBe("line break")
  })

  it("a hostile doc id cannot break the report's tables", async () => {
    const evil = "d|<img src=x>`"
    const md = calibrationMarkdown(
      await calibrated(grades([["q1", "a", 1], ["q1", evil, 2]]), grades([["q1", "a", 1]]))
    )
    expect(md).toContain("| q1 | d\\|&lt;img src=x&gt;\\` | 2 | 2 |")
    expect(md).not.toContain("<img")
  })
})

describe("bounded lists", () => {
  it("lists at most maxListed unpaired items and says how many there are; JSON has them all", async () => {
    const judged = grades(Array.from({ length: 30 }, (_, i) => ["q1", `d${i}`, i % 4] as const))
    const c = await calibrated(judged, grades([["q1", "d0", 0], ["q1", "d1", 1]]))
    const md = calibrationMarkdown(c, 5)
    expect(md).toContain("#### Judgments without a label (28)")
    expect(md).toContain("(first 5 of 28 listed; all of them are in `--format json`)")
    expect(md).toContain("| query | doc | grade | judge qrels line |")
    expect(md.match(/^\| q1 \| d\d+ \| \d \| \d+ \|$/gm)).toHaveLength(5)
    // Written through its schema, and read back through it (as the HTML page reads it).
    const json = Schema.decodeUnknownSync(CalibrationFile)(JSON.parse(calibrationJson(c)))
    expect(json.criteria[0]!.judgmentsWithoutLabel.items).toHaveLength(28)
    expect(json.criteria[0]!.pairs).toBe(2)
    expect(json.methods["cohenKappa"]).toContain("p_o")
  })

  it("an undefined statistic is a dash with its reason in markdown and null in JSON", async () => {
    const c = await calibrated(grades([["q1", "a", 1], ["q1", "b", 1]]), grades([["q1", "a", 1], ["q1", "b", 1]]))
    const md = calibrationMarkdown(c)
    expect(md).toMatch(/\| Cohen's κ \(1 grade\) \| — \(undefined: both sides gave every pair one and the same grade/)
    expect(summaryLines(c)[0]).toMatch(/^relevance: 2 pairs; κ = — \(undefined/)
    expect(JSON.parse(calibrationJson(c)).criteria[0].cohenKappa.value).toBeNull()
  })
})
