/**
 * A minimal `fetch` over node:http with a keep-alive agent, to hand to the openai SDK
 * (`new OpenAI({ fetch })`). Bench-only: it measures what the SDK costs when its transport is
 * node:http instead of Node's built-in fetch (undici), i.e. the fix recommended for
 * src/providers/OpenAiProvider.ts. Buffers the whole response (chat completions are small and
 * non-streaming here); honours `signal`.
 */
import * as Http from "node:http"
import * as Https from "node:https"

export const makeNodeHttpFetch = (options: { readonly maxSockets: number }) => {
  const agents = {
    "http:": new Http.Agent({ keepAlive: true, maxSockets: options.maxSockets }),
    "https:": new Https.Agent({ keepAlive: true, maxSockets: options.maxSockets })
  }
  const toHeaders = (init: ConstructorParameters<typeof Headers>[0]): Record<string, string> => {
    const out: Record<string, string> = {}
    if (init === undefined) return out
    new Headers(init).forEach((value, key) => {
      out[key] = value
    })
    return out
  }
  const nodeFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    new Promise((resolve, reject) => {
      const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url)
      const signal = init?.signal ?? undefined
      if (signal?.aborted) return reject(signal.reason ?? new DOMException("aborted", "AbortError"))
      const body = init?.body
      const headers = toHeaders(init?.headers)
      if (typeof body === "string" && headers["content-length"] === undefined) headers["content-length"] = String(Buffer.byteLength(body))
      const transport = url.protocol === "https:" ? Https : Http
      const req = transport.request(url, { method: init?.method ?? "GET", headers, agent: agents[url.protocol as "http:" | "https:"] }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("error", reject)
        res.on("end", () => {
          signal?.removeEventListener("abort", onAbort)
          const responseHeaders = new Headers()
          for (const [key, value] of Object.entries(res.headers)) {
            if (value === undefined) continue
            if (Array.isArray(value)) for (const v of value) responseHeaders.append(key, v)
            else responseHeaders.set(key, value)
          }
          const status = res.statusCode ?? 500
          resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, statusText: res.statusMessage ?? "", headers: responseHeaders }))
        })
      })
      const onAbort = () => req.destroy(signal?.reason ?? new DOMException("aborted", "AbortError"))
      signal?.addEventListener("abort", onAbort, { once: true })
      req.on("error", (e) => {
        signal?.removeEventListener("abort", onAbort)
        reject(e)
      })
      if (body === undefined || body === null) req.end()
      else if (typeof body === "string" || body instanceof Uint8Array) req.end(body)
      else reject(new TypeError("bench node:http fetch: only string or bytes bodies"))
    })
  return { fetch: nodeFetch as typeof fetch, close: () => Object.values(agents).forEach((a) => a.destroy()) }
}
