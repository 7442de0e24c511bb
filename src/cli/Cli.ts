/**
 * The command line: `rag-eval run <pipeline> …`. Flags are parsed here and turned into Layers
 * (judge/provider, retriever, journal, reporters, progress) in one place; the runner never sees flags.
 */
import * as Args from "@effect/cli/Args"
import * as BuiltInOptions from "@effect/cli/BuiltInOptions"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as CommandDescriptor from "@effect/cli/CommandDescriptor"
import * as CommandDirective from "@effect/cli/CommandDirective"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import type * as NodeContext from "@effect/platform-node/NodeContext"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { loadStoreModule } from "../cluster/Peers.js"
import { UsageError } from "../domain/Errors.js"
import { VERSION } from "../domain/Version.js"
import type { Shutdown } from "../engine/Shutdown.js"
import { defaultFormats, formatsHelp } from "../report/Formats.js"
import { calibrateCommand } from "./Calibrate.js"
import { clusterCommands } from "./ClusterCommands.js"
import { wizardWithoutTerminal } from "./Colour.js"
import { compareCommand } from "./Compare.js"
import { displayPath } from "./Display.js"
import { commandAt, commandHelp, type CommandNode, commandTree, HelpWidth, rootHelp, usageParts } from "./Help.js"
import { judgeBenchCommand } from "./JudgeBench.js"
import { parseErrorMessage } from "./ParseErrors.js"
import { RecordedArgv } from "./Resume.js"
import { csvRaw, details, failOver, failUnder, json, runConfig, store } from "./RunFlags.js"
import { serveCommand, serveConfig } from "./ServeCommand.js"
import { synthesizeCommand } from "./SynthesizeCommand.js"
import { trecCommand } from "./Trec.js"
import { uiCommand } from "./UiCommand.js"

const runCommand = Command.make("run", runConfig, (flags) =>
  // Loaded on use: parsing flags and --help need none of the runner, providers or SDK.
  Effect.flatMap(Effect.promise(() => import("./RunAction.js")), (m) => m.runAction(flags))).pipe(
    Command.withDescription("Run a pipeline over a test set and write its reports")
  )

const reportCommand = Command.make(
  "report",
  {
    runDir: Args.text({ name: "run-dir" }).pipe(Args.withDescription("A run directory, out/<pipeline>/<run-id>")),
    format: Options.text("format").pipe(
      Options.withDescription(formatsHelp),
      Options.withDefault(defaultFormats.join(","))
    ),
    csvRaw,
    // Reports and CI gates.
    failUnder,
    failOver,
    details,
    json,
    partial: Options.boolean("partial").pipe(
      Options.withDescription(
        "Render a stopped run: what the journal holds (cases with every judgment), marked as partial on every page"
      )
    ),
    store
  },
  ({ runDir, format, csvRaw, failUnder, failOver, details, json, partial, store }) =>
    Effect.gen(function*() {
      const { parseFormats } = yield* Effect.promise(() => import("../report/Reporter.js"))
      const { reportRun } = yield* Effect.promise(() => import("./ReportCommand.js"))
      const { parseAllGates } = yield* Effect.promise(() => import("../domain/Gate.js"))
      const { finishRun } = yield* Effect.promise(() => import("./RunResult.js"))
      const reporters = yield* parseFormats(format, { csvRaw })
      const thresholds = yield* parseAllGates(Option.getOrUndefined(failUnder), Option.getOrUndefined(failOver))
      // --store: the run's journal is in PostgreSQL
      const journal = Option.isNone(store)
        ? undefined
        : yield* Effect.map(
          loadStoreModule("--store", () => import("../cluster/RunSetup.js")),
          (m) => m.journalLayer(store.value)
        )
      const outcome = yield* reportRun(runDir, reporters, {
        partial,
        details,
        gates: thresholds,
        journal: journal === undefined ? undefined : yield* journal
      })
      yield* finishRun(outcome, { json, thresholds, maxFailures: undefined, partial })
    })
).pipe(Command.withDescription("Re-render a run's reports from its journal, without calling any judge"))

const buildTestSetCommand = Command.make(
  "build-test-set",
  {
    logs: Options.text("logs").pipe(
      Options.withDescription("Query-log JSONL: one { queryLogId, question, answer, context, timestamp… } per line")
    ),
    name: Options.text("name").pipe(Options.withDescription("Test-set name (letters, digits, . _ -)")),
    version: Options.text("version").pipe(Options.withDescription("Test-set version, e.g. 1")),
    description: Options.text("description").pipe(
      Options.withDescription("What the test set is for"),
      Options.optional
    ),
    output: Options.text("output").pipe(
      Options.withDescription("Output file (default test-sets/answer-synthesis/<name>-v<version>.json)"),
      Options.optional
    ),
    overwrite: Options.boolean("overwrite").pipe(Options.withDescription("Replace an existing output file"))
  },
  (flags) =>
    Effect.gen(function*() {
      const TestSet = yield* Effect.promise(() => import("../testset/BuildTestSet.js"))
      const result = yield* TestSet.buildTestSet({
        logs: flags.logs,
        name: flags.name,
        version: flags.version,
        description: Option.getOrUndefined(flags.description),
        out: Option.getOrUndefined(flags.output),
        overwrite: flags.overwrite
      })
      yield* Console.error(
        `${result.read} log lines read, ${result.duplicates} duplicate queryLogId(s) dropped, ${result.testSet.cases.length} cases`
      )
      yield* Console.log(`wrote ${displayPath(result.written)}`)
    })
).pipe(
  Command.withDescription(
    "Build a versioned answer-synthesis test set from a query-log JSONL, de-duplicated by a hash of queryLogId"
  )
)

const pipelinesCommand = Command.make(
  "pipelines",
  {},
  () => Effect.flatMap(Effect.promise(() => import("./PipelineHelp.js")), (m) => m.listPipelines)
).pipe(
  Command.withDescription(
    "List the built-in pipelines (run them by name: rag-eval run rag-answers --csv data.csv), with the input each reads and its options"
  )
)

const resumeCommand = Command.make(
  "resume",
  {
    runDir: Args.text({ name: "run-dir" }).pipe(Args.withDescription("A run directory, out/<pipeline>/<run-id>")),
    extra: Args.text({ name: "flag" }).pipe(
      Args.withDescription(
        "Flags for this resume only, added to the run's own or replacing them, e.g. --retry-failed or --concurrency 2"
      ),
      Args.repeated
    )
  },
  ({ runDir, extra }) =>
    Effect.gen(function*() {
      const { resumeArgv } = yield* Effect.promise(() => import("./Resume.js"))
      const replay = yield* resumeArgv(runDir, extra)
      yield* Console.error(`resuming: rag-eval ${replay.argv.join(" ")}`)
      // The run records its original arguments again, not `resume <dir>`: any number of resumes replay the same run.
      return yield* main(["node", "rag-eval", ...replay.argv], { record: replay.recorded })
    })
).pipe(
  Command.withDescription(
    "Run a run again from its manifest (same pipeline, input, judge and options; secrets from the environment): a stopped or crashed run continues where it was"
  )
)

const subcommands = [
  runCommand,
  resumeCommand,
  reportCommand,
  pipelinesCommand,
  buildTestSetCommand,
  synthesizeCommand,
  trecCommand,
  compareCommand,
  calibrateCommand,
  judgeBenchCommand((argv) => main(argv)),
  serveCommand,
  uiCommand,
  ...clusterCommands
] as const

export const root = Command.make("rag-eval").pipe(
  Command.withDescription("Evaluate RAG answers and retrieval with LLM judges or the offline heuristic judge"),
  Command.withSubcommands(subcommands)
)

export const cli = Command.run(root, { name: "rag-eval", version: VERSION })

/** Every command, for help and for parse errors (see `Help.ts`). */
export const tree: CommandNode = commandTree(root, subcommands)

/** How the process ends: the code `bin.ts` exits with, after the message is printed. */
export class ExitCode extends Data.TaggedError("ExitCode")<{ readonly code: number }> {}

const fail = (code: number, message: string) =>
  Console.error(message).pipe(Effect.zipRight(Effect.fail(new ExitCode({ code }))))

/**
 * A bad input or usage (exit 2) under `--json`: the same message on stderr, and one JSON object on
 * stdout, so a script that reads stdout gets an answer either way.
 */
const failJson = (
  json: boolean,
  kind: string,
  message: string,
  where: {
    readonly file?: string | undefined
    readonly line?: number | undefined
    readonly field?: string | undefined
  } = {}
) =>
  (json ? Console.log(JSON.stringify({ error: { exitCode: 2, kind, message, ...where } })) : Effect.void).pipe(
    Effect.zipRight(fail(2, `error: ${message}`))
  )

/**
 * Run the CLI and map every failure to a message and an exit code:
 * 0 ok · 1 judgments failed beyond --max-failures, calibrate below --min-kappa (or an internal error) ·
 * 2 bad input or usage, or a misconfigured judge provider (rejected key, unknown model or URL, unreachable server).
 */
export const main = (
  argv: ReadonlyArray<string>,
  context: {
    /** The arguments the run records (`resume`: the original run's); default `argv` after `rag-eval`. */
    readonly record?: ReadonlyArray<string>
    /** Columns help is laid out at (`bin.ts`: the terminal's); default the caller's, else 80. */
    readonly width?: number
  } = {}
): Effect.Effect<void, ExitCode, NodeContext.NodeContext | Shutdown> => {
  // `run … --json` / `report … --json`: errors are JSON on stdout too.
  const json = argv.includes("--json")
  return Effect.suspend(() =>
    // --wizard reads answers from stdin: refuse at once instead of waiting on a pipe forever.
    wizardWithoutTerminal(argv, process.stdin.isTTY)
      ? Effect.fail(
        new UsageError({
          problem: "--wizard needs a terminal (stdin is not a TTY); give the command's flags instead (see --help)"
        })
      )
      : prepareArgv(argv)
  ).pipe(
    Effect.flatMap((prepared) => prepared === undefined ? Effect.void : parseThenRun(prepared)),
    Effect.catchIf(ValidationError.isValidationError, () => Effect.fail(new ExitCode({ code: 2 }))),
    Effect.catchTags({
      InputError: (e) => failJson(json, "input", e.message, { file: e.file, line: e.line, field: e.field }),
      UsageError: (e) => failJson(json, "usage", e.message),
      OutputError: (e) => failJson(json, "output", e.message, { file: e.path }),
      TooManyFailures: (e) => fail(1, `error: ${e.message}`),
      FatalJudgeError: (e) => failJson(json, "judge", e.line),
      KappaBelowMinimum: (e) => fail(1, e.failures.map((line) => `error: ${line}`).join("\n")),
      GateFailed: (e) => fail(1, e.failures.map((line) => `error: ${line}`).join("\n")),
      // `rag-eval runner --listen host:port`: the address is taken or cannot be bound.
      SocketServerError: (e) =>
        fail(2, `error: cannot listen (${e.reason}): ${e.cause instanceof Error ? e.cause.message : String(e.cause)}`),
      StoppedValidating: (e) => fail(130, e.message),
      Stopped: (e) =>
        fail(
          130,
          `${e.message}\nrun the same command again to resume (it skips what is done), or: rag-eval resume ${
            displayPath(e.runDir)
          }`
        ),
      // --batch --detach exits 0 once submitted; --max-cost ends like Ctrl+C, exit 1
      BatchDetached: (e) => Console.log(e.message),
      BudgetReached: (e) => fail(1, `error: ${e.message}`)
    }),
    Effect.catchAllDefect((defect) =>
      fail(1, `internal error: ${defect instanceof Error ? defect.stack ?? defect.message : String(defect)}`)
    ),
    Effect.provideService(RecordedArgv, context.record ?? argv.slice(2)),
    (self) => context.width === undefined ? self : Effect.provideService(self, HelpWidth, context.width)
  )
}

/** Before parsing: a `--config` file's flags join the command line (`run`, `serve`). Undefined: nothing left to do. */
const prepareArgv = (
  argv: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<string> | undefined, UsageError | ExitCode> =>
  Effect.gen(function*() {
    const command = argv[2]
    if (command !== "run" && command !== "serve") return argv
    const { withConfigFile } = yield* Effect.promise(() => import("./ConfigFile.js"))
    const rest = yield* withConfigFile(argv.slice(3), command === "run" ? runConfig : serveConfig)
    return [...argv.slice(0, 3), ...rest]
  })

/**
 * Parse first, with the library's parser and the same command descriptor `cli` runs: help and
 * parse errors are printed here (`Help.ts`, `ParseErrors.ts` say why not by the library); anything
 * else — a command to run, `--version`, `--completions`, `--wizard` — goes to `cli`, which parses
 * again (a millisecond) and runs it.
 */
const parseThenRun = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const args = argv.slice(2)
    const node = commandAt(tree, args)
    const parsed = yield* CommandDescriptor.parse(root.descriptor, ["rag-eval", ...args], CliConfig.defaultConfig).pipe(
      Effect.either
    )
    if (Either.isLeft(parsed)) return yield* usageFailure(node, args, parsed.left)
    const directive = parsed.right
    if (CommandDirective.isBuiltIn(directive) && BuiltInOptions.isShowHelp(directive.option)) {
      return yield* showHelp(node, args)
    }
    if (CommandDirective.isUserDefined(directive)) {
      if (directive.leftover.length > 0) {
        return yield* usageFailure(node, args, undefined)
      }
      // A command with subcommands and none named (`rag-eval`, `rag-eval store`): its help.
      if (node.children.length > 0) return yield* showHelp(node, args)
    }
    return yield* cli(argv)
  })

const usageFailure = (
  node: CommandNode,
  args: ReadonlyArray<string>,
  error: ValidationError.ValidationError | undefined
) => Effect.flatMap(parseErrorMessage(node, args, error), (message) => fail(2, message))

/** `--help`: the root's, a command's, or for `run <pipeline>` that pipeline's input and options first. */
const showHelp = (node: CommandNode, args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const width = yield* HelpWidth
    if (node.path.length === 0) return yield* Console.log(rootHelp(tree, VERSION, width))
    if (node.path.length === 1 && node.path[0] === "run") {
      const { runHelp } = yield* Effect.promise(() => import("./PipelineHelp.js"))
      return yield* runHelp(node, pipelineNamed(node, args), width)
    }
    return yield* Console.log(commandHelp(node, width))
  })

/** The pipeline `run` names: its first positional argument (a flag's value is not one). */
const pipelineNamed = (node: CommandNode, args: ReadonlyArray<string>): string | undefined => {
  const valued = new Set(usageParts(node.descriptor).flags.filter((f) => f.value !== undefined).flatMap((f) => f.names))
  const rest = args.slice(node.path.length)
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!
    if (a.startsWith("-")) {
      if (valued.has(a)) i++
      continue
    }
    return a
  }
  return undefined
}
