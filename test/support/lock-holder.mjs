// Takes a run directory's lock (the built library's RunLock), holds it, and logs when it held it:
//   node test/support/lock-holder.mjs <run-dir> <log-file> <hold-ms>
// Exit 0: held and released; exit 3: refused (the message on stderr).
import * as fs from "node:fs"
import { acquire, release } from "../../dist/store/RunLock.js"

const [dir, log, holdMs] = process.argv.slice(2)
const taken = acquire(dir)
if (typeof taken !== "number") {
  process.stderr.write(taken.message + "\n")
  process.exit(3)
}
fs.appendFileSync(log, `start ${process.pid} ${performance.timeOrigin + performance.now()}\n`)
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(holdMs))
fs.appendFileSync(log, `end ${process.pid} ${performance.timeOrigin + performance.now()}\n`)
release(dir, taken)
