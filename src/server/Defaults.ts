/** Defaults of `rag-eval serve`, apart from the server code so `--help` does not load it. */
export const defaults = {
  host: "127.0.0.1",
  port: 8080,
  maxBody: "1mb",
  concurrency: 8,
  queue: 0,
  maxBatch: 100,
  maxHits: 1000,
  /** Seconds a stop waits for requests in flight before closing their connections. */
  shutdownGrace: 10,
  /** Seconds a client has to send a whole request (headers and body). */
  requestTimeout: 30,
  tokenEnv: "RAG_EVAL_TOKEN"
} as const
