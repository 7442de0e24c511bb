/**
 * `rag-eval judge-bench [--sets LIST] [--sample N] [--sample-seed N] [--data DIR] [--bench-dir DIR] [--dry-run]
 * [--format markdown|json] [--output FILE] [--out DIR] [--resamples N] [judge flags…]` (SPEC §7):
 * the configured judge on the public human-labelled sets, its agreement with people beside
 * published judges' (`src/judgebench/`).
 *
 * Each set's run is `rag-eval run <pipeline> --input <set> …` with the judge flags given here, run
 * through the CLI's `main` like `resume` replays a run (its journal, cache, resume, `--batch`, rate limits and
 * `--dry-run` are the run's own); its stdout — the run's JSON summary, or a dry run's estimate — is
 * captured, everything on stderr (progress, the judge line) shows as it comes.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Path from "node:path"
import { UsageError } from "../domain/Errors.js"
import { writeFileAtomic } from "../io/Files.js"
import { defaultBootstrapResamples } from "../stats/Bootstrap.js"
import { displayPath } from "./Display.js"
import {
  batchFlags,
  concurrency,
  fresh,
  noCache,
  priceIn,
  priceOut,
  prices,
  providerFlags,
  quiet,
  retryFailed
} from "./RunFlags.js"

const setsFlag = Options.text("sets").pipe(
  Options.withDescription(
    "The sets to measure, comma-separated: ragchecker (answer pairs, human preferences), expertqa (claims, expert support labels), relevance (graded passages; needs --data) (default all three)"
  ),
  Options.withDefault("ragchecker,expertqa,relevance")
)
const sample = Options.integer("sample").pipe(
  Options.withDescription(
    "Measure a seeded, stratified sample of N units per set (pairs, claims, graded passages) instead of the whole set: a cheap first estimate, with wider CIs"
  ),
  Options.optional
)
const sampleSeed = Options.integer("sample-seed").pipe(
  Options.withDescription(
    "Seed of --sample (default 42): the same N and seed choose the same units, so a rerun resumes"
  ),
  Options.withDefault(42)
)
const data = Options.text("data").pipe(
  Options.withDescription(
    "A directory holding llmjudge-test/ (search.jsonl, qrels.txt) for the relevance set, whose MS MARCO passages are not shipped (default ../shared/data beside the package, when there)"
  ),
  Options.optional
)
const benchDir = Options.text("bench-dir").pipe(
  Options.withDescription(
    "Sets laid out like the package's judge-bench/ (ragchecker/cases.jsonl and preferences.jsonl, expertqa/cases.jsonl and labels.jsonl): your own labelled sets, measured the same way (default the shipped ones)"
  ),
  Options.optional
)
const dryRun = Options.boolean("dry-run").pipe(
  Options.withDescription("Print each set's judge calls, estimated tokens and cost, without calling anything")
)
const format = Options.choice("format", ["markdown", "json"]).pipe(
  Options.withDescription("Report format (default markdown)"),
  Options.withDefault("markdown" as const)
)
const output = Options.text("output").pipe(
  Options.withDescription("Write the report to FILE (atomically) instead of printing it"),
  Options.optional
)
const out = Options.text("out").pipe(
  Options.withDescription(
    "Output root of the sets' runs, <out>/<pipeline>/<run-id>, and of sampled inputs, <out>/judge-bench/ (default out)"
  ),
  Options.withDefault("out")
)
const resamples = Options.integer("resamples").pipe(
  Options.withDescription(`Bootstrap resamples for the 95% CIs (default ${defaultBootstrapResamples})`),
  Options.withDefault(defaultBootstrapResamples)
)

/** The judge flags, passed on to each set's run as they were given. */
const judgeFlags = {
  ...providerFlags,
  concurrency,
  noCache,
  fresh,
  retryFailed,
  prices,
  priceIn,
  priceOut,
  batch: batchFlags.batch,
  batchRepair: batchFlags.batchRepair,
  batchPoll: batchFlags.batchPoll,
  maxCost: batchFlags.maxCost,
  quiet
}

type JudgeFlagValues = Command.Command.ParseConfig<typeof judgeFlags>

/** Each judge flag's name on the command line. */
const FLAG_NAMES: Readonly<Record<keyof typeof judgeFlags, string>> = {
  provider: "--provider",
  model: "--model",
  baseUrl: "--base-url",
  apiKey: "--api-key",
  rpm: "--rpm",
  tpm: "--tpm",
  burst: "--burst",
  adaptive: "--adaptive",
  maxWait: "--max-wait",
  noPreflight: "--no-preflight",
  timeout: "--timeout",
  maxRetries: "--max-retries",
  seed: "--seed",
  temperature: "--temperature",
  concurrency: "--concurrency",
  noCache: "--no-cache",
  fresh: "--fresh",
  retryFailed: "--retry-failed",
  prices: "--prices",
  priceIn: "--price-in",
  priceOut: "--price-out",
  batch: "--batch",
  batchRepair: "--batch-repair",
  batchPoll: "--batch-poll",
  maxCost: "--max-cost",
  quiet: "--quiet"
}

/** The judge flags as `run` arguments (a secret as its value: `run` masks it in what it records). */
export const judgeArgv = (flags: JudgeFlagValues): Array<string> =>
  (Object.keys(FLAG_NAMES) as Array<keyof typeof judgeFlags>).flatMap((key) => {
    const value: unknown = flags[key]
    const name = FLAG_NAMES[key]
    const one = (v: unknown): Array<string> =>
      typeof v === "boolean"
        ? (key === "adaptive" ? [name, String(v)] : v ? [name] : [])
        : Redacted.isRedacted(v)
        ? [name, Redacted.value(v) as string]
        : v === undefined
        ? []
        : [name, String(v)]
    return Option.isOption(value) ? (Option.isSome(value) ? one(value.value) : []) : one(value)
  })

/** A Console that keeps what is logged to stdout (the run's result) and passes stderr through. */
const capturing = (base: Console.Console, lines: Array<string>): Console.Console => {
  const keep = (...args: ReadonlyArray<unknown>) => {
    lines.push(args.map(String).join(" "))
  }
  return {
    ...base,
    log: (...args) => Effect.sync(() => keep(...args)),
    info: (...args) => Effect.sync(() => keep(...args)),
    unsafe: { ...base.unsafe, log: keep, info: keep }
  }
}

/**
 * The command, given the CLI to run each set through (`Cli.ts` hands in its `main`, so a set's run
 * parses its flags as the user's own would, and this module does not import the CLI back).
 */
export const judgeBenchCommand = <E, R>(
  main: (argv: ReadonlyArray<string>) => Effect.Effect<void, E, R>
) =>
  Command.make(
    "judge-bench",
    {
      sets: setsFlag,
      sample,
      sampleSeed,
      data,
      benchDir,
      dryRun,
      format,
      output,
      out,
      resamples,
      ...judgeFlags
    },
    (flags) =>
      Effect.gen(function*() {
        const { SET_NAMES } = yield* Effect.promise(() => import("../judgebench/Sets.js"))
        const names = flags.sets.split(",").map((s) => s.trim()).filter((s) => s !== "")
        const unknown = names.filter((n) => !(SET_NAMES as ReadonlyArray<string>).includes(n))
        if (names.length === 0 || unknown.length > 0) {
          return yield* new UsageError({
            problem: `--sets ${flags.sets}: ${
              unknown.length > 0 ? `unknown set ${unknown.join(", ")}` : "no set named"
            }; the sets are ${SET_NAMES.join(", ")}`
          })
        }
        if (Option.isSome(flags.sample) && flags.sample.value < 1) {
          return yield* new UsageError({ problem: `--sample must be at least 1 (got ${flags.sample.value})` })
        }
        if (!(flags.resamples >= 1 && flags.resamples <= 1_000_000)) {
          return yield* new UsageError({
            problem: `--resamples must be an integer from 1 to 1,000,000, got ${flags.resamples}`
          })
        }
        const { judgeBench } = yield* Effect.promise(() => import("../judgebench/JudgeBench.js"))
        const { judgeBenchJson, judgeBenchMarkdown } = yield* Effect.promise(() => import("../judgebench/Render.js"))
        const passOn = judgeArgv(flags)
        const runSet = (pipeline: string, input: string) =>
          Effect.gen(function*() {
            const argv = [
              "run",
              pipeline,
              "--input",
              input,
              "--out",
              flags.out,
              // A failed judgment leaves its case's figure out (counted in the report), it does not stop the bench.
              "--max-failures",
              String(Number.MAX_SAFE_INTEGER),
              ...passOn,
              ...(flags.dryRun ? ["--dry-run"] : ["--json"])
            ]
            const lines: Array<string> = []
            yield* Console.consoleWith((base) =>
              Effect.withConsole(main(["node", "rag-eval", ...argv]), capturing(base, lines))
            )
            if (flags.dryRun) return { estimate: lines.join("\n") }
            for (const line of [...lines].reverse()) {
              try {
                const parsed = JSON.parse(line) as { readonly runDir?: unknown }
                if (typeof parsed.runDir === "string") return { runDir: displayPath(parsed.runDir) }
              } catch {
                // not the summary line
              }
            }
            return yield* new UsageError({
              problem: `the ${pipeline} run printed no summary (rag-eval ${argv.join(" ")}): ${lines.join(" ")}`
            })
          })
        const result = yield* judgeBench({
          sets: names as ReadonlyArray<typeof SET_NAMES[number]>,
          sample: Option.getOrUndefined(flags.sample),
          sampleSeed: flags.sampleSeed,
          resamples: flags.resamples,
          workDir: Path.join(flags.out, "judge-bench"),
          data: Option.getOrUndefined(flags.data),
          shipped: Option.getOrUndefined(flags.benchDir),
          dryRun: flags.dryRun,
          judge: {
            provider: Option.getOrElse(flags.provider, () => "heuristic"),
            model: Option.getOrElse(flags.model, () => "(the provider's default)")
          },
          say: (line) => (flags.quiet ? Effect.void : Console.error(line))
        }, runSet)
        const report = flags.format === "json" ? judgeBenchJson(result) : judgeBenchMarkdown(result)
        if (Option.isSome(flags.output)) {
          yield* writeFileAtomic(flags.output.value, report)
          yield* Console.log(`wrote ${flags.output.value}`)
        } else {
          yield* Console.log(report.replace(/\n$/, ""))
        }
      })
  ).pipe(
    Command.withDescription(
      "Measure the configured judge (any provider, or the heuristic) against people on public human-labelled sets — RAGChecker's answer pairs, ExpertQA's claims, LLMJudge's graded passages — beside published judges' figures, with bootstrap CIs; each set is an ordinary run, journaled and resumable"
    )
  )
