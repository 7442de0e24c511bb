/**
 * `rag-eval serve`: the search-evaluation HTTP API (SPEC §8) with the judge, provider and cache
 * layers of `rag-eval run` (same flag names and defaults; the cache under `--out` is shared, so a
 * judgment paid for by either is reused by the other).
 *
 * Binds to loopback by default. Prints `listening on http://…` on stdout once ready. A bearer
 * token is required when the variable named by `--token-env` (default RAG_EVAL_TOKEN) is set.
 * Stops gracefully on the first SIGINT/SIGTERM (the `Shutdown` signal of `bin.ts`, or an
 * interruption): no new connections, requests in flight finish, exit 0.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { UsageError } from "../domain/Errors.js"
import { Shutdown } from "../engine/Shutdown.js"
import { judgeLayer } from "../judges/JudgeSettings.js"
import { parseSize } from "../server/Body.js"
import { defaults } from "../server/Defaults.js"
import * as SharedCache from "../server/SharedCache.js"
import * as JudgmentCache from "../store/JudgmentCache.js"
import { judgeSettings, pipelineOptionFlags, providerFlags } from "./RunFlags.js"

const host = Options.text("host").pipe(
  Options.withDescription(
    `Address to listen on (default ${defaults.host}: this machine only; 0.0.0.0 for every interface)`
  ),
  Options.withDefault(defaults.host)
)
const port = Options.integer("port").pipe(
  Options.withDescription(`Port (default ${defaults.port}; 0: any free port)`),
  Options.withDefault(defaults.port)
)
const maxBody = Options.text("max-body").pipe(
  Options.withDescription(`Largest request body, e.g. 1mb, 512kb (default ${defaults.maxBody}); larger bodies get 413`),
  Options.withDefault(defaults.maxBody)
)
const tokenEnv = Options.text("token-env").pipe(
  Options.withDescription(
    `Environment variable holding the bearer token clients must send (default ${defaults.tokenEnv}); unset: no authentication`
  ),
  Options.withDefault(defaults.tokenEnv)
)
const queue = Options.integer("queue").pipe(
  Options.withDescription(
    `Evaluations that may wait for a slot when --concurrency are running (default ${defaults.queue}: refuse at once with 429)`
  ),
  Options.withDefault(defaults.queue)
)
const maxBatch = Options.integer("max-batch").pipe(
  Options.withDescription(`Queries allowed in one POST /v1/eval/search:batch (default ${defaults.maxBatch})`),
  Options.withDefault(defaults.maxBatch)
)
const maxHits = Options.integer("max-hits").pipe(
  Options.withDescription(
    `Hits allowed in one request, summed over a batch's queries (default ${defaults.maxHits}); more get 413`
  ),
  Options.withDefault(defaults.maxHits)
)
const shutdownGrace = Options.float("shutdown-grace").pipe(
  Options.withDescription(
    `Seconds a stop (Ctrl+C, SIGTERM) waits for the requests in flight before closing their connections (default ${defaults.shutdownGrace})`
  ),
  Options.withDefault(defaults.shutdownGrace)
)
const requestTimeout = Options.float("request-timeout").pipe(
  Options.withDescription(
    `Seconds a client has to send a whole request, headers and body (default ${defaults.requestTimeout}); slower clients get 408`
  ),
  Options.withDefault(defaults.requestTimeout)
)
const out = Options.text("out").pipe(
  Options.withDescription(
    "Output root whose judgment cache (<out>/.cache/judgments) is shared with rag-eval run (default out)"
  ),
  Options.withDefault("out")
)
const noCache = Options.boolean("no-cache").pipe(Options.withDescription("Do not read or write the judgment cache"))

const concurrency = Options.integer("concurrency").pipe(
  Options.withDescription("Evaluations (requests) judged at once, and judge calls in flight at once (default 8)"),
  Options.withDefault(8)
)

const isLoopback = (h: string) => h === "localhost" || h === "::1" || h.startsWith("127.")

/** Until the first SIGINT/SIGTERM (bin.ts's `Shutdown`); forever when there is none (interruption stops it). */
const untilStopRequested = Effect.flatMap(Effect.serviceOption(Shutdown), (shutdown) =>
  Option.match(shutdown, {
    onNone: () => Effect.never,
    onSome: (s) => Effect.sleep(Duration.millis(100)).pipe(Effect.repeat({ until: () => s.stopping() }))
  }))

/** The flags of `serve` (its own and the provider flags it shares with `run`). */
export const serveConfig = {
  host,
  port,
  maxBody,
  tokenEnv,
  queue,
  maxBatch,
  maxHits,
  shutdownGrace,
  requestTimeout,
  out,
  noCache,
  concurrency,
  listwise: pipelineOptionFlags.listwise,
  fields: pipelineOptionFlags.fields,
  ...providerFlags
}

export const serveCommand = Command.make(
  "serve",
  serveConfig,
  (flags) =>
    Effect.gen(function*() {
      if (flags.concurrency < 1) return yield* new UsageError({ problem: "--concurrency must be at least 1" })
      if (flags.queue < 0) return yield* new UsageError({ problem: "--queue must be 0 or more" })
      if (flags.maxBatch < 1) return yield* new UsageError({ problem: "--max-batch must be at least 1" })
      if (flags.maxHits < 1) return yield* new UsageError({ problem: "--max-hits must be at least 1" })
      if (!(flags.shutdownGrace >= 0) || !Number.isFinite(flags.shutdownGrace)) {
        return yield* new UsageError({ problem: "--shutdown-grace must be a number of seconds, 0 or more" })
      }
      if (!(flags.requestTimeout > 0) || !Number.isFinite(flags.requestTimeout)) {
        return yield* new UsageError({ problem: "--request-timeout must be a number of seconds above 0" })
      }
      if (flags.port < 0 || flags.port > 65535) {
        return yield* new UsageError({ problem: "--port must be between 0 and 65535" })
      }
      const maxBodyBytes = yield* Either.match(parseSize(flags.maxBody), {
        onLeft: (problem) => Effect.fail(new UsageError({ problem: `--max-body: ${problem}` })),
        onRight: Effect.succeed
      })
      const token = yield* Config.option(Config.redacted(flags.tokenEnv)).pipe(
        Effect.map((t) => Option.filter(t, (v) => Redacted.value(v) !== "")),
        Effect.mapError(() => new UsageError({ problem: `--token-env: cannot read the variable ${flags.tokenEnv}` }))
      )
      if (Option.isNone(flags.provider)) {
        yield* Console.error(
          "no --provider given: using the heuristic judge (offline, deterministic lexical proxies, not an LLM)"
        )
      }
      // The search-relevance options serve takes, gathered as `run` gathers a pipeline's (flags, then
      // the environment, announced).
      const { gatherOptions } = yield* Effect.promise(() => import("./PipelineSettings.js"))
      const gathered = yield* gatherOptions(
        {
          name: "serve",
          description: "",
          options: ["listwise", "fields"],
          build: () => {
            throw new Error("not a pipeline")
          }
        },
        { listwise: flags.listwise, fields: flags.fields }
      )
      const judge = judgeLayer(judgeSettings(flags, flags.concurrency))
      const cache = flags.noCache ? JudgmentCache.layerNone : SharedCache.layerFile(JudgmentCache.cacheDir(flags.out))
      yield* Effect.scoped(
        Effect.gen(function*() {
          // Loaded on use: the HTTP stack is not needed to parse flags or print --help.
          const { start } = yield* Effect.promise(() => import("../server/Http.js"))
          const server = yield* start({
            host: flags.host,
            port: flags.port,
            maxBodyBytes,
            concurrency: flags.concurrency,
            queue: flags.queue,
            maxBatch: flags.maxBatch,
            maxHits: flags.maxHits,
            shutdownGraceMs: Math.round(flags.shutdownGrace * 1000),
            requestTimeoutMs: Math.round(flags.requestTimeout * 1000),
            token: Option.getOrUndefined(token),
            listwise: gathered.options.listwise,
            fields: gathered.options.fields !== undefined && gathered.options.fields.length > 0
              ? gathered.options.fields
              : undefined
          }).pipe(
            Effect.catchTag("ServeError", (e) =>
              Effect.fail(
                new UsageError({
                  problem: `cannot listen on ${flags.host}:${flags.port}: ${
                    e.cause instanceof Error ? e.cause.message : String(e.cause)
                  }`
                })
              ))
          )
          if (Option.isSome(token)) {
            yield* Console.error(`requests must send Authorization: Bearer <the value of ${flags.tokenEnv}>`)
          } else if (!isLoopback(flags.host)) {
            yield* Console.error(
              `warning: listening on ${flags.host} without a token; set ${flags.tokenEnv} to require one`
            )
          }
          yield* Console.log(`listening on ${server.url}`)
          yield* untilStopRequested
          const inFlight = server.traffic.active()
          yield* Console.error(`stopping: no new connections; ${
            inFlight === 0
              ? "no request in flight"
              : `finishing ${inFlight} request${inFlight === 1 ? "" : "s"} in flight`
          }`)
          yield* server.drain
        })
      ).pipe(Effect.provide(Layer.merge(judge, cache)))
    })
).pipe(
  Command.withDescription(
    "Serve the search-evaluation HTTP API: POST /v1/eval/search, POST /v1/eval/search:batch, GET /health, GET /openapi.json"
  )
)
