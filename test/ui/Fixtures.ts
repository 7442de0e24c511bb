/**
 * Run directories for the browser review's tests, made by running the built-in pipelines in-process
 * on `test-sets/` (heuristic judge) — never hand-written run files:
 *
 * - `correctnessA`: answer-correctness on the sample plus hostile cases (script tags, `javascript:`
 *   links, HTML comments, in the text and in a case id) and two cases whose claim checks the judge
 *   fails on (a judge that answers like an LLM whose reply could not be read: `failed`, with its raw
 *   text), so the run has failing cases;
 * - `correctnessB`: the same cases and judge, with some answers made worse (what `compare` finds);
 * - `search`: search-relevance on the sample plus a query with hostile hits.
 */
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { builtins } from "../../src/builtin/index.js"
import type { JudgeTask, ListJudgeTask, Verdict } from "../../src/domain/Judgment.js"
import { instantiate, type Pipeline } from "../../src/engine/Pipeline.js"
import * as HeuristicJudge from "../../src/judges/HeuristicJudge.js"
import { Judge } from "../../src/judges/Judge.js"
import { repoRoot, runWith, tempDir } from "../support/RunPipeline.js"

export const HOSTILE = [
  "<script>window.__pwned=1;alert('xss')</script>",
  "<img src=x onerror=\"window.__pwned=2\">",
  "<!-- hidden comment -->",
  "<a href=\"javascript:window.__pwned=3\">click me</a>",
  "javascript:alert(document.cookie)",
  "<iframe src=\"http://evil.example/\"></iframe>",
  "<style>body{background:url(http://evil.example/x.png)}</style>",
  "</textarea></pre></details><svg onload=\"window.__pwned=4\">",
  "{{constructor.constructor('window.__pwned=5')()}}"
].join(" ")

/** A case id that is itself hostile (and needs encoding in a URL). */
export const HOSTILE_ID = "<script>alert(1)</script>/../x?y#z"

const FAILING_PREFIX = "judge-fails"

/**
 * The heuristic judge, except that in cases whose id starts with "judge-fails" it fails the check of
 * each side's first claim, as an LLM judge fails a reply it cannot read: status failed, no score, its
 * raw text kept. The other claims of those cases keep their verdicts.
 */
const flakyLayer = Layer.effect(
  Judge,
  Effect.map(HeuristicJudge.make, (heuristic) => {
    const failing = (caseId: string, rubric: string, target: string) =>
      caseId.startsWith(FAILING_PREFIX) && rubric.endsWith("/check") && /:1$/.test(target)
    const failed = (target: string): Verdict => ({
      status: "failed",
      failure: "judge",
      score: null,
      reason: "the reply could not be read as a verdict after 2 repairs",
      raw: `I think the claim "${target}" is <b>probably</b> fine. ${HOSTILE}`,
      usage: { inputTokens: 120, outputTokens: 40 },
      attempts: 3
    })
    const judge = (task: JudgeTask): Verdict =>
      failing(task.caseId, task.rubric.id, task.target) ? failed(task.target) : heuristic.sync!.judge(task)
    const judgeList = (task: ListJudgeTask): ReadonlyArray<Verdict> => {
      const verdicts = heuristic.sync!.judgeList(task)
      return task.items.map((item, i) =>
        failing(task.caseId, task.rubric.id, item.target) ? failed(item.target) : verdicts[i]!
      )
    }
    return {
      ...heuristic,
      model: "lexical-v4+failures",
      label: "heuristic judge (test: some claim checks fail)",
      judge: (task: JudgeTask) => Effect.sync(() => judge(task)),
      judgeList: (task: ListJudgeTask) => Effect.sync(() => judgeList(task)),
      sync: { judge, judgeList }
    }
  })
)

const pipelineOf = (name: string) => instantiate(builtins.get(name)!, {}) as Pipeline<unknown, unknown>

const readJsonl = (file: string): Array<Record<string, unknown>> =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l))

/**
 * The cases of an answer-correctness run the review should list as failing, from what the run wrote:
 * those whose judge fails (a failed judgment) and those whose verdict (the pass rule) says fail.
 */
export const failingCaseIds = (runDir: string): Array<string> =>
  readJsonl(Path.join(runDir, "records-iteration-1.jsonl"))
    .filter((r) =>
      String(r["caseId"]).startsWith(FAILING_PREFIX) ||
      (r["verdict"] as { pass?: boolean } | undefined)?.pass === false
    )
    .map((r) => String(r["caseId"]))

const writeJsonl = (file: string, rows: ReadonlyArray<unknown>) =>
  fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join("\n") + "\n")

export interface Fixtures {
  readonly out: string
  readonly correctnessA: string
  readonly correctnessB: string
  readonly search: string
}

/** The cases of the answer-correctness runs: the sample, hostile cases, cases the judge fails on. */
export const correctnessCases = (): Array<Record<string, unknown>> => {
  const sample = readJsonl(Path.join(repoRoot, "test-sets", "answer-correctness", "sample.jsonl"))
  return [
    ...sample,
    {
      id: HOSTILE_ID,
      question: `What does this page do? ${HOSTILE}`,
      answer: `It shows text. ${HOSTILE} The page is safe.`,
      reference: `The page shows text safely. ${HOSTILE}`,
      contexts: [`A review page shows case text as text. ${HOSTILE}`]
    },
    {
      id: "hostile-2",
      question: "Where is the <!-- comment --> kept?",
      answer: "In the javascript:void(0) link <a href=javascript:alert(1)>here</a>.",
      reference: "Comments <!-- like this --> are kept as text."
    },
    {
      id: `${FAILING_PREFIX}-1`,
      question: "What is the capital of Italy, and what is it known for?",
      answer:
        "Rome is the capital of Italy. It lies on the river Tiber. It has about 2.8 million inhabitants. The Colosseum is in Rome.",
      reference:
        "The capital of Italy is Rome. Rome lies on the Tiber. The Colosseum, an ancient amphitheatre, stands in Rome.",
      contexts: [
        "Rome, the capital city of Italy, lies on the river Tiber and has about 2.8 million residents.",
        "The Colosseum is an ancient amphitheatre in the centre of Rome."
      ]
    },
    {
      id: `${FAILING_PREFIX}-2`,
      question: "How many legs does a spider have?",
      answer: "A spider has eight legs. Insects have six legs. Spiders are arachnids.",
      reference: "Spiders have eight legs. Spiders are arachnids, not insects.",
      contexts: ["Spiders are arachnids with eight legs; insects have six."]
    }
  ]
}

/** B's answers: some cases made worse (wrong facts, or no answer). */
const worse = (rows: ReadonlyArray<Record<string, unknown>>) =>
  rows.map((r) =>
    r["id"] === "q1"
      ? { ...r, answer: "The Eiffel Tower was completed in 1925. It is about 80 metres tall." }
      : r["id"] === "q8"
      ? { ...r, answer: "I am not sure." }
      : r["id"] === "q7"
      ? { ...r, answer: "The capital of Australia is Canberra." }
      : r
  )

const runOne = (pipeline: string, judge: Layer.Layer<Judge>, input: string, out: string) =>
  Effect.map(
    runWith(pipelineOf(pipeline), judge, { input, outRoot: out, maxFailures: 100 }),
    (result) => result.info.runDir as string
  )

/** Builds every fixture run under one temporary output root. */
export const buildFixtures = (): Promise<Fixtures> =>
  Effect.runPromise(Effect.gen(function*() {
    const dir = tempDir("rag-eval-ui-")
    const out = Path.join(dir, "out")
    const inputs = Path.join(dir, "inputs")
    fs.mkdirSync(inputs, { recursive: true })
    const a = Path.join(inputs, "correctness-a.jsonl")
    const b = Path.join(inputs, "correctness-b.jsonl")
    const cases = correctnessCases()
    writeJsonl(a, cases)
    writeJsonl(b, worse(cases))
    const search = Path.join(inputs, "search.jsonl")
    const searchSample = readJsonl(Path.join(repoRoot, "test-sets", "search-relevance", "sample.jsonl"))
    writeJsonl(search, [
      ...searchSample,
      {
        id: "hostile-query",
        query: `capital of france ${HOSTILE}`,
        hits: [
          { id: HOSTILE_ID, text: `Paris is the capital of France. ${HOSTILE}` },
          { id: "javascript:alert(1)", text: "Lyon is a city in France. <!-- comment -->" }
        ]
      }
    ])
    const correctnessA = yield* runOne("answer-correctness", flakyLayer, a, out)
    const correctnessB = yield* runOne("answer-correctness", flakyLayer, b, out)
    const searchRun = yield* runOne("search-relevance", HeuristicJudge.layer, search, out)
    return { out, correctnessA, correctnessB, search: searchRun }
  }) as Effect.Effect<Fixtures, unknown>)

/** A run directory's run id (its last path segment). */
export const runIdOf = (runDir: string) => Path.basename(runDir)
