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
 *
 * A body is read up to `Limits.responseBytes` (inflated, too): a larger one rejects with
 * `TypeError("fetch failed: …")` whose cause has the code `RESPONSE_TOO_LARGE`
 * (`isResponseTooLarge`), and the rest of it is not read.
 */
import * as Http from "node:http"
import * as Https from "node:https"
import * as Url from "node:url"
import * as Zlib from "node:zlib"
import { formatBytes, Limits } from "../domain/Limits.js"

const abortError = (signal: AbortSignal): unknown =>
  signal.reason instanceof Error && signal.reason.name === "AbortError"
    ? signal.reason
    : new DOMException("This operation was aborted", "AbortError")

/** Request headers as node:http takes them; the SDK passes a `Headers`, read as it is (no copy). */
const headerRecord = (init: RequestInit["headers"]): Record<string, string> => {
  const out: Record<string, string> = {}
  if (init === undefined) return out
  if (init instanceof Headers) {
    init.forEach((value, key) => {
      out[key] = value
    })
    return out
  }
  if (Array.isArray(init)) {
    for (const entry of init) {
      const [key = "", value = ""] = entry
      const name = key.toLowerCase()
      out[name] = name in out ? `${out[name]}, ${value}` : value
    }
    return out
  }
  for (const [key, value] of Object.entries(init)) out[key.toLowerCase()] = String(value)
  return out
}

/**
 * The response headers, read-only, over node's own header object (names lower-cased, repeated
 * headers joined with ", " — `set-cookie` kept as a list, as `Headers.get` joins it).
 */
export class ResponseHeaders {
  readonly #raw: Http.IncomingHttpHeaders
  constructor(raw: Http.IncomingHttpHeaders) {
    this.#raw = raw
  }
  get(name: string): string | null {
    const value = this.#raw[name.toLowerCase()]
    return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value
  }
  has(name: string): boolean {
    return this.#raw[name.toLowerCase()] !== undefined
  }
  *entries(): IterableIterator<[string, string]> {
    for (const name of Object.keys(this.#raw).sort()) {
      const value = this.get(name)
      if (value !== null) yield [name, value]
    }
  }
  keys(): IterableIterator<string> {
    return Array.from(this.entries(), ([name]) => name)[Symbol.iterator]()
  }
  values(): IterableIterator<string> {
    return Array.from(this.entries(), ([, value]) => value)[Symbol.iterator]()
  }
  forEach(callback: (value: string, name: string, headers: ResponseHeaders) => void): void {
    for (const [name, value] of this.entries()) callback(value, name, this)
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries()
  }
}

/**
 * A response whose body is already in memory — what the SDK reads of a `Response` (status, ok,
 * headers, url, text/json/arrayBuffer, body). Building a WHATWG `Response` and its `Headers` for
 * every call cost more CPU than the SDK's own work on it.
 */
export class BufferedResponse {
  readonly ok: boolean
  readonly redirected = false
  readonly type = "basic"
  #used = false
  readonly #content: Buffer
  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly headers: ResponseHeaders,
    content: Buffer,
    readonly url: string
  ) {
    this.ok = status >= 200 && status < 300
    this.#content = content
  }
  get bodyUsed(): boolean {
    return this.#used
  }
  /** Only for callers that stream (the SDK does not, for these calls). */
  get body(): ReadableStream<Uint8Array> | null {
    if (this.#content.length === 0) return null
    const bytes = this.#content
    return new ReadableStream({
      start(controller) {
        controller.enqueue(new Uint8Array(bytes))
        controller.close()
      }
    })
  }
  #take(): Buffer {
    if (this.#used) throw new TypeError("Body is unusable: Body has already been read")
    this.#used = true
    return this.#content
  }
  /** The body as text, at once (the body is in memory); once, like `text`. */
  textNow(): string {
    return this.#take().toString("utf8")
  }
  text(): Promise<string> {
    try {
      return Promise.resolve(this.textNow())
    } catch (e) {
      return Promise.reject(e)
    }
  }
  json(): Promise<unknown> {
    return this.text().then((text) => JSON.parse(text) as unknown)
  }
  arrayBuffer(): Promise<ArrayBuffer> {
    try {
      const bytes = this.#take()
      return Promise.resolve(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
    } catch (e) {
      return Promise.reject(e)
    }
  }
  clone(): BufferedResponse {
    if (this.#used) throw new TypeError("Response.clone: Body has already been consumed.")
    return new BufferedResponse(this.status, this.statusText, this.headers, this.#content, this.url)
  }
}

/** The code of the error a response over the bound rejects with (on the `TypeError`'s cause). */
const RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"

const tooLarge = (limit: number) =>
  new TypeError(`fetch failed: the response is larger than ${formatBytes(limit)}`, {
    cause: Object.assign(new Error(`the response is larger than ${formatBytes(limit)}`), { code: RESPONSE_TOO_LARGE })
  })

/** Whether a fetch failure (anywhere on its cause chain) is a response over the bound. */
export const isResponseTooLarge = (error: unknown): boolean => {
  let e: unknown = error
  for (let depth = 0; depth < 8 && typeof e === "object" && e !== null; depth++) {
    if ((e as { code?: unknown }).code === RESPONSE_TOO_LARGE) return true
    e = (e as { cause?: unknown }).cause
  }
  return false
}

/** A body inflated, to at most `limit` bytes (a zip bomb fails with `ERR_BUFFER_TOO_LARGE`). */
const inflate = (encoding: string | undefined, body: Buffer, limit: number): Buffer => {
  const bounded = { maxOutputLength: limit }
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return Zlib.gunzipSync(body, bounded)
    case "deflate":
      return Zlib.inflateSync(body, bounded)
    case "br":
      return Zlib.brotliDecompressSync(body, bounded)
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

/**
 * A URL parsed once for many requests (`NodeFetch.post`): parsing it and building node's request
 * options for every call is work a judge's calls, all to the same endpoint, need not repeat.
 */
export interface Target {
  readonly href: string
  readonly protocol: "http:" | "https:"
  readonly options: Http.RequestOptions
}

/** The target for a URL; a `TypeError` when it is not an http(s) URL. */
export const target = (url: string | URL): Target | TypeError => {
  let parsed: URL
  try {
    parsed = typeof url === "string" ? new URL(url) : url
  } catch (e) {
    return new TypeError("fetch failed: invalid URL", { cause: e })
  }
  const protocol = parsed.protocol === "https:" ? "https:" : parsed.protocol === "http:" ? "http:" : undefined
  if (protocol === undefined) return new TypeError(`fetch failed: unsupported protocol ${parsed.protocol}`)
  return { href: parsed.href, protocol, options: Url.urlToHttpOptions(parsed) }
}

/** A request under way (`NodeFetch.post`); `abort` destroys it, and `response` rejects with an `AbortError`. */
export interface PostCall {
  readonly response: Promise<BufferedResponse>
  readonly abort: () => void
}

/** The error `post` rejects with when its `timeoutMs` passes before the whole response is in. */
export class TimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no response within ${timeoutMs} ms`)
    this.name = "TimeoutError"
  }
}

export interface NodeFetch {
  readonly fetch: typeof globalThis.fetch
  /**
   * One request to a prepared target with headers as node:http takes them (names lower-case) and a
   * string body — without a WHATWG `Request`, `Headers` or `AbortController` per call. Rejects as
   * `fetch` does, and with a `TimeoutError` when `timeoutMs` passes before the response is in.
   */
  readonly post: (
    to: Target,
    headers: Readonly<Record<string, string>>,
    body: string,
    options: { readonly timeoutMs?: number | undefined }
  ) => PostCall
  /** Close idle keep-alive sockets (at the end of a run). */
  readonly close: () => void
}

export const make = (options: { readonly maxResponseBytes?: number | undefined } = {}): NodeFetch => {
  const limit = options.maxResponseBytes ?? Limits.responseBytes
  const agents = {
    "http:": new Http.Agent({ keepAlive: true }),
    "https:": new Https.Agent({ keepAlive: true })
  }

  /** The request itself: settles once, with the whole (inflated) response or the first failure. */
  const send = (
    to: Target,
    method: string,
    headers: Record<string, string>,
    body: string | Uint8Array | undefined,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    resolve: (response: BufferedResponse) => void,
    reject: (error: unknown) => void
  ): () => void => {
    // (A signal already aborted is `fetch`'s to refuse, before the body is read: `post` has none.)
    if (body !== undefined) {
      headers["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength)
    }
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const done = () => {
      settled = true
      signal?.removeEventListener("abort", onAbort)
      if (timer !== undefined) clearTimeout(timer)
    }
    const fail = (error: unknown) => {
      if (settled) return
      done()
      reject(error)
    }
    const transport = to.protocol === "https:" ? Https : Http
    const req = transport.request({ ...to.options, method, headers, agent: agents[to.protocol] }, (res) => {
      const chunks: Array<Buffer> = []
      let size = 0
      res.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > limit) {
          // The rest is not read: the socket is dropped.
          req.destroy()
          return fail(tooLarge(limit))
        }
        chunks.push(chunk)
      })
      res.on("error", (e) => fail(new TypeError("fetch failed", { cause: e })))
      res.on("end", () => {
        if (settled) return
        let content: Buffer
        try {
          content = inflate(
            res.headers["content-encoding"],
            chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
            limit
          )
        } catch (e) {
          if ((e as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE") return fail(tooLarge(limit))
          return fail(new TypeError("fetch failed: could not decompress the response", { cause: e }))
        }
        // The body is handed over decoded: its length and encoding no longer describe it.
        const headers = res.headers
        delete headers["content-encoding"]
        delete headers["content-length"]
        done()
        resolve(
          new BufferedResponse(
            res.statusCode ?? 500,
            res.statusMessage ?? "",
            new ResponseHeaders(headers),
            content,
            to.href
          )
        )
      })
    })
    const onAbort = () => {
      const error = signal === undefined
        ? new DOMException("This operation was aborted", "AbortError")
        : abortError(signal)
      req.destroy()
      fail(error)
    }
    signal?.addEventListener("abort", onAbort, { once: true })
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        req.destroy()
        fail(new TimeoutError(timeoutMs))
      }, timeoutMs)
    }
    req.on("error", (e) => fail(new TypeError("fetch failed", { cause: e })))
    req.end(body)
    return () => {
      if (!settled) onAbort()
    }
  }

  const nodeFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    new Promise<Response>((resolve, reject) => {
      const signal = init?.signal ?? undefined
      if (signal?.aborted === true) return reject(abortError(signal))
      const to = target(typeof input === "string" || input instanceof URL ? input : input.url)
      if (to instanceof TypeError) return reject(to)
      let body: string | Uint8Array | undefined
      try {
        body = requestBody(init?.body)
      } catch (e) {
        return reject(e)
      }
      send(
        to,
        init?.method ?? "GET",
        headerRecord(init?.headers),
        body,
        signal,
        undefined,
        resolve as unknown as (response: BufferedResponse) => void,
        reject
      )
    })

  const post: NodeFetch["post"] = (to, headers, body, options) => {
    let abort = () => {}
    const response = new Promise<BufferedResponse>((resolve, reject) => {
      abort = send(to, "POST", { ...headers }, body, undefined, options.timeoutMs, resolve, reject)
    })
    return { response, abort }
  }

  return {
    fetch: nodeFetch as typeof globalThis.fetch,
    post,
    close: () => {
      agents["http:"].destroy()
      agents["https:"].destroy()
    }
  }
}
