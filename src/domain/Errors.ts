/**
 * Errors that cross module boundaries. Each maps to a CLI exit code in `Cli.ts`:
 * input/usage/output problems → 2, judgments failing beyond `--max-failures` → 1.
 */
import * as Schema from "effect/Schema"
import { thousands } from "./Numbers.js"

/** Bad input data: names the file, the line (1-based, when known) and the problem. */
export class InputError extends Schema.TaggedError<InputError>()("InputError", {
  file: Schema.String,
  line: Schema.optional(Schema.Number),
  field: Schema.optional(Schema.String),
  problem: Schema.String
}) {
  get message(): string {
    const where = this.line === undefined ? this.file : `${this.file}:${this.line}`
    const field = this.field === undefined ? "" : ` (field "${this.field}")`
    return `${where}${field}: ${this.problem}`
  }
}

/** Wrong flags, unknown pipeline, unknown provider, missing key… */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  problem: Schema.String
}) {
  get message(): string {
    return this.problem
  }
}

/** The output directory cannot be written. */
export class OutputError extends Schema.TaggedError<OutputError>()("OutputError", {
  path: Schema.String,
  problem: Schema.String,
  /** The disk (or a quota, or a file-size limit) is full: the message says so first. */
  diskFull: Schema.optional(Schema.Boolean),
  cause: Schema.optional(Schema.Defect)
}) {
  get message(): string {
    return this.diskFull === true
      ? `disk full while writing ${this.path}: ${this.problem}`
      : `${this.path}: ${this.problem}`
  }
}

/** More judgments failed than `--max-failures` allows (exit code 1). */
export class TooManyFailures extends Schema.TaggedError<TooManyFailures>()("TooManyFailures", {
  failed: Schema.Number,
  allowed: Schema.Number,
  runDir: Schema.String
}) {
  get message(): string {
    return `${this.failed} judgment(s) failed (allowed: ${this.allowed}); see ${this.runDir}`
  }
}

/**
 * The run was asked to stop (Ctrl+C, SIGTERM) while its input was being checked, before anything was
 * judged or written (a large input's validation pass takes a minute a million cases). Exit code 130.
 */
export class StoppedValidating extends Schema.TaggedError<StoppedValidating>()("StoppedValidating", {
  input: Schema.String
}) {
  get message(): string {
    return `stopped while checking ${this.input}: nothing was judged or written`
  }
}

/** The run was asked to stop (Ctrl+C); everything finished is in the journal. Exit code 130. */
export class Stopped extends Schema.TaggedError<Stopped>()("Stopped", {
  done: Schema.Number,
  total: Schema.Number,
  runDir: Schema.String,
  /** Where the judgments are: the journal file, or the store (`--store`, credentials masked). Default `<runDir>/judgments.jsonl`. */
  savedIn: Schema.optional(Schema.String)
}) {
  get message(): string {
    return `stopped: ${thousands(this.done)} of ${thousands(this.total)} judgments are saved in ${
      this.savedIn ?? `${this.runDir}/judgments.jsonl`
    }`
  }
}

/**
 * The judge's provider is misconfigured or unreachable (a rejected key, an unknown model or URL, an
 * unsupported request, connection refused): every judgment would fail the same way, so the run stops
 * before paying for more (exit code 2). `line` is the one-line explanation with the likely fix.
 */
export class FatalJudgeError extends Schema.TaggedError<FatalJudgeError>()("FatalJudgeError", {
  line: Schema.String,
  kind: Schema.String,
  status: Schema.optional(Schema.Number)
}) {
  get message(): string {
    return this.line
  }
}

/**
 * A CI gate not met: `--fail-under` thresholds (run, report) or `compare --fail-if-worse` (exit
 * code 1, one line per unmet condition; every file is written first).
 */
export class GateFailed extends Schema.TaggedError<GateFailed>()("GateFailed", {
  failures: Schema.Array(Schema.String)
}) {
  get message(): string {
    return this.failures.join("\n")
  }
}

/**
 * `--batch --detach`: the batches are submitted (or still running) and the run exits 0; the same
 * command later collects them. `message` says what is in flight and how to collect.
 */
export class BatchDetached extends Schema.TaggedError<BatchDetached>()("BatchDetached", {
  inFlight: Schema.Number,
  batches: Schema.Number,
  runDir: Schema.String
}) {
  get message(): string {
    return `submitted: ${
      thousands(this.inFlight)
    } judgment call(s) in ${this.batches} batch(es) are with the provider (results within 24 h); run the same command again to collect them (it waits if they are not finished), in ${this.runDir}`
  }
}

/** `--max-cost`: the next call would pass the budget; the run stopped like Ctrl+C (resumable). Exit code 1. */
export class BudgetReached extends Schema.TaggedError<BudgetReached>()("BudgetReached", {
  budgetUsd: Schema.Number,
  judgments: Schema.Number,
  spentUsd: Schema.Number,
  runDir: Schema.String,
  /** As `Stopped.savedIn`. */
  savedIn: Schema.optional(Schema.String)
}) {
  get message(): string {
    return `budget of $${this.budgetUsd} reached after ${thousands(this.judgments)} judgments ($${
      this.spentUsd.toFixed(4)
    } spent); everything finished is saved in ${
      this.savedIn ?? `${this.runDir}/judgments.jsonl`
    } — run the same command again (with a higher --max-cost) to resume`
  }
}
