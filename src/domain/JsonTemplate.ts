/**
 * JSON request bodies written as templates by the user (`--search-body`, `--target-body`): JSON text
 * with `{{name}}` placeholders, filled once per case.
 *
 * - Inside a JSON string, a placeholder becomes the value escaped as string content (unset or null →
 *   empty; a list or object → its JSON text, escaped). Outside a string, it becomes a JSON literal
 *   (unset → `null`; a list or an object as it is: `"messages": {{messages}}`).
 * - Values are escaped by `JSON.stringify`, so a value with quotes, backslashes, newlines or `}}`
 *   stays inside its string: it cannot end the string, add a field or break the body.
 * - One pass over the template: placeholders inside a value are never expanded, so a question
 *   containing `{{id}}` is sent as those characters.
 * - A name starts with a letter or `_` and may hold letters, digits, `_`, `.`, `-` and spaces
 *   (`{{Current User Question}}` names a CSV column).
 */
import * as Either from "effect/Either"

export type JsonValue = string | number | boolean | null | ReadonlyArray<JsonValue> | {
  readonly [key: string]: JsonValue
}
export type TemplateValue = JsonValue | undefined

const PLACEHOLDER = /\{\{\s*([A-Za-z_][\w .-]*?)\s*\}\}/y

/** Walks the template, calling `onPlaceholder` for each placeholder and `onText` for the text between. */
const scan = (
  template: string,
  onText: (text: string) => void,
  onPlaceholder: (name: string, inString: boolean) => void
) => {
  let inString = false
  let from = 0
  for (let i = 0; i < template.length;) {
    const c = template[i]!
    if (c === "{" && template[i + 1] === "{") {
      PLACEHOLDER.lastIndex = i
      const m = PLACEHOLDER.exec(template)
      if (m !== null) {
        onText(template.slice(from, i))
        onPlaceholder(m[1]!, inString)
        i += m[0].length
        from = i
        continue
      }
    }
    if (inString && c === "\\") {
      i += 2
      continue
    }
    if (c === "\"") inString = !inString
    i++
  }
  onText(template.slice(from))
}

/** The template filled with `vars` (see the module comment for the escaping rules). */
export const renderJsonTemplate = (template: string, vars: Readonly<Record<string, TemplateValue>>): string => {
  let out = ""
  scan(template, (text) => {
    out += text
  }, (name, inString) => {
    const value = vars[name]
    if (inString) {
      if (value === undefined || value === null) return
      const text = typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value)
      out += JSON.stringify(text).slice(1, -1)
    } else {
      out += value === undefined ? "null" : JSON.stringify(value)
    }
  })
  return out
}

/** The placeholder names of a template, each once, in order of first use. */
export const placeholders = (template: string): Array<string> => {
  const names: Array<string> = []
  scan(template, () => {}, (name) => {
    if (!names.includes(name)) names.push(name)
  })
  return names
}

/** A value full of characters that need escaping, to check that a template gives valid JSON. */
export const HOSTILE_TEXT = "a \"quoted\" value\\ with\nnewline, }} and {{id}}"

/**
 * Right(template) when it gives valid JSON with every placeholder filled by `probe` (default: the
 * hostile text for every name), else Left(why), with `example` as a correct template.
 */
export const checkJsonTemplate = (
  template: string,
  example: string,
  probe: Readonly<Record<string, TemplateValue>> = {}
): Either.Either<string, string> => {
  const vars: Record<string, TemplateValue> = {}
  for (const name of placeholders(template)) vars[name] = name in probe ? probe[name] : HOSTILE_TEXT
  try {
    JSON.parse(renderJsonTemplate(template, vars))
    return Either.right(template)
  } catch (e) {
    return Either.left(`the body template does not give valid JSON (${(e as Error).message}); e.g. ${example}`)
  }
}
