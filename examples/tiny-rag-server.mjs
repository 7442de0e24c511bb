// A tiny RAG service for trying `rag-eval --target`: node:http only, no dependencies.
//
//   PORT=8000 RAG_TOKEN=dev-token node tiny-rag-server.mjs
//
// POST /ask  {"question": "...", "history": "...", "stream": false}
//   → {"answer": "...", "sources": [{"id": "...", "text": "..."}]}
// With "stream": true the answer comes as Server-Sent Events: {"delta": "..."} events, then one
// {"answer": ..., "sources": [...]} event and `data: [DONE]`.
// When RAG_TOKEN is set, requests need `Authorization: Bearer $RAG_TOKEN` (401 otherwise).
//
// "Retrieval" is term overlap over six passages; "generation" quotes the best passage. It is a
// stand-in for a real service, good enough to see answers, passages and latency in a report.
import * as http from "node:http"

const passages = [
  { id: "heat-pump-1", text: "A heat pump moves heat from the outside air into the house using a refrigerant cycle." },
  {
    id: "heat-pump-2",
    text: "Even at 0 °C outdoor air holds heat that the refrigerant can absorb; the compressor raises its temperature."
  },
  {
    id: "boiling-1",
    text:
      "At sea level water boils at 100 °C; at higher altitude the air pressure is lower, so water boils at a lower temperature."
  },
  {
    id: "photo-1",
    text:
      "Photosynthesis is the process by which green plants use sunlight to turn water and carbon dioxide into glucose and oxygen."
  },
  {
    id: "renew-1",
    text:
      "Renewable energy sources such as solar and wind reduce greenhouse gas emissions and can lower long-term energy costs."
  },
  {
    id: "black-hole-1",
    text: "A black hole is a region of space where gravity is so strong that nothing, not even light, can escape."
  }
]

const terms = (text) => new Set(text.toLowerCase().match(/[a-z0-9]+/g) ?? [])

const retrieve = (question, k = 2) => {
  const q = terms(question)
  return passages
    .map((p) => ({ p, score: [...terms(p.text)].filter((t) => q.has(t) && t.length > 3).length }))
    .sort((a, b) => b.score - a.score)
    .slice(0, k)
    .filter((x) => x.score > 0)
    .map((x) => x.p)
}

const answerFor = (sources) =>
  sources.length === 0
    ? "I don't know: nothing in my documents is about that."
    : `From my documents: ${sources[0].text}`

const server = http.createServer((req, res) => {
  let body = ""
  req.on("data", (c) => (body += c))
  req.on("end", () => {
    const send = (status, value) => {
      res.writeHead(status, { "content-type": "application/json" })
      res.end(JSON.stringify(value))
    }
    if (req.method !== "POST" || req.url !== "/ask") return send(404, { error: "POST /ask" })
    const token = process.env.RAG_TOKEN
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      return send(401, { error: "missing or wrong bearer token" })
    }
    let request
    try {
      request = JSON.parse(body)
    } catch {
      return send(400, { error: "the body is not JSON" })
    }
    if (typeof request.question !== "string") return send(400, { error: "no question" })
    const sources = retrieve(request.question)
    const answer = answerFor(sources)
    if (request.stream !== true) return send(200, { answer, sources })
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    for (const piece of answer.match(/\S+\s*/g) ?? []) res.write(`data: ${JSON.stringify({ delta: piece })}\n\n`)
    res.write(`data: ${JSON.stringify({ answer, sources })}\n\n`)
    res.end("data: [DONE]\n\n")
  })
})

server.listen(Number(process.env.PORT ?? 8000), "127.0.0.1", () => {
  console.log(`tiny RAG service on http://127.0.0.1:${server.address().port}/ask`)
})
