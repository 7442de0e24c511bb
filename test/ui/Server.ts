/**
 * The review server in-process for tests (real HTTP on 127.0.0.1, an ephemeral port), and a raw
 * HTTP client that can send what a browser would not (another Host, an unencoded path).
 */
import { Effect, Exit, Redacted, Scope } from "effect"
import * as Http from "node:http"
import * as Path from "node:path"
import { builtins } from "../../src/builtin/index.js"
import type { Manifest } from "../../src/domain/RunFiles.js"
import { instantiate } from "../../src/engine/Pipeline.js"
import { start } from "../../src/ui/Http.js"
import { loadPageAssets } from "../../src/ui/PageAssets.js"
import * as Review from "../../src/ui/Review.js"
import * as StoreJournal from "../../src/ui/StoreJournal.js"
import { repoRoot } from "../support/RunPipeline.js"

export interface TestServer {
  readonly url: string
  readonly port: number
  readonly review: Review.Review
  readonly close: () => Promise<void>
}

/** The built-in pipelines' views, as the CLI gives them. */
export const viewOf = (manifest: Manifest) => {
  const definition = builtins.get(manifest.pipeline.name)
  return definition === undefined ? undefined : instantiate(definition, {}).report
}

export const startServer = async (
  options: {
    readonly out: string
    readonly token?: string
    readonly user?: string
    readonly host?: string
    readonly maxIndexes?: number
    /** The CLI compare's tests run by (default the built one, dist/bin.js). */
    readonly compareBin?: string
    /** Up to how many case × metric values compare's tests run in-process even with the CLI (0: never; Infinity: always). */
    readonly compareInProcessUpTo?: number
    /** `--store`: the PostgreSQL store runs made with --store keep their journal in. */
    readonly store?: string
  }
): Promise<TestServer> => {
  const scope = Effect.runSync(Scope.make())
  const store = options.store === undefined
    ? undefined
    : await Effect.runPromise(Scope.extend(StoreJournal.open(options.store), scope))
  const review = Review.make({
    store,
    out: options.out,
    user: options.user ?? "tester",
    viewOf,
    maxIndexes: options.maxIndexes,
    // compare's tests by the built CLI in a child process, as `rag-eval ui` runs them for large runs
    // (`compareInProcessUpTo` 0: for every run).
    compareBin: options.compareBin ?? Path.join(repoRoot, "dist", "bin.js"),
    compareInProcessUpTo: options.compareInProcessUpTo
  })
  const server = await Effect.runPromise(
    Scope.extend(
      start({
        host: options.host ?? "127.0.0.1",
        port: 0,
        token: options.token === undefined ? undefined : Redacted.make(options.token),
        review,
        page: loadPageAssets()
      }),
      scope
    )
  )
  return {
    url: server.url,
    port: server.port,
    review,
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export interface RawResponse {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
  readonly json: () => any
}

/** One request as given: the path is sent as it is (no normalisation), any Host header. */
export const raw = (
  port: number,
  path: string,
  options: {
    readonly method?: string
    readonly headers?: Readonly<Record<string, string>>
    readonly body?: string
  } = {}
): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const request = Http.request(
      {
        host: "127.0.0.1",
        port,
        method: options.method ?? "GET",
        path,
        headers: { host: `127.0.0.1:${port}`, ...options.headers }
      },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (c: Buffer) => chunks.push(c))
        response.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body, json: () => JSON.parse(body) })
        })
      }
    )
    request.on("error", reject)
    if (options.body !== undefined) request.write(options.body)
    request.end()
  })

export const post = (port: number, path: string, body: unknown, headers: Readonly<Record<string, string>> = {}) =>
  raw(port, path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-requested-by": "rag-eval", ...headers },
    body: JSON.stringify(body)
  })
