/**
 * `rag-eval ui [--out DIR] [--listen HOST:PORT] [--token T] [--user NAME] [--store URL]`: the browser review
 * (SPEC §7b, `src/ui/`). Serves the runs under `--out` on loopback; another address needs a token
 * (`--token`, or the variable RAG_EVAL_UI_TOKEN — read here, the one place that reads settings; the
 * token is never written anywhere or printed). Prints `listening on http://…` on stdout once ready
 * and stops on the first Ctrl+C or SIGTERM.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { loadStoreModule } from "../cluster/Peers.js"
import { UsageError } from "../domain/Errors.js"
import type { Manifest } from "../domain/RunFiles.js"
import { Shutdown } from "../engine/Shutdown.js"
import { displayPath } from "./Display.js"

export const UI_TOKEN_ENV = "RAG_EVAL_UI_TOKEN"
export const defaultListen = "127.0.0.1:7433"

/** `HOST:PORT`, `[v6]:PORT`, `:PORT` (loopback) or `HOST` (the default port). */
export const parseListen = (text: string): Either.Either<{ readonly host: string; readonly port: number }, string> => {
  const t = text.trim()
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(t)
  const plain = /^([^:]*)(?::(\d+))?$/.exec(t)
  const match = bracket ?? plain
  if (match === null) return Either.left(`--listen ${JSON.stringify(text)}: expected HOST:PORT, e.g. 127.0.0.1:7433`)
  const host = match[1] === "" || match[1] === undefined ? "127.0.0.1" : match[1]
  const port = match[2] === undefined ? 7433 : Number(match[2])
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    return Either.left(`--listen ${JSON.stringify(text)}: the port must be 0–65535`)
  }
  return Either.right({ host, port })
}

const out = Options.text("out").pipe(
  Options.withDescription("The output root whose run directories (<out>/<pipeline>/<run-id>) are served (default out)"),
  Options.withDefault("out")
)
const listen = Options.text("listen").pipe(
  Options.withDescription(
    `Address and port to listen on (default ${defaultListen}: this machine only; port 0: any free port). Any address that is not loopback needs a token`
  ),
  Options.withDefault(defaultListen)
)
const token = Options.text("token").pipe(
  Options.withDescription(
    `Token every request must carry (open the page once as /?token=…, or send Authorization: Bearer …); default the variable ${UI_TOKEN_ENV}. Required with a --listen address that is not loopback`
  ),
  Options.optional
)
const store = Options.text("store").pipe(
  Options.withDescription(
    "The PostgreSQL store (postgres://…) that runs made with --store keep their journal in: their cases show the judge's replies from it"
  ),
  Options.optional
)
const user = Options.text("user").pipe(
  Options.withDescription("Who the labels are by (default the OS user name)"),
  Options.optional
)

const isLoopbackHost = (h: string) => h === "localhost" || h === "::1" || /^127\./.test(h)

/** The pipeline's report view of a run (built-in pipelines, with the options the run recorded). */
const viewOfBuiltins = Effect.promise(async () => {
  const [{ builtins }, { instantiate }, { recordedToOptions }] = await Promise.all([
    import("../builtin/index.js"),
    import("../engine/Pipeline.js"),
    import("./PipelineSettings.js")
  ])
  const cache = new Map<string, ReturnType<typeof instantiate>["report"] | undefined>()
  return (manifest: Manifest) => {
    const definition = builtins.get(manifest.pipeline.name)
    if (definition === undefined) return undefined
    const key = `${manifest.pipeline.name}\u0000${JSON.stringify(manifest.options ?? {})}`
    if (!cache.has(key)) {
      const options = recordedToOptions(manifest.options ?? {})
      cache.set(key, instantiate(definition, Either.getOrElse(options, () => ({}))).report)
    }
    return cache.get(key)
  }
})

/** Until the first SIGINT/SIGTERM (bin.ts's `Shutdown`); forever without one (interruption stops it). */
const untilStopRequested = Effect.flatMap(
  Effect.serviceOption(Shutdown),
  (shutdown) => Option.match(shutdown, { onNone: () => Effect.never, onSome: (s) => s.requested })
)

export const uiCommand = Command.make(
  "ui",
  { out, listen, token, user, store },
  (flags) =>
    Effect.gen(function*() {
      const address = yield* Either.match(parseListen(flags.listen), {
        onLeft: (problem) => Effect.fail(new UsageError({ problem })),
        onRight: Effect.succeed
      })
      const fromEnv = yield* Config.option(Config.redacted(UI_TOKEN_ENV)).pipe(
        Effect.map((t) => Option.filter(t, (v) => Redacted.value(v) !== "")),
        Effect.orElseSucceed(() => Option.none<Redacted.Redacted>())
      )
      const secret = Option.isSome(flags.token) && flags.token.value !== ""
        ? Option.some(Redacted.make(flags.token.value))
        : fromEnv
      if (!isLoopbackHost(address.host) && Option.isNone(secret)) {
        return yield* new UsageError({
          problem:
            `--listen ${flags.listen} is not a loopback address: anyone who reaches it could read the runs and write labels. Give --token or set ${UI_TOKEN_ENV}`
        })
      }
      if (fs.existsSync(flags.out) && !fs.statSync(flags.out).isDirectory()) {
        return yield* new UsageError({
          problem: `--out ${flags.out} is a file; give the output root of your runs (a directory)`
        })
      }
      const who = Option.getOrElse(flags.user, () => {
        try {
          return os.userInfo().username
        } catch {
          return "unknown"
        }
      })
      const viewOf = yield* viewOfBuiltins
      yield* Effect.scoped(Effect.gen(function*() {
        // Loaded on use: the HTTP stack is not needed to parse flags or print --help.
        const [Review, Http, Page] = yield* Effect.promise(() =>
          Promise.all([import("../ui/Review.js"), import("../ui/Http.js"), import("../ui/PageAssets.js")])
        )
        const root = Page.packageRoot()
        const storeUrl = Option.getOrUndefined(flags.store)
        const journal = storeUrl === undefined ? undefined : yield* Effect.flatMap(
          loadStoreModule("--store", () => import("../ui/StoreJournal.js")),
          (m) => m.open(storeUrl)
        )
        if (journal !== undefined) {
          yield* Console.error(`judgments of runs made with --store read from ${journal.display}`)
        }
        const review = Review.make({
          store: journal,
          out: flags.out,
          user: who,
          viewOf,
          // compare's tests of large runs by this CLI in a child process: the server keeps answering
          // meanwhile (a small batch runs in-process: CompareRuns.IN_PROCESS_VALUES).
          compareBin: root === undefined ? undefined : Path.join(root, "dist", "bin.js")
        })
        const page = Page.loadPageAssets()
        if (page.missing !== undefined) yield* Console.error(`warning: ${page.missing}`)
        const { runs, problems } = yield* review.catalog.scan
        const server = yield* Http.start({
          host: address.host,
          port: address.port,
          token: Option.getOrUndefined(secret),
          review,
          page
        }).pipe(Effect.catchTag("ServeError", (e) =>
          Effect.fail(
            new UsageError({
              problem: `cannot listen on ${flags.listen}: ${
                e.cause instanceof Error ? e.cause.message : String(e.cause)
              }`
            })
          )))
        if (!fs.existsSync(flags.out)) {
          // Not refused: the first run may be started after the review (each page load scans again).
          yield* Console.error(
            `warning: --out ${
              displayPath(flags.out)
            } does not exist (yet): no runs to show; runs written there appear when the page is reloaded`
          )
        }
        yield* Console.error(
          `${runs.length} run${runs.length === 1 ? "" : "s"} under ${displayPath(flags.out)}${
            problems.length === 0 ? "" : ` (${problems.length} unreadable: GET /api/runs lists them)`
          }; labels by ${who}`
        )
        if (Option.isSome(secret)) {
          yield* Console.error(
            `the token is required: open ${server.url}/?token=<the token> once, or send Authorization: Bearer <the token>`
          )
        }
        yield* Console.log(`listening on ${server.url}`)
        yield* untilStopRequested
        yield* Console.error("stopping")
        yield* server.stop
      }))
    })
).pipe(
  Command.withDescription(
    "Review, compare and label runs in the browser: a local web app over the run directories under --out, with a JSON API under /api/"
  )
)
