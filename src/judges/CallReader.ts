/**
 * One judge call as data: the request it sends, how its reply is decoded, and the verdicts of what
 * asking it came to. The synchronous LLM judge (`LlmJudge.ts`) and the Batch API path (through the
 * judge's `calls` port) share these, so both make the same verdicts from the same reply.
 *
 * Decoding never invents a score: the last JSON object in a reply that is a valid answer on the
 * rubric's scale (an example shown earlier in the reply is not the answer); a listwise reply must
 * grade every item exactly once; whatever is wrong is said in words, for the repair prompt.
 *
 * A reply is read within the bounds of `domain/Limits.ts` — its length (`replyChars`), and for an
 * extraction the number of claims it lists (`claims`): beyond them it is unusable and `final`, so it
 * is recorded as a failed judgment with the reason and never repaired (a repair would send the whole
 * reply back), whatever path it came by (a synchronous call, a batch's output).
 */
import type * as AjvModule from "ajv"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import { isRecord } from "effect/Predicate"
import * as Schema from "effect/Schema"
import { createRequire } from "node:module"
import {
  type FailureClass,
  type JudgeTask,
  type ListJudgeTask,
  splitUsage,
  type Usage,
  type Verdict
} from "../domain/Judgment.js"
import { Limits } from "../domain/Limits.js"
import { thousands } from "../domain/Numbers.js"
import type { Rubric } from "../domain/Rubric.js"
import type { ChatRequest } from "../providers/LlmProvider.js"
import { answerSchema, claimsSchema, listAnswerSchema, objectSchema, render } from "./Prompt.js"

/** Re-asks after an answer that does not decode, by default (`LlmJudgeOptions.repairAttempts`). */
export const DEFAULT_REPAIR_ATTEMPTS = 2

// ---------------------------------------------------------------------------------------------
// Decoding the answer

export interface Answer {
  readonly reasoning: string
  readonly score: number
  readonly confidence?: number | undefined
  /** The sentence quoted as deciding the verdict (rubrics with `evidence`); empty when none. */
  readonly evidence?: string | undefined
}

const tryParse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** End index (exclusive) of the balanced `{…}` starting at `start`, skipping braces inside strings. */
const balancedEnd = (text: string, start: number): number | undefined => {
  let depth = 0
  let inString = false
  for (let i = start; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === "\\") i++
      else if (c === "\"") inString = false
    } else if (c === "\"") {
      inString = true
    } else if (c === "{") {
      depth++
    } else if (c === "}") {
      depth--
      if (depth === 0) return i + 1
    }
  }
  return undefined
}

/**
 * Every JSON object a reply holds, in the order they appear: the whole text when it is one object;
 * otherwise each balanced `{…}` that parses (braces inside strings skipped), outermost first and not
 * looking inside one that parsed — whether in prose or in a ```json fence. A reply may show an
 * example before its answer ("for example {…, "score": 0} … my answer: {…}"), so the decoders take
 * the LAST object that decodes, not the first.
 */
export const jsonObjects = (text: string): Array<Record<string, unknown>> => {
  const whole = tryParse(text.trim())
  if (isRecord(whole)) return [whole]
  const found: Array<Record<string, unknown>> = []
  for (let start = text.indexOf("{"); start !== -1;) {
    const end = balancedEnd(text, start)
    if (end === undefined) break
    const candidate = tryParse(text.slice(start, end))
    if (isRecord(candidate)) {
      found.push(candidate)
      start = text.indexOf("{", end)
    } else {
      start = text.indexOf("{", start + 1)
    }
  }
  return found
}

/** The last JSON object in a reply (see `jsonObjects`); undefined when there is none. */
export const extractJsonObject = (text: string): Record<string, unknown> | undefined => jsonObjects(text).at(-1)

const answerDecoders = new WeakMap<Rubric, (u: unknown) => Either.Either<Answer, ParseResult.ParseError>>()

const answerDecoder = (rubric: Rubric) => {
  const cached = answerDecoders.get(rubric)
  if (cached !== undefined) return cached
  const scores = rubric.scale.map((v) => v.score)
  const decoder = Schema.decodeUnknownEither(Schema.Struct({
    reasoning: Schema.String,
    score: Schema.Union(Schema.Number, Schema.NumberFromString).pipe(
      Schema.filter((n) => scores.includes(n) || `score ${n} is not on the scale (${scores.join(", ")})`)
    ),
    confidence: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 5))),
    ...(rubric.evidence ? { evidence: Schema.String } : {})
  }))
  answerDecoders.set(rubric, decoder)
  return decoder
}

/**
 * Decode a reply into an answer on the rubric's scale: the last JSON object in it that is a valid
 * answer (an example shown earlier in the reply is not the answer); when none is, what is wrong
 * with the last object.
 */
export const decodeAnswer = (rubric: Rubric, text: string): Either.Either<Answer, string> => {
  if (text.trim() === "") return Either.left("the reply was empty")
  const objects = jsonObjects(text)
  if (objects.length === 0) return Either.left("the reply contains no valid JSON object")
  const decode = answerDecoder(rubric)
  let last: Either.Either<Answer, ParseResult.ParseError> | undefined
  for (let i = objects.length - 1; i >= 0; i--) {
    const result = decode(objects[i])
    if (Either.isRight(result)) return Either.right(result.right)
    last ??= result
  }
  return Either.mapLeft(last!, formatIssues)
}

const formatIssues = (e: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(e)
    .map((issue) => issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`)
    .join("; ")

/** Why a listwise reply is unusable; `items` holds what could be read per hit when the reply had a grade list. */
export interface ListAnswerProblem {
  readonly problem: string
  /** Per hit (in order): its answer, or why it has none. */
  readonly items?: ReadonlyArray<Answer | string> | undefined
}

/**
 * Decode a listwise reply `{ grades: [{ hit, reasoning, score[, confidence] }] }` for hits 1…n:
 * every hit graded exactly once, each grade on the rubric's scale. Entries are decoded one by one,
 * so a reply that fails still tells which hits it graded.
 */
export const decodeListAnswer = (
  rubric: Rubric,
  n: number,
  text: string
): Either.Either<ReadonlyArray<Answer>, ListAnswerProblem> => {
  if (text.trim() === "") return Either.left({ problem: "the reply was empty" })
  const objects = jsonObjects(text)
  if (objects.length === 0) return Either.left({ problem: "the reply contains no valid JSON object" })
  // The last grade list that decodes whole; else the last one with a grades array, for what it says per hit.
  let fallback: ListAnswerProblem | undefined
  for (let i = objects.length - 1; i >= 0; i--) {
    const result = decodeGradeList(rubric, n, objects[i]!)
    if (Either.isRight(result)) return result
    if (fallback === undefined || (fallback.items === undefined && result.left.items !== undefined)) {
      fallback = result.left
    }
  }
  return Either.left(fallback!)
}

/** One object as a listwise answer (see `decodeListAnswer`): every item, by the rubric's item key (`hit`, `claim`…), graded once. */
const decodeGradeList = (
  rubric: Rubric,
  n: number,
  json: Record<string, unknown>
): Either.Either<ReadonlyArray<Answer>, ListAnswerProblem> => {
  const key = rubric.itemKey
  const grades = json.grades
  if (!Array.isArray(grades)) return Either.left({ problem: `grades: expected an array with one entry per ${key}` })
  const items: Array<Answer | string> = Array.from({ length: n }, () => `no grade was given for this ${key}`)
  const seen = new Set<number>()
  const problems: Array<string> = []
  grades.forEach((entry: unknown, index) => {
    const number = isRecord(entry) ? Number(entry[key]) : NaN
    if (!Number.isInteger(number) || number < 1 || number > n) {
      problems.push(`grades.${index}.${key}: expected a ${key} number from 1 to ${n}`)
      return
    }
    if (seen.has(number)) {
      problems.push(`${key} ${number} is graded more than once`)
      items[number - 1] = `${key} ${number} was graded more than once`
      return
    }
    seen.add(number)
    Either.match(answerDecoder(rubric)(entry), {
      onLeft: (e) => {
        const problem = formatIssues(e)
        problems.push(`${key} ${number}: ${problem}`)
        items[number - 1] = problem
      },
      onRight: (answer) => {
        items[number - 1] = answer
      }
    })
  })
  const missing = items.flatMap((a, i) => (typeof a === "string" && !seen.has(i + 1) ? [i + 1] : []))
  if (missing.length > 0) problems.push(`no grade for ${key}${missing.length === 1 ? "" : "s"} ${missing.join(", ")}`)
  return problems.length === 0
    ? Either.right(items as Array<Answer>)
    : Either.left({ problem: problems.join("; "), items })
}

const decodeClaimList = Schema.decodeUnknownEither(Schema.Struct({ claims: Schema.Array(Schema.String) }))

/**
 * Decode a `claims` rubric's reply `{ claims: [...] }`: the last JSON object that is one; each claim
 * trimmed, empty ones dropped. An empty list is an answer (a text that makes no factual claim).
 */
export const decodeClaims = (text: string): Either.Either<ReadonlyArray<string>, string> => {
  if (text.trim() === "") return Either.left("the reply was empty")
  const objects = jsonObjects(text)
  if (objects.length === 0) return Either.left("the reply contains no valid JSON object")
  let last: string | undefined
  for (let i = objects.length - 1; i >= 0; i--) {
    const result = decodeClaimList(objects[i])
    if (Either.isRight(result)) return Either.right(result.right.claims.map((c) => c.trim()).filter((c) => c !== ""))
    last ??= formatIssues(result.left)
  }
  return Either.left(last!)
}

// ---------------------------------------------------------------------------------------------
// One call: its request, how its reply is read, its verdicts

/** The raw text kept with a failed judgment. */
export const truncate = (text: string) =>
  text.length > Limits.keptReplyChars ? text.slice(0, Limits.keptReplyChars) : text

/** Why a call has no answer: the failed verdicts' reason and failure class. */
export interface Failure {
  readonly reason: string
  readonly failure: FailureClass
}

/** What asking a call came to (after repairs): the answer or why there is none, with what it cost. */
export interface Outcome<A> {
  readonly answer: Either.Either<A, Failure>
  readonly usage: Usage
  readonly attempts: number
  /** The last reply's text (truncated). */
  readonly raw: string | undefined
}

/** The failure of a call whose replies stayed unusable after `asks` asks. */
export const unusable = (asks: number, problem: string): Failure => ({
  reason: `unusable answer after ${asks} ${asks === 1 ? "try" : "tries"}: ${problem}`,
  failure: "judge"
})

/**
 * Why a reply cannot be used, in words (for the repair prompt and the failed judgment's reason).
 * `final`: it is beyond a bound (`domain/Limits.ts`) — recorded as it is, never asked again.
 */
export interface ReplyProblem {
  readonly problem: string
  readonly final?: boolean | undefined
}

/** A reply longer than `Limits.replyChars`: final (see the module comment); undefined when within. */
const replyTooLong = (text: string, limit = Limits.replyChars): ReplyProblem | undefined =>
  text.length <= limit ? undefined : {
    problem: `the reply is ${thousands(text.length)} characters long; a reply may hold at most ${
      thousands(limit)
    } (not asked again)`,
    final: true
  }

/** A decoder in words, within the reply bound: the text is not read at all when it is longer. */
const bounded =
  <A>(decode: (text: string) => Either.Either<A, string>) => (text: string): Either.Either<A, ReplyProblem> => {
    const long = replyTooLong(text)
    return long !== undefined ? Either.left(long) : Either.mapLeft(decode(text), (problem) => ({ problem }))
  }

/** How one call is asked and read: the request (without format or repair), its decoder, the verdicts of its outcome. */
export interface CallReader<A> {
  readonly request: ChatRequest
  /** Decode a reply; a listwise reader also learns from it which hits were graded (for `verdicts`). */
  readonly decode: (text: string) => Either.Either<A, ReplyProblem>
  /** One verdict per judgment of the call (one for a pointwise task, one per item for a list). */
  readonly verdicts: (o: Outcome<A>) => ReadonlyArray<Verdict>
}

/** The prompt-cache key of a rubric's requests: they share its static prefix (no data in it). */
const cacheKeyOf = (rubric: Rubric) => `rag-eval/${rubric.id}@${rubric.hash}`

/**
 * A claim list within `Limits.claims`: longer, it is final (each claim would be a judgment of its
 * own: a reply listing 100,000 claims made 600,000 paid checks).
 */
const claimsWithinBound = (
  claims: ReadonlyArray<string>,
  limit = Limits.claims
): Either.Either<ReadonlyArray<string>, ReplyProblem> =>
  claims.length <= limit ? Either.right(claims) : Either.left({
    problem: `the reply lists ${thousands(claims.length)} claims; an extraction may list at most ${
      thousands(limit)
    } (not asked again)`,
    final: true
  })

/** A `claims` rubric's call: the claims of the text, as the judgment's value (its score is how many). */
const claimsReader = (task: JudgeTask): CallReader<ReadonlyArray<string>> => {
  const rubric = task.rubric
  const decode = bounded(decodeClaims)
  return {
    request: { ...render(rubric, task.vars), schema: claimsSchema(rubric), cacheKey: cacheKeyOf(rubric) },
    decode: (text) => Either.flatMap(decode(text), (claims) => claimsWithinBound(claims)),
    verdicts: (o) => [
      Either.match(o.answer, {
        onLeft: ({ failure, reason }): Verdict => ({
          status: "failed",
          failure,
          score: null,
          reason,
          raw: o.raw,
          usage: o.usage,
          attempts: o.attempts
        }),
        onRight: (claims): Verdict => ({
          status: "ok",
          score: claims.length,
          reason: `${claims.length} claim${claims.length === 1 ? "" : "s"}`,
          value: claims,
          usage: o.usage,
          attempts: o.attempts
        })
      })
    ]
  }
}

const answerVerdict = (answer: Answer, usage: Usage, attempts: number): Verdict => ({
  status: "ok",
  score: answer.score,
  confidence: answer.confidence,
  reason: answer.reasoning,
  ...(answer.evidence === undefined || answer.evidence.trim() === "" ? {} : { evidence: answer.evidence.trim() }),
  usage,
  attempts
})

export const pointReader = (task: JudgeTask): CallReader<unknown> =>
  task.rubric.output === "claims"
    ? claimsReader(task) as CallReader<unknown>
    : task.rubric.output === "object"
    ? objectReader(task) as CallReader<unknown>
    : scoreReader(task) as CallReader<unknown>

/**
 * One validator for every object rubric, made when the first reply of one is read; each rubric's
 * schema is compiled once. ajv (a CommonJS module) is required then, from node_modules, not bundled
 * into the CLI: its ~275 KB were compiled at every start of the CLI (~30 ms of its ~0.6 s), when only
 * an LLM's replies to `object` rubrics need it.
 */
let ajv: AjvModule.Ajv | undefined
const objectValidators = new WeakMap<Rubric, AjvModule.ValidateFunction>()
const objectValidator = (rubric: Rubric) => {
  let validate = objectValidators.get(rubric)
  if (validate === undefined) {
    ajv ??= new (createRequire(import.meta.url)("ajv") as typeof AjvModule).Ajv({ allErrors: false, strict: false })
    objectValidators.set(rubric, validate = ajv.compile(objectSchema(rubric).schema))
  }
  return validate
}

/**
 * Decode an `object` rubric's reply: the last JSON object in it that matches the rubric's JSON schema
 * (checked by ajv, the JSON Schema validator); when none does, what is wrong with the last object.
 */
export const decodeObject = (rubric: Rubric, text: string): Either.Either<Record<string, unknown>, string> => {
  if (text.trim() === "") return Either.left("the reply was empty")
  const objects = jsonObjects(text)
  if (objects.length === 0) return Either.left("the reply contains no valid JSON object")
  const validate = objectValidator(rubric)
  let last: string | undefined
  for (let i = objects.length - 1; i >= 0; i--) {
    if (validate(objects[i])) return Either.right(objects[i]!)
    last ??= (validate.errors ?? []).map((e: AjvModule.ErrorObject) =>
      `${e.instancePath === "" ? "the object" : e.instancePath}: ${e.message ?? "invalid"}`
    )
      .join("; ")
  }
  return Either.left(last!)
}

/** An `object` rubric's call: the object, as the judgment's value (its score is 1). */
const objectReader = (task: JudgeTask): CallReader<Record<string, unknown>> => {
  const rubric = task.rubric
  return {
    request: { ...render(rubric, task.vars), schema: objectSchema(rubric), cacheKey: cacheKeyOf(rubric) },
    decode: bounded((text) => decodeObject(rubric, text)),
    verdicts: (o) => [
      Either.match(o.answer, {
        onLeft: ({ failure, reason }): Verdict => ({
          status: "failed",
          failure,
          score: null,
          reason,
          raw: o.raw,
          usage: o.usage,
          attempts: o.attempts
        }),
        onRight: (value): Verdict => ({
          status: "ok",
          score: 1,
          reason: `${rubric.name}: written`,
          value,
          usage: o.usage,
          attempts: o.attempts
        })
      })
    ]
  }
}

const scoreReader = (task: JudgeTask): CallReader<Answer> => {
  const rubric = task.rubric
  return {
    request: { ...render(rubric, task.vars), schema: answerSchema(rubric), cacheKey: cacheKeyOf(rubric) },
    decode: bounded((text) => decodeAnswer(rubric, text)),
    verdicts: (o) => [
      Either.match(o.answer, {
        onLeft: ({ failure, reason }): Verdict => ({
          status: "failed",
          failure,
          score: null,
          reason,
          raw: o.raw,
          usage: o.usage,
          attempts: o.attempts
        }),
        onRight: (answer): Verdict => answerVerdict(answer, o.usage, o.attempts)
      })
    ]
  }
}

/** A listwise call (at least one item): a reply missing some hits keeps the grades it did give. */
export const listReader = (task: ListJudgeTask): CallReader<ReadonlyArray<Answer>> => {
  const rubric = task.rubric
  const n = task.items.length
  // A reply missing some hits is re-asked (repair); if the last reply still misses some, the hits
  // it did grade keep their grades and only the others fail.
  let partial: ReadonlyArray<Answer | string> | undefined
  return {
    request: {
      ...render(rubric, task.vars, task.items.map((i) => i.vars)),
      schema: listAnswerSchema(rubric, n),
      cacheKey: cacheKeyOf(rubric)
    },
    decode: bounded((text) => {
      const result = decodeListAnswer(rubric, n, text)
      if (Either.isLeft(result) && result.left.items !== undefined) partial = result.left.items
      return Either.mapLeft(result, (e) => e.problem)
    }),
    verdicts: (o) => {
      const shares = splitUsage(o.usage, n)
      const items: ReadonlyArray<Answer | Failure> = Either.match(o.answer, {
        onRight: (answers) => answers,
        onLeft: (why) =>
          partial?.map((a) =>
            typeof a === "string" ? { reason: `${why.reason} (this hit: ${a})`, failure: why.failure } : a
          ) ??
            task.items.map(() => why)
      })
      return items.map((a, i): Verdict =>
        "failure" in a
          ? {
            status: "failed",
            failure: a.failure,
            score: null,
            reason: a.reason,
            raw: o.raw,
            usage: shares[i]!,
            attempts: o.attempts
          }
          : answerVerdict(a, shares[i]!, o.attempts)
      )
    }
  }
}

/**
 * A remote judge's calls for a provider's Batch API (`--batch`): the same request, decoding and
 * verdicts as its synchronous calls, the request line's body in the answer format it uses now, and a
 * reply from a batch's output file.
 */
export interface BatchCalls {
  readonly reader: (task: JudgeTask | ListJudgeTask) => CallReader<unknown>
  readonly body: (request: Omit<ChatRequest, "format">) => Readonly<Record<string, unknown>>
  readonly reply: (body: unknown) => { readonly text: string; readonly usage: Usage }
  /** Asks a call gets in all: the first and its repairs. */
  readonly asks: number
}

/** The reader of a task, pointwise or listwise. */
export const readerOf = (task: JudgeTask | ListJudgeTask): CallReader<unknown> =>
  ("items" in task ? listReader(task) : pointReader(task)) as unknown as CallReader<unknown>
