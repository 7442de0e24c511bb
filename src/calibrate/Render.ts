/**
 * `rag-eval calibrate` output: the `Calibration` object as markdown (bounded: at most `maxListed`
 * unpaired items per list and per-query rows, with the full count) or as JSON (everything).
 * Ids and criterion names come from users' files, so every one is escaped before it enters markdown.
 */
import { thousands } from "../domain/Numbers.js"
import { CalibrationFile, encodeJson } from "../domain/RunFiles.js"
import type * as RunFiles from "../domain/RunFiles.js"
import type {
  Calibration,
  Correlation,
  CriterionCalibration,
  Estimate,
  JudgeSource,
  UnpairedList
} from "./Calibration.js"

export const defaultMaxListed = 20

/**
 * Markdown-safe inline text from a user's file: one line, cut at `max` characters, with the
 * characters that could break a table or be read as markup escaped — `\` `|` `` ` `` `*` `[` `]`,
 * `_` where it could open or close emphasis (not between two letters or digits), and `<` `>` `&`
 * as HTML entities (so no tag or entity reaches a renderer).
 */
export const markdownText = (text: string, max = 200): string => {
  const one = text.replace(/\s+/g, " ").trim()
  const cut = one.length > max ? `${one.slice(0, max - 1)}…` : one
  return cut
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/[\\|`*[\]]/g, (c) => `\\${c}`)
    .replace(/(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])/g, "\\_")
}

const fixed = (x: number | null | undefined, digits = 4) => (x === null || x === undefined ? "—" : x.toFixed(digits))
const signed = (
  x: number | null | undefined,
  digits = 4
) => (x === null || x === undefined ? "—" : `${x >= 0 ? "+" : "-"}${Math.abs(x).toFixed(digits)}`)

const ciText = (e: Estimate, format: (x: number) => string = (x) => fixed(x)) =>
  e.ci === null
    ? "—"
    : `[${format(e.ci.lower)}, ${format(e.ci.upper)}]${
      e.undefinedResamples > 0 ? ` (${thousands(e.undefinedResamples)} resamples undefined, left out)` : ""
    }`

const valueText = (e: Estimate, format: (x: number) => string = (x) => fixed(x)) =>
  e.value === null ? `— (${e.reason ?? "undefined"})` : format(e.value)

const correlationText = (c: Correlation) => {
  const tau = c.kendallTauB.value === null ? `undefined (${c.kendallTauB.reason ?? ""})` : fixed(c.kendallTauB.value)
  const rho = c.spearmanRho.value === null ? `undefined (${c.spearmanRho.reason ?? ""})` : fixed(c.spearmanRho.value)
  return `Kendall's τ-b = ${tau}, Spearman's ρ = ${rho} (n = ${thousands(c.n)})`
}

const describeJudge = (source: JudgeSource): string => {
  if (source.kind === "qrels") {
    return `- **Judge**: grades from \`${markdownText(source.file)}\` (TREC qrels; criterion "relevance")` +
      (source.negative > 0 ? `; ${thousands(source.negative)} negative grade(s) (trec_eval's "unjudged") left out` : "")
  }
  const r = source.run
  return `- **Judge**: run \`${markdownText(r.dir)}\` — ${markdownText(r.pipeline)}, run ${markdownText(r.runId)}` +
    `${r.judge === undefined ? "" : `, judge ${markdownText(r.judge)}`}, iteration ${r.iteration} of ${r.iterations}` +
    `${r.status !== undefined && r.status !== "complete" ? ` (status: ${markdownText(r.status)})` : ""}` +
    `${source.tornLastLine ? "; a torn last journal line (written during a crash) was dropped" : ""}` +
    `${source.otherLines > 0 ? `; ${thousands(source.otherLines)} journal line(s) that are not judgments skipped` : ""}`
}

const binaryLabel = (c: Calibration | CriterionCalibration) => `binary, grade ≥ ${c.relevantAt}`

const kappaLabel = (c: CriterionCalibration) =>
  `Cohen's κ (${c.grades.length} grade${c.grades.length === 1 ? "" : "s"})`

/** One line per criterion: the headline figures (printed on stdout when the report goes to a file). */
export const summaryLines = (calibration: Calibration): ReadonlyArray<string> => [
  ...gradeSummaryLines(calibration),
  ...answerSummaryLines(calibration.answers ?? null)
]

const answerSummaryLines = (a: RunFiles.AnswerCalibration | null): ReadonlyArray<string> => {
  if (a === null) return []
  const verdictLine = (name: string, v: RunFiles.VerdictCalibration | null) =>
    v === null ? [] : [
      `${name}: ${thousands(v.pairs)} pairs; κ = ${valueText(v.cohenKappa)} (${v.scale.length} values), ` +
      `balanced accuracy ${valueText(v.balancedAccuracy)}, on "${v.positive} or not" ${
        valueText(v.binaryBalancedAccuracy)
      }`
    ]
  return [
    ...verdictLine("claim verdicts", a.claims),
    ...verdictLine("nugget grades", a.nuggets),
    ...a.metrics.map((m) =>
      `metric ${m.metric}: ${thousands(m.pairs)} pairs; Pearson r = ${valueText(m.pearson)}, Kendall's τ-b = ${
        valueText(m.kendallTauB)
      }`
    ),
    ...(a.preferences === null ? [] : [
      `preferences: ${
        a.preferences.rows.length === 0
          ? "no metric to correlate"
          : a.preferences.rows.filter((r) => headlinePreference(r)).map((r) =>
            `${r.metric}${r.aspect === null ? "" : ` ~ ${r.aspect}`} r = ${valueText(r.pearson)}`
          ).join(", ") || `${a.preferences.rows.length} metric × aspect rows (see the report)`
      }`
    ]),
    ...(a.unpaired.count > 0
      ? [`${thousands(a.unpaired.count)} answer label(s) not paired (listed in the report)`]
      : [])
  ]
}

/** RAGChecker's pairing of metrics with aspects, shown first: precision ~ correctness, recall ~ completeness, F1 ~ overall. */
const RAGCHECKER_PAIRS: ReadonlyArray<readonly [string, string]> = [
  ["precision", "correctness"],
  ["recall", "completeness"],
  ["f1", "overall"]
]
const headlinePreference = (r: RunFiles.PreferenceAgreement): boolean =>
  RAGCHECKER_PAIRS.some(([m, aspect]) => r.metric === m && r.aspect === aspect)

const gradeSummaryLines = (calibration: Calibration): ReadonlyArray<string> =>
  calibration.criteria.map((c) =>
    c.pairs === 0
      ? `${c.criterion}: 0 pairs, nothing measured${c.note === undefined ? "" : ` (${c.note})`}`
      : `${c.criterion}: ${thousands(c.pairs)} pairs; κ = ${valueText(c.cohenKappa)} (${c.grades.length} grades), ` +
        `κ = ${valueText(c.binaryKappa)} (${binaryLabel(c)}), quadratic-weighted κ = ${valueText(c.quadraticKappa)}, ` +
        `Krippendorff's α = ${valueText(c.krippendorffAlpha)}, bias ${valueText(c.bias, (x) => signed(x))}`
  )

const unpairedTable = (
  title: string,
  list: UnpairedList,
  retrieval: boolean,
  maxListed: number,
  labelColumn: boolean,
  lineColumn: string
): Array<string> => {
  if (list.count === 0) return []
  const head = retrieval ? "| query | doc | grade |" : "| id | grade |"
  const lines = [
    `#### ${title} (${thousands(list.count)})`,
    "",
    `${head}${labelColumn ? " label |" : ""} ${lineColumn} |`,
    `${retrieval ? "|---|---|---:|" : "|---|---:|"}${labelColumn ? "---:|" : ""}---:|`
  ]
  for (const item of list.items.slice(0, maxListed)) {
    const grade = item.grade === null ? "failed" : String(item.grade)
    const label = labelColumn ? ` ${item.label === null || item.label === undefined ? "—" : String(item.label)} |` : ""
    lines.push(
      retrieval
        ? `| ${markdownText(item.id)} | ${markdownText(item.item ?? "")} | ${grade} |${label} ${item.line} |`
        : `| ${markdownText(item.id)} | ${grade} |${label} ${item.line} |`
    )
  }
  if (list.count > maxListed) {
    lines.push("", `(first ${maxListed} of ${thousands(list.count)} listed; all of them are in \`--format json\`)`)
  }
  lines.push("")
  return lines
}

const criterionSection = (calibration: Calibration, c: CriterionCalibration, maxListed: number): Array<string> => {
  const retrieval = calibration.kind === "retrieval"
  const names = c.labelNames.filter((n) => n !== c.criterion)
  const lines = [
    `## ${markdownText(c.criterion)}`,
    "",
    ...(c.note === undefined ? [] : [`**Not calibrated:** ${markdownText(c.note, 600)}.`, ""]),
    ...(c.rubrics.length > 0 && (c.rubrics.length > 1 || c.rubrics[0] !== c.criterion)
      ? [`Judged with rubric ${c.rubrics.map((r) => `\`${markdownText(r)}\``).join(", ")}.`, ""]
      : []),
    ...(names.length > 0 ? [`Named in the labels as ${names.map((n) => `"${markdownText(n)}"`).join(", ")}.`, ""] : []),
    `Pairs: **${thousands(c.pairs)}** matched · ${
      thousands(c.labelsWithoutJudgment.count)
    } label(s) without a judgment · ` +
    `${thousands(c.judgmentsWithoutLabel.count)} judgment(s) without a label · ${
      thousands(c.judgeFailed.count)
    } judge failed` +
    `${c.judgeFailed.count > 0 ? ` (${thousands(c.judgeFailed.withLabel)} of them labelled)` : ""}`,
    "",
    "| statistic | value | 95% CI |",
    "|---|---:|---|",
    `| Exact agreement | ${valueText(c.exactAgreement)} | ${ciText(c.exactAgreement)} |`,
    `| ${kappaLabel(c)} | ${valueText(c.cohenKappa)} | ${ciText(c.cohenKappa)} |`,
    `| Cohen's κ (${binaryLabel(c)}) | ${valueText(c.binaryKappa)} | ${ciText(c.binaryKappa)} |`,
    `| Quadratic-weighted κ | ${valueText(c.quadraticKappa)} | ${ciText(c.quadraticKappa)} |`,
    `| Krippendorff's α (ordinal) | ${valueText(c.krippendorffAlpha)} | ${ciText(c.krippendorffAlpha)} |`,
    `| Bias (judge − humans) | ${valueText(c.bias, (x) => signed(x))} | ${ciText(c.bias, (x) => signed(x))} |`,
    "",
    `Mean grade: judge ${fixed(c.meanJudge, 3)}, humans ${fixed(c.meanHuman, 3)}.`,
    ""
  ]
  if (c.grades.length > 0) {
    const k = c.grades.length
    const columnTotals = c.grades.map((_, j) => c.confusion.reduce((s, row) => s + row[j]!, 0))
    lines.push(
      "### Confusion matrix (rows: humans, columns: judge)",
      "",
      `| humans \\\\ judge | ${c.grades.join(" | ")} | total |`,
      `|---|${"---:|".repeat(k)}---:|`,
      ...c.confusion.map((row, h) =>
        `| **${c.grades[h]}** | ${row.map((x) => thousands(x)).join(" | ")} | ${
          thousands(row.reduce((s, x) => s + x, 0))
        } |`
      ),
      `| total | ${columnTotals.map((x) => thousands(x)).join(" | ")} | ${thousands(c.pairs)} |`,
      "",
      "### Per grade (humans as the reference)",
      "",
      "Precision: of the items the judge gave this grade, the share the humans gave it too; recall: of the items the humans gave this grade, the share the judge gave it too.",
      "",
      "| grade | judge gave | humans gave | precision | 95% CI | recall | 95% CI |",
      "|---:|---:|---:|---:|---|---:|---|",
      ...c.perGrade.map((g) =>
        `| ${g.grade} | ${thousands(g.judge)} | ${thousands(g.human)} | ${valueText(g.precision)} | ${
          ciText(g.precision)
        } | ${valueText(g.recall)} | ${ciText(g.recall)} |`
      ),
      ""
    )
  }
  const judgeLine = calibration.judge.kind === "run" ? "journal line" : "judge qrels line"
  const unpaired = [
    ...unpairedTable("Labels without a judgment", c.labelsWithoutJudgment, retrieval, maxListed, false, "labels line"),
    ...unpairedTable("Judgments without a label", c.judgmentsWithoutLabel, retrieval, maxListed, false, judgeLine),
    ...unpairedTable("Judge failed (no grade)", c.judgeFailed, retrieval, maxListed, true, judgeLine)
  ]
  if (unpaired.length > 0) lines.push("### Not paired", "", ...unpaired)
  return lines
}

const rankingSection = (calibration: Calibration, maxListed: number): Array<string> => {
  const q = calibration.queryRanking
  const s = calibration.systemRanking
  if (q === null && s === null) return []
  const lines = ["## Ranking agreement", ""]
  if (q !== null) {
    lines.push(
      "### Queries: NDCG@10 under the human labels and under the judge's grades",
      "",
      `- Ranking: ${markdownText(q.order, 400)}.`,
      "- NDCG@10 as trec_eval's `ndcg_cut_10` (linear gain). Humans: ideal ordering from every human label of the query, items without a label gain nothing. Judge: ideal from the judge's grades of the query, a failed judgment gains nothing.",
      "- Kendall's τ-b (tie-corrected, as `scipy.stats.kendalltau`) and Spearman's ρ (average ranks for ties, as `scipy.stats.spearmanr`) between the two per-query vectors.",
      `- **${correlationText(q.correlation)}**`,
      `- Mean NDCG@10: humans ${fixed(q.meanHuman)}, judge ${fixed(q.meanJudge)}.` +
        (q.zeroIdealHuman + q.zeroIdealJudge > 0
          ? ` Queries with nothing relevant to rank (IDCG = 0, NDCG = 0 by convention): humans ${q.zeroIdealHuman}, judge ${q.zeroIdealJudge}.`
          : ""),
      ...(q.judgeOnlyQueries + q.labelOnlyQueries > 0
        ? [
          `- Left out: ${thousands(q.judgeOnlyQueries)} judged quer${
            q.judgeOnlyQueries === 1 ? "y" : "ies"
          } without any label, ${thousands(q.labelOnlyQueries)} labelled quer${
            q.labelOnlyQueries === 1 ? "y" : "ies"
          } the judge did not grade.`
        ]
        : []),
      "",
      "| query | items | NDCG@10 humans | NDCG@10 judge |",
      "|---|---:|---:|---:|",
      ...q.queries.slice(0, maxListed).map((row) =>
        `| ${markdownText(row.id)} | ${thousands(row.items)} | ${fixed(row.human)} | ${fixed(row.judge)} |`
      ),
      ...(q.queries.length > maxListed
        ? [
          "",
          `(first ${maxListed} of ${thousands(q.queries.length)} queries listed; all of them are in \`--format json\`)`
        ]
        : []),
      ""
    )
  }
  if (s !== null) {
    lines.push(
      "### Systems: rankings of the `--runs` by mean NDCG@10 and MAP",
      "",
      `- Each run evaluated with trec_eval's conventions against the human labels and against the judge's grades as qrels, both restricted to the ${
        thousands(s.queries)
      } queries that have both; MAP counts grade ≥ ${s.relevantAt} as relevant.`,
      ...s.metrics.map((m) => `- **${m}**: ${correlationText(s.correlation[m]!)}`),
      "",
      `| system | ${s.metrics.map((m) => `${m} humans | ${m} judge`).join(" | ")} |`,
      `|---|${"---:|".repeat(2 * s.metrics.length)}`,
      ...s.systems.map((sys) =>
        `| ${markdownText(sys.name)} | ${
          s.metrics.map((m) => `${fixed(sys.human[m])} | ${fixed(sys.judge[m])}`).join(" | ")
        } |`
      ),
      ""
    )
  }
  return lines
}

/** The calibration as a markdown report. */
export const calibrationMarkdown = (calibration: Calibration, maxListed = defaultMaxListed): string => {
  const l = calibration.labels
  const grades = calibration.criteria.length > 0
  const lines = [
    "# Judge calibration: agreement with human labels",
    "",
    describeJudge(calibration.judge),
    `- **Labels**: \`${markdownText(l.file)}\` — ${
      l.format === "qrels" ? "TREC qrels" : `${l.format.toUpperCase()} labels`
    }, ${thousands(l.count)} label(s)` +
    (l.negative > 0 ? `; ${thousands(l.negative)} negative grade(s) (trec_eval's "unjudged") left out` : ""),
    ...(grades ? [`- **Binary split**: relevant ⇔ grade ≥ ${calibration.relevantAt} (\`--relevant-at\`).`] : []),
    `- **95% CIs**: percentile bootstrap over the matched pairs (${
      thousands(calibration.bootstrap.resamples)
    } resamples with replacement, seed ${calibration.bootstrap.seed}).`,
    ...(grades
      ? [
        "- Cohen's κ = (p_o − p_e)/(1 − p_e); quadratic-weighted κ with disagreement weights (g_judge − g_human)² on the grade values; " +
        "Krippendorff's α with the ordinal metric, judge and humans as two coders; bias = judge mean − human mean. " +
        "A statistic that is undefined on the data (e.g. κ when every pair has one and the same grade) is shown as — with the reason, never as 0 or 1."
      ]
      : []),
    "",
    ...(grades
      ? [
        "## Summary",
        "",
        "| criterion | pairs | κ (grades) | κ (binary) | quadratic-weighted κ | Krippendorff's α | bias |",
        "|---|---:|---:|---:|---:|---:|---:|",
        ...calibration.criteria.map((c) =>
          `| ${markdownText(c.criterion)} | ${thousands(c.pairs)} | ${fixed(c.cohenKappa.value)} | ${
            fixed(c.binaryKappa.value)
          } | ${fixed(c.quadraticKappa.value)} | ${fixed(c.krippendorffAlpha.value)} | ${signed(c.bias.value)} |`
        ),
        ""
      ]
      : []),
    ...(calibration.unlabelledCriteria.length > 0
      ? [
        `Judged but not in the labels (not calibrated): ${
          calibration.unlabelledCriteria.map((u) =>
            `${markdownText(u.criterion)} (${thousands(u.judgments)} judgments)`
          ).join(", ")
        }.`,
        ""
      ]
      : []),
    ...calibration.criteria.flatMap((c) => criterionSection(calibration, c, maxListed)),
    ...rankingSection(calibration, maxListed),
    ...answerSections(calibration.answers ?? null, maxListed)
  ]
  return lines.join("\n").replace(/\n+$/, "") + "\n"
}

/** `calibration.json`: the whole calibration (every unpaired item) and the methods used, encoded through its schema. */
export const calibrationJson = (calibration: Calibration): string =>
  encodeJson(CalibrationFile, {
    ...calibration,
    methods: {
      cohenKappa: "(p_o − p_e) / (1 − p_e) on the exact grades; binaryKappa the same on grade ≥ relevantAt",
      quadraticKappa: "1 − Σ w·O / Σ w·E with w = (g_judge − g_human)² on the grade values",
      krippendorffAlpha: "ordinal metric, two coders (judge, humans), units = matched pairs",
      bias: "judge mean − human mean over the matched pairs",
      confusion: "confusion[h][j]: pairs the humans graded grades[h] and the judge grades[j]",
      bootstrap:
        "95% percentile interval over resamples of the matched pairs with replacement (drawn as a multinomial table)",
      kendallTauB: "tau-b, tie-corrected (scipy.stats.kendalltau)",
      spearmanRho: "Pearson correlation of average ranks (scipy.stats.spearmanr)",
      ndcg: "trec_eval ndcg_cut_10, linear gain",
      balancedAccuracy:
        "mean recall over the values the humans gave (scikit-learn balanced_accuracy_score); binary: on positive (entailed, support) or not",
      claimVerdicts:
        "a claim label pairs with the judge's check of that claim (its number, or its text where numbers differ) against that text; against the contexts: entailed if some context entails it, else contradicted if one contradicts it, else neutral",
      pearson:
        "Pearson's r (scipy.stats.pearsonr), bootstrap over labelled cases (metrics) or answer pairs (preferences)",
      preferences:
        "RAGChecker meta_eval: delta = metric(B) − metric(A), negated for lower-is-better metrics; a missing delta replaced by the median delta; each delta repeated per label; Pearson's r against the preferences (−2 … 2)",
      narrowing:
        "labels needed for a 95% CI of ±halfWidth, assuming the CI narrows as 1/√n: ceil(n · (CI half-width / halfWidth)²)"
    }
  }, 2) + "\n"

// ---------------------------------------------------------------------------------------------
// Answers: claim verdicts, nugget grades, metric values, preferences

/** "≈ 120 more" / "enough" / "—": the labels a headline's CI needs to be ±halfWidth. */
const narrowingText = (h: RunFiles.Headline): string =>
  h.narrowing.more === null
    ? h.narrowing.reason?.startsWith("fewer") === true ? "too few to tell" : "—"
    : h.narrowing.more === 0
    ? "enough"
    : `≈ ${thousands(h.narrowing.more)} more`

const verdictSection = (title: string, v: RunFiles.VerdictCalibration): Array<string> => {
  const k = v.scale.length
  const columnTotals = v.scale.map((_, j) => v.confusion.reduce((s, row) => s + row[j]!, 0))
  return [
    `## ${title}`,
    "",
    `Pairs: **${thousands(v.pairs)}** (a person's ${
      v.scale.join(" / ")
    } against the judge's, humans as the reference).`,
    "",
    "| statistic | value | 95% CI | labels for ±0.1 |",
    "|---|---:|---|---:|",
    `| Exact agreement | ${valueText(v.exactAgreement)} | ${ciText(v.exactAgreement)} | |`,
    `| Cohen's κ (${k} values) | ${valueText(v.cohenKappa)} | ${ciText(v.cohenKappa)} | ${
      narrowingText(v.cohenKappa)
    } |`,
    `| Cohen's κ (${v.positive} or not) | ${valueText(v.binaryKappa)} | ${ciText(v.binaryKappa)} | |`,
    `| Balanced accuracy (${k} values) | ${valueText(v.balancedAccuracy)} | ${ciText(v.balancedAccuracy)} | ${
      narrowingText(v.balancedAccuracy)
    } |`,
    `| Balanced accuracy (${v.positive} or not) | ${valueText(v.binaryBalancedAccuracy)} | ${
      ciText(v.binaryBalancedAccuracy)
    } | ${narrowingText(v.binaryBalancedAccuracy)} |`,
    "",
    "### Confusion matrix (rows: humans, columns: judge)",
    "",
    `| humans \\\\ judge | ${v.scale.join(" | ")} | total |`,
    `|---|${"---:|".repeat(k)}---:|`,
    ...v.confusion.map((row, h) =>
      `| **${v.scale[h]}** | ${row.map((x) => thousands(x)).join(" | ")} | ${
        thousands(row.reduce((s, x) => s + x, 0))
      } |`
    ),
    `| total | ${columnTotals.map((x) => thousands(x)).join(" | ")} | ${thousands(v.pairs)} |`,
    "",
    "| value | judge gave | humans gave | precision | 95% CI | recall | 95% CI |",
    "|---|---:|---:|---:|---|---:|---|",
    ...v.perValue.map((g) =>
      `| ${g.value} | ${thousands(g.judge)} | ${thousands(g.human)} | ${valueText(g.precision)} | ${
        ciText(g.precision)
      } | ${valueText(g.recall)} | ${ciText(g.recall)} |`
    ),
    "",
    ...(v.parts.length === 0 ? [] : [
      "| part | pairs | κ | balanced accuracy | balanced accuracy (" + v.positive + " or not) |",
      "|---|---:|---:|---:|---:|",
      ...v.parts.map((p) =>
        `| ${p.name} | ${thousands(p.pairs)} | ${valueText(p.cohenKappa)} | ${valueText(p.balancedAccuracy)} | ${
          valueText(p.binaryBalancedAccuracy)
        } |`
      ),
      ""
    ])
  ]
}

const answerSections = (a: RunFiles.AnswerCalibration | null, maxListed: number): Array<string> => {
  if (a === null) return []
  const lines: Array<string> = []
  if (a.claims !== null) lines.push(...verdictSection("Claim verdicts", a.claims))
  if (a.nuggets !== null) lines.push(...verdictSection("Nugget grades", a.nuggets))
  if (a.metrics.length > 0) {
    lines.push(
      "## Metric values",
      "",
      "The run's per-case value of each metric against the people's, case by case; CIs over the labelled cases.",
      "",
      "| metric | pairs | Pearson r | 95% CI | Kendall's τ-b | 95% CI | mean judge | mean humans | labels for ±0.1 (r) |",
      "|---|---:|---:|---|---:|---|---:|---:|---:|",
      ...a.metrics.map((m) =>
        `| ${markdownText(m.metric)} | ${thousands(m.pairs)} | ${valueText(m.pearson)} | ${ciText(m.pearson)} | ${
          valueText(m.kendallTauB)
        } | ${ciText(m.kendallTauB)} | ${fixed(m.meanJudge, 3)} | ${fixed(m.meanHuman, 3)} | ${
          narrowingText(m.pearson)
        } |`
      ),
      ""
    )
  }
  if (a.preferences !== null) {
    const p = a.preferences
    const rows = [...p.rows].sort((x, y) => Number(headlinePreference(y)) - Number(headlinePreference(x)))
    lines.push(
      "## Preferences against metric deltas",
      "",
      `Runs: ${
        p.runs.map((r) => `\`${markdownText(r.runId)}\``).join(", ")
      }. RAGChecker's meta-evaluation protocol: per pair of answers A, B, ` +
        "delta = metric(B) − metric(A) (negated for a lower-is-better metric, so agreement is r > 0), a missing delta replaced by the median delta " +
        "(\"filled\"), each delta repeated for every label on the pair; Pearson's r and Kendall's τ-b against the preferences (−2 A much better … 2 B much better), " +
        "CIs over the pairs. RAGChecker's own pairing (precision ~ correctness, recall ~ completeness, F1 ~ overall) comes first.",
      "",
      "| aspect | metric | pairs | labels | filled | Pearson r | 95% CI | Kendall's τ-b | 95% CI | pairs for ±0.1 (r) |",
      "|---|---|---:|---:|---:|---:|---|---:|---|---:|",
      ...rows.map((r) =>
        `| ${markdownText(r.aspect ?? "(overall)")} | ${markdownText(r.metric)} | ${thousands(r.pairs)} | ${
          thousands(r.labels)
        } | ${thousands(r.filled)} | ${valueText(r.pearson)} | ${ciText(r.pearson)} | ${valueText(r.kendallTauB)} | ${
          ciText(r.kendallTauB)
        } | ${narrowingText(r.pearson)} |`
      ),
      ""
    )
  }
  if (a.agreeOnly !== null) {
    lines.push(
      "## Labels that only agree or disagree",
      "",
      `${
        thousands(a.agreeOnly.labels)
      } label(s) say only whether the judge was right (no value of their own to pair): ` +
        `${thousands(a.agreeOnly.agreed)} agree, a share of ${valueText(a.agreeOnly.share)} ${
          ciText(a.agreeOnly.share)
        }.`,
      ""
    )
  }
  if (a.unpaired.count > 0) {
    lines.push(
      `## Labels not paired (${thousands(a.unpaired.count)})`,
      "",
      "| labels line | case | target | by | why |",
      "|---:|---|---|---|---|",
      ...a.unpaired.items.slice(0, maxListed).map((u) =>
        `| ${u.line} | ${markdownText(u.caseId)} | ${markdownText(u.target)} | ${markdownText(u.by ?? "")} | ${
          markdownText(u.reason, 400)
        } |`
      ),
      ...(a.unpaired.count > maxListed
        ? ["", `(first ${maxListed} of ${thousands(a.unpaired.count)} listed; all of them are in \`--format json\`)`]
        : []),
      ""
    )
  }
  return lines
}
