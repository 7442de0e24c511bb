/**
 * A labels file for `rag-eval calibrate --labels` (TREC qrels aside: `Labels.ts`), read into the one
 * labels format, `Label` (`domain/Label.ts`), before anything is paired — whatever form it was in:
 *
 * - **The labels format**: JSON Lines (or a JSON array) of `Label` objects — what the browser review
 *   appends to `<run-dir>/labels.jsonl`. Append-only: a later line by the same person about the same
 *   case and target replaces their earlier one (counted as `replaced`).
 * - **Flat rows**, CSV / JSON / JSONL, one label a row, the form told by its columns (names are
 *   matched ignoring case, spaces, `_` and `-`); `id` (or `caseId`) names the case, and an optional
 *   `by` (or `annotator`) who labelled, `note` a note:
 *   - rubric grades: `id, criterion, grade` (an integer);
 *   - claim verdicts: `id, claim, verdict` — `claim` is the claim's text as the judge extracted it, or
 *     its 1-based number in the report (`claim_index` also names it by number); `verdict` is
 *     `entailed`, `neutral` or `contradicted`; `side` (`answer`, the default, or `reference`) says
 *     whose claim it is, `against` what it was checked against: `reference`, `answer`, `contexts`
 *     (the retrieved passages together: some passage entails it) or `context 2` (one passage).
 *     Default: an answer's claim against the reference when the case has one, else against the
 *     contexts; a reference's claim against the answer;
 *   - per-case metrics: `id, metric, value` (a number; the metric as the run names it, `f1`,
 *     `contextRecall` — case, `_` and `-` aside);
 *   - preferences: `id_a, id_b, preference` — −2 (A much better) … 2 (B much better), RAGChecker's
 *     scale — with an optional `aspect` (`correctness`, `completeness`, `overall`…). A and B are two
 *     cases of the run; with a second run (`--runs DIR`), A is the case in the run and B in the
 *     other run (`id_b` may then be left out: the same case).
 *   Hand-written files do not repeat themselves: a second row about the same target by the same
 *   person is an error naming the first line.
 *
 * A claim given by its text is matched to the judge's claims of the run (`RunClaims.foldClaim`);
 * a text the judge never extracted makes no `Label` and is returned as unpaired, with the reason.
 * Every other problem — a missing column, a verdict not on the scale, a row that is no form — is an
 * `InputError` naming the file, the line and the field.
 */
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import { InputError } from "../domain/Errors.js"
import {
  type ClaimAgainst,
  ClaimVerdict,
  Label,
  labelKey,
  type LabelTarget,
  type LabelValue,
  Preference
} from "../domain/Label.js"
import type * as RunFiles from "../domain/RunFiles.js"
import { readRows } from "../load/Rows.js"
import { checkReadable } from "./Labels.js"
import type { Side } from "./RunClaims.js"

/** One label and where it came from: its line in the labels file (or its 1-based position in a list). */
export interface LabelLine {
  readonly label: Label
  readonly line: number
}

export type UnpairedLabel = typeof RunFiles.UnpairedLabel.Type

/** The forms a row can take. */
export type LabelForm = "labels" | "grade" | "claim" | "metric" | "preference"

/** What the reader needs to know of the run the labels are paired with. */
export interface LabelContext {
  readonly runId: string
  /** The second run a preference compares with (`--runs DIR`), if any. */
  readonly otherRunId?: string | undefined
  /** Whether the run judged claims of the case's reference (undefined: the case has no claim judgments). */
  readonly hasReference: (caseId: string) => boolean | undefined
  /** The 1-based number of the judge's claim of `side` with this text (folded), if any. */
  readonly claimIndex: (caseId: string, side: Side, text: string) => number | undefined
}

export interface LabelSet {
  /** The labels file, or a description of where in-memory labels came from. */
  readonly file: string
  readonly format: "csv" | "json" | "jsonl"
  readonly labels: ReadonlyArray<LabelLine>
  /** Rows that could not become a `Label` against the run (a claim text the judge never extracted). */
  readonly unresolved: ReadonlyArray<UnpairedLabel>
  /** Lines of the labels format replaced by a later line of the same person about the same target. */
  readonly replaced: number
  /** Rows read, per form. */
  readonly forms: Readonly<Record<LabelForm, number>>
}

/** A column name folded: `Claim_Index`, `claim index` and `claimIndex` are one name. */
const fold = (name: string): string => name.toLowerCase().replace(/[\s_-]+/g, "")

interface Field {
  readonly name: string
  readonly value: unknown
}

/**
 * The row's fields by folded name. An empty value (an empty CSV cell, `""`, null) is no value: the
 * column counts as absent for that row, except that `empty(name)` tells a required one apart.
 */
const fieldOf = (values: Readonly<Record<string, unknown>>) => {
  const byFolded = new Map<string, Field>()
  const empties = new Map<string, string>()
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) {
      empties.set(fold(name), name)
      continue
    }
    byFolded.set(fold(name), { name, value })
  }
  const get = (...names: ReadonlyArray<string>): Field | undefined => {
    for (const n of names) {
      const f = byFolded.get(n)
      if (f !== undefined) return f
    }
    return undefined
  }
  return Object.assign(get, {
    /** The column's name as written, when it is present but empty. */
    empty: (...names: ReadonlyArray<string>): string | undefined => {
      for (const n of names) {
        const e = empties.get(n)
        if (e !== undefined) return e
      }
      return undefined
    }
  })
}

const textOf = (value: unknown): string | undefined =>
  typeof value === "string"
    ? (value.trim() === "" ? undefined : value.trim())
    : typeof value === "number" && Number.isFinite(value)
    ? String(value)
    : undefined

const numberOf = (value: unknown): number | undefined => {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined
  if (typeof value !== "string" || value.trim() === "") return undefined
  const n = Number(value.trim())
  return Number.isFinite(n) ? n : undefined
}

const integerPattern = /^[+-]?\d+$/
const integerOf = (value: unknown): number | undefined => {
  const t = typeof value === "number" ? String(value) : typeof value === "string" ? value.trim() : ""
  return integerPattern.test(t) ? Number(t) : undefined
}

const VERDICT_WORDS: ReadonlyArray<string> = ClaimVerdict.literals

const parseAgainst = (value: string): ClaimAgainst | undefined => {
  const t = value.trim().toLowerCase()
  if (t === "reference" || t === "answer" || t === "contexts") return t
  const m = /^(?:context|passage)\s*[:#]?\s*([1-9]\d*)$/.exec(t)
  return m === null ? undefined : { context: Number(m[1]) }
}

const formsText =
  "a labels-format line (caseId, target, label, by, at), or a row of one of the forms: id, criterion, grade · " +
  "id, claim (or claim_index), verdict · id, metric, value · id_a, id_b, preference"

/** The row's form, from its columns. */
const formOf = (field: ReturnType<typeof fieldOf>): LabelForm | undefined => {
  if (field("target") !== undefined && field("label") !== undefined) return "labels"
  if (field("preference") !== undefined || field("ida") !== undefined) return "preference"
  if (field("verdict") !== undefined || field("claim") !== undefined || field("claimindex") !== undefined) {
    return "claim"
  }
  if (field("metric") !== undefined || field("value") !== undefined) return "metric"
  if (field("criterion") !== undefined || field("grade") !== undefined) return "grade"
  return undefined
}

/** The first decoding issue of a labels-format line, as a field path and a message. */
const firstIssue = (e: ParseResult.ParseError): { readonly field?: string; readonly problem: string } => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(e)
  const first = issues[0]
  if (first === undefined) return { problem: "not a label" }
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? "s" : ""})` : ""
  return first.path.length === 0
    ? { problem: `not a label: ${first.message}${more}` }
    : { field: first.path.join("."), problem: `not a label: ${first.message}${more}` }
}

const decodeLabel = Schema.decodeUnknownEither(Label)

interface Converted {
  readonly label?: Label | undefined
  readonly unresolved?: UnpairedLabel | undefined
}

/**
 * One row → a `Label` (or an unresolved claim text), or the problem. `at` of a flat row is the file's
 * modification time: when the labels were written, as far as anyone can tell.
 */
const convertRow = (
  file: string,
  line: number,
  values: Readonly<Record<string, unknown>>,
  context: LabelContext | undefined,
  at: string
): Effect.Effect<{ readonly form: LabelForm; readonly converted: Converted }, InputError> =>
  Effect.gen(function*() {
    const fail = (problem: string, field?: string) =>
      new InputError({ file, line, problem, ...(field === undefined ? {} : { field }) })
    const field = fieldOf(values)
    const form = formOf(field)
    if (form === undefined) {
      const columns = Object.keys(values)
      return yield* fail(
        `not a label: ${columns.length === 0 ? "no fields" : `fields ${columns.join(", ")}`}; expected ${formsText}`
      )
    }
    if (form === "labels") {
      const decoded = decodeLabel(values)
      if (decoded._tag === "Left") {
        const issue = firstIssue(decoded.left)
        return yield* fail(issue.problem, issue.field)
      }
      return { form, converted: { label: decoded.right } }
    }

    const required = (names: ReadonlyArray<string>, what: string): Effect.Effect<Field, InputError> => {
      const f = field(...names)
      if (f !== undefined) return Effect.succeed(f)
      const empty = field.empty(...names)
      return Effect.fail(
        empty === undefined
          ? fail(`missing ${what}: ${formExpectation[form]}`)
          : fail(`${what} is empty or not a string / number`, empty)
      )
    }
    const by = textOf(field("by", "annotator", "labeller", "labeler", "rater")?.value) ?? ""
    const note = textOf(field("note")?.value)
    const common = { by, at, ...(note === undefined ? {} : { note: note.slice(0, 2_000) }) }

    if (form === "preference") {
      const a = yield* required(["ida", "id", "caseid"], "id_a")
      const idA = textOf(a.value)
      if (idA === undefined) return yield* fail("id_a is empty or not a string / number", a.name)
      const b = field("idb")
      const idB = b === undefined ? undefined : textOf(b.value)
      if (b !== undefined && idB === undefined) return yield* fail("id_b is not a string / number", b.name)
      const p = yield* required(["preference"], "preference")
      const preference = integerOf(p.value)
      if (preference === undefined || !Schema.is(Preference)(preference)) {
        return yield* fail(
          `preference ${
            JSON.stringify(p.value)
          } is not one of -2, -1, 0, 1, 2 (−2 A is much better … 2 B is much better)`,
          p.name
        )
      }
      const aspect = textOf(field("aspect")?.value)
      if (context === undefined) return yield* fail(needsRun, p.name)
      const otherRunId = context.otherRunId ?? context.runId
      if (idB === undefined && context.otherRunId === undefined) {
        return yield* fail(
          "missing id_b: without a second run (--runs DIR) a preference compares two cases of the run",
          "id_b"
        )
      }
      if (context.otherRunId === undefined && idB === idA) {
        return yield* fail(`id_a and id_b are the same case ("${idA}"): a preference compares two answers`, b?.name)
      }
      const target: LabelTarget = {
        kind: "preference",
        other: { runId: otherRunId, ...(idB === undefined || idB === idA ? {} : { caseId: idB }) },
        ...(aspect === undefined ? {} : { aspect })
      }
      return {
        form,
        converted: { label: { runId: context.runId, caseId: idA, target, label: { preference }, ...common } }
      }
    }

    const id = yield* required(["id", "caseid"], "id")
    const caseId = textOf(id.value)
    if (caseId === undefined) return yield* fail("id is empty or not a string / number", id.name)

    if (form === "grade") {
      const c = yield* required(["criterion"], "criterion")
      const criterion = textOf(c.value)
      if (criterion === undefined) return yield* fail("criterion is empty or not a string", c.name)
      const g = yield* required(["grade"], "grade")
      const grade = integerOf(g.value)
      if (grade === undefined) return yield* fail(`grade ${JSON.stringify(g.value)} is not an integer`, g.name)
      return {
        form,
        converted: { label: { caseId, target: { kind: "grade", criterion }, label: { grade }, ...common } }
      }
    }

    if (form === "metric") {
      const m = yield* required(["metric"], "metric")
      const metric = textOf(m.value)
      if (metric === undefined) return yield* fail("metric is empty or not a string", m.name)
      const v = yield* required(["value"], "value")
      const value = numberOf(v.value)
      if (value === undefined) return yield* fail(`value ${JSON.stringify(v.value)} is not a number`, v.name)
      if (context === undefined) return yield* fail(needsRun, m.name)
      return {
        form,
        converted: { label: { caseId, target: { kind: "metric", metric }, label: { value }, ...common } }
      }
    }

    // Claim verdicts.
    const v = yield* required(["verdict"], "verdict")
    const verdictText = textOf(v.value)?.toLowerCase()
    if (verdictText === undefined || !VERDICT_WORDS.includes(verdictText)) {
      return yield* fail(
        `verdict ${JSON.stringify(v.value)} is not one of ${VERDICT_WORDS.join(", ")}`,
        v.name
      )
    }
    const verdict = verdictText as ClaimVerdict
    const sideField = field("side")
    const sideText = sideField === undefined ? "answer" : textOf(sideField.value)?.toLowerCase()
    if (sideText !== "answer" && sideText !== "reference") {
      return yield* fail(`side ${JSON.stringify(sideField?.value)} is not answer or reference`, sideField?.name)
    }
    const side: Side = sideText
    const againstField = field("against")
    let against: ClaimAgainst | undefined
    if (againstField !== undefined) {
      const t = textOf(againstField.value)
      against = t === undefined ? undefined : parseAgainst(t)
      if (against === undefined) {
        return yield* fail(
          `against ${JSON.stringify(againstField.value)} is not reference, answer, contexts or "context N"`,
          againstField.name
        )
      }
    }
    const indexField = field("claimindex")
    const claimField = field("claim")
    let index: number | undefined
    let text: string | undefined
    if (indexField !== undefined) {
      index = integerOf(indexField.value)
      if (index === undefined || index < 1) {
        return yield* fail(`claim_index ${JSON.stringify(indexField.value)} is not a number from 1`, indexField.name)
      }
    }
    if (claimField !== undefined) {
      const asIndex = integerOf(claimField.value)
      if (asIndex !== undefined && indexField === undefined) {
        if (asIndex < 1) return yield* fail(`claim ${asIndex} is not a claim number (they start at 1)`, claimField.name)
        index = asIndex
      } else {
        text = textOf(claimField.value)
        if (text === undefined) return yield* fail("claim is empty or not a string", claimField.name)
      }
    }
    if (index === undefined && text === undefined) {
      return yield* fail(`missing claim: ${formExpectation.claim}`, "claim")
    }
    if (context === undefined) return yield* fail(needsRun, v.name)
    const resolvedAgainst: ClaimAgainst = against ??
      (side === "reference" ? "answer" : context.hasReference(caseId) === false ? "contexts" : "reference")
    if (index === undefined) {
      index = context.claimIndex(caseId, side, text!)
      if (index === undefined) {
        const againstKey = typeof resolvedAgainst === "string" ? resolvedAgainst : `context:${resolvedAgainst.context}`
        return {
          form,
          converted: {
            unresolved: {
              line,
              caseId,
              target: `claim:${side}:?:${againstKey}`,
              ...(by === "" ? {} : { by }),
              reason: `no ${side} claim of this case in the run reads "${
                text!.length > 80 ? `${text!.slice(0, 79)}…` : text
              }" (give its number instead, as the report numbers claims)`
            }
          }
        }
      }
    }
    const label: LabelValue = { verdict }
    return {
      form,
      converted: {
        label: {
          runId: context.runId,
          caseId,
          target: {
            kind: "claim",
            side,
            index,
            against: resolvedAgainst,
            ...(text === undefined ? {} : { text })
          },
          label,
          ...common
        }
      }
    }
  })

const needsRun =
  "claim, metric and preference labels are paired with a run's judgments: give the run directory (out/<pipeline>/<run-id>), not --judge"

const formExpectation: Readonly<Record<LabelForm, string>> = {
  labels: "caseId, target, label, by, at",
  grade: "rubric labels need id, criterion and grade",
  claim: "claim labels need id, claim (its text or number) and verdict",
  metric: "metric labels need id, metric and value",
  preference: "preference labels need id_a, id_b and preference"
}

/** A target in words, for messages: `criterion "clarity"`, `answer claim 2 against the reference`. */
export const describeTarget = (t: LabelTarget): string => {
  switch (t.kind) {
    case "grade":
      return `criterion "${t.criterion}"`
    case "hit":
      return `hit "${t.hitId}"`
    case "claim":
      return `${t.side} claim ${t.index} against ${
        typeof t.against === "string" ? `the ${t.against}` : `context ${t.against.context}`
      }`
    case "nugget":
      return `nugget ${t.index}`
    case "metric":
      return `metric "${t.metric}"`
    case "preference":
      return `preference against run ${t.other.runId}${
        t.other.caseId === undefined ? "" : ` case "${t.other.caseId}"`
      }${t.aspect === undefined ? "" : ` (${t.aspect})`}`
  }
}

/**
 * Collects converted labels: duplicates of hand-written rows are errors, labels-format lines
 * replace (append-only). Shared by the file reader and `labelSetOf` (in-memory labels).
 */
const collector = (file: string) => {
  const byKey = new Map<string, { readonly index: number; readonly line: number; readonly flat: boolean }>()
  const labels: Array<LabelLine | undefined> = []
  const unresolved: Array<UnpairedLabel> = []
  const forms: Record<LabelForm, number> = { labels: 0, grade: 0, claim: 0, metric: 0, preference: 0 }
  let replaced = 0
  return {
    add: (line: number, form: LabelForm, converted: Converted): Effect.Effect<void, InputError> => {
      forms[form]++
      if (converted.unresolved !== undefined) {
        unresolved.push(converted.unresolved)
        return Effect.void
      }
      const label = converted.label!
      const key = labelKey(label)
      const earlier = byKey.get(key)
      const flat = form !== "labels"
      if (earlier !== undefined) {
        if (flat || earlier.flat) {
          return Effect.fail(
            new InputError({
              file,
              line,
              field: "id",
              problem: `duplicate label for id "${label.caseId}", ${describeTarget(label.target)}${
                label.by === "" ? "" : ` by ${label.by}`
              } (first on line ${earlier.line})`
            })
          )
        }
        labels[earlier.index] = undefined
        replaced++
      }
      byKey.set(key, { index: labels.length, line, flat })
      labels.push({ label, line })
      return Effect.void
    },
    result: (format: LabelSet["format"]): LabelSet => ({
      file,
      format,
      labels: labels.filter((l): l is LabelLine => l !== undefined),
      unresolved,
      replaced,
      forms
    })
  }
}

/** Reads a labels file of any form above (CSV, JSON or JSONL, by extension) into labels. */
export const readLabelFile = (
  file: string,
  format: "csv" | "json" | "jsonl",
  context: LabelContext | undefined
): Effect.Effect<LabelSet, InputError> =>
  Effect.gen(function*() {
    yield* checkReadable(file)
    const at = new Date(fs.statSync(file).mtimeMs).toISOString()
    const collect = collector(file)
    yield* readRows(file).pipe(
      Stream.runForEach((row) =>
        Effect.flatMap(
          convertRow(file, row.line, row.values, context, at),
          ({ converted, form }) => collect.add(row.line, form, converted)
        )
      )
    )
    return collect.result(format)
  })

/**
 * Labels already in memory (the browser review's), as a `LabelSet`: each label at its 1-based
 * position, the later of one person's labels about one target winning, as in `labels.jsonl`.
 */
export const labelSetOf = (labels: ReadonlyArray<Label>, source = "labels given in memory"): LabelSet => {
  const collect = collector(source)
  labels.forEach((label, i) => Effect.runSync(collect.add(i + 1, "labels", { label })))
  return collect.result("jsonl")
}
