/** A loopback port free at the time of asking (bound once, then closed): for servers a test starts, or a port nothing listens on. */
import * as net from "node:net"

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
