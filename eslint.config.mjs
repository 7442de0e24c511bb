// Lint and format in one pass, as Effect's own repository does: typescript-eslint's recommended rules
// and dprint's TypeScript formatter through @effect/eslint-plugin (the `@effect/dprint` rule), with
// Effect's settings and a line width of 120. `npm run lint` checks; `npm run format` rewrites.
import * as effectEslint from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

// Effect 3's runForEachWhile holds memory per element until its stream ends (a million-row resume
// peaked at 375 MB through it): src/io/Streams.ts's runWhile does the same a chunk at a time.
const runForEachWhile = {
  object: "Stream",
  property: "runForEachWhile",
  message: "use runWhile from src/io/Streams.ts (Stream.runForEachWhile holds memory per element)"
}

export default tseslint.config(
  {
    ignores: ["dist/**", "node_modules/**", "out/**", "coverage/**", "**/*.md", "test/fixtures/**"]
  },
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    files: ["**/*.ts", "**/*.mjs"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module"
    },
    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "object-shorthand": "error",
      "no-restricted-properties": ["error", runForEachWhile],
      "require-yield": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@effect/dprint": [
        "error",
        {
          config: {
            indentWidth: 2,
            lineWidth: 120,
            semiColons: "asi",
            quoteStyle: "alwaysDouble",
            trailingCommas: "never",
            operatorPosition: "maintain",
            "arrowFunction.useParentheses": "force"
          }
        }
      ]
    }
  },
  {
    // The product's code (not the review page, which runs in a browser): no locale-aware formatting —
    // its first call in a process loads ICU's locale data, ~15 ms and ~7 MB for the rest of the run.
    files: ["src/**/*.ts"],
    ignores: ["src/ui/page/**"],
    rules: {
      "no-restricted-properties": ["error", runForEachWhile, {
        property: "toLocaleString",
        message: "use thousands from src/domain/Numbers.ts (toLocaleString loads ICU's locale data: ~15 ms, ~7 MB)"
      }]
    }
  }
)
