/**
 * The one rule for secrets in what rag-eval writes (`domain/Redaction.ts`): every form of every known
 * secret redacted — as sent, base64 (padded, unpadded, base64url), percent-encoded, JSON-escaped —
 * and nothing else touched.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as Redaction from "../../src/domain/Redaction.js"

const KEY = "sk-live-Zq9/x+7=abc"
const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64")

describe("Redactor", () => {
  const r = Redaction.make([Redacted.make(KEY)])

  it("every form a server may echo: as sent, base64 (padded, unpadded, url-safe), percent-encoded, JSON-escaped", () => {
    const forms = [
      KEY,
      b64(KEY),
      b64(KEY).replace(/=+$/, ""),
      Buffer.from(KEY).toString("base64url"),
      encodeURIComponent(KEY)
    ]
    for (const form of forms) {
      const text = `the server said: ${form} (end)`
      expect(r.text(text)).toBe("the server said: <redacted> (end)")
    }
  })

  it("a secret with a quote or a backslash, as a JSON string writes it (a reply body, a journal line)", () => {
    const odd = "pa\"ss\\word-99"
    const json = JSON.stringify({ echo: `it is ${odd}` })
    expect(json).not.toContain(odd)
    expect(Redaction.make([Redacted.make(odd)]).text(json)).toBe("{\"echo\":\"it is <redacted>\"}")
  })

  it("longest first: a value and its part are masked whole; text without a secret is given back as it is", () => {
    const withPart = Redaction.make([Redacted.make("Bearer tok-123456"), Redacted.make("tok-123456")])
    expect(withPart.text("got Bearer tok-123456 and tok-123456")).toBe("got <redacted> and <redacted>")
    const text = "nothing secret here"
    expect(r.text(text)).toBe(text)
  })

  it("values: every string of a JSON-like value, keys too; untouched values are the same objects", () => {
    const untouched = { a: ["x", { b: 1, c: null }], d: "y" }
    expect(r.value(untouched)).toBe(untouched)
    const echoed = { reason: `key ${KEY}`, value: ["ok", b64(KEY)], nested: { [KEY]: 1, n: 2 } }
    expect(r.value(echoed)).toEqual({
      reason: "key <redacted>",
      value: ["ok", "<redacted>"],
      nested: { "<redacted>": 1, n: 2 }
    })
    expect(echoed.reason).toBe(`key ${KEY}`)
    expect(r.value("__proto__")).toBe("__proto__")
    const proto = JSON.parse(`{"__proto__": "${KEY}", "x": 1}`) as Record<string, unknown>
    const redacted = r.value(proto)
    expect(Object.getOwnPropertyDescriptor(redacted, "__proto__")?.value).toBe("<redacted>")
  })

  it("no secret (or only ones shorter than 4 characters): inactive, the identity", () => {
    for (const none of [Redaction.none, Redaction.make([]), Redaction.make([Redacted.make("abc")])]) {
      expect(none.active).toBe(false)
      expect(none.text("abc def")).toBe("abc def")
    }
  })

  it("`with` adds secrets (a client's own to the run's)", () => {
    const both = r.with([Redacted.make("second-secret")])
    expect(both.text(`${KEY} second-secret`)).toBe("<redacted> <redacted>")
    expect(Redaction.none.with([Redacted.make("second-secret")]).active).toBe(true)
  })
})

describe("the secrets of a setting", () => {
  const values = (xs: ReadonlyArray<Redacted.Redacted<string>>) => xs.map(Redacted.value)

  it("a URL: password, user:password (raw and decoded) — the Basic header's credentials — and secret parameters", () => {
    const url = "https://judge%40corp:p%40ss-w0rd@api.example/v1?api_key=qk-998877&region=eu#access_token=ft-123456"
    expect(values(Redaction.urlSecrets(url)).sort()).toEqual(
      [
        "judge%40corp:p%40ss-w0rd",
        "judge@corp:p@ss-w0rd",
        `Basic ${b64("judge@corp:p@ss-w0rd")}`,
        "p%40ss-w0rd",
        "p@ss-w0rd",
        "qk-998877",
        "ft-123456"
      ].sort()
    )
    // The Basic header built from it is redacted in every form: its base64 is a form of `user:password`.
    const r = Redaction.make(Redaction.urlSecrets(url))
    const basic = `Basic ${b64("judge@corp:p@ss-w0rd")}`
    expect(r.text(`echo: ${basic}`)).toBe("echo: <redacted>")
    expect(r.text("region=eu judge@corp")).toBe("region=eu judge@corp")
  })

  it("a URL with a bare key as its user name; text that is no URL has none", () => {
    expect(values(Redaction.urlSecrets("http://KEY-abcdef@host:8080/v1"))).toEqual([
      "KEY-abcdef",
      "KEY-abcdef:",
      `Basic ${b64("KEY-abcdef:")}`
    ])
    expect(Redaction.urlSecrets("not a url")).toEqual([])
  })

  it("a header value: the value, its credentials, and a Basic header's user:password and password", () => {
    expect(values(Redaction.headerSecrets("Bearer tok-5f2c9a"))).toEqual(["Bearer tok-5f2c9a", "tok-5f2c9a"])
    expect(values(Redaction.headerSecrets(`Basic ${b64("me:pw-778899")}`))).toEqual([
      `Basic ${b64("me:pw-778899")}`,
      b64("me:pw-778899"),
      "me:pw-778899",
      "pw-778899"
    ])
    expect(values(Redaction.headerSecrets(Redacted.make("plain-token")))).toEqual(["plain-token"])
  })
})

describe("the Redaction reference", () => {
  it.effect("redacts nothing unless provided", () =>
    Effect.gen(function*() {
      expect((yield* Redaction.Redaction).active).toBe(false)
      const provided = yield* Effect.provideService(
        Redaction.Redaction,
        Redaction.make([Redacted.make(KEY)])
      )(Redaction.Redaction)
      expect(provided.text(KEY)).toBe("<redacted>")
    }))
})
