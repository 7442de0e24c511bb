/**
 * The page's calls to the review's JSON API: same origin, with the session cookie when the server
 * has a token; state-changing calls carry `X-Requested-By: rag-eval`. Types are the API's own
 * schemas' (`../Domain.ts`).
 */
import type {
  Agreement,
  CasePage,
  CaseView,
  Comparison,
  LabelList,
  LabelRequest,
  ReviewQueue,
  RunDetail,
  RunList
} from "../Domain.js"

export type { Agreement, CasePage, CaseView, Comparison, LabelList, LabelRequest, ReviewQueue, RunDetail, RunList }
export type CaseTarget = CaseView["targets"][number]
export type Label = NonNullable<CaseTarget["label"]>

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

const call = async <A>(path: string, init?: RequestInit): Promise<A> => {
  const response = await fetch(path, { credentials: "same-origin", ...init })
  const text = await response.text()
  let body: unknown
  try {
    body = text === "" ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  if (!response.ok) {
    const message = typeof body === "object" && body !== null && "error" in body
      ? String((body as { error: { message?: unknown } }).error.message ?? response.statusText)
      : `${response.status} ${response.statusText}`
    throw new ApiError(response.status, message)
  }
  return body as A
}

const query = (params: Readonly<Record<string, string | number | boolean | undefined | null>>): string => {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v))
  const s = q.toString()
  return s === "" ? "" : `?${s}`
}

const run = (id: string) => `/api/runs/${encodeURIComponent(id)}`

export const api = {
  runs: (params: { pipeline?: string; q?: string } = {}) => call<RunList>(`/api/runs${query(params)}`),
  run: (id: string, iteration?: number) => call<RunDetail>(`${run(id)}${query({ iteration })}`),
  cases: (id: string, params: Readonly<Record<string, string | number | boolean | undefined>>) =>
    call<CasePage>(`${run(id)}/cases${query(params)}`),
  case: (id: string, caseId: string, iteration?: number) =>
    call<CaseView>(`${run(id)}/cases/${encodeURIComponent(caseId)}${query({ iteration })}`),
  queue: (id: string, params: { size?: number; seed?: number; iteration?: number } = {}) =>
    call<ReviewQueue>(`${run(id)}/queue${query(params)}`),
  agreement: (id: string) => call<Agreement>(`${run(id)}/agreement`),
  labels: (id: string) => call<LabelList>(`${run(id)}/labels`),
  label: (id: string, body: LabelRequest) =>
    call<{ label: Label; agreement: Agreement }>(`${run(id)}/labels`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-requested-by": "rag-eval" },
      body: JSON.stringify(body)
    }),
  compare: (params: { a: string; b: string; metric?: string; offset?: number; limit?: number }) =>
    call<Comparison>(`/api/compare${query(params)}`)
}
