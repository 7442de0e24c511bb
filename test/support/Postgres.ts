/**
 * A private PostgreSQL for tests: `initdb` into a temp dir, `pg_ctl start` on a free loopback port,
 * trust authentication for one user, stopped (and the dir removed) by `stop`. Debian's binaries live
 * in /usr/lib/postgresql/<version>/bin; absent binaries make `postgresAvailable` false, and tests
 * that need PostgreSQL skip visibly. initdb refuses to run as root: as root the cluster is created
 * and run as the `postgres` system user (`runuser`), which Debian's package creates.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { freePort } from "./Ports.js"

const binDir = (): string | undefined => {
  const root = "/usr/lib/postgresql"
  if (!fs.existsSync(root)) return undefined
  const versions = fs.readdirSync(root).filter((v) => fs.existsSync(Path.join(root, v, "bin", "initdb"))).sort((a, b) =>
    Number(b) - Number(a)
  )
  return versions.length === 0 ? undefined : Path.join(root, versions[0]!, "bin")
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0
const hasPostgresUser = () => spawnSync("id", ["-u", "postgres"]).status === 0

export const postgresBin = binDir()
/** Whether a private cluster can be started here (binaries, and a non-root user to run them). */
export const postgresAvailable = postgresBin !== undefined && (!isRoot || hasPostgresUser())

export interface PrivatePostgres {
  readonly url: string
  readonly port: number
  readonly stop: () => void
}

const asOwner = (cmd: string, args: ReadonlyArray<string>) =>
  isRoot
    ? execFileSync("runuser", ["-u", "postgres", "--", cmd, ...args], { stdio: "pipe" })
    : execFileSync(cmd, [...args], { stdio: "pipe" })

export const startPostgres = async (): Promise<PrivatePostgres> => {
  if (postgresBin === undefined) throw new Error("PostgreSQL binaries not found")
  const dir = fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-pg-"))
  fs.chmodSync(dir, 0o777)
  const data = Path.join(dir, "data")
  if (isRoot) execFileSync("chown", ["postgres", dir])
  asOwner(Path.join(postgresBin, "initdb"), ["-D", data, "-A", "trust", "-U", "rag", "--no-sync", "-E", "UTF8"])
  const port = await freePort()
  asOwner(Path.join(postgresBin, "pg_ctl"), [
    "-D",
    data,
    "-l",
    Path.join(dir, "log"),
    "-w",
    "-t",
    "60",
    "start",
    "-o",
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`
  ])
  const stop = () => {
    try {
      asOwner(Path.join(postgresBin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"])
    } catch {
      // already stopped
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }
  return { url: `postgres://rag@127.0.0.1:${port}/postgres`, port, stop }
}
