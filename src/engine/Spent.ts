/**
 * What a run has spent before this invocation, for `--max-cost` (a cap on the run, not on one
 * invocation): every paid call its journal holds — each judgment's usage (its repairs included),
 * and the paid replies of a judgment a crash left awaiting repair — priced at the model's price
 * (the batch price for judgments made through a batch); and the batches it submitted that are still
 * open, at their estimate, as reserved (their replies will be paid, and settle their estimate then).
 * Judgments the journal took from the cache of earlier runs cost this run nothing.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import type { OutputError } from "../domain/Errors.js"
import { JournalLine, type Usage } from "../domain/Judgment.js"
import { readLines } from "../io/Files.js"
import { addUsageTo, noTokens, type Price, usdOf } from "../pricing/Prices.js"
import * as BatchLedger from "../store/BatchLedger.js"

export interface SpentBefore {
  readonly spentUsd: number
  /** The estimates of the batches it left open (see `BatchLedger.reservedEstimates`). */
  readonly reservedUsd: number
}

/** A journal line, decoded; none for a torn or damaged line (its call is made again, and paid then). */
const decodeLine = Schema.decodeUnknownOption(Schema.parseJson(JournalLine))

/** The usage paid for the calls a journal records (see the module comment). */
export const journalSpend = (path: string, price: Price): Effect.Effect<number, OutputError> =>
  Effect.suspend(() => {
    if (!fs.existsSync(path)) return Effect.succeed(0)
    const tokens = noTokens()
    /** A judgment's repairs are journaled with the usage so far; its judgment line carries the total. */
    const awaitingRepair = new Map<string, Usage>()
    return readLines(path).pipe(
      Stream.runForEach((raw) =>
        Effect.sync(() => {
          if (raw === "") return
          const decoded = decodeLine(raw)
          if (Option.isNone(decoded)) return
          const line = decoded.value
          if ("kind" in line) {
            awaitingRepair.set(line.key, line.usage)
            return
          }
          awaitingRepair.delete(line.key)
          if (line.fromCache !== true) addUsageTo(tokens, line.usage, line.via)
        })
      ),
      Effect.map(() => {
        for (const usage of awaitingRepair.values()) addUsageTo(tokens, usage, undefined)
        return usdOf(tokens, price)
      })
    )
  })

export const spentBefore = (
  journalPath: string,
  runDir: string,
  price: Price
): Effect.Effect<SpentBefore, OutputError> =>
  Effect.map(journalSpend(journalPath, price), (spentUsd) => ({
    spentUsd,
    reservedUsd: [...BatchLedger.reservedEstimates(BatchLedger.readUploads(runDir)).values()].reduce((a, b) => a + b, 0)
  }))
