/**
 * A minimal OTLP/HTTP receiver on 127.0.0.1 for tests: it accepts `POST /v1/traces` (JSON, as
 * `--trace-otlp` sends it), keeps every body as received (to search for secrets) and the spans
 * decoded from them (to assert the tree).
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string | undefined
  readonly name: string
  readonly attributes: Readonly<Record<string, string | number | boolean>>
}

export interface OtlpReceiver {
  readonly url: string
  readonly bodies: ReadonlyArray<string>
  readonly spans: () => ReadonlyArray<ReceivedSpan>
  readonly close: () => Promise<void>
}

interface OtlpValue {
  readonly stringValue?: string
  readonly intValue?: string | number
  readonly doubleValue?: number
  readonly boolValue?: boolean
}

const valueOf = (v: OtlpValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.doubleValue ?? v.boolValue ?? "")

export const start = (): Promise<OtlpReceiver> => {
  const bodies: Array<string> = []
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/v1/traces") bodies.push(Buffer.concat(chunks).toString("utf8"))
      res.writeHead(req.url === "/v1/traces" ? 200 : 404, { "content-type": "application/json" })
      res.end("{}")
    })
  })
  const spans = (): Array<ReceivedSpan> =>
    bodies.flatMap((body) => {
      const data = JSON.parse(body) as {
        resourceSpans: ReadonlyArray<{
          scopeSpans: ReadonlyArray<{
            spans: ReadonlyArray<{
              traceId: string
              spanId: string
              parentSpanId?: string
              name: string
              attributes?: ReadonlyArray<{ key: string; value: OtlpValue }>
            }>
          }>
        }>
      }
      return data.resourceSpans.flatMap((r) =>
        r.scopeSpans.flatMap((s) =>
          s.spans.map((span) => ({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId === "" ? undefined : span.parentSpanId,
            name: span.name,
            attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, valueOf(a.value)]))
          }))
        )
      )
    })
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        bodies,
        spans,
        close: () => new Promise((done) => server.close(() => done()))
      })
    })
  })
}
