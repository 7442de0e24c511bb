/**
 * Turns of the event loop, for the order in which ready work runs in a live process.
 *
 * Effect runs the fibers it wakes in one batch of microtasks: the socket writes they start (node's
 * http hands a request its socket on the next tick) and the I/O waiting to be read wait until the
 * whole batch is done. Where one fiber's step should reach the wire before another's starts, the
 * other waits a turn (`setImmediate`: after the I/O that is ready has been read).
 */
import * as Effect from "effect/Effect"

/**
 * A turnstile: the fibers that pass it go on one a turn of the event loop, in the order they came.
 * Each one's work up to its first wait (a request sent) is done, and the I/O it started (a
 * connection opening) is read, before the next one goes on.
 */
export const turnstile = (): Effect.Effect<void> => {
  const queue: Array<() => void> = []
  let turning = false
  const turn = () => {
    const next = queue.shift()
    if (next === undefined) {
      turning = false
      return
    }
    next()
    setImmediate(turn)
  }
  return Effect.async<void>((resume) => {
    queue.push(() => resume(Effect.void))
    if (!turning) {
      turning = true
      setImmediate(turn)
    }
  })
}
