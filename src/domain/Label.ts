/**
 * A person's label on what a run judged: the one labels format of rag-eval. The browser review
 * (`rag-eval ui`) appends these lines to `<run-dir>/labels.jsonl` (JSON Lines, one label a line,
 * append-only: a later line by the same person about the same case and target replaces their
 * earlier one; two people's labels on one target are two labels, as two annotators); `calibrate
 * --labels` reads that file, and converts the flat forms a team writes by hand (`id, criterion,
 * grade`; `id, claim, verdict`; `id, metric, value`; `id_a, id_b, preference`; TREC qrels) into the
 * same `Label` before pairing. `judge-bench` states the public sets' human labels in it too.
 *
 * A label names the case and the **target** — what was judged: a rubric grade of the case, a hit's
 * relevance grade, a claim's verdict against one text, a nugget's support, a per-case metric's
 * value, or a preference between this run's answer and another run's for the same case — and gives
 * either agreement with the judge (`agree`: right or wrong, the judge's own value kept in `judged`
 * so the label stands alone) or the person's own value.
 */
import * as Schema from "effect/Schema"

/** The verdict scale of a claim check, stated once (the check rubric's 0 · 1 · 2). */
export const ClaimVerdict = Schema.Literal("contradicted", "neutral", "entailed")
export type ClaimVerdict = typeof ClaimVerdict.Type

/** TREC RAG's nugget assignment scale (the nugget rubric's 0 · 1 · 2). */
export const NuggetSupport = Schema.Literal("not_support", "partial_support", "support")
export type NuggetSupport = typeof NuggetSupport.Type

/**
 * The two scales as scores: score i of the check rubric (`prompts/answer-correctness/check.json`) is
 * `ClaimVerdict.literals[i]`, of the nugget rubric `NuggetSupport.literals[i]` — the one statement the
 * heuristic judge, the claim kind and the reports read (a test pins the rubric files to it).
 */
export const claimVerdictOf = (score: number | null): ClaimVerdict | null =>
  score === null ? null : ClaimVerdict.literals[score] ?? null
export const claimVerdictScore = (v: ClaimVerdict): number => ClaimVerdict.literals.indexOf(v)
export const nuggetSupportOf = (score: number | null): NuggetSupport | null =>
  score === null ? null : NuggetSupport.literals[score] ?? null
export const nuggetSupportScore = (v: NuggetSupport): number => NuggetSupport.literals.indexOf(v)

/**
 * What a claim is checked against: the reference, the answer, the k-th context (1-based), or the
 * retrieved contexts together (`contexts`: supported when some context entails it — faithfulness's
 * reading, and how a person labels "is this claim supported by the passages?").
 */
export const ClaimAgainst = Schema.Union(
  Schema.Literal("reference", "answer", "contexts"),
  Schema.Struct({ context: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)) })
)
export type ClaimAgainst = typeof ClaimAgainst.Type

const Index = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))

/** What a label is about. Indexes are 1-based, as reports number claims, hits and nuggets. */
export const LabelTarget = Schema.Union(
  /** A rubric's grade of the whole case (`rag-answers/groundedness`; its last segment or its name also match). */
  Schema.Struct({ kind: Schema.Literal("grade"), criterion: Schema.String }),
  /** A retrieved hit's relevance grade, by the hit's id. */
  Schema.Struct({ kind: Schema.Literal("hit"), hitId: Schema.String }),
  /**
   * Claim `index` of the answer's (or the reference's) claims, checked against a text. `text` is the
   * claim as the judge extracted it: labels made on one judge's claims pair with another judge's only
   * where the texts match.
   */
  Schema.Struct({
    kind: Schema.Literal("claim"),
    side: Schema.Literal("answer", "reference"),
    index: Index,
    against: ClaimAgainst,
    text: Schema.optional(Schema.String)
  }),
  /** Nugget `index` of the case, graded against the answer. */
  Schema.Struct({ kind: Schema.Literal("nugget"), index: Index, text: Schema.optional(Schema.String) }),
  /** A per-case metric (`f1`, `composite`, `ndcg@10`…), by the name the run declares. */
  Schema.Struct({ kind: Schema.Literal("metric"), metric: Schema.String }),
  /**
   * This run's answer to the case against another answer (see `Preference`): another run's answer to
   * the same case, or (`caseId`) another case's answer — RAGChecker's pairs are two cases of one
   * run. `aspect` says what was compared (RAGChecker's `correctness`, `completeness`, `overall`);
   * absent: overall.
   */
  Schema.Struct({
    kind: Schema.Literal("preference"),
    other: Schema.Struct({ runId: Schema.String, caseId: Schema.optional(Schema.String) }),
    aspect: Schema.optional(Schema.String)
  })
)
export type LabelTarget = typeof LabelTarget.Type

/**
 * A preference between answer A (this label's case in this run) and answer B (the other): −2 A is much
 * better, −1 A is better, 0 alike, 1 B is better, 2 B is much better — RAGChecker's human scale.
 */
export const Preference = Schema.Literal(-2, -1, 0, 1, 2)
export type Preference = typeof Preference.Type

/** The person's label: agreement with the judge, or their own value of the target's kind. */
export const LabelValue = Schema.Union(
  Schema.Struct({ agree: Schema.Boolean }),
  Schema.Struct({ grade: Schema.Number }),
  Schema.Struct({ verdict: ClaimVerdict }),
  Schema.Struct({ support: NuggetSupport }),
  Schema.Struct({ value: Schema.Number }),
  Schema.Struct({ preference: Preference })
)
export type LabelValue = typeof LabelValue.Type

/** What the judge had said when the label was made (a grade, a verdict, a value): makes `agree` self-contained. */
export const Judged = Schema.Union(Schema.Number, ClaimVerdict, NuggetSupport, Schema.Null)
export type Judged = typeof Judged.Type

/** The longest note kept (characters); a longer one is refused, not cut. */
export const MAX_NOTE_LENGTH = 2_000

/** One line of a labels file. */
export const Label = Schema.Struct({
  /** The run the label was made on (absent in a hand-written file: any run with the case). */
  runId: Schema.optional(Schema.String),
  caseId: Schema.String,
  target: LabelTarget,
  label: LabelValue,
  judged: Schema.optional(Judged),
  note: Schema.optional(Schema.String.pipe(Schema.maxLength(MAX_NOTE_LENGTH))),
  /** Who labelled (a name, as given to `rag-eval ui --user`, else the OS user). */
  by: Schema.String,
  /** When, as an ISO 8601 instant. */
  at: Schema.String
})
export type Label = typeof Label.Type

/** The labels file of a run directory. */
export const LABELS_FILE = "labels.jsonl"

/**
 * Two labels are one person's about the same thing when their person, run, case and target are
 * equal; the later line wins. Different people's labels on one target are kept apart (annotators).
 */
export const labelKey = (l: Pick<Label, "runId" | "caseId" | "target" | "by">): string =>
  JSON.stringify([l.by, l.runId ?? null, l.caseId, targetKey(l.target)])

/** A target as a stable string (its fields in a fixed order; the claim's text left out). */
export const targetKey = (t: LabelTarget): string => {
  switch (t.kind) {
    case "grade":
      return `grade:${t.criterion}`
    case "hit":
      return `hit:${t.hitId}`
    case "claim":
      return `claim:${t.side}:${t.index}:${typeof t.against === "string" ? t.against : `context:${t.against.context}`}`
    case "nugget":
      return `nugget:${t.index}`
    case "metric":
      return `metric:${t.metric}`
    case "preference":
      return `preference:${t.other.runId}:${t.other.caseId ?? ""}${t.aspect === undefined ? "" : `:${t.aspect}`}`
  }
}
