/**
 * Generated rag-answers inputs for the benchmarks: rows shaped like the real export
 * (`../shared/data/rag_evaluation_07_2025.csv`) — a question, a conversation history with literal
 * `\n` (two characters) between turns (empty in about a third of the rows), three numbered
 * fragments separated by literal `\n`, and an answer of 1–3 sentences that reuses some fragment
 * words. Words are drawn with a seeded PRNG, so every row is different (the heuristic judge's
 * per-text caches see realistic hit rates) and every run writes the same bytes.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { mulberry32Floats } from "../src/stats/Paired.js"

/** Seeded uniform floats in [0, 1) (mulberry32). */
export const prng = mulberry32Floats

const TOPICS = (
  "renewable energy,photosynthesis,black holes,vaccines,machine learning,the water cycle,inflation,plate tectonics," +
  "the immune system,blockchain,climate change,sleep hygiene,the french revolution,quantum computing,coral reefs," +
  "compound interest,antibiotic resistance,electric vehicles,the roman empire,solar panels,neural networks," +
  "volcanoes,the stock market,meditation,genetic engineering,ocean currents,cloud computing,the printing press," +
  "honey bees,nuclear fusion,dietary fiber,urban planning,cybersecurity,glaciers,the human heart,recycling," +
  "3d printing,supply chains,the moon landing,migratory birds,wind turbines,the internet,probiotics,earthquakes"
).split(",")

const NOUNS = (
  "emissions energy costs health jobs sunlight water carbon dioxide glucose oxygen chlorophyll gravity light stars " +
  "remnants explosion antibodies cells proteins data models training accuracy prices wages rates interest savings " +
  "layers mantle crust plates magma pressure temperature currents nutrients bacteria infection batteries charging " +
  "range grid storage efficiency materials plastics metals glass algorithms qubits errors security networks servers " +
  "bandwidth citizens monarchy taxes reforms soldiers roads aqueducts colonies pollination honey hives queens workers " +
  "fiber digestion bacteria cholesterol sugar transport housing parks traffic passwords encryption attacks ice " +
  "sediment valleys oxygen blood valves arteries rhythm paper landfill compost filament layers printers factories " +
  "shipping inventory retailers astronauts rockets orbit feathers routes seasons blades turbines towers electricity"
).split(" ")

const VERBS = (
  "reduce improve convert capture create release absorb protect increase lower support transform store produce " +
  "regulate prevent accelerate distribute measure generate strengthen limit expand balance filter recycle trigger"
).split(" ")

const ADJECTIVES = (
  "significant long-term renewable efficient complex natural harmful essential rapid gradual global local " +
  "sustainable expensive affordable reliable critical modern ancient fragile dense microscopic massive stable"
).split(" ")

const QUESTION_TEMPLATES: ReadonlyArray<(t: string) => string> = [
  (t) => `What are the benefits of ${t}?`,
  (t) => `How does ${t} work?`,
  (t) => `Can you explain what ${t} is?`,
  (t) => `Why is ${t} important?`,
  (t) => `What are the main risks of ${t}?`,
  (t) => `How has ${t} changed over the last decades?`,
  (t) => `What is the difference between ${t} and older approaches?`
]

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

export const rowGenerator = (seed = 20250701) => {
  const r = prng(seed)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(r() * xs.length)]!
  const sentence = (topic: string, extra?: ReadonlyArray<string>) => {
    const nouns = [pick(NOUNS), pick(NOUNS), pick(NOUNS)]
    if (extra !== undefined && extra.length > 0) nouns[0] = pick(extra)
    const n = Math.floor(r() * 1000)
    const forms = [
      () => `${cap(topic)} can ${pick(VERBS)} ${pick(ADJECTIVES)} ${nouns[0]} and ${nouns[1]}.`,
      () =>
        `Studies show that ${topic} helps ${pick(VERBS)} ${nouns[0]}, which leads to ${pick(ADJECTIVES)} ${
          nouns[1]
        } in the long run.`,
      () => `About ${n} ${nouns[0]} are affected each year, according to a ${pick(ADJECTIVES)} survey of ${nouns[2]}.`,
      () => `The ${pick(ADJECTIVES)} ${nouns[0]} in ${topic} ${pick(VERBS)}s ${nouns[1]} and ${nouns[2]}.`,
      () => `Without ${nouns[0]}, ${topic} would not ${pick(VERBS)} the ${pick(ADJECTIVES)} ${nouns[1]}.`
    ]
    return pick(forms)()
  }
  return (): Record<string, string> => {
    const topic = pick(TOPICS)
    const question = pick(QUESTION_TEMPLATES)(topic)
    const history = r() < 0.35
      ? ""
      : `User: ${pick(QUESTION_TEMPLATES)(pick(TOPICS))}\\nAssistant: ${sentence(pick(TOPICS))}` +
        (r() < 0.3 ? `\\nUser: ${pick(QUESTION_TEMPLATES)(topic)}\\nAssistant: ${sentence(topic)}` : "")
    const fragments = [sentence(topic), sentence(topic), sentence(topic)]
    const fragmentWords = fragments.join(" ").toLowerCase().match(/[a-z]{4,}/g) ?? []
    const sentences = 1 + Math.floor(r() * 3)
    const answer = Array.from({ length: sentences }, () => sentence(topic, fragmentWords)).join(" ")
    return {
      "Current User Question": question,
      "Conversation History": history,
      "Fragment Texts": fragments.map((f, i) => `${i + 1}. ${f}`).join("\\n"),
      "Assistant Answer": answer
    }
  }
}

const COLUMNS = ["Current User Question", "Conversation History", "Fragment Texts", "Assistant Answer"]
const csvField = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, "\"\"")}"` : v)

/** Write `rows` generated rows as CSV (streamed in 1 MiB writes); returns the byte size. */
export const writeCsv = (path: string, rows: number, seed?: number): number => {
  const next = rowGenerator(seed)
  const fd = fs.openSync(path, "w")
  let bytes = 0
  let buffer = COLUMNS.join(",") + "\n"
  try {
    for (let i = 0; i < rows; i++) {
      const row = next()
      buffer += COLUMNS.map((c) => csvField(row[c]!)).join(",") + "\n"
      if (buffer.length >= 1 << 20) {
        bytes += fs.writeSync(fd, buffer)
        buffer = ""
      }
    }
    bytes += fs.writeSync(fd, buffer)
  } finally {
    fs.closeSync(fd)
  }
  return bytes
}

export const benchTempDir = () => fs.mkdtempSync(Path.join(os.tmpdir(), "rag-eval-bench-"))
