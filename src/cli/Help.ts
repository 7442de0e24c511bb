/**
 * `--help` that fits the terminal.
 *
 * Why not the help @effect/cli 0.77 prints: its `CliApp.run` lays the help out with
 * `@effect/printer` but each paragraph is one unbreakable `Doc.text` rendered at no page width, the
 * COMMANDS list is padded to the longest usage (every line as wide as `run`'s 1,400-character
 * usage), and every option gets a sentence about its type ("A user-defined piece of text.") and
 * "This setting is optional.". None of that is configurable, and the rendering happens inside
 * `CliApp.run`. The parts it renders are public data, though: `CommandDescriptor.getHelp` (a
 * `HelpDoc`) and `CommandDescriptor.getUsage` (a `Usage`). So this module takes them from the
 * library — which stays the one source of every command, flag, placeholder and description — drops
 * the generated filler from the `HelpDoc` (a structural edit: the type sentence is always the first
 * paragraph of an option's definition), and fills the lines to the terminal's width (see Layout
 * below for why not with `@effect/printer`). String surgery on the library's rendered text would
 * break on any change of its layout; this depends only on the documented `HelpDoc` and `Usage` types.
 */
import * as CliConfig from "@effect/cli/CliConfig"
import * as CommandDescriptor from "@effect/cli/CommandDescriptor"
import type * as HelpDoc from "@effect/cli/HelpDoc"
import type * as Span from "@effect/cli/HelpDoc/Span"
import type * as Usage from "@effect/cli/Usage"
import * as Context from "effect/Context"
import * as HashSet from "effect/HashSet"
import * as Option from "effect/Option"

/** The width help is laid out at: the terminal's columns, 80 when output is not a terminal. */
export class HelpWidth extends Context.Reference<HelpWidth>()("rag-eval/HelpWidth", { defaultValue: () => 80 }) {}

/** Help without the built-in options in every command's list (`--help`, `--wizard`…): the root help names them once. */
export const helpConfig: CliConfig.CliConfig = CliConfig.make({ showBuiltIns: false })

// ---------------------------------------------------------------------------------------------
// The command tree

/** A command and where it is: `["store", "migrate"]`; the root has the empty path. */
export interface CommandNode {
  readonly path: ReadonlyArray<string>
  readonly descriptor: CommandDescriptor.Command<unknown>
  readonly children: ReadonlyArray<CommandNode>
}

/** A `Command` (only its descriptor is read). */
interface HasDescriptor {
  readonly descriptor: CommandDescriptor.Command<any>
}

const nameOf = (descriptor: CommandDescriptor.Command<unknown>): string =>
  [...HashSet.values(CommandDescriptor.getNames(descriptor))][0] ?? ""

/**
 * The tree of commands under the root, children in the order given (their own children, one level
 * down, by name). `getSubcommands` of a command without children returns the command itself.
 */
export const commandTree = (root: HasDescriptor, children: ReadonlyArray<HasDescriptor>): CommandNode => {
  const node = (descriptor: CommandDescriptor.Command<unknown>, parent: ReadonlyArray<string>): CommandNode => {
    const name = nameOf(descriptor)
    const path = [...parent, name]
    // By code unit, not `localeCompare`: the names are lowercase ASCII, and the first locale-aware
    // comparison starts ICU's collator, ~8 ms of every start of the CLI (this tree is built at each).
    const subs = [...CommandDescriptor.getSubcommands(descriptor)].filter(([n]) => n !== name).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0
    )
    return { path, descriptor, children: subs.map(([, d]) => node(d, path)) }
  }
  return {
    path: [],
    descriptor: root.descriptor as CommandDescriptor.Command<unknown>,
    children: children.map((c) => node(c.descriptor as CommandDescriptor.Command<unknown>, []))
  }
}

/** The deepest command named by the leading arguments (`["store", "migrate", "--store", …]` → store migrate). */
export const commandAt = (tree: CommandNode, args: ReadonlyArray<string>): CommandNode => {
  let node = tree
  for (const arg of args) {
    const child = node.children.find((c) => c.path.at(-1) === arg)
    if (child === undefined) break
    node = child
  }
  return node
}

// ---------------------------------------------------------------------------------------------
// HelpDoc and Usage as plain data

export const spanText = (span: Span.Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    default:
      return spanText(span.value)
  }
}

/** A HelpDoc's blocks in order, sequences flattened. */
const blocksOf = (doc: HelpDoc.HelpDoc): Array<HelpDoc.HelpDoc> =>
  doc._tag === "Sequence" ? [...blocksOf(doc.left), ...blocksOf(doc.right)] : doc._tag === "Empty" ? [] : [doc]

/** A HelpDoc's text, blocks on separate lines (for the parser's error messages). */
export const helpDocText = (doc: HelpDoc.HelpDoc): string =>
  blocksOf(doc).map((b) => {
    switch (b._tag) {
      case "Header":
      case "Paragraph":
        return spanText(b.value)
      case "DescriptionList":
        return b.definitions.map(([term, d]) => `${spanText(term)} ${helpDocText(d)}`).join("\n")
      case "Enumeration":
        return b.elements.map(helpDocText).join("\n")
      default:
        return ""
    }
  }).filter((t) => t !== "").join("\n")

/** One option or argument: its term (`--concurrency integer`) and its description, filler removed. */
export interface Entry {
  readonly term: string
  readonly text: string
}

/** A help section: its title (`OPTIONS`) and its paragraphs or entries. */
interface Section {
  readonly title: string
  readonly paragraphs: ReadonlyArray<string>
  readonly entries: ReadonlyArray<Entry>
}

/** "This setting is optional. Defaults to: 8", added by `Options.withDefault`. */
const OPTIONAL = /^This setting is optional\.(?: Defaults to: (.*))?$/

/** "This argument may be repeated zero or more times.", added by `repeated`: the usage shows `...`. */
const REPEATED = /^This (?:argument|option) (?:may|must) be repeated/

/**
 * An option's or argument's definition without what the library generates for every one: the
 * first paragraph (always the primitive type's sentence: `Options.getHelp` and `Args.getHelp`
 * build each definition as `sequence(p(Primitive.getHelp(type)), description)`), "This setting
 * is optional." and "… may be repeated …" (the usage shows `[ ]` and `...` already). A default the
 * description does not state is kept, as "default X".
 */
const definitionText = (block: HelpDoc.HelpDoc): string => {
  const paragraphs = blocksOf(block).slice(1).map((b) =>
    b._tag === "Paragraph" || b._tag === "Header" ? spanText(b.value) : ""
  )
  const described = paragraphs.filter((p) => !OPTIONAL.test(p) && !REPEATED.test(p))
  const text = described.join(" ")
  const fallback = paragraphs.map((p) => OPTIONAL.exec(p)?.[1]).find((d) => d !== undefined)
  return fallback === undefined || fallback === "false" || /default/i.test(text) || fallback === ""
    ? text
    : `${text} (default ${fallback})`
}

/** The library's sections (DESCRIPTION, ARGUMENTS, OPTIONS, COMMANDS) as data. */
const sectionsOf = (doc: HelpDoc.HelpDoc): Array<Section> => {
  const sections: Array<{ title: string; paragraphs: Array<string>; entries: Array<Entry> }> = []
  for (const block of blocksOf(doc)) {
    if (block._tag === "Header") {
      sections.push({ title: spanText(block.value), paragraphs: [], entries: [] })
      continue
    }
    const current = sections.at(-1)
    if (current === undefined) continue
    if (block._tag === "Paragraph") current.paragraphs.push(spanText(block.value))
    if (block._tag === "DescriptionList") {
      for (const [term, definition] of block.definitions) {
        // "(-i, --input text)" → "-i, --input text"
        current.entries.push({ term: spanText(term).replace(/^\((.*)\)$/, "$1"), text: definitionText(definition) })
      }
    }
  }
  return sections
}

/** A command's description (its DESCRIPTION section). */
export const descriptionOf = (descriptor: CommandDescriptor.Command<unknown>): string =>
  sectionsOf(CommandDescriptor.getHelp(descriptor, helpConfig)).find((s) => s.title === "DESCRIPTION")?.paragraphs.join(
    " "
  ) ?? ""

/** A command's options and arguments (the library's help entries, filler removed). */
export const entriesOf = (
  descriptor: CommandDescriptor.Command<unknown>,
  section: "OPTIONS" | "ARGUMENTS"
): ReadonlyArray<Entry> =>
  sectionsOf(CommandDescriptor.getHelp(descriptor, helpConfig)).find((s) => s.title === section)?.entries ?? []

/** One flag of a command, from its usage: names (`--input`, `-i`) and the value it takes (`text`, `a | b`), if any. */
export interface Flag {
  readonly names: ReadonlyArray<string>
  readonly value: string | undefined
  readonly required: boolean
  /** May be given more than once. */
  readonly repeated?: boolean | undefined
}

/** A command's flags and positional arguments, read from its `Usage`. */
export const usageParts = (descriptor: CommandDescriptor.Command<unknown>) => {
  const flags: Array<Flag> = []
  const args: Array<{ readonly name: string; readonly required: boolean; readonly repeated: boolean }> = []
  const walk = (u: Usage.Usage, optional: boolean, repeated: boolean): void => {
    switch (u._tag) {
      case "Named": {
        // A repeated flag (`--target-header`, given any number of times) may be left out: not required.
        if (u.names.some((n) => n.startsWith("-"))) {
          flags.push({
            names: u.names,
            value: Option.getOrUndefined(u.acceptedValues),
            required: !optional && !repeated,
            repeated
          })
        } else if (u.names.some((n) => n.startsWith("<"))) {
          args.push({ name: u.names[0]!, required: !optional, repeated })
        }
        return
      }
      case "Optional":
        return walk(u.usage, true, repeated)
      case "Repeated":
        return walk(u.usage, optional, true)
      case "Alternation":
      case "Concat":
        walk(u.left, optional, repeated)
        return walk(u.right, optional, repeated)
      default:
        return
    }
  }
  walk(CommandDescriptor.getUsage(descriptor), false, false)
  return { flags, args }
}

/** `rag-eval compare [options] <runA> <runB>`: required flags shown, optional ones folded into `[options]`. */
export const usageLine = (node: CommandNode): string => {
  if (node.children.length > 0) {
    return [
      "rag-eval",
      ...node.path,
      "<command>",
      ...(usageParts(node.descriptor).flags.length > 0 ? ["[options]"] : [])
    ].join(" ")
  }
  const { args, flags } = usageParts(node.descriptor)
  const required = flags.filter((f) => f.required).map((f) =>
    `${f.names.find((n) => n.startsWith("--")) ?? f.names[0]}${f.value === undefined ? "" : ` ${f.value}`}${
      f.repeated === true ? "..." : ""
    }`
  )
  const optional = flags.some((f) => !f.required) ? ["[options]"] : []
  // A repeated argument may be given zero times (`Args.repeated`).
  const positional = args.map((a) => a.required && !a.repeated ? a.name : `[${a.name}${a.repeated ? "..." : ""}]`)
  return ["rag-eval", ...node.path, ...positional, ...required, ...optional].join(" ")
}

// ---------------------------------------------------------------------------------------------
// Layout
//
// Lines are filled greedily, word by word. `@effect/printer` (which the library renders with) was
// tried first — `fillSep` of the words, `nest`ed, rendered "pretty" at the width — and measured:
// 2.6 s to lay out `compare`'s seven options, growing faster than linearly (its look-ahead through
// the unions of every soft line break), so `run`'s seventy would take minutes. A greedy fill is
// linear and gives the same lines for text like this.

/** Lines of text, each at most the width given when it was laid out. */
export type Lines = ReadonlyArray<string>

const INDENT = 2
const DEFINITION = 6

/** A paragraph filled to the width, every line at `indent`; a word longer than a line is cut. */
export const paragraph = (text: string, indent: number, width: number): Lines => {
  const room = Math.max(8, width - indent)
  const pad = " ".repeat(indent)
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    for (let i = 0; i < word.length; i += room) {
      const piece = word.slice(i, i + room)
      if (line === "") line = piece
      else if (line.length + 1 + piece.length <= room) line += ` ${piece}`
      else {
        lines.push(pad + line)
        line = piece
      }
    }
  }
  if (line !== "" || lines.length === 0) lines.push(pad + line)
  return lines.map((l) => l.trimEnd())
}

/** A line shown as it is (an example to copy), cut only where it would overflow the width. */
export const verbatim = (line: string, indent: number, width: number): Lines => {
  const room = Math.max(8, width - indent)
  const pieces: Array<string> = []
  for (let i = 0; i < Math.max(1, line.length); i += room) pieces.push(" ".repeat(indent) + line.slice(i, i + room))
  return pieces
}

/** A term on its line, its definition below it, further in. */
export const entry = (e: Entry, width: number, indent = INDENT): Lines =>
  e.text === ""
    ? paragraph(e.term, indent, width)
    : [...paragraph(e.term, indent, width), ...paragraph(e.text, indent + DEFINITION - INDENT, width)]

/** Blocks separated by one blank line. */
export const blocks = (parts: ReadonlyArray<Lines>): Lines => parts.flatMap((p, i) => (i === 0 ? p : ["", ...p]))

/** A titled section: `Options:` then its entries. */
export const section = (title: string, body: ReadonlyArray<Lines>): Lines => [`${title}:`, ...body.flat()]

/** The text of laid-out lines. */
export const render = (lines: Lines): string => lines.join("\n")

// ---------------------------------------------------------------------------------------------
// The help pages

export interface CommandHelpOptions {
  /** Flags left out of the options list (e.g. the pipeline options, listed by the pipeline's own help). */
  readonly omit?: ReadonlySet<string> | undefined
  /** Sections added after the options. */
  readonly after?: ReadonlyArray<Lines> | undefined
}

/** An entry's flag names: `-i, --input text` → `-i`, `--input`. */
const termFlags = (term: string) => term.split(/[\s,]+/).filter((t) => t.startsWith("-"))

/** The help of one command (or of the root): usage, description, arguments, options, subcommands. */
export const commandHelp = (node: CommandNode, width: number, options: CommandHelpOptions = {}): string => {
  const arguments_ = entriesOf(node.descriptor, "ARGUMENTS")
  const flags = entriesOf(node.descriptor, "OPTIONS").filter((e) =>
    !termFlags(e.term).some((f) => options.omit?.has(f) === true)
  )
  const description = descriptionOf(node.descriptor)
  const parts: Array<Lines> = [paragraph(`Usage: ${usageLine(node)}`, 0, width)]
  if (description !== "") parts.push(paragraph(description, 0, width))
  if (arguments_.length > 0) parts.push(section("Arguments", arguments_.map((e) => entry(e, width))))
  if (flags.length > 0) parts.push(section("Options", flags.map((e) => entry(e, width))))
  if (node.children.length > 0) {
    parts.push(
      section(
        "Commands",
        node.children.map((c) =>
          entry({ term: usageLine(c).slice("rag-eval ".length), text: descriptionOf(c.descriptor) }, width)
        )
      )
    )
  }
  parts.push(...(options.after ?? []))
  return render(blocks(parts))
}

/** The root's help: what rag-eval is, its commands (nested ones too), and the options every command has. */
export const rootHelp = (tree: CommandNode, version: string, width: number): string => {
  const commands = tree.children.flatMap((c) => [c, ...c.children])
  const lines = [
    paragraph(`rag-eval ${version}: ${descriptionOf(tree.descriptor)}`, 0, width),
    paragraph("Usage: rag-eval <command> [options]", 0, width),
    section(
      "Commands",
      commands.map((c) =>
        entry({ term: usageLine(c).slice("rag-eval ".length), text: descriptionOf(c.descriptor) }, width)
      )
    ),
    paragraph(
      "rag-eval <command> --help lists a command's options; rag-eval pipelines lists the built-in pipelines with their input. " +
        "Every command also takes --help (-h), --version, --wizard (asks for each flag), --completions sh|bash|fish|zsh (a shell completion script) and --log-level.",
      0,
      width
    )
  ]
  return render(blocks(lines))
}
