import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { checkJsonTemplate, HOSTILE_TEXT, placeholders, renderJsonTemplate } from "../../src/domain/JsonTemplate.js"

describe("JSON body templates", () => {
  it("a value with quotes, backslashes, newlines and }} stays inside its string", () => {
    const question = "say \"hi\" \\ then\nleave }}, \"admin\": true, \"x\": \"{{id}}"
    const body = renderJsonTemplate("{\"question\": \"{{question}}\", \"id\": \"{{id}}\"}", { question, id: "c-1" })
    expect(JSON.parse(body)).toEqual({ question, id: "c-1" })
  })

  it("placeholders inside a value are not expanded (one pass)", () => {
    const body = renderJsonTemplate("{\"q\": \"{{question}}\"}", { question: "{{id}}", id: "secret-id" })
    expect(JSON.parse(body)).toEqual({ q: "{{id}}" })
  })

  it("outside a string: a JSON literal (lists and objects as they are, unset → null)", () => {
    const messages = [{ role: "user", content: "a \"b\"" }]
    const body = renderJsonTemplate(
      "{\"messages\": {{messages}}, \"k\": {{k}}, \"flag\": {{flag}}, \"none\": {{missing}}}",
      { messages, k: 3, flag: true }
    )
    expect(JSON.parse(body)).toEqual({ messages, k: 3, flag: true, none: null })
  })

  it("inside a string: unset and null are empty, numbers their text, a list its JSON text", () => {
    const body = renderJsonTemplate(
      "{\"a\": \"<{{missing}}>\", \"b\": \"<{{nothing}}>\", \"c\": \"n={{n}}\", \"d\": \"{{list}}\"}",
      { nothing: null, n: 2.5, list: ["x", "y"] }
    )
    expect(JSON.parse(body)).toEqual({ a: "<>", b: "<>", c: "n=2.5", d: "[\"x\",\"y\"]" })
  })

  it("escaped quotes in the template do not confuse the string tracking", () => {
    expect(JSON.parse(renderJsonTemplate("{\"a\": \"x\\\"{{q}}\", \"k\": {{k}}}", { q: "q", k: 3 }))).toEqual({
      a: "x\"q",
      k: 3
    })
  })

  it("names may hold spaces (CSV columns); placeholders lists each name once", () => {
    const template =
      "{\"q\": \"{{ Current User Question }}\", \"h\": \"{{history}}\", \"again\": \"{{Current User Question}}\"}"
    expect(placeholders(template)).toEqual(["Current User Question", "history"])
    expect(JSON.parse(renderJsonTemplate(template, { "Current User Question": "why?" }))).toEqual({
      q: "why?",
      h: "",
      again: "why?"
    })
  })

  it("checkJsonTemplate: valid with hostile values, or why not with an example", () => {
    expect(Either.isRight(checkJsonTemplate("{\"q\": \"{{question}}\", \"m\": {{messages}}}", "{}"))).toBe(true)
    const bad = checkJsonTemplate("{\"q\": {{question}", "{\"question\": \"{{question}}\"}")
    expect(Either.isLeft(bad)).toBe(true)
    if (Either.isLeft(bad)) {
      expect(bad.left).toMatch(/does not give valid JSON .*e\.g\. \{"question": "\{\{question\}\}"\}/)
    }
    // The hostile probe really is hostile: unescaped it would break a string.
    expect(() => JSON.parse(`{"q": "${HOSTILE_TEXT}"}`)).toThrow()
  })
})
