/**
 * The request for one case: the template's variables and the body they fill.
 *
 * Variables: `question`, `history` (the conversation so far, as the input gives it; unset when there
 * is none), `id` (the case id), `messages` (the history as chat turns, then the question: a JSON list
 * of `{role, content}` for a placeholder outside a string), `model` (`--target-model`), and every
 * field of the case's input row or object by its name (`{{Current User Question}}`, `{{topic}}`).
 * The named variables win over input fields of the same name.
 */
import type { EvalCase } from "../domain/Case.js"
import { type JsonValue, renderJsonTemplate, type TemplateValue } from "../domain/JsonTemplate.js"
import type { TargetConfig } from "./TargetConfig.js"

/** What a call needs of a case. */
export interface TargetInput {
  readonly id: string
  readonly question: string
  readonly history?: string | undefined
  /** The input row or object, for `{{field}}` placeholders. */
  readonly fields?: Readonly<Record<string, unknown>> | undefined
}

export const inputOf = (c: EvalCase): TargetInput => ({
  id: c.id,
  question: c.question,
  history: c.history,
  fields: c.source
})

export interface ChatMessage {
  readonly role: "system" | "user" | "assistant"
  readonly content: string
}

/** `User:`, `Assistant:`… at the start of a line of a history (the loaders' CSV convention). */
const ROLE_LINE = /^[ \t]*(user|human|assistant|ai|bot|system)[ \t]*:[ \t]?(.*)$/i

const roleOf = (label: string): ChatMessage["role"] => {
  const l = label.toLowerCase()
  return l === "system" ? "system" : l === "user" || l === "human" ? "user" : "assistant"
}

/**
 * Chat turns from a history and the question: each line starting with a role label (`User:`,
 * `Human:` → user; `Assistant:`, `AI:`, `Bot:` → assistant; `System:` → system) starts a turn, the
 * lines after it continue it; text before any label is one user turn. The question is the last user
 * turn.
 */
export const chatMessages = (history: string | undefined, question: string): Array<ChatMessage> => {
  const out: Array<{ role: ChatMessage["role"]; lines: Array<string> }> = []
  for (const line of (history ?? "").split(/\r\n|\r|\n/)) {
    const m = ROLE_LINE.exec(line)
    if (m !== null) out.push({ role: roleOf(m[1]!), lines: [m[2]!] })
    else if (out.length > 0) out[out.length - 1]!.lines.push(line)
    else if (line.trim() !== "") out.push({ role: "user", lines: [line] })
  }
  const turns = out
    .map((t) => ({ role: t.role, content: t.lines.join("\n").trim() }))
    .filter((t) => t.content !== "")
  return [...turns, { role: "user", content: question }]
}

const isJsonValue = (u: unknown): u is JsonValue =>
  u === null || typeof u === "string" || typeof u === "boolean" || (typeof u === "number" && Number.isFinite(u)) ||
  typeof u === "object"

/** The template's variables for one case (see the module comment). */
export const templateVars = (
  config: Pick<TargetConfig, "model">,
  input: TargetInput
): Record<string, TemplateValue> => {
  const vars: Record<string, TemplateValue> = {}
  for (const [k, v] of Object.entries(input.fields ?? {})) if (isJsonValue(v)) vars[k] = v
  vars.question = input.question
  vars.history = input.history === undefined || input.history.trim() === "" ? undefined : input.history
  vars.id = input.id
  vars.messages = chatMessages(input.history, input.question) as unknown as JsonValue
  if (config.model !== undefined) vars.model = config.model
  return vars
}

/** The JSON body sent for one case. */
export const requestBody = (config: Pick<TargetConfig, "body" | "model">, input: TargetInput): string =>
  renderJsonTemplate(config.body, templateVars(config, input))
