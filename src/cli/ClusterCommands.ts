/**
 * `rag-eval runner` (a cluster runner) and `rag-eval store migrate|prune` (the PostgreSQL store's
 * schema, and a finished run's cluster messages). Their work is in src/cluster/ and
 * src/store/PostgresStore.ts, loaded on use.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { loadStoreModule } from "../cluster/Peers.js"

const store = Options.text("store").pipe(
  Options.withDescription("The PostgreSQL store, postgres://user:password@host:5432/db (credentials are never printed)")
)

const runnerCommand = Command.make(
  "runner",
  {
    store,
    listen: Options.text("listen").pipe(
      Options.withDescription("host:port this runner listens on for the cluster (e.g. 0.0.0.0:34431)")
    ),
    advertise: Options.text("advertise").pipe(
      Options.withDescription("host:port the others reach this runner at (default: --listen)"),
      Options.optional
    ),
    concurrency: Options.integer("concurrency").pipe(
      Options.withDescription("Most judge calls in flight on this runner (default 8)"),
      Options.withDefault(8)
    ),
    apiKey: Options.redacted("api-key").pipe(
      Options.withDescription("API key for the runs' provider (default: OPENAI_API_KEY / MISTRAL_API_KEY, as for run)"),
      Options.optional
    ),
    adaptive: Options.choiceWithValue(
      "adaptive",
      [["true", true], ["false", false], ["on", true], ["off", false]] as const
    ).pipe(
      Options.withDescription("AIMD concurrency on this runner (default true)"),
      Options.withDefault(true)
    ),
    noPreflight: Options.boolean("no-preflight").pipe(
      Options.withDescription("Skip the one minimal request a runner sends when it first builds a run's judge")
    )
  },
  (flags) =>
    Effect.flatMap(loadStoreModule("rag-eval runner", () => import("../cluster/Commands.js")), (m) =>
      m.runnerAction({
        store: flags.store,
        listen: flags.listen,
        advertise: Option.getOrUndefined(flags.advertise),
        concurrency: flags.concurrency,
        apiKey: Option.getOrUndefined(flags.apiKey),
        adaptive: flags.adaptive,
        preflight: !flags.noPreflight
      }))
).pipe(
  Command.withDescription(
    "Start a cluster runner: it judges batches of the runs started with `run … --store … --cluster`"
  )
)

const migrateCommand = Command.make(
  "migrate",
  { store },
  ({ store }) =>
    Effect.flatMap(
      loadStoreModule("rag-eval store migrate", () => import("../cluster/Commands.js")),
      (m) => m.migrateAction(store)
    )
).pipe(Command.withDescription("Create (or bring up to date) the store's tables: once, before runners start"))

const pruneCommand = Command.make(
  "prune",
  {
    store,
    runId: Options.text("run-id").pipe(
      Options.withDescription("The finished run, <pipeline>/<run-id> (or a run directory out/<pipeline>/<run-id>)")
    )
  },
  ({ runId, store }) =>
    Effect.flatMap(
      loadStoreModule("rag-eval store prune", () => import("../cluster/Commands.js")),
      (m) => m.pruneAction(store, runId)
    )
).pipe(Command.withDescription("Remove a finished run's cluster messages and replies (its judgments stay)"))

const storeCommand = Command.make("store").pipe(
  Command.withDescription("The PostgreSQL store: migrate, prune"),
  Command.withSubcommands([migrateCommand, pruneCommand])
)

export const clusterCommands = [runnerCommand, storeCommand] as const
