/**
 * The SDK's transport: a fetch over node:http that resolves with a buffered response. Checked over
 * real HTTP on 127.0.0.1 for what the openai SDK reads of a response and of a failure.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Zlib from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as NodeFetch from "../../src/providers/NodeFetch.js"

let server: Http.Server
let base = ""
const seen: Array<
  { readonly method: string | undefined; readonly headers: Http.IncomingHttpHeaders; readonly body: string }
> = []

beforeAll(async () => {
  server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      seen.push({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") })
      switch (req.url) {
        case "/json":
          res.writeHead(200, {
            "content-type": "application/json",
            "x-request-id": "req-1",
            "set-cookie": ["a=1", "b=2"]
          })
          res.end(JSON.stringify({ ok: true, echo: Buffer.concat(chunks).toString("utf8") }))
          return
        case "/gzip": {
          const body = Zlib.gzipSync(Buffer.from(JSON.stringify({ zipped: "é✓" })))
          res.writeHead(200, {
            "content-type": "application/json",
            "content-encoding": "gzip",
            "content-length": body.length
          })
          res.end(body)
          return
        }
        case "/429":
          res.writeHead(429, "Too Many Requests", { "retry-after": "7", "content-type": "application/json" })
          res.end(JSON.stringify({ error: { message: "slow down" } }))
          return
        case "/big": {
          res.writeHead(200, { "content-type": "application/json" })
          res.end("x".repeat(5000))
          return
        }
        case "/bomb": {
          const body = Zlib.gzipSync(Buffer.alloc(1_000_000, 0x61))
          res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" })
          res.end(body)
          return
        }
        case "/empty":
          res.writeHead(204)
          res.end()
          return
        case "/hang":
          return
        case "/reset":
          req.socket.destroy()
          return
      }
      res.writeHead(404)
      res.end("not found")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

describe("NodeFetch", () => {
  it("sends method, headers (a Headers object, as the SDK passes) and body; reads status, headers, json", async () => {
    const transport = NodeFetch.make()
    const response = await transport.fetch(`${base}/json`, {
      method: "POST",
      headers: new Headers({ "Content-Type": "application/json", Authorization: "Bearer k" }),
      body: "{\"q\":\"é\"}"
    })
    expect(response.ok).toBe(true)
    expect(response.status).toBe(200)
    expect(response.url).toBe(`${base}/json`)
    expect(response.headers.get("X-Request-Id")).toBe("req-1")
    expect(response.headers.get("set-cookie")).toBe("a=1, b=2")
    expect(response.headers.has("content-type")).toBe(true)
    expect(response.headers.get("missing")).toBeNull()
    expect([...response.headers.entries()].map(([name]) => name)).toContain("x-request-id")
    expect(await response.json()).toEqual({ ok: true, echo: "{\"q\":\"é\"}" })
    expect(response.bodyUsed).toBe(true)
    await expect(response.text()).rejects.toThrow(TypeError)
    const request = seen.at(-1)!
    expect(request.method).toBe("POST")
    expect(request.headers.authorization).toBe("Bearer k")
    expect(request.headers["content-length"]).toBe(String(Buffer.byteLength("{\"q\":\"é\"}")))
    transport.close()
  })

  it("inflates a compressed body and drops the headers that described it", async () => {
    const transport = NodeFetch.make()
    const response = await transport.fetch(`${base}/gzip`)
    expect(response.headers.get("content-encoding")).toBeNull()
    expect(response.headers.get("content-length")).toBeNull()
    expect(await response.json()).toEqual({ zipped: "é✓" })
    transport.close()
  })

  it("an error status is a response (the SDK reads it), with its headers and text", async () => {
    const transport = NodeFetch.make()
    const response = await transport.fetch(`${base}/429`, { method: "POST", body: "{}" })
    expect(response.ok).toBe(false)
    expect(response.status).toBe(429)
    expect(response.statusText).toBe("Too Many Requests")
    expect(response.headers.get("retry-after")).toBe("7")
    expect(await response.text()).toContain("slow down")
    const empty = await transport.fetch(`${base}/empty`)
    expect(empty.status).toBe(204)
    expect(empty.body).toBeNull()
    transport.close()
  })

  it("an aborted signal rejects with an AbortError, before or during the request", async () => {
    const transport = NodeFetch.make()
    await expect(transport.fetch(`${base}/json`, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: "AbortError"
    })
    const controller = new AbortController()
    const pending = transport.fetch(`${base}/hang`, { signal: controller.signal })
    setTimeout(() => controller.abort(), 20)
    await expect(pending).rejects.toMatchObject({ name: "AbortError" })
    transport.close()
  })

  it("a network failure rejects with TypeError(\"fetch failed\") and the socket error as its cause", async () => {
    const transport = NodeFetch.make()
    const error = await transport.fetch(`${base}/reset`).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as TypeError).message).toBe("fetch failed")
    expect((error as TypeError).cause).toBeInstanceOf(Error)
    await expect(transport.fetch("ftp://127.0.0.1/x")).rejects.toThrow(/unsupported protocol/)
    transport.close()
  })
})

describe("NodeFetch.post (the judge's calls: a target parsed once, headers as node:http takes them)", () => {
  it("sends the headers given, the body's length and the body; reads the response as fetch does", async () => {
    const transport = NodeFetch.make()
    const target = NodeFetch.target(`${base}/json`)
    if (target instanceof TypeError) throw target
    const headers = { "content-type": "application/json", authorization: "Bearer k" }
    const response = await transport.post(target, headers, "{\"q\":\"é\"}", {}).response
    expect(response.status).toBe(200)
    expect(response.url).toBe(`${base}/json`)
    expect(JSON.parse(response.textNow())).toEqual({ ok: true, echo: "{\"q\":\"é\"}" })
    expect(() => response.textNow()).toThrow(TypeError)
    const request = seen.at(-1)!
    expect(request.method).toBe("POST")
    expect(request.headers.authorization).toBe("Bearer k")
    expect(request.headers["content-length"]).toBe(String(Buffer.byteLength("{\"q\":\"é\"}")))
    // The headers given are not changed (they are shared by every call).
    expect(headers).toEqual({ "content-type": "application/json", authorization: "Bearer k" })
    const gzip = NodeFetch.target(`${base}/gzip`) as NodeFetch.Target
    expect(JSON.parse((await transport.post(gzip, {}, "", {}).response).textNow())).toEqual({ zipped: "é✓" })
    transport.close()
  })

  it("a server that does not answer within timeoutMs: a TimeoutError; abort: an AbortError; failures as fetch", async () => {
    const transport = NodeFetch.make()
    const hang = NodeFetch.target(`${base}/hang`) as NodeFetch.Target
    await expect(transport.post(hang, {}, "{}", { timeoutMs: 50 }).response).rejects.toBeInstanceOf(
      NodeFetch.TimeoutError
    )
    const call = transport.post(hang, {}, "{}", {})
    setTimeout(() => call.abort(), 20)
    await expect(call.response).rejects.toMatchObject({ name: "AbortError" })
    const reset = NodeFetch.target(`${base}/reset`) as NodeFetch.Target
    const error = await transport.post(reset, {}, "{}", {}).response.then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as TypeError).cause).toBeInstanceOf(Error)
    expect(NodeFetch.target("ftp://127.0.0.1/x")).toBeInstanceOf(TypeError)
    expect(NodeFetch.target("not a url")).toBeInstanceOf(TypeError)
    transport.close()
  })
})

describe("a response over the bound (Limits.responseBytes)", () => {
  it("is not read past the bound: it fails as too large, and the failure says so", async () => {
    const f = NodeFetch.make({ maxResponseBytes: 1000 })
    const error = await f.fetch(`${base}/big`).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect(String((error as Error).message)).toBe("fetch failed: the response is larger than 1000 bytes")
    expect(NodeFetch.isResponseTooLarge(error)).toBe(true)
    // Within the bound it is read as ever.
    const ok = await NodeFetch.make({ maxResponseBytes: 5000 }).fetch(`${base}/big`)
    expect((await ok.text()).length).toBe(5000)
    f.close()
  })

  it("a compressed body is bounded once inflated (a small gzip of 1 MB is refused at 100 KB)", async () => {
    const f = NodeFetch.make({ maxResponseBytes: 100_000 })
    const error = await f.fetch(`${base}/bomb`).then(() => undefined, (e: unknown) => e)
    expect(NodeFetch.isResponseTooLarge(error)).toBe(true)
    expect(NodeFetch.isResponseTooLarge(new TypeError("fetch failed"))).toBe(false)
    f.close()
  })
})
