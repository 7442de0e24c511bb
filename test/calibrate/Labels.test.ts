import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { gradeFileFormat, readQrelsFile } from "../../src/calibrate/Labels.js"
import { tempDir } from "../support/RunPipeline.js"

const write = (name: string, content: string) => {
  const path = Path.join(tempDir("calibrate-labels-"), name)
  fs.writeFileSync(path, content)
  return path
}

const read = (path: string) => Effect.runPromise(Effect.either(readQrelsFile(path)))

const errorOf = async (path: string) => {
  const result = await read(path)
  if (Either.isRight(result)) throw new Error("expected an InputError")
  expect(result.left._tag).toBe("InputError")
  return result.left.message
}

describe("qrels", () => {
  it("reads qid → docid → grade in line order, skipping blank lines and # comments; negative grades are left out and counted", async () => {
    const path = write("h.qrels", "# header\nq1 0 d2 3\n\nq1 0 d1 0\nq2 Q0 x -1\nq2 0 y 2\r\n")
    const result = await read(path)
    if (Either.isLeft(result)) throw result.left
    const file = result.right
    expect(file.format).toBe("qrels")
    expect(file.kind).toBe("retrieval")
    expect(file.count).toBe(3)
    expect(file.negative).toBe(1)
    const q1 = file.grades.get("relevance")!.get("q1")!
    expect([...q1.keys()]).toEqual(["d2", "d1"])
    expect(q1.get("d2")).toEqual({ grade: 3, line: 2 })
    expect(q1.get("d1")).toEqual({ grade: 0, line: 4 })
    expect([...file.grades.get("relevance")!.get("q2")!.entries()]).toEqual([["y", { grade: 2, line: 6 }]])
  })

  it("bad lines are InputErrors naming file and line", async () => {
    const cols = write("cols.txt", "q1 0 d1 1\nq1 0 d2\n")
    expect(await errorOf(cols)).toBe(`${cols}:2: expected 4 columns "qid iter docid grade", found 3`)
    const grade = write("grade.txt", "q1 0 d1 1\nq1 0 d2 1\nq1 0 d3 high\n")
    expect(await errorOf(grade)).toBe(`${grade}:3 (field "grade"): grade "high" is not an integer`)
    const fraction = write("fraction.txt", "q1 0 d1 1.5\n")
    expect(await errorOf(fraction)).toMatch(/:1 \(field "grade"\): grade "1\.5" is not an integer/)
    const dup = write("dup.txt", "q1 0 d1 1\nq2 0 d1 1\nq1 0 d1 2\n")
    expect(await errorOf(dup)).toBe(
      `${dup}:3 (field "docid"): duplicate judgment for query "q1", doc "d1" (first on line 1)`
    )
    // A negative grade is not a label, but repeating its pair is still a duplicate.
    const dupNegative = write("dupneg.txt", "q1 0 d1 -1\nq1 0 d1 2\n")
    expect(await errorOf(dupNegative)).toMatch(/:2 .*first on line 1/)
  })

  it("a missing file or a directory is an InputError naming it", async () => {
    const dir = tempDir()
    expect(await errorOf(Path.join(dir, "nope.qrels"))).toBe(`${Path.join(dir, "nope.qrels")}: file not found`)
    expect(await errorOf(dir)).toBe(`${dir}: is a directory, expected a file`)
  })

  it("the format is chosen by extension; anything but .csv/.json/.jsonl/.ndjson is qrels", () => {
    expect(["a.csv", "a.JSONL", "a.ndjson", "a.json", "a.qrels", "a.txt", "qrels"].map(gradeFileFormat)).toEqual([
      "csv",
      "jsonl",
      "jsonl",
      "json",
      "qrels",
      "qrels",
      "qrels"
    ])
  })
})
