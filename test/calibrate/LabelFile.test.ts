/**
 * `LabelFile.ts`: every form of a labels file becomes `Label`s before pairing; every problem is an
 * InputError naming the file, the line and the field.
 */
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { type LabelContext, labelSetOf, readLabelFile } from "../../src/calibrate/LabelFile.js"
import type { Label } from "../../src/domain/Label.js"
import { tempDir } from "../support/RunPipeline.js"

const write = (name: string, content: string) => {
  const path = Path.join(tempDir("calibrate-labelfile-"), name)
  fs.writeFileSync(path, content)
  return path
}

const formatOf = (path: string) => (path.endsWith(".csv") ? "csv" : path.endsWith(".json") ? "json" : "jsonl")

/** A run of two cases: c1 with a reference (claims "Paris is the capital." and "It has 2M people."), c2 without. */
const context: LabelContext = {
  runId: "run1",
  hasReference: (caseId) => (caseId === "c1" ? true : caseId === "c2" ? false : undefined),
  claimIndex: (caseId, side, text) =>
    caseId === "c1" && side === "answer"
      ? ["paris is the capital", "it has 2m people"].indexOf(text.toLowerCase().replace(/\.$/, "")) + 1 || undefined
      : undefined
}

const read = (path: string, ctx: LabelContext | undefined = context) =>
  Effect.runPromise(Effect.either(readLabelFile(path, formatOf(path), ctx)))

const ok = async (path: string, ctx?: LabelContext) => {
  const r = await read(path, ctx)
  if (Either.isLeft(r)) throw r.left
  return r.right
}

const errorOf = async (path: string, ctx?: LabelContext) => {
  const r = await read(path, ctx)
  if (Either.isRight(r)) throw new Error("expected an InputError")
  return r.left.message
}

describe("flat forms → Label", () => {
  it("rubric grades: id, criterion, grade (any column order and case; grades as text; caseId for id)", async () => {
    const set = await ok(write("g.csv", "Grade,ID,Criterion\n2,c1,groundedness\n0,c2,groundedness\n"))
    expect(set.forms.grade).toBe(2)
    expect(set.labels[1]).toMatchObject({
      line: 3,
      label: { caseId: "c2", target: { kind: "grade", criterion: "groundedness" }, label: { grade: 0 }, by: "" }
    })
    const json = await ok(write("g.jsonl", `{"caseId":7,"criterion":"faithfulness","grade":"4"}\n`), undefined)
    expect(json.labels[0]!.label).toMatchObject({ caseId: "7", label: { grade: 4 } })
  })

  it("claims: by number or by text; default side answer, against the reference (with one) or the contexts (without)", async () => {
    const set = await ok(write(
      "c.csv",
      [
        "id,claim,verdict,side,against,annotator",
        "c1,2,Entailed,,,ann",
        "c1,Paris is the capital.,neutral,,context 2,ann",
        "c2,1,contradicted,,,ann",
        "c1,1,entailed,reference,,ann",
        "c1,Rome is the capital,entailed,,,ann"
      ].join("\n")
    ))
    expect(set.labels.map((l) => l.label.target)).toEqual([
      { kind: "claim", side: "answer", index: 2, against: "reference" },
      { kind: "claim", side: "answer", index: 1, against: { context: 2 }, text: "Paris is the capital." },
      { kind: "claim", side: "answer", index: 1, against: "contexts" },
      { kind: "claim", side: "reference", index: 1, against: "answer" }
    ])
    expect(set.labels[0]!.label).toMatchObject({ runId: "run1", label: { verdict: "entailed" }, by: "ann" })
    // A text the judge never extracted makes no label: it is unpaired, with the reason.
    expect(set.unresolved).toEqual([{
      line: 6,
      caseId: "c1",
      target: "claim:answer:?:reference",
      by: "ann",
      reason: expect.stringContaining(`reads "Rome is the capital"`)
    }])
  })

  it("metrics and preferences; a preference in one run needs id_b, across runs id_b defaults to the same case", async () => {
    const set = await ok(write(
      "m.jsonl",
      [
        `{"id":"c1","metric":"F1","value":"0.5"}`,
        `{"id_a":"c1","id_b":"c2","preference":-2,"aspect":"correctness","by":"a"}`
      ].join("\n")
    ))
    expect(set.labels.map((l) => [l.label.target, l.label.label])).toEqual([
      [{ kind: "metric", metric: "F1" }, { value: 0.5 }],
      [{ kind: "preference", other: { runId: "run1", caseId: "c2" }, aspect: "correctness" }, { preference: -2 }]
    ])
    const other = await ok(write("p.csv", "id_a,preference\nc1,1\n"), { ...context, otherRunId: "run2" })
    expect(other.labels[0]!.label.target).toEqual({ kind: "preference", other: { runId: "run2" } })
    const noB = write("nob.csv", "id_a,preference\nc1,1\n")
    expect(await errorOf(noB)).toBe(
      `${noB}:2 (field "id_b"): missing id_b: without a second run (--runs DIR) a preference compares two cases of the run`
    )
  })
})

describe("the labels format (what the browser review writes)", () => {
  const label = (over: Partial<Label>): Label => ({
    caseId: "c1",
    target: { kind: "metric", metric: "f1" },
    label: { value: 1 },
    by: "ann",
    at: "2026-11-28T10:00:00Z",
    ...over
  })

  it("a later line by the same person about the same target replaces theirs; another person's stays", async () => {
    const lines = [
      label({ label: { value: 0.2 } }),
      label({ label: { value: 0.9 } }),
      label({ by: "bob", label: { value: 0.4 } })
    ]
    const set = await ok(write("labels.jsonl", lines.map((l) => JSON.stringify(l)).join("\n") + "\n"))
    expect(set.replaced).toBe(1)
    expect(set.labels.map((l) => [l.line, l.label.by, l.label.label])).toEqual([
      [2, "ann", { value: 0.9 }],
      [3, "bob", { value: 0.4 }]
    ])
    // The same rule in memory (the review's live panel).
    expect(labelSetOf(lines).labels.map((l) => l.line)).toEqual([2, 3])
  })

  it("a line that is not a label names the field", async () => {
    const bad = write(
      "bad.jsonl",
      JSON.stringify(label({})) + "\n" +
        `{"caseId":"c1","target":{"kind":"claim"},"label":{"verdict":"entailed"},"by":"a","at":"x"}\n`
    )
    expect(await errorOf(bad)).toMatch(new RegExp(`^${bad}:2 \\(field "target\\.[a-z]+"\\): not a label: `))
  })
})

describe("bad rows: InputError with file, line and field, exit 2 at the CLI", () => {
  it("says what is wrong", async () => {
    const cases: ReadonlyArray<readonly [string, string, string]> = [
      ["m.csv", "id,grade\nc1,2\n", `:2: missing criterion: rubric labels need id, criterion and grade`],
      [
        "n.csv",
        "id,criterion,grade\nc1,clarity,2\nc2,clarity,2.5\n",
        `:3 (field "grade"): grade "2.5" is not an integer`
      ],
      [
        "e.jsonl",
        `{"id":"","criterion":"clarity","grade":1}\n`,
        `:1 (field "id"): id is empty or not a string / number`
      ],
      [
        "d.csv",
        "id,criterion,grade\nc1,clarity,2\nc1,clarity,3\n",
        `:3 (field "id"): duplicate label for id "c1", criterion "clarity" (first on line 2)`
      ],
      [
        "v.csv",
        "id,claim,verdict\nc1,1,supported\n",
        `:2 (field "verdict"): verdict "supported" is not one of contradicted, neutral, entailed`
      ],
      [
        "a.csv",
        "id,claim,verdict,against\nc1,1,entailed,passages\n",
        `:2 (field "against"): against "passages" is not reference, answer, contexts or "context N"`
      ],
      [
        "z.csv",
        "id,claim,verdict\nc1,0,entailed\n",
        `:2 (field "claim"): claim 0 is not a claim number (they start at 1)`
      ],
      [
        "p.csv",
        "id_a,id_b,preference\nc1,c2,3\n",
        `:2 (field "preference"): preference "3" is not one of -2, -1, 0, 1, 2`
      ],
      ["x.csv", "id,metric,value\nc1,f1,high\n", `:2 (field "value"): value "high" is not a number`],
      ["f.csv", "question,answer\nq,a\n", `:2: not a label: fields question, answer; expected`],
      ["b.jsonl", `{"id":"a","criterion":"c","grade":1}\n{"id":\n`, `:2`]
    ]
    for (const [name, content, expected] of cases) {
      const path = write(name, content)
      expect(await errorOf(path)).toContain(`${path}${expected}`)
    }
  })

  it("claim, metric and preference rows need a run; a missing file names itself", async () => {
    for (
      const [name, content] of [["m.csv", "id,metric,value\nc1,f1,1\n"], ["c.csv", "id,claim,verdict\nc1,1,neutral\n"]]
    ) {
      const path = write(name!, content!)
      const r = await Effect.runPromise(Effect.either(readLabelFile(path, "csv", undefined)))
      expect(Either.isLeft(r) && r.left.message).toMatch(/:2 \(field "[a-z]+"\): .*give the run directory/)
    }
    const dir = tempDir()
    expect(await errorOf(Path.join(dir, "nope.csv"))).toBe(`${Path.join(dir, "nope.csv")}: file not found`)
  })
})
