import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // Pipeline files import the library by its package name; in tests that is the TypeScript source.
    alias: { "rag-eval": fileURLToPath(new URL("./src/index.ts", import.meta.url)) }
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks"
  }
})
