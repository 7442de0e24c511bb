/**
 * A `fetch` over node:http(s) with keep-alive agents, handed to the openai SDK (`new OpenAI({ fetch })`).
 *
 * Why: Node's built-in fetch (undici, WHATWG streams) costs ~0.15 ms more CPU per call than
 * node:http here (`npm run bench`, "where a call's time goes"); at 32 calls in flight that CPU sits on
 * every call's critical path. Chat completions are small, non-streaming JSON, so this fetch buffers
 * the whole response before resolving — which also puts a stalled body under the SDK's timeout.
 *
 * Behaviour the SDK relies on: an aborted `signal` rejects with an `AbortError` (the SDK's timeout
 * and user aborts); a network failure rejects with `TypeError("fetch failed")` whose `cause` is the
 * socket error, as undici does; compressed bodies (if a server sends them unasked) are inflated.
 */
import * as Http from "node:http"
import * as Https from "node:https"
import * as Zlib from "node:zlib"

export interface NodeFetch {
  readonly fetch: typeof globalThis.fetch
  /** Close idle keep-alive sockets (at the end of a run). */
  readonly close: () => void
}

const abortError = (signal: AbortSignal): unknown =>
  signal.reason instanceof Error && signal.reason.name === "AbortError"
    ? signal.reason
    : new DOMException("This operation was aborted", "AbortError")

const headerRecord = (init: RequestInit["headers"]): Record<string, string> => {
  const out: Record<string, string> = {}
  if (init === undefined) return out
  if (init instanceof Headers || Array.isArray(init)) {
    new Headers(init).forEach((value, key) => {
      out[key] = value
    })
    return out
  }
  for (const [key, value] of Object.entries(init)) out[key.toLowerCase()] = String(value)
  return out
}

const inflate = (encoding: string | undefined, body: Buffer): Buffer => {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return Zlib.gunzipSync(body)
    case "deflate":
      return Zlib.inflateSync(body)
    case "br":
      return Zlib.brotliDecompressSync(body)
    default:
      return body
  }
}

const requestBody = (body: unknown): string | Uint8Array | undefined => {
  if (body === undefined || body === null) return undefined
  if (typeof body === "string" || body instanceof Uint8Array) return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  if (body instanceof URLSearchParams) return body.toString()
  throw new TypeError("rag-eval's node:http fetch sends only string or byte bodies")
}

export const make = (): NodeFetch => {
  const agents = {
    "http:": new Http.Agent({ keepAlive: true }),
    "https:": new Https.Agent({ keepAlive: true })
  }

  const nodeFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url)
      const signal = init?.signal ?? undefined
      if (signal?.aborted === true) return reject(abortError(signal))
      const protocol = url.protocol === "https:" ? "https:" : url.protocol === "http:" ? "http:" : undefined
      if (protocol === undefined) return reject(new TypeError(`fetch failed: unsupported protocol ${url.protocol}`))
      let body: string | Uint8Array | undefined
      try {
        body = requestBody(init?.body)
      } catch (e) {
        return reject(e)
      }
      const headers = headerRecord(init?.headers)
      if (body !== undefined) headers["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength)

      let settled = false
      const fail = (error: unknown) => {
        if (settled) return
        settled = true
        signal?.removeEventListener("abort", onAbort)
        reject(error)
      }
      const transport = protocol === "https:" ? Https : Http
      const req = transport.request(url, { method: init?.method ?? "GET", headers, agent: agents[protocol] }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("error", (e) => fail(new TypeError("fetch failed", { cause: e })))
        res.on("end", () => {
          if (settled) return
          let content: Buffer
          try {
            content = inflate(res.headers["content-encoding"], Buffer.concat(chunks))
          } catch (e) {
            return fail(new TypeError("fetch failed: could not decompress the response", { cause: e }))
          }
          const responseHeaders = new Headers()
          for (const [key, value] of Object.entries(res.headers)) {
            if (value === undefined || key === "content-encoding" || key === "content-length") continue
            if (Array.isArray(value)) for (const v of value) responseHeaders.append(key, v)
            else responseHeaders.set(key, value)
          }
          const status = res.statusCode ?? 500
          settled = true
          signal?.removeEventListener("abort", onAbort)
          resolve(new Response(status === 204 || status === 304 || content.length === 0 ? null : content, {
            status,
            statusText: res.statusMessage ?? "",
            headers: responseHeaders
          }))
        })
      })
      const onAbort = () => {
        const error = abortError(signal!)
        req.destroy()
        fail(error)
      }
      signal?.addEventListener("abort", onAbort, { once: true })
      req.on("error", (e) => fail(new TypeError("fetch failed", { cause: e })))
      req.end(body)
    })

  return {
    fetch: nodeFetch as typeof globalThis.fetch,
    close: () => {
      agents["http:"].destroy()
      agents["https:"].destroy()
    }
  }
}
