/**
 * vitest's `globalSetup`: the run's temporary files under one directory of its own, removed when the
 * run ends. Tests, the CLI children they start, PostgreSQL clusters and browsers all take their temp
 * directories from `os.tmpdir()`, which reads `TMPDIR`; set here before the worker processes start,
 * every one of them inherits it. Without it every run left its temp directories behind (51,701
 * entries, tens of GB, in the development machine's /tmp after a few sessions' runs). A run killed
 * before its teardown leaves one `rag-eval-test-*` directory, not thousands.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"

const PREFIX = "rag-eval-test-"

export default function setup(): () => void {
  // The suite's project inherits the root's globalSetup: the second call finds the first's directory.
  if (Path.basename(os.tmpdir()).startsWith(PREFIX)) return () => {}
  const root = fs.mkdtempSync(Path.join(os.tmpdir(), PREFIX))
  // Others may pass through (not list): the PostgreSQL tests run initdb as the `postgres` user in a
  // directory of theirs below it. Each test's own directory is still mkdtemp's 0700.
  fs.chmodSync(root, 0o711)
  const before = process.env.TMPDIR
  process.env.TMPDIR = root
  return () => {
    if (before === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = before
    fs.rmSync(root, { recursive: true, force: true })
  }
}
