/**
 * Judgment keys: everything that could change a verdict, hashed. The journal, the cache, `serve` and
 * the cluster all find a judgment by its key, so this text must never change for the same inputs.
 */
import type { EvalCase } from "../domain/Case.js"
import type { JudgeTask, Judgment, Verdict } from "../domain/Judgment.js"
import type { Rubric } from "../domain/Rubric.js"
import { sha256 } from "../judges/Prompt.js"
import type { ListSpec, TaskSpec } from "./Pipeline.js"

/**
 * A canonical JSON (sorted keys, undefined dropped) so identical settings always hash the same. This
 * definition is the rule; `canonicalJson` gives the same text, written directly for plain data.
 */
export const canonicalJsonByReplacer = (value: unknown): string =>
  JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
        Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort((
          [a],
          [b]
        ) => (a < b ? -1 : a > b ? 1 : 0))
      )
      : v)

/** What `JSON.stringify` escapes in a string: quotes, backslashes, control characters and surrogates (lone ones; pairs are tested too). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/

/**
 * `JSON.stringify` of a string, the same text: the string in quotes when it holds nothing to escape.
 * One test of a regular expression costs half of Node 20's `JSON.stringify` of a string (~3 ns a
 * character), and every key writes a few dozen (`JudgmentKey.test.ts` compares them).
 */
export const jsonString = (s: string): string => NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * `canonicalJsonByReplacer` of plain data — strings, numbers, booleans, null, arrays and plain
 * objects — written in one walk, without the copy of every object the replacer makes (a check of
 * claims hashes its whole list of claims: this ran for every list judged). Undefined for anything
 * else, which the replacer then writes: an object with `toJSON` or another prototype, a key starting
 * with a digit (JSON orders index-like keys first), `undefined` in an array, functions, symbols.
 */
const plainJson = (v: unknown): string | undefined => {
  switch (typeof v) {
    case "string":
      return jsonString(v)
    case "number":
      return JSON.stringify(v)
    case "boolean":
      return v ? "true" : "false"
    case "object": {
      if (v === null) return "null"
      if (Array.isArray(v)) {
        let out = "["
        for (let i = 0; i < v.length; i++) {
          const x: unknown = v[i]
          if (x === undefined) return undefined
          const json = plainJson(x)
          if (json === undefined) return undefined
          out += i === 0 ? json : `,${json}`
        }
        return `${out}]`
      }
      const proto: unknown = Object.getPrototypeOf(v)
      if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === "function") {
        return undefined
      }
      const record = v as Record<string, unknown>
      const keys = Object.keys(record).sort(byCodeUnits)
      let out = "{"
      for (const key of keys) {
        const x = record[key]
        if (x === undefined) continue
        const c = key.charCodeAt(0)
        if (c >= 48 && c <= 57) return undefined
        const json = plainJson(x)
        if (json === undefined) return undefined
        out += `${out.length === 1 ? "" : ","}${jsonString(key)}:${json}`
      }
      return `${out}}`
    }
    default:
      return undefined
  }
}

/** A canonical JSON (sorted keys, undefined dropped): `canonicalJsonByReplacer`, written directly where it can be. */
export const canonicalJson = (value: unknown): string => plainJson(value) ?? canonicalJsonByReplacer(value)

/** Key of one judgment: everything that could change its verdict. Also the cache key across runs. */
export const judgmentKey = (parts: {
  readonly pipeline: string
  readonly caseId: string
  /** Hash of the task's variables: an edited answer or passage is a new judgment, never a stale one. */
  readonly content: string
  readonly iteration: number
  readonly criterion: string
  readonly target: string
  readonly promptHash: string
  readonly provider: string
  readonly model: string
  readonly params: Readonly<Record<string, unknown>>
  /** The judge's server when it is not the provider's public API (see `Judge.endpoint`); absent otherwise. */
  readonly endpoint?: string | undefined
}): string => sha256(keyJson(parts)).slice(0, 32)

/** Judge params → canonical JSON, once per params object (a judge's params never change). */
const paramsJson = new WeakMap<object, string>()

/**
 * `canonicalJson(parts)` of a judgment key, built directly (keys in sorted order): the same string,
 * so keys stay what they were, at a fraction of the cost (it runs for every judgment).
 */
export const keyJson = (parts: Parameters<typeof judgmentKey>[0]): string =>
  `${keyJsonUpToTarget(parts)}${jsonString(parts.target)}}`

/** `keyJson` up to the target's value, which comes last (sorted keys): shared by a list's items. */
const keyJsonUpToTarget = (parts: Omit<Parameters<typeof judgmentKey>[0], "target">): string => {
  let params = paramsJson.get(parts.params)
  if (params === undefined) paramsJson.set(parts.params, params = canonicalJson(parts.params))
  const str = (v: unknown) => typeof v === "string" ? jsonString(v) : JSON.stringify(v)
  const endpoint = parts.endpoint === undefined ? "" : `"endpoint":${str(parts.endpoint)},`
  return `{"caseId":${str(parts.caseId)},"content":${str(parts.content)},"criterion":${
    str(parts.criterion)
  },${endpoint}"iteration":${str(parts.iteration)},"model":${str(parts.model)},"params":${params},"pipeline":${
    str(parts.pipeline)
  },"promptHash":${str(parts.promptHash)},"provider":${str(parts.provider)},"target":`
}

/** Tasks of one case usually share one vars object: hash it once. */
const contentHashes = new WeakMap<object, string>()
const contentHash = (vars: Readonly<Record<string, string>>) => {
  let hash = contentHashes.get(vars)
  if (hash === undefined) {
    contentHashes.set(vars, hash = sha256(stringRecordJson(vars) ?? canonicalJson(vars)).slice(0, 16))
  }
  return hash
}

/**
 * `canonicalJson` of a record of strings, written directly (the same text, several times faster);
 * undefined for anything else. Its own keys in the order they come when that is sorted order (a
 * spec's variables are written so: no sort), else sorted.
 */
export const stringRecordJson = (vars: Readonly<Record<string, unknown>>): string | undefined => {
  let previous: string | undefined
  for (const key in vars) {
    if (!Object.hasOwn(vars, key)) continue
    if (previous !== undefined && !(previous < key)) return recordJson(vars, Object.keys(vars).sort())
    previous = key
  }
  return recordJson(vars, Object.keys(vars))
}

/** The record's `keys`, in that order, with their string values; undefined at a value of another type. */
const recordJson = (vars: Readonly<Record<string, unknown>>, keys: ReadonlyArray<string>): string | undefined => {
  let out = "{"
  for (const key of keys) {
    const value = vars[key]
    if (value === undefined) continue
    if (typeof value !== "string") return undefined
    out += `${out.length === 1 ? "" : ","}${jsonString(key)}:${jsonString(value)}`
  }
  return `${out}}`
}

/** The key of a judge task (also the cache key), as the CLI and `rag-eval serve` both compute it. */
/** Who judges, as far as keys are concerned. */
export interface KeyedJudge {
  readonly provider: string
  readonly model: string
  readonly params: Readonly<Record<string, unknown>>
  readonly endpoint?: string | undefined
}

export const taskKey = (
  judge: KeyedJudge,
  task: Pick<JudgeTask, "pipeline" | "caseId" | "iteration" | "rubric" | "target" | "vars">
) =>
  judgmentKey({
    pipeline: task.pipeline,
    caseId: task.caseId,
    content: contentHash(task.vars),
    iteration: task.iteration,
    criterion: task.rubric.id,
    target: task.target,
    promptHash: task.rubric.hash,
    provider: judge.provider,
    model: judge.model,
    params: judge.params,
    endpoint: judge.endpoint
  })

export const keyFor = (
  pipeline: string,
  judge: KeyedJudge,
  rubric: Rubric,
  c: Pick<EvalCase, "id">,
  iteration: number,
  spec: TaskSpec
) => taskKey(judge, { pipeline, caseId: c.id, iteration, rubric, target: spec.target, vars: spec.vars })

/**
 * `canonicalJson({ vars, items })` of a list spec whose items are plain `{ target, vars }` and whose
 * vars are records of strings (every built-in pipeline's), written directly: the same text, without
 * the generic walk's sorting of every item's keys (a claim check hashes one list per text of every
 * case). Undefined for anything else, which `canonicalJson` then writes.
 */
export const listJson = (spec: ListSpec): string | undefined => {
  for (const item of spec.items) {
    if (Object.getPrototypeOf(item) !== Object.prototype) return undefined
    let own = 0
    for (const k in item) if (Object.hasOwn(item, k)) own++
    if (own !== 2 || !Object.hasOwn(item, "vars")) return undefined
  }
  return listItemsJson(spec)
}

/**
 * `canonicalJson({ vars, items: items.map(({ target, vars }) => ({ target, vars })) })` — each item
 * as its target and variables only, whatever else it carries (a claim check's typed `claim`) —
 * written directly, without that copy; undefined where `canonicalJson` writes it otherwise.
 */
const listItemsJson = (spec: Pick<ListSpec, "vars" | "items">): string | undefined => {
  const vars = strictStringRecordJson(spec.vars)
  if (vars === undefined) return undefined
  let items = "["
  for (let i = 0; i < spec.items.length; i++) {
    const item = spec.items[i]!
    if (typeof item.target !== "string") return undefined
    const itemVars = strictStringRecordJson(item.vars)
    if (itemVars === undefined) return undefined
    items += `${i === 0 ? "" : ","}{"target":${jsonString(item.target)},"vars":${itemVars}}`
  }
  return `{"items":${items}],"vars":${vars}}`
}

/** `stringRecordJson` of a plain record, undefined where `canonicalJson` orders keys otherwise (index-like keys). */
const strictStringRecordJson = (vars: Readonly<Record<string, unknown>>): string | undefined => {
  if (vars === null || typeof vars !== "object" || Object.getPrototypeOf(vars) !== Object.prototype) return undefined
  for (const key in vars) {
    const c = key.charCodeAt(0)
    if (c >= 48 && c <= 57) return undefined
  }
  return stringRecordJson(vars)
}

/** A list's content hash covers every item: a grade given in context changes with the context. */
const listContentHashes = new WeakMap<ListSpec, string>()
const listContentHash = (spec: ListSpec) => {
  let hash = listContentHashes.get(spec)
  if (hash === undefined) {
    // Each item's target and variables: the typed `claim` restates the target, and keys stay as they were.
    const json = listItemsJson(spec) ??
      canonicalJson({ vars: spec.vars, items: spec.items.map((i) => ({ target: i.target, vars: i.vars })) })
    listContentHashes.set(spec, hash = sha256(json).slice(0, 16))
  }
  return hash
}

/** Keys of a list's items, one per target: `judgmentKey` of each, the parts they share written once. */
export const listKeys = (
  pipeline: string,
  judge: KeyedJudge,
  rubric: Rubric,
  c: Pick<EvalCase, "id">,
  iteration: number,
  spec: ListSpec
) => {
  const shared = keyJsonUpToTarget({
    pipeline,
    caseId: c.id,
    content: listContentHash(spec),
    iteration,
    criterion: rubric.id,
    promptHash: rubric.hash,
    provider: judge.provider,
    model: judge.model,
    params: judge.params,
    endpoint: judge.endpoint
  })
  return spec.items.map((item) => sha256(`${shared}${jsonString(item.target)}}`).slice(0, 32))
}

/**
 * A judgment as journaled: the task's identity, the verdict, and who judged it. `target`: an item's
 * own target, for the items of a list task (which has none of its own).
 */
export const toJudgment = (
  key: string,
  task: Pick<JudgeTask, "caseId" | "ordinal" | "iteration" | "rubric"> & { readonly target?: string | undefined },
  v: Verdict,
  judge: Pick<KeyedJudge, "provider" | "model">,
  latencyMs: number,
  target: string | undefined = task.target
): Judgment => {
  // Assigned in this order (the journal's line order), optional fields only when present.
  const j: Record<string, unknown> = {
    key,
    caseId: task.caseId,
    ordinal: task.ordinal,
    iteration: task.iteration,
    criterion: task.rubric.id,
    target,
    status: v.status
  }
  if (v.failure !== undefined) j.failure = v.failure
  j.score = v.score
  if (v.confidence !== undefined) j.confidence = v.confidence
  j.reason = v.reason
  if (v.evidence !== undefined) j.evidence = v.evidence
  if (v.value !== undefined) j.value = v.value
  if (v.raw !== undefined) j.raw = v.raw
  j.usage = v.usage
  j.attempts = v.attempts
  j.latencyMs = Math.round(latencyMs)
  j.provider = judge.provider
  j.model = judge.model
  return j as Judgment
}
