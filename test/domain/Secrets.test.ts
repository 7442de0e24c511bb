import * as Options from "@effect/cli/Options"
import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { providerFlags, runConfig, secretFlags } from "../../src/cli/RunFlags.js"
import { serveConfig } from "../../src/cli/ServeCommand.js"
import { maskUrl, maskUrlsIn, redactArgv, secretFlagNames } from "../../src/domain/Secrets.js"
import { optionSpecs } from "../../src/engine/OptionSpecs.js"
import { repoRoot } from "../support/RunPipeline.js"

describe("maskUrl", () => {
  it("masks the userinfo, whole, and keeps the rest verbatim", () => {
    expect(maskUrl("http://user:key@host:8000/v1")).toBe("http://<redacted>@host:8000/v1")
    expect(maskUrl("https://sk-only@api.example")).toBe("https://<redacted>@api.example")
    // The userinfo ends at the authority's last @ (RFC 3986): a password holding '@' is masked whole.
    expect(maskUrl("http://a@b:c@host/p?q=1")).toBe("http://<redacted>@host/p?q=1")
    // An @ after the authority (in the path or query) is not userinfo.
    expect(maskUrl("http://host/users/@me?x=a@b")).toBe("http://host/users/@me?x=a@b")
  })

  it("masks secret-looking query and fragment parameters, whatever their case or encoding", () => {
    expect(maskUrl("http://h/s?index=docs&api_key=s3&key=k&token=t&x-api-key=x")).toBe(
      "http://h/s?index=docs&api_key=<redacted>&key=<redacted>&token=<redacted>&x-api-key=<redacted>"
    )
    expect(maskUrl("http://h/?Access_Token=a;sig=b&Password=c&ok=1")).toBe(
      "http://h/?Access_Token=<redacted>;sig=<redacted>&Password=<redacted>&ok=1"
    )
    expect(maskUrl("http://h/?api%5Fkey=s")).toBe("http://h/?api%5Fkey=<redacted>")
    expect(maskUrl("http://h/cb#access_token=abc&state=1")).toBe("http://h/cb#access_token=<redacted>&state=1")
    expect(maskUrl("http://h/?flag&q=a")).toBe("http://h/?flag&q=a")
  })

  it("leaves text that is not a URL, and URLs without secrets, unchanged; is idempotent", () => {
    for (const text of ["not a url", "host:8080", "http://127.0.0.1:8080/v1", "file:///tmp/x?y=1"]) {
      expect(maskUrl(text)).toBe(text)
    }
    const once = maskUrl("http://u:p@h/?token=t")
    expect(maskUrl(once)).toBe(once)
  })

  it("maskUrlsIn masks every URL inside free text", () => {
    expect(maskUrlsIn("cannot reach http://u:p@h/s?token=t (POST http://u:p@h/s?token=t): refused")).toBe(
      "cannot reach http://<redacted>@h/s?token=<redacted> (POST http://<redacted>@h/s?token=<redacted>): refused"
    )
    expect(maskUrlsIn("no url here")).toBe("no url here")
  })
})

describe("redactArgv", () => {
  const flags = ["--api-key", "--search-token"]
  it("masks secret flag values in both forms, and URL credentials in any argument", () => {
    expect(redactArgv([
      "run",
      "p.ts",
      "--api-key",
      "sk-1",
      "--search-token=tok",
      "--base-url",
      "http://u:p@h/v1",
      "--search-url=http://h/s?key=k",
      "--model",
      "m"
    ], flags)).toEqual([
      "run",
      "p.ts",
      "--api-key",
      "<redacted>",
      "--search-token=<redacted>",
      "--base-url",
      "http://<redacted>@h/v1",
      "--search-url=http://h/s?key=<redacted>",
      "--model",
      "m"
    ])
  })
  it("leaves flags that merely start like a secret flag alone", () => {
    expect(redactArgv(["--api-key-file", "f", "--search-tokens=3"], flags)).toEqual([
      "--api-key-file",
      "f",
      "--search-tokens=3"
    ])
  })
})

describe("secret flags come from the flag definitions", () => {
  it("finds redacted options through optional, withDefault, map and aliases", () => {
    const config = {
      a: Options.redacted("alpha").pipe(Options.withAlias("A"), Options.optional),
      b: Options.redacted("beta").pipe(Options.withDefault(undefined)),
      c: Options.text("gamma"),
      d: Options.redacted("delta").pipe(Options.map((r) => r))
    }
    expect(secretFlagNames(config)).toEqual(["--alpha", "--beta", "--delta", "-A"])
  })

  it("every Options.redacted declared in src/ is a secret flag of run or serve (a new one is covered automatically)", () => {
    const files = (dir: string): Array<string> =>
      fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(Path.join(dir, e.name)) : e.name.endsWith(".ts") ? [Path.join(dir, e.name)] : []
      )
    const declared = new Set<string>()
    for (const file of files(Path.join(repoRoot, "src"))) {
      for (const m of fs.readFileSync(file, "utf8").matchAll(/Options\.(?:redacted|secret)\(\s*"([^"]+)"/g)) {
        declared.add(`--${m[1]}`)
      }
    }
    // Pipeline options' flags are built from the option table: its secret kinds are secret flags too.
    for (const spec of Object.values(optionSpecs)) if (spec.kind === "secret") declared.add(`--${spec.flag}`)
    expect(declared.size).toBeGreaterThanOrEqual(2)
    const found = new Set([...secretFlagNames(runConfig), ...secretFlagNames(serveConfig, providerFlags)])
    expect([...declared].filter((f) => !found.has(f))).toEqual([])
    expect(secretFlags).toEqual(expect.arrayContaining(["--api-key", "--search-token"]))
  })
})
