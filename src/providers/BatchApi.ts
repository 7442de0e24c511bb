/**
 * The providers' Batch APIs (`--batch`): upload a JSONL file of chat-completion requests, create a
 * batch over it, poll it, download its output and error files. Two shapes:
 *
 * - `openai` (OpenAI, and `openai-compatible` servers that expose `/v1/batches`): `POST /files`
 *   (purpose `batch`), `POST /batches` {input_file_id, endpoint, completion_window: "24h"},
 *   `GET /batches/{id}` (status validating → in_progress → finalizing → completed, or failed,
 *   expired, cancelled), `GET /batches` (to find a batch created by a run killed before it could
 *   journal the id), `GET /files/{id}/content`;
 * - `mistral`: the same files, `POST /batch/jobs` {input_files, model, endpoint}, `GET
 *   /batch/jobs/{id}` (QUEUED → RUNNING → SUCCESS, or FAILED, TIMEOUT_EXCEEDED, CANCELLED),
 *   `GET /batch/jobs`.
 *
 * Plain HTTP through `fetch` (the `openai` SDK has no Mistral jobs, and the multipart upload is a
 * dozen lines). Every failure is a `ProviderError` with the same kinds as a chat call, so the batch
 * mode retries, waits or stops as synchronous judging does. The key is sent as a bearer token only;
 * every text a response brings — a batch's output and error files, an error body — passes through the
 * run's redactor with the key and the base URL's credentials added (`domain/Redaction.ts`).
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { headerSecrets, none, type Redactor, urlSecrets } from "../domain/Redaction.js"
import { causeCode, unreachable } from "./ConnectionError.js"
import { splitCredentials } from "./Endpoint.js"
import { ProviderError } from "./LlmProvider.js"

export type BatchFlavour = "openai" | "mistral"

/** A batch as the batch mode sees it. */
export interface BatchStatus {
  readonly id: string
  /** The provider's own status word (for messages and the manifest). */
  readonly status: string
  /** `pending`: still to finish; `completed`: every request answered or errored; `ended`: failed, expired or cancelled (some requests may have answers). */
  readonly phase: "pending" | "completed" | "ended"
  readonly inputFileId?: string | undefined
  readonly outputFileId?: string | undefined
  readonly errorFileId?: string | undefined
  readonly total?: number | undefined
  readonly done?: number | undefined
  readonly failed?: number | undefined
}

export interface BatchApi {
  readonly flavour: BatchFlavour
  /** The request line for a chat-completion body (`custom_id` = the call's first judgment key). */
  readonly requestLine: (customId: string, body: Readonly<Record<string, unknown>>) => string
  readonly upload: (name: string, jsonl: string) => Effect.Effect<string, ProviderError>
  readonly create: (fileId: string) => Effect.Effect<BatchStatus, ProviderError>
  readonly retrieve: (batchId: string) => Effect.Effect<BatchStatus, ProviderError>
  /** The batch created over an uploaded file, if any (a run killed between creating it and journaling its id). */
  readonly findByInputFile: (fileId: string) => Effect.Effect<BatchStatus | undefined, ProviderError>
  readonly content: (fileId: string) => Effect.Effect<string, ProviderError>
}

export interface BatchApiOptions {
  readonly flavour: BatchFlavour
  /** The API's base URL, e.g. `https://api.openai.com/v1`. */
  readonly baseURL: string
  readonly apiKey?: Redacted.Redacted | undefined
  readonly model: string
  /** Per-request timeout (uploads and downloads of large files take longer: 10× this). Default 60 s. */
  readonly timeoutMs?: number | undefined
  /** The run's redactor (`Redaction`); the key and the base URL's secrets are added to it. */
  readonly redactor?: Redactor | undefined
}

const OPENAI_PHASE: Readonly<Record<string, BatchStatus["phase"]>> = {
  validating: "pending",
  in_progress: "pending",
  finalizing: "pending",
  cancelling: "pending",
  completed: "completed",
  failed: "ended",
  expired: "ended",
  cancelled: "ended"
}
const MISTRAL_PHASE: Readonly<Record<string, BatchStatus["phase"]>> = {
  QUEUED: "pending",
  RUNNING: "pending",
  CANCELLATION_REQUESTED: "pending",
  SUCCESS: "completed",
  FAILED: "ended",
  TIMEOUT_EXCEEDED: "ended",
  CANCELLED: "ended"
}

const str = (u: unknown): string | undefined => (typeof u === "string" && u !== "" ? u : undefined)
const num = (u: unknown): number | undefined => (typeof u === "number" && Number.isFinite(u) ? u : undefined)

const statusOf = (flavour: BatchFlavour, json: Record<string, unknown>): BatchStatus => {
  if (flavour === "mistral") {
    const status = String(json.status ?? "")
    const inputs = Array.isArray(json.input_files) ? json.input_files : []
    return {
      id: String(json.id ?? ""),
      status,
      phase: MISTRAL_PHASE[status] ?? "pending",
      inputFileId: str(inputs[0]),
      outputFileId: str(json.output_file),
      errorFileId: str(json.error_file),
      total: num(json.total_requests),
      done: num(json.succeeded_requests),
      failed: num(json.failed_requests)
    }
  }
  const status = String(json.status ?? "")
  const counts = typeof json.request_counts === "object" && json.request_counts !== null
    ? json.request_counts as Record<string, unknown>
    : {}
  return {
    id: String(json.id ?? ""),
    status,
    phase: OPENAI_PHASE[status] ?? "pending",
    inputFileId: str(json.input_file_id),
    outputFileId: str(json.output_file_id),
    errorFileId: str(json.error_file_id),
    total: num(counts.total),
    done: num(counts.completed),
    failed: num(counts.failed)
  }
}

const excerpt = (text: string) => {
  const clean = text.replace(/\s+/g, " ").trim()
  return clean.length > 300 ? `${clean.slice(0, 300)}…` : clean
}

/** An HTTP status as a provider error kind (as `OpenAiProvider` classifies a chat call's). */
const errorOf = (status: number, detail: string): ProviderError => {
  if (status === 429) {
    return new ProviderError({ kind: /quota|billing/i.test(detail) ? "quota" : "rate_limited", status, detail })
  }
  if (status === 401 || status === 403) return new ProviderError({ kind: "unauthorized", status, detail })
  if (status === 404) return new ProviderError({ kind: "not_found", status, detail })
  if (status === 402) return new ProviderError({ kind: "quota", status, detail })
  if (status === 408) return new ProviderError({ kind: "timeout", status, detail })
  if (status >= 500) return new ProviderError({ kind: "server", status, detail })
  return new ProviderError({ kind: "rejected", status, detail })
}

export const make = (options: BatchApiOptions): BatchApi => {
  const { flavour, model } = options
  // fetch refuses a URL with credentials: they are sent as Basic authentication when there is no key.
  const sent = splitCredentials(options.baseURL)
  const base = sent.url.replace(/\/+$/, "")
  const key = options.apiKey === undefined ? "" : Redacted.value(options.apiKey)
  const scrub = (options.redactor ?? none).with([
    ...(key === "" ? [] : headerSecrets(`Bearer ${key}`)),
    ...urlSecrets(options.baseURL)
  ]).text
  const timeoutMs = options.timeoutMs ?? 60_000
  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({
    ...(key !== ""
      ? { authorization: `Bearer ${key}` }
      : sent.authorization === undefined
      ? {}
      : { authorization: sent.authorization }),
    ...extra
  })

  /** One HTTP request; the body's text on a 2xx, else a `ProviderError`. Interrupting aborts it. */
  const call = (
    method: string,
    path: string,
    init: { body?: string | Uint8Array; headers?: Record<string, string>; long?: boolean } = {}
  ) =>
    Effect.tryPromise({
      try: async (signal) => {
        const timeout = AbortSignal.timeout(init.long === true ? timeoutMs * 10 : timeoutMs)
        const response = await fetch(`${base}${path}`, {
          method,
          headers: headers(init.headers),
          ...(init.body === undefined ? {} : { body: init.body }),
          signal: AbortSignal.any([signal, timeout])
        })
        return { status: response.status, text: scrub(await response.text()) }
      },
      catch: (e): ProviderError => {
        const error = e as Error
        if (error.name === "TimeoutError") {
          return new ProviderError({
            kind: "timeout",
            detail: `no response within ${init.long === true ? timeoutMs * 10 : timeoutMs} ms (${method} ${path})`
          })
        }
        const why = unreachable(error)
        if (why !== undefined) return new ProviderError({ kind: "unreachable", detail: `${why} (${method} ${path})` })
        const code = causeCode(error)
        return new ProviderError({
          kind: "network",
          detail: scrub(`${error.message}${code === undefined ? "" : ` (${code})`}`)
        })
      }
    }).pipe(Effect.flatMap(({ status, text }) => {
      if (status >= 200 && status < 300) return Effect.succeed(text)
      let detail = text
      try {
        const json = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown }
        detail = typeof json.error === "string" ? json.error : String(json.error?.message ?? json.message ?? text)
      } catch {
        // not JSON: the text itself
      }
      return Effect.fail(errorOf(status, excerpt(scrub(`${detail} (${method} ${path})`))))
    }))

  const json = (method: string, path: string, body?: unknown) =>
    Effect.flatMap(
      call(
        method,
        path,
        body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }
      ),
      (text) =>
        Effect.try({
          try: () => {
            const parsed = JSON.parse(text) as unknown
            if (typeof parsed !== "object" || parsed === null) throw new Error("not an object")
            return parsed as Record<string, unknown>
          },
          catch: () =>
            new ProviderError({
              kind: "server",
              detail: `${method} ${path} answered with something that is not a JSON object: ${excerpt(scrub(text))}`
            })
        })
    )

  const upload = (name: string, jsonl: string) => {
    const boundary = `----rag-eval-${Math.random().toString(36).slice(2)}`
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/jsonl\r\n\r\n`
    const body = Buffer.concat([Buffer.from(head), Buffer.from(jsonl), Buffer.from(`\r\n--${boundary}--\r\n`)])
    return call("POST", "/files", {
      body,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      long: true
    }).pipe(
      Effect.flatMap((text) => {
        try {
          const id = str((JSON.parse(text) as { id?: unknown }).id)
          if (id !== undefined) return Effect.succeed(id)
        } catch {
          // below
        }
        return Effect.fail(
          new ProviderError({
            kind: "server",
            detail: `the file upload answered without a file id: ${excerpt(scrub(text))}`
          })
        )
      })
    )
  }

  const jobs = flavour === "mistral" ? "/batch/jobs" : "/batches"

  return {
    flavour,
    requestLine: (customId, body) => {
      if (flavour === "mistral") {
        // The job names the model; a request line carries the body only.
        const { model: _model, ...rest } = body
        return JSON.stringify({ custom_id: customId, body: rest })
      }
      return JSON.stringify({ custom_id: customId, method: "POST", url: "/v1/chat/completions", body })
    },
    upload,
    create: (fileId) =>
      Effect.map(
        json(
          "POST",
          jobs,
          flavour === "mistral"
            ? { input_files: [fileId], model, endpoint: "/v1/chat/completions", metadata: { source: "rag-eval" } }
            : {
              input_file_id: fileId,
              endpoint: "/v1/chat/completions",
              completion_window: "24h",
              metadata: { source: "rag-eval" }
            }
        ),
        (j) => statusOf(flavour, j)
      ),
    retrieve: (batchId) =>
      Effect.map(json("GET", `${jobs}/${encodeURIComponent(batchId)}`), (j) => statusOf(flavour, j)),
    findByInputFile: (fileId) =>
      Effect.map(json("GET", `${jobs}?limit=100`), (j) => {
        const data = Array.isArray(j.data) ? j.data : []
        for (const item of data) {
          if (typeof item !== "object" || item === null) continue
          const s = statusOf(flavour, item as Record<string, unknown>)
          if (s.inputFileId === fileId) return s
        }
        return undefined
      }),
    content: (fileId) => call("GET", `/files/${encodeURIComponent(fileId)}/content`, { long: true })
  }
}
