/**
 * What a resume keeps a local judge's records under (`recordsArgv`, `HeldRecords.ts`): the command
 * line without `--quiet` and `--concurrency`, in every form @effect/cli reads them, and nothing else.
 */
import { describe, expect, it } from "vitest"
import { recordsArgv } from "../../src/cli/RunFlags.js"

describe("recordsArgv", () => {
  it("drops --quiet / -q (with a boolean value after it) and --concurrency N in each form", () => {
    const base = ["run", "answer-correctness", "--input", "cases.jsonl"]
    for (
      const extra of [
        ["--quiet"],
        ["-q"],
        ["--quiet", "true"],
        ["--quiet=yes"],
        ["--concurrency", "8"],
        ["--concurrency=8"],
        ["-q", "--concurrency", "4"]
      ]
    ) {
      expect(recordsArgv([...base, ...extra])).toEqual(base)
      expect(recordsArgv([...base.slice(0, 2), ...extra, ...base.slice(2)])).toEqual(base)
    }
  })

  it("keeps every other flag and value, a positional after --quiet included", () => {
    expect(recordsArgv(["run", "--quiet", "rag-answers", "--csv", "1", "--details", "5"])).toEqual([
      "run",
      "rag-answers",
      "--csv",
      "1",
      "--details",
      "5"
    ])
    const other = ["run", "x", "--iterations", "2", "--format", "csv", "--seed", "3", "--max-failures", "0"]
    expect(recordsArgv(other)).toEqual(other)
  })
})
