// NOT A JUDGE. An OpenAI-compatible server that answers every judge request with well-formed JSON
// and no judgement at all — for trying rag-eval's LLM path with no model and no key: your own
// rubrics, cost accounting, journaling and resume, rate limits, the Batch API. node:http only, no
// dependencies.
//
//   PORT=8100 node examples/not-a-judge-server.mjs
//   rag-eval run rag-answers --csv test-sets/rag-answers/sample.csv --provider openai-compatible \
//     --base-url http://127.0.0.1:8100/v1 --model not-a-judge --price-in 0.15 --price-out 0.6
//
// Every answer matches the JSON schema the request asks for (`response_format.json_schema`, or the
// schema the client puts in the system message): a score drawn from the rubric's allowed values by a
// hash of the request (the same request always gets the same answer), a claim list that is the text's
// sentences, and every reason reading "NOT A JUDGE: …". Figures computed from it measure nothing.
// It serves one model, `not-a-judge` (any other name gets a 404), so every run, report and cache
// entry made with it says so in the judge's name. Usage is counted as characters / 4, so costs
// show with --price-in/--price-out.
//
// Routes: POST /v1/chat/completions; the Batch API — POST /v1/files (multipart), POST /v1/batches,
// GET /v1/batches/{id} (done at the first look), GET /v1/files/{id}/content; GET /health.
import { createHash } from "node:crypto"
import * as http from "node:http"

const MODEL = "not-a-judge"
const SCHEMA_MARKER = "Reply with only a JSON object that matches this JSON schema:"
const REASON = "NOT A JUDGE: a fixed answer from examples/not-a-judge-server.mjs, chosen by a hash of the request"

const hash = (text) => createHash("sha256").update(text).digest().readUInt32BE(0)

const dataBlock = (text, name) => new RegExp(`<data name="${name}">\\n([\\s\\S]*?)\\n</data>`).exec(text)?.[1] ?? ""

const sentences = (text) => text.split(/(?<=[.!?])\s+|\n+/).map((s) => s.trim()).filter((s) => s !== "")

/** A value matching `schema`, deterministic in `seed`; `text` is what a claim list is cut from. */
const valueFor = (schema, seed, text, key = "") => {
  if (schema === undefined || schema === null || typeof schema !== "object") return null
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum[hash(`${seed}|${key}`) % schema.enum.length]
  }
  if (schema.const !== undefined) return schema.const
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type
  switch (type) {
    case "object": {
      const out = {}
      for (const [name, sub] of Object.entries(schema.properties ?? {})) out[name] = valueFor(sub, seed, text, name)
      return out
    }
    case "array": {
      const item = schema.items ?? {}
      if (item.type === "string") return sentences(text)
      // A listwise answer: one entry for each value of the item's number (hit, claim, nugget).
      const numberKey = Object.entries(item.properties ?? {}).find(([name, p]) =>
        name !== "score" && name !== "confidence" && Array.isArray(p.enum)
      )?.[0]
      if (numberKey === undefined) return []
      return item.properties[numberKey].enum.map((n) => ({
        ...valueFor(item, `${seed}|${n}`, text),
        [numberKey]: n
      }))
    }
    case "string":
      return key === "evidence" ? "" : REASON
    case "integer":
    case "number":
      return schema.minimum ?? 0
    case "boolean":
      return true
    default:
      return null
  }
}

/** The chat completion for a request body. */
const complete = (body) => {
  const messages = Array.isArray(body.messages) ? body.messages : []
  const system = String(messages.find((m) => m.role === "system")?.content ?? "")
  const user = messages.filter((m) => m.role === "user").map((m) => String(m.content)).join("\n")
  let schema = body.response_format?.json_schema?.schema
  if (schema === undefined && system.includes(SCHEMA_MARKER)) {
    try {
      schema = JSON.parse(system.slice(system.indexOf(SCHEMA_MARKER) + SCHEMA_MARKER.length).trim())
    } catch {
      schema = undefined
    }
  }
  const content = JSON.stringify(
    schema === undefined ? { reasoning: REASON } : valueFor(schema, `${system}\n${user}`, dataBlock(user, "text"))
  )
  const prompt = Math.ceil(messages.reduce((n, m) => n + String(m.content ?? "").length, 0) / 4)
  const completion = Math.ceil(content.length / 4)
  return {
    id: `chatcmpl-not-a-judge-${hash(content + user).toString(16)}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: MODEL,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
  }
}

const files = new Map()
const batches = new Map()
let next = 0

const send = (res, status, value, type = "application/json") => {
  res.writeHead(status, { "content-type": type })
  res.end(typeof value === "string" ? value : JSON.stringify(value))
}
const error = (res, status, message, code = null) =>
  send(res, status, { error: { message, type: "invalid_request_error", param: null, code } })

const wrongModel = (model) => `this server serves only the model "${MODEL}" (it is not a judge); got "${model}"`

/** The `file` part of a multipart upload. */
const filePart = (body, contentType) => {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType ?? "")
  if (boundary === null) return undefined
  for (const part of body.split(`--${boundary[1] ?? boundary[2]}`)) {
    const end = part.indexOf("\r\n\r\n")
    if (end !== -1 && /name="file"/.test(part.slice(0, end))) return part.slice(end + 4).replace(/\r\n$/, "")
  }
  return undefined
}

const batchJson = (b) => ({
  id: b.id,
  object: "batch",
  endpoint: "/v1/chat/completions",
  input_file_id: b.input,
  completion_window: "24h",
  status: b.status,
  output_file_id: b.output ?? null,
  error_file_id: null,
  request_counts: { total: b.requests, completed: b.output === undefined ? 0 : b.requests, failed: 0 }
})

const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    const raw = Buffer.concat(chunks).toString("utf8")
    const path = (req.url ?? "/").split("?")[0]
    const json = () => {
      try {
        return JSON.parse(raw)
      } catch {
        return undefined
      }
    }
    if (req.method === "GET" && path === "/health") return send(res, 200, { ok: true, judge: false })
    if (req.method === "POST" && path === "/v1/chat/completions") {
      const body = json()
      if (body === undefined) return error(res, 400, "the body is not JSON")
      if (body.model !== MODEL) return error(res, 404, wrongModel(body.model), "model_not_found")
      return send(res, 200, complete(body))
    }
    if (req.method === "POST" && path === "/v1/files") {
      const content = filePart(raw, req.headers["content-type"])
      if (content === undefined) return error(res, 400, "no file part")
      const id = `file-${++next}`
      files.set(id, content)
      return send(res, 200, { id, object: "file", purpose: "batch", bytes: Buffer.byteLength(content) })
    }
    const content = /^\/v1\/files\/([^/]+)\/content$/.exec(path)
    if (req.method === "GET" && content !== null) {
      const text = files.get(decodeURIComponent(content[1]))
      return text === undefined ? error(res, 404, "no such file") : send(res, 200, text, "application/octet-stream")
    }
    if (req.method === "POST" && path === "/v1/batches") {
      const body = json()
      const text = files.get(body?.input_file_id)
      if (text === undefined) return error(res, 400, `no such input file ${body?.input_file_id}`)
      const lines = text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l))
      const wrong = lines.find((l) => l.body?.model !== MODEL)
      if (wrong !== undefined) return error(res, 404, wrongModel(wrong.body?.model), "model_not_found")
      const b = {
        id: `batch_${++next}`,
        input: body.input_file_id,
        lines,
        requests: lines.length,
        status: "validating"
      }
      batches.set(b.id, b)
      return send(res, 200, batchJson(b))
    }
    if (req.method === "GET" && path === "/v1/batches") {
      return send(res, 200, { object: "list", data: [...batches.values()].reverse().map(batchJson), has_more: false })
    }
    const one = /^\/v1\/batches\/([^/]+)$/.exec(path)
    if (req.method === "GET" && one !== null) {
      const b = batches.get(decodeURIComponent(one[1]))
      if (b === undefined) return error(res, 404, "no such batch")
      if (b.output === undefined) {
        const out = b.lines.map((l) =>
          JSON.stringify({
            id: `batch_req_${++next}`,
            custom_id: l.custom_id,
            response: { status_code: 200, request_id: `req_${next}`, body: complete(l.body) },
            error: null
          })
        )
        b.output = `file-${++next}`
        files.set(b.output, out.join("\n") + "\n")
        b.status = "completed"
      }
      return send(res, 200, batchJson(b))
    }
    return error(res, 404, `no route ${req.method} ${path}`)
  })
})

const port = Number(process.env.PORT ?? 8100)
server.listen(port, "127.0.0.1", () => {
  console.log(
    `not-a-judge server (NOT A JUDGE: answers are fixed, not judgements) on http://127.0.0.1:${server.address().port}/v1`
  )
})
