/**
 * Loopback ports for a test: one a child process (or PostgreSQL) will listen on, or one nothing
 * listens on (a dead host).
 *
 * Not a port the OS hands out for `listen(0)`: one bound and closed again goes back to that pool, and
 * a server another test starts at the same time may be given it before the child binds it — or while
 * the test counts on nothing answering there (seen: "a dead host (connection refused)" met another
 * test's fake server, HTTP 400). These come from below the OS's range for such ports (Linux
 * 32768–60999, macOS and Windows 49152–65535), a block of its own for each vitest worker and a new
 * one for each call in it, each checked free when it is handed out: no other test is given it, and
 * nothing takes it by chance.
 */
import * as net from "node:net"

/** 1,000 ports per worker from 20,000 (VITEST_POOL_ID is 1, 2, … per worker process). */
const BLOCK = 1_000
const poolId = Number(process.env.VITEST_POOL_ID ?? "0")
const base = 20_000 + (Number.isInteger(poolId) && poolId >= 0 ? poolId % 12 : 0) * BLOCK
let next = 0

const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = net.createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

/** A loopback port nothing listens on, that no other test of this run is given and `listen(0)` never picks. */
export const freePort = async (): Promise<number> => {
  for (let tries = 0; tries < BLOCK; tries++) {
    const port = base + (next++ % BLOCK)
    if (await bindable(port)) return port
  }
  throw new Error(`no free loopback port in ${base}–${base + BLOCK - 1}`)
}
