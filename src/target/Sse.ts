/**
 * A Server-Sent Events parser (the WHATWG "event stream interpretation", incremental): text goes in
 * as it arrives, whole events come out. Lines end with CRLF, LF or CR (a CR at the end of one chunk
 * and an LF at the start of the next are one line end); `data:` lines of one event are joined with
 * "\n"; a line starting with ":" is a comment; a blank line ends an event; one space after the
 * colon is dropped; `retry:` and unknown fields are ignored.
 *
 * One leniency: an event still open when the stream ends (no blank line after its last `data:`) is
 * delivered by `end()` — the standard drops it, but servers that close right after their last event
 * are common, and that event usually holds the answer.
 */

export interface SseEvent {
  /** The `event:` name; "message" when none was given. */
  readonly event: string
  readonly data: string
  /** The `id:` of this event, when it had one. */
  readonly id?: string | undefined
}

export class SseParser {
  #line = ""
  #skipLf = false
  #data: Array<string> = []
  #hasData = false
  #event = ""
  #id: string | undefined = undefined

  /** The events completed by this piece of text. */
  feed(text: string): Array<SseEvent> {
    const out: Array<SseEvent> = []
    let start = 0
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (c === 10 && this.#skipLf && i === start) {
        // The LF of a CRLF whose CR ended the previous line.
        this.#skipLf = false
        start = i + 1
        continue
      }
      this.#skipLf = false
      if (c === 10 || c === 13) {
        this.#line += text.slice(start, i)
        this.#takeLine(out)
        this.#line = ""
        if (c === 13) {
          if (text.charCodeAt(i + 1) === 10) i++
          else if (i + 1 === text.length) this.#skipLf = true
        }
        start = i + 1
      }
    }
    this.#line += text.slice(start)
    return out
  }

  /** The end of the stream: the last line, and an event left open (see the module comment). */
  end(): Array<SseEvent> {
    const out: Array<SseEvent> = []
    if (this.#line !== "") {
      this.#takeLine(out)
      this.#line = ""
    }
    this.#dispatch(out)
    return out
  }

  #takeLine(out: Array<SseEvent>) {
    const line = this.#line
    if (line === "") return this.#dispatch(out)
    if (line.startsWith(":")) return
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    switch (field) {
      case "data":
        this.#data.push(value)
        this.#hasData = true
        return
      case "event":
        this.#event = value
        return
      case "id":
        if (!value.includes("\0")) this.#id = value
        return
      default:
        return
    }
  }

  #dispatch(out: Array<SseEvent>) {
    if (this.#hasData) {
      out.push({
        event: this.#event === "" ? "message" : this.#event,
        data: this.#data.join("\n"),
        ...(this.#id === undefined ? {} : { id: this.#id })
      })
    }
    this.#data = []
    this.#hasData = false
    this.#event = ""
  }
}
