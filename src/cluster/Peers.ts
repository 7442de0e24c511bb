/**
 * The PostgreSQL store and the cluster (`--store`, `--cluster`, `rag-eval runner`, `rag-eval
 * store …`) use packages most users never need — @effect/cluster and the SQL, RPC and workflow
 * packages under it, `pg`, and @effect/platform-node (whose own required peers are the cluster
 * packages; outside the CLI only the `rag-eval/server` entry point needs it) — so they are optional
 * peer dependencies: `npm install rag-eval` does not install them. The CLI's bundle (scripts/bundle.mjs)
 * carries its own copy of them, so `--store` works from the installed CLI without them; code run
 * from the tsc build or the sources (the library, tsx) imports them from node_modules, through
 * `loadStoreModule`, which turns a missing package into a message naming what to install (exit 2).
 */
import * as Effect from "effect/Effect"
import { UsageError } from "../domain/Errors.js"

/** The optional peer dependencies, as package.json's `peerDependencies` gives them (a test keeps them equal). */
export const storePeers: Readonly<Record<string, string>> = {
  "@effect/cluster": "0.60.2",
  "@effect/experimental": "0.61.1",
  "@effect/platform-node": "^0.108.2",
  "@effect/rpc": "0.76.2",
  "@effect/sql": "0.52.1",
  "@effect/sql-pg": "0.53.0",
  "@effect/workflow": "0.19.1",
  "pg": "^8.23.1"
}

/** The package a failed import could not find (Node's ERR_MODULE_NOT_FOUND message), if any. */
export const missingPackage = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const { code, message } = error as { readonly code?: unknown; readonly message?: unknown }
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return undefined
  const m = typeof message === "string" ? /Cannot find (?:package|module) '([^']+)'/.exec(message) : null
  if (m === null) return undefined
  // A file under node_modules (`…/node_modules/pg/lib/client`) → the package it is in.
  const at = m[1]!.lastIndexOf("node_modules/")
  const specifier = at === -1 ? m[1]! : m[1]!.slice(at + "node_modules/".length)
  // `pg/lib/x` → `pg`, `@effect/sql-pg/PgClient` → `@effect/sql-pg`
  const parts = specifier.split("/")
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]
}

/** The command that installs every optional peer, pinned as package.json pins them. */
export const installCommand = () =>
  `npm install ${Object.entries(storePeers).map(([name, version]) => `${name}@${version}`).join(" ")}`

/**
 * `import()` of a module that needs the store's packages (`what` names the feature, e.g. "--store"):
 * a missing optional peer fails with a UsageError naming it and the command that installs them all;
 * any other failure to load is a defect, as before.
 */
export const loadStoreModule = <M>(what: string, load: () => Promise<M>): Effect.Effect<M, UsageError> =>
  Effect.tryPromise({ try: load, catch: (e) => e }).pipe(
    Effect.catchAll((e) => {
      const missing = missingPackage(e)
      return missing !== undefined && Object.hasOwn(storePeers, missing)
        ? Effect.fail(
          new UsageError({
            problem:
              `${what} needs ${missing}, an optional dependency of rag-eval that is not installed; install the store's packages with: ${installCommand()}`
          })
        )
        : Effect.die(e)
    })
  )
