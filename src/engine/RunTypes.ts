/** The runner's shared types (a leaf module: the runner's pieces import it, not each other). */
import type { Threshold } from "../domain/Gate.js"
import type { Cost, Price } from "../pricing/Prices.js"
import type { BatchApi } from "../providers/BatchApi.js"
import type { RunInfo } from "./Pipeline.js"

export interface RunOptions {
  readonly input: string
  /** Output root; the run writes to `<outRoot>/<pipeline>/<run-id>/`. */
  readonly outRoot: string
  readonly limit?: number | undefined
  readonly iterations: number
  readonly concurrency: number
  readonly maxFailures: number
  /** The command line, recorded in the manifest. */
  readonly command: string
  /**
   * The command line as far as a local judge's records go (`recordsArgv`: without the flags that
   * change none of them), which a resume keeps a killed run's records under (`HeldRecords.ts`).
   * Default: `command`.
   */
  readonly recordsCommand?: string | undefined
  readonly pipelineFile?: string | undefined
  readonly runId?: string | undefined
  readonly fresh: boolean
  readonly retryFailed: boolean
  /** Where rubric files are looked for, in order (default: the package's `prompts/`). */
  readonly promptDirs?: ReadonlyArray<string> | undefined
  /** Column/field renames from `--columns`; a role given as `role=` is unmapped (undefined). */
  readonly columns?: Readonly<Record<string, string | undefined>> | undefined

  /** Price of the judge's model (undefined: unknown, reported as such). */
  readonly price?: Price | undefined
  /** Extra facts for the manifest (tool versions…). */
  readonly manifestExtra?: Readonly<Record<string, unknown>> | undefined
  /** `--details N`: per-case details in report.md for at most N cases (default 100). */
  readonly details?: number | undefined
  /** `--batch`: judge through the provider's Batch API (see BatchJudging.ts). */
  readonly batch?: BatchOptions | undefined
  /** `--max-cost`: USD the run may spend, over every invocation (needs a price). */
  readonly maxCostUsd?: number | undefined
  /** Set by the run when a target answers the cases (`--target`): the input may lack the answer. */
  readonly generated?: boolean | undefined
  /** `--fail-under` / `--fail-over`: resolved against the pipeline's declared metrics before anything is judged. */
  readonly gates?: ReadonlyArray<Threshold> | undefined
  /** Cases between two snapshots of a local judge's fold (`HeldRecords.ts`; default `SNAPSHOT_EVERY`). */
  readonly snapshotEvery?: number | undefined
}

/** `--batch` settings. */
export interface BatchOptions {
  readonly api: BatchApi
  /** Where a malformed reply is asked again: in the next batch (default) or synchronously. */
  readonly repair: "sync" | "batch"
  /** `--detach`: return once batches are submitted; the same command later collects them. */
  readonly detach: boolean
  /** First poll interval (ms); doubles up to `maxPollMs`. */
  readonly pollMs: number
  readonly maxPollMs: number
  /** Requests and bytes a request file may hold (OpenAI: 50,000 and 200 MB). */
  readonly maxRequests: number
  readonly maxBytes: number
  /** Submissions of a call no batch answered before it is a transport failure. Default 3. */
  readonly maxSubmissions?: number | undefined
  /** Retries of a failed Batch API request (5xx, timeouts, 429s). Default 5. */
  readonly maxRetries?: number | undefined
}

export interface RunOutcome<S> {
  readonly info: RunInfo
  readonly summaries: ReadonlyArray<S>
  /** `reused`: from this run's journal; `cached`: from the cache of earlier runs (no API call). */
  readonly judgments: {
    readonly total: number
    readonly ok: number
    readonly failed: number
    readonly reused: number
    readonly cached: number
  }
  /** Tokens spent by this invocation (reused judgments cost nothing again). */
  readonly tokens: { readonly input: number; readonly output: number }
  /** Cost of the whole run, every iteration (including judgments reused from the journal). */
  readonly cost: Cost
  readonly files: ReadonlyArray<string>
}

/** What validation found in the input (or what a validated run's manifest says of the same bytes). */
export interface Validated {
  readonly rows: number
  readonly sha256: string
  readonly columns: ReadonlyArray<string>
  readonly cases: number
  readonly tasks: number
}

export interface Estimate {
  readonly calls: number
  /** `--target`: the calls to the live system the run would make (undefined without a target). */
  readonly targetCalls?: number | undefined
  /** Judgments those calls make (more than the calls when hits are judged listwise). */
  readonly judgments: number
  readonly alreadyDone: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cost: Cost
  readonly runDir: string
}
