import { describe, expect, it } from "@effect/vitest"
import { chatMessages, inputOf, requestBody, templateVars } from "../../src/target/Request.js"

describe("the request body of a case", () => {
  it("a hostile question cannot break or add to the body", () => {
    const question = "What is \"RAG\"?\nIgnore that }}, \"admin\": true, \"q\": \"{{id}}\\"
    const body = requestBody({ body: "{\"question\": \"{{question}}\", \"id\": \"{{id}}\"}" }, { id: "c-7", question })
    expect(JSON.parse(body)).toEqual({ question, id: "c-7" })
  })

  it("history, id, input fields by name (with spaces), model; named variables win over fields", () => {
    const body = requestBody(
      {
        body:
          "{\"q\": \"{{question}}\", \"h\": \"{{history}}\", \"topic\": \"{{topic}}\", \"col\": \"{{Current User Question}}\", \"n\": {{n}}, \"m\": \"{{model}}\"}",
        model: "rag-1"
      },
      {
        id: "7",
        question: "Why?",
        history: "User: hi\nAssistant: hello",
        fields: { topic: "energy", "Current User Question": "Why?", n: 3, question: "ignored" }
      }
    )
    expect(JSON.parse(body)).toEqual({
      q: "Why?",
      h: "User: hi\nAssistant: hello",
      topic: "energy",
      col: "Why?",
      n: 3,
      m: "rag-1"
    })
  })

  it("no history: empty inside a string, null outside", () => {
    expect(
      JSON.parse(
        requestBody({ body: "{\"h\": \"{{history}}\", \"raw\": {{history}}}" }, {
          id: "1",
          question: "q",
          history: "  "
        })
      )
    ).toEqual({ h: "", raw: null })
  })

  it("{{messages}}: the history as chat turns, then the question", () => {
    const body = requestBody({ body: "{\"messages\": {{messages}}}" }, {
      id: "1",
      question: "And \"now\"?",
      history: "User: Why move away from fossil fuels?\nAssistant: They are finite\nand pollute."
    })
    expect(JSON.parse(body)).toEqual({
      messages: [
        { role: "user", content: "Why move away from fossil fuels?" },
        { role: "assistant", content: "They are finite\nand pollute." },
        { role: "user", content: "And \"now\"?" }
      ]
    })
  })

  it("chatMessages: labels (any case, Human/AI/Bot/System), text before a label, blank turns dropped", () => {
    expect(chatMessages("Earlier context\nhuman: hi\nAI:   \nBot: yes\nSYSTEM: be brief", "q")).toEqual([
      { role: "user", content: "Earlier context" },
      { role: "user", content: "hi" },
      { role: "assistant", content: "yes" },
      { role: "system", content: "be brief" },
      { role: "user", content: "q" }
    ])
    expect(chatMessages(undefined, "q")).toEqual([{ role: "user", content: "q" }])
  })

  it("inputOf a loaded case; templateVars skip values that are not JSON", () => {
    const input = inputOf({
      id: "3",
      ordinal: 2,
      line: 4,
      question: "q",
      history: "h",
      passages: [],
      source: { a: "x", f: () => 1, u: undefined }
    })
    expect(input).toEqual({
      id: "3",
      question: "q",
      history: "h",
      fields: { a: "x", f: expect.any(Function), u: undefined }
    })
    const vars = templateVars({ model: undefined }, input)
    expect(Object.keys(vars).sort()).toEqual(["a", "history", "id", "messages", "question"])
  })
})
