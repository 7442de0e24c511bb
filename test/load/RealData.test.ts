/** The real export from SPEC §2.1, read where it lives (never copied into the project). */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { checkColumns, ragAnswersColumns, toCase } from "../../src/load/CaseMapping.js"
import { scanInput } from "../../src/load/Rows.js"
import { allRows } from "./files.js"

const file = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../shared/data/rag_evaluation_07_2025.csv"
)
const present = fs.existsSync(file)

describe("rag_evaluation_07_2025.csv", () => {
  it.effect.skipIf(!present)(
    "has 25 rows in the 4 rag-answers columns, and row 1 splits into 3 passages",
    () =>
      Effect.gen(function*() {
        const summary = yield* scanInput(file)
        expect(summary.rows).toBe(25)
        expect(summary.columns).toEqual([
          "Current User Question",
          "Conversation History",
          "Fragment Texts",
          "Assistant Answer"
        ])
        yield* checkColumns(file, summary.columns, ragAnswersColumns)
        const rows = yield* allRows(file)
        expect(rows.length).toBe(25)
        const cases = yield* Effect.forEach(rows, (row, ordinal) => toCase(row, ordinal, ragAnswersColumns, file))
        const first = cases[0]!
        expect(first.id).toBe("1")
        expect(first.line).toBe(2)
        expect(first.question).toBe("What are the benefits of using renewable energy?")
        expect(first.history).toBe(
          "User: Why should we move away from fossil fuels?\nAssistant: Fossil fuels are finite and cause pollution."
        )
        expect(first.passages.map((p) => p.text)).toEqual([
          "Renewable energy sources, such as solar and wind, reduce greenhouse gas emissions.",
          "Using renewables leads to improved public health and lower energy costs in the long run.",
          "Renewable energy can create more jobs than fossil fuels."
        ])
        expect(first.passages.map((p) => p.rank)).toEqual([1, 2, 3])
        for (const c of cases) {
          expect(c.passages.length).toBeGreaterThan(0)
          for (const p of c.passages) expect(p.text).not.toMatch(/^\d+[.)]\s/)
        }
        expect(cases[1]!.passages[2]!.text).toContain("6CO₂ + 6H₂O")
      })
  )
})
