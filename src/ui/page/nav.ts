/**
 * Where "next case" and "previous case" go from a case: the list it was opened from (its filters and
 * order, a page of ids at a time, fetched as needed) or the review queue.
 */
import { api, type ReviewQueue } from "./api.js"

export type Navigation =
  | {
    readonly kind: "list"
    readonly runId: string
    readonly query: Readonly<Record<string, string | number | undefined>>
    ids: Array<string>
    offset: number
    total: number
    readonly iteration: number
  }
  | { readonly kind: "queue"; readonly runId: string; readonly items: ReviewQueue["items"]; readonly iteration: number }

let current: Navigation | undefined

export const navigation = {
  set: (n: Navigation) => {
    current = n
  },
  get: (): Navigation | undefined => current,
  /** The case `step` (±1) from `caseId` in the current list or queue; undefined at an end or outside it. */
  neighbour: async (runId: string, caseId: string, step: 1 | -1): Promise<string | undefined> => {
    const n = current
    if (n === undefined || n.runId !== runId) return undefined
    if (n.kind === "queue") {
      const at = n.items.findIndex((i) => i.caseId === caseId)
      return at === -1 ? n.items[0]?.caseId : n.items[at + step]?.caseId
    }
    const at = n.ids.indexOf(caseId)
    if (at === -1) return undefined
    const next = at + step
    if (next >= 0 && next < n.ids.length) return n.ids[next]
    const absolute = n.offset + next
    if (absolute < 0 || absolute >= n.total) return undefined
    // Across a page boundary: fetch the page holding it.
    const limit = Number(n.query["limit"] ?? 50)
    const offset = Math.floor(absolute / limit) * limit
    const page = await api.cases(runId, { ...n.query, offset })
    n.ids = page.rows.map((r) => r.caseId)
    n.offset = page.offset
    n.total = page.total
    return n.ids[absolute - offset]
  },
  position: (runId: string, caseId: string): string | undefined => {
    const n = current
    if (n === undefined || n.runId !== runId) return undefined
    if (n.kind === "queue") {
      const at = n.items.findIndex((i) => i.caseId === caseId)
      return at === -1 ? undefined : `queue ${at + 1} of ${n.items.length}: ${n.items[at]!.reason}`
    }
    const at = n.ids.indexOf(caseId)
    return at === -1 ? undefined : `case ${n.offset + at + 1} of ${n.total} in the list`
  }
}
